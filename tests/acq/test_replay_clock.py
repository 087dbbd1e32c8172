"""replay is a ROS time source (issue 21 item 5): /clock (rosgraph_msgs/Clock) carries the
bag's log times, and a plain rclpy node started with ``use_sim_time`` follows it; the
``clock`` parameter (replay.launch.py's ``clock`` argument) turns it off."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("rclpy")
import rclpy  # noqa: E402
from gaze4hri_acq.replay import CLOCK_TOPIC, replay_session  # noqa: E402
from gaze4hri_acq.testing.wait import wait_for  # noqa: E402
from gaze4hri_core.session import bag_dir  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.qos import QoSProfile, ReliabilityPolicy  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402

from gaze4hri_acq import replay as replay_mod  # noqa: E402

pytestmark = [pytest.mark.replay, pytest.mark.node]

TRIAL = "illum010_P1"
RATE = 2.0


def _bag_log_times(session) -> list[int]:
    with Reader(bag_dir(session, TRIAL)) as r:
        return sorted(t for c, t, _raw in r.messages() if replay_mod._installed(c.msgtype))


def test_use_sim_time_listener_follows_the_replayed_bag_time(short_session):
    ctx = Context()
    rclpy.init(context=ctx, args=[])
    node = rclpy.create_node(
        "sim_time_listener", context=ctx, parameter_overrides=[Parameter("use_sim_time", value=True)]
    )
    heard: list[int] = []
    node.create_subscription(
        Clock,
        CLOCK_TOPIC,
        lambda m: heard.append(m.clock.sec * 1_000_000_000 + m.clock.nanosec),
        QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT),
    )
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    th = threading.Thread(target=ex.spin, daemon=True)
    th.start()

    def ready(_tid):  # before the trial's first message: the listener has discovered /clock's publisher
        wait_for(lambda: node.count_publishers(CLOCK_TOPIC) >= 1, 10.0, "the replay's /clock publisher")

    try:
        assert node.get_clock().now().nanoseconds == 0  # use_sim_time: no time before the first /clock
        n = replay_session(short_session, trials=[TRIAL], rate=RATE, quiet=True, context=ctx, on_trial=ready)
        times = _bag_log_times(short_session)
        # the last /clock (the last message's log time) reaches the listener's clock
        wait_for(
            lambda: node.get_clock().now().nanoseconds >= times[-1] - int(0.05e9),
            5.0,
            "the listener's clock at the bag's end",
        )
        now = node.get_clock().now().nanoseconds
    finally:
        ex.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    assert n == len(times)
    assert len(heard) >= 10, heard  # one per message (the fast ones) and 40 Hz ticks between them
    assert heard == sorted(heard)  # never backwards within a pass
    assert times[0] <= heard[0] and heard[-1] <= times[-1]  # the bag's time, not the wall clock
    assert heard[-1] == times[-1]
    assert now == heard[-1]  # the node's clock is /clock's time (ROS time active), not the system time
    assert node.get_clock().ros_time_is_active


@pytest.mark.parametrize(
    "argv,clock_on",
    [
        (["replay"], True),
        (["replay", "--ros-args", "-p", "clock:=false"], False),
        (["replay", "--ros-args", "-p", "clock:=true"], True),
    ],
)
def test_clock_parameter_from_the_process_ros_args(short_session, monkeypatch, argv, clock_on):
    """With its own context (the CLI under ``ros2 launch``), the replay node reads ``clock`` from
    the process' --ros-args, as replay.launch.py's clock argument passes it."""
    made = []
    real = replay_mod._ClockOut

    class Spy(real):
        def __init__(self, node):
            made.append(node.get_parameter("clock").value)
            super().__init__(node)

    monkeypatch.setattr(replay_mod, "_ClockOut", Spy)
    monkeypatch.setattr("sys.argv", argv)
    assert replay_session(short_session, trials=[TRIAL], rate=1000.0, quiet=True, max_messages=3) == 3
    assert made == ([True] if clock_on else [])


def test_replay_launch_declares_clock_on_by_default():
    from gaze4hri_acq.launching import REPLAY_ARGUMENTS

    by = {a["name"]: a for a in REPLAY_ARGUMENTS}
    assert by["clock"]["default"] == "true" and by["clock"]["choices"] == ["true", "false"]
