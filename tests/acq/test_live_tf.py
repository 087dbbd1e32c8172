"""Live /tf and /tf_static (issue 21 item 3): a plain rclpy listener hears them during a
simulated session and during a replay, with tf2's broadcaster QoS (/tf_static transient
local, so a listener that joins late still gets it), and they carry the transforms the
bag holds (read with rosbags, the reader users use). tf2_msgs comes from
scripts/build_tf2_msgs.sh (third_party/tf2_msgs) or a sourced ROS 2; its type hash must be
the real one so RViz, Foxglove and other ROS nodes match our publishers."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
pytest.importorskip(
    "tf2_msgs.msg", reason="tf2_msgs is not built: run scripts/bootstrap.sh (scripts/build_tf2_msgs.sh)"
)
import rclpy  # noqa: E402
from gaze4hri_acq.testing.wait import wait_for  # noqa: E402
from gaze4hri_core.session import bag_dir  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402
from rosbags.typesys import Stores, get_typestore  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from tf2_msgs.msg import TFMessage  # noqa: E402

from tests.acq.conftest import SHORT_TRIALS, own_domain  # noqa: E402

# tf2_ros's listener profiles (geometry2 tf2_ros/include/tf2_ros/qos.hpp:39-60), /tf kept whole
QOS_TF_LISTEN = QoSProfile(history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE)
QOS_STATIC_LISTEN = QoSProfile(
    depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
)


@pytest.fixture
def shared_graph(monkeypatch):
    """DDS discovery between the contexts of this process (conftest's OFF keeps each
    context to itself): localhost only, on a domain of this process' own, so the listener
    is a separate participant, as RViz or Foxglove would be, and other agents' tests on
    the machine stay out."""
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.setenv("ROS_DOMAIN_ID", str(own_domain(20)))


def _key(tr) -> tuple:
    h = tr.header
    return h.frame_id, tr.child_frame_id, h.stamp.sec * 1_000_000_000 + h.stamp.nanosec


def _value(tr) -> tuple:
    t, q = tr.transform.translation, tr.transform.rotation
    return t.x, t.y, t.z, q.x, q.y, q.z, q.w


def _bag_tf(bag: Path) -> tuple[dict, list[list]]:
    """(/tf transforms by (parent, child, stamp), /tf_static messages as [(key, value)...]) of one bag."""
    ts = get_typestore(Stores.ROS2_KILTED)
    tf, static = {}, []
    with Reader(bag) as r:
        conns = [c for c in r.connections if c.topic in ("/tf", "/tf_static")]
        for conn, _t, raw in r.messages(connections=conns):
            m = ts.deserialize_cdr(raw, conn.msgtype)
            if conn.topic == "/tf":
                tf.update({_key(tr): _value(tr) for tr in m.transforms})
            else:
                static.append([(_key(tr), _value(tr)) for tr in m.transforms])
    return tf, static


class _Listener:
    """A plain rclpy node in its own context, spun in a thread: what it hears on /tf,
    /tf_static and /clock."""

    def __init__(self):
        self.ctx = Context()
        rclpy.init(context=self.ctx, args=[])
        self.node = rclpy.create_node("tf_listener", context=self.ctx)
        self.tf: dict = {}
        self.static: list[list] = []
        self.clock: list[int] = []
        self.node.create_subscription(
            TFMessage, "/tf", lambda m: self.tf.update({_key(tr): _value(tr) for tr in m.transforms}), QOS_TF_LISTEN
        )
        self.node.create_subscription(TFMessage, "/tf_static", self._on_static, QOS_STATIC_LISTEN)
        self.node.create_subscription(
            Clock,
            "/clock",
            lambda m: self.clock.append(m.clock.sec),
            QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT),
        )
        self.static_pubs = []
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)
        self.th = threading.Thread(target=self.ex.spin, daemon=True)
        self.th.start()

    def _on_static(self, m) -> None:
        self.static.append([(_key(tr), _value(tr)) for tr in m.transforms])
        self.static_pubs = self.node.get_publishers_info_by_topic("/tf_static")  # who sent it, with what QoS

    def close(self) -> None:
        self.ex.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)
        self.th.join(timeout=5.0)


@pytest.mark.node
def test_the_built_tf2_msgs_has_the_real_type_hash():
    """The interface files in third_party/tf2_msgs are upstream's: the hash rosidl generated
    (what a publisher announces on the graph) equals rosbags' own RIHS01 computation of
    tf2_msgs/msg/TFMessage for Jazzy and Kilted."""
    ctx = Context()
    rclpy.init(context=ctx, args=[])
    try:
        node = rclpy.create_node("tf_hash", context=ctx)
        node.create_publisher(TFMessage, "/tf_hash_probe", 1)
        got = str(node.get_publishers_info_by_topic("/tf_hash_probe")[0].topic_type_hash)
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
    for store in (Stores.ROS2_JAZZY, Stores.ROS2_KILTED):
        assert got == get_typestore(store).hash_rihs01("tf2_msgs/msg/TFMessage")


@pytest.mark.node
def test_without_tf2_msgs_live_tf_is_off_and_nothing_breaks(monkeypatch):
    """No tf2_msgs (rclpy wheels, no build): LiveTf publishes nothing and raises nothing,
    and the recorder node still comes up (the session records as before)."""
    import sys

    from gaze4hri_acq.recorder import tf as tf_mod
    from gaze4hri_acq.recorder.node import RecorderNode

    monkeypatch.setitem(sys.modules, "tf2_msgs.msg", None)  # `from tf2_msgs.msg import ...` raises ImportError
    monkeypatch.setattr(tf_mod, "_MISSING_SAID", False)
    ctx = Context()
    rclpy.init(context=ctx, args=[])
    try:
        node = rclpy.create_node("no_tf2", context=ctx)
        live = tf_mod.LiveTf(node)
        assert not live.active and tf_mod._MISSING_SAID  # said once, with the fix (tf.py)
        live.publish(tf_mod.tf_cdr([(1, "base", "tool0", (0, 0, 0), (0, 0, 0, 1))]))
        live.publish_static(b"")
        assert node.count_publishers("/tf") == 0
        rec = RecorderNode("recorder", context=ctx)
        assert not rec._live_tf.active
        rec.shutdown()
        rec.destroy_node()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


@pytest.mark.node
def test_a_simulated_session_publishes_the_bags_tf_live(tmp_path, shared_graph):
    from gaze4hri_acq.simulate import run_sim_session

    trial = SHORT_TRIALS[0]
    ls = _Listener()
    try:
        sdir = run_sim_session(
            tmp_path, subject="S01", trial_ids=[trial], resolution=(160, 90), trial_seconds=0.5, real_time_factor=20
        )
        bag_tf, bag_static = _bag_tf(bag_dir(sdir, trial))
        assert bag_tf and len(bag_static) == 1
        # every transform the bag holds was heard live, with the same numbers (the same
        # bytes: recorder/tf.py serializes once for both); live /tf also runs between trials
        wait_for(lambda: set(bag_tf) <= set(ls.tf), 60.0, "the bag's /tf transforms on the live /tf")
        assert {k: ls.tf[k] for k in bag_tf} == bag_tf
        assert {(k[0], k[1]) for k in bag_tf} >= {("base", "tool0"), ("world", "head_band")}
        wait_for(lambda: ls.static, 60.0, "/tf_static")
        assert ls.static == bag_static  # once per trial, the message the bag holds
        assert {k[:2] for k, _v in ls.static[0]} >= {("world", "base"), ("tool0", "camera_color_optical_frame")}
        pub = next(p for p in ls.static_pubs if p.node_name == "recorder")
        assert pub.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL  # tf2's StaticBroadcasterQoS
        assert pub.qos_profile.reliability == ReliabilityPolicy.RELIABLE
    finally:
        ls.close()


@pytest.mark.replay
@pytest.mark.node
def test_replay_publishes_tf_and_a_late_listener_gets_tf_static(short_session, shared_graph):
    from gaze4hri_acq.replay import replay_session

    first, second = SHORT_TRIALS[:2]
    bags = {t: _bag_tf(bag_dir(short_session, t)) for t in (first, second)}
    ls = _Listener()
    late: dict = {}

    def on_trial(tid):
        if tid != second:
            return
        # the first trial has played: a node that joins now still gets its /tf_static
        # (transient local), while the replay waits here
        node = rclpy.create_node("late_tf_listener", context=ls.ctx)
        got: list = []
        node.create_subscription(
            TFMessage,
            "/tf_static",
            lambda m: got.append([(_key(tr), _value(tr)) for tr in m.transforms]),
            QOS_STATIC_LISTEN,
        )
        ls.ex.add_node(node)
        wait_for(lambda: got, 60.0, "/tf_static on a late-joining listener")
        late["static"] = got[0]
        wait_for(lambda: ls.node.count_publishers("/tf") >= 1, 60.0, "the replay's /tf publisher")

    try:
        ctx = Context()
        rclpy.init(context=ctx, args=[])
        try:
            replay_session(short_session, trials=[first, second], rate=4.0, quiet=True, context=ctx, on_trial=on_trial)
        finally:
            rclpy.shutdown(context=ctx)
        assert late["static"] == bags[first][1][0]  # the first trial's static transforms, as in its bag
        tf2, static2 = bags[second]
        wait_for(lambda: set(tf2) <= set(ls.tf), 60.0, "the second bag's /tf on the live /tf")
        assert {k: ls.tf[k] for k in tf2} == tf2
        # what was heard of the first trial (its publisher was created with its first
        # message, before discovery: under load the whole short trial can play before the
        # listener discovers it, so it may be nothing) is what its bag holds
        heard1 = set(ls.tf) & set(bags[first][0])
        assert all(ls.tf[k] == bags[first][0][k] for k in heard1)
        assert ls.static[-1] == static2[0]
        assert ls.clock  # /clock, as ros2 bag play --clock
    finally:
        ls.close()
