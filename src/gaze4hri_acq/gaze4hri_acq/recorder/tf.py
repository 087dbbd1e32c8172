"""/tf and /tf_static for every trial bag, so RViz and Foxglove place world, base,
tool0, the camera, the tracked bodies and the targets (docs/session_layout.md, Frames),
and the same messages live on the ROS graph (``LiveTf``) while a session records.

One source of truth: the recorder derives the transforms from what it records and
serializes them here as TFMessage CDR, the bytes a tf2 broadcaster would have sent; the
bag gets these bytes and ``LiveTf`` publishes the very same bytes (rclpy publishes
serialized messages as they are), so a live listener and a bag reader see identical
transforms:
- /tf, one TransformStamped per pose message with the same stamp and the same
  numbers: base -> tool0 from /robot/tcp_pose, world -> <body> from each
  /mocap/rigid_bodies/<body>/pose (body 'camera' -> frame 'camera_body');
- /tf_static once at the trial's start from the session's calibration snapshot:
  world -> base (registration), tool0 -> camera_color_optical_frame (hand-eye),
  world -> target_<id> (surveyed targets, identity rotation).
Writing the bag needs no tf2_msgs; publishing live does (PyPI has no tf2_msgs wheel:
scripts/build_tf2_msgs.sh builds it from third_party/tf2_msgs into the venv). Without
it ``LiveTf`` says so once and publishes nothing.
"""
from __future__ import annotations

import struct
import time
from pathlib import Path

import numpy as np
from gaze4hri_core.session import FRAMES, Topics

__all__ = ["TF", "TF_STATIC", "TF_TYPES", "tf_cdr", "pose_to_tf", "pose_transform", "is_pose_topic",
           "static_transforms", "static_cdr", "body_frame", "LiveTf", "tf_qos", "tf_static_qos"]

TF = Topics.TF
TF_STATIC = Topics.TF_STATIC
TF_TYPES = {TF: "tf2_msgs/msg/TFMessage", TF_STATIC: "tf2_msgs/msg/TFMessage"}


def body_frame(body: str) -> str:
    """TF frame of a motion-capture rigid body: its name ('camera' -> 'camera_body', so
    it is never confused with the camera's optical frame)."""
    return "camera_body" if body == "camera" else body


class _Cdr:
    """Little-endian CDR (XCDR1) writer; alignment counts from after the 4-byte header."""

    def __init__(self) -> None:
        self.b = bytearray()

    def align(self, n: int) -> None:
        self.b += b"\0" * (-len(self.b) % n)

    def u32(self, v: int) -> None:
        self.align(4)
        self.b += struct.pack("<I", v)

    def i32(self, v: int) -> None:
        self.align(4)
        self.b += struct.pack("<i", v)

    def string(self, s: str) -> None:
        raw = s.encode("utf-8") + b"\0"
        self.u32(len(raw))
        self.b += raw

    def doubles(self, vals) -> None:
        self.align(8)
        self.b += struct.pack(f"<{len(vals)}d", *vals)


def tf_cdr(transforms: list[tuple[int, str, str, tuple, tuple]]) -> bytes:
    """tf2_msgs/msg/TFMessage CDR: [(stamp_ns, parent, child, xyz, quat_xyzw), ...]."""
    w = _Cdr()
    w.u32(len(transforms))
    for stamp_ns, parent, child, t, q in transforms:
        w.i32(int(stamp_ns // 1_000_000_000))
        w.u32(int(stamp_ns % 1_000_000_000))
        w.string(parent)
        w.string(child)
        w.doubles([float(x) for x in t])
        w.doubles([float(x) for x in q])
    return b"\x00\x01\x00\x00" + bytes(w.b)


def is_pose_topic(topic: str) -> bool:
    """Pose streams (robot tool0, motion-capture bodies): each has a /tf twin, and the
    ground truth interpolates them at frame times (the recorder's trial window margins)."""
    return topic == Topics.TCP_POSE or (topic.startswith(Topics.MOCAP_PREFIX) and topic.endswith("/pose"))


def pose_transform(topic: str, data: bytes) -> tuple[int, str, str, tuple, tuple] | None:
    """(stamp_ns, parent, child, xyz, quat_xyzw) of one recorded pose message (CDR), else
    None (not a pose topic): the pose's header frame is the parent, the stream's frame
    the child (tool0, or the rigid body's frame)."""
    if not is_pose_topic(topic):
        return None
    if topic == Topics.TCP_POSE:
        child = FRAMES["tool0"]
    else:
        child = body_frame(topic[len(Topics.MOCAP_PREFIX):-len("/pose")])
    from ..nodes._cdr import decode_pose

    m = decode_pose(data)
    p, q = m.pose.position, m.pose.orientation
    stamp = m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
    return stamp, m.header.frame_id, child, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w)


def pose_to_tf(topic: str, data: bytes) -> bytes | None:
    """The /tf message (CDR) for one recorded pose message, else None (not a pose topic):
    what the bag gets and what ``LiveTf`` publishes."""
    tr = pose_transform(topic, data)
    return None if tr is None else tf_cdr([tr])


def static_transforms(calibration_dir: Path) -> list[tuple[str, str, tuple, tuple]]:
    """The static transforms of a session's calibration, (parent, child, xyz, quat_xyzw);
    raises Gaze4HRIError when unreadable. Loaded before a trial's window opens (YAML
    parsing takes tens of ms: frames published meanwhile would miss the bag)."""
    from gaze4hri_core.calibration import load_calibration

    cal = load_calibration(Path(calibration_dir), None)
    out = [(FRAMES["world"], FRAMES["base"], cal.T_world_base.t, cal.T_world_base.quat_xyzw),
           (FRAMES["tool0"], FRAMES["camera"], cal.T_tool0_camera.t, cal.T_tool0_camera.quat_xyzw)]
    for name, p in sorted(cal.targets.items()):
        out.append((FRAMES["world"], f"target_{name}", np.asarray(p, float), (0.0, 0.0, 0.0, 1.0)))
    return out


def static_cdr(transforms: list[tuple[str, str, tuple, tuple]], stamp_ns: int) -> bytes:
    """The /tf_static message: every static transform stamped at the trial's start."""
    return tf_cdr([(stamp_ns, *tr) for tr in transforms])


def tf_qos():
    """tf2_ros's DynamicBroadcasterQoS: reliable, volatile, keep last 100
    (geometry2 tf2_ros/include/tf2_ros/qos.hpp:46-50: rclcpp::QoS(100)'s defaults)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)


def tf_static_qos():
    """tf2_ros's StaticBroadcasterQoS: reliable, transient local, keep last 1, so a
    listener that joins later still gets the static transforms (tf2_ros/qos.hpp:63-69)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    return QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


_MISSING_SAID = False


class LiveTf:
    """/tf and /tf_static publishers of a node with tf2's broadcaster QoS, publishing the
    CDR bytes that go into the bag (``pose_to_tf``, ``static_cdr``). Without tf2_msgs
    (rclpy from PyPI and no build of it) ``active`` is False: one warning per process
    names the fix, the session goes on and the bags still get /tf."""

    def __init__(self, node):
        global _MISSING_SAID
        self._tf = self._static = None
        self._asked, self._listeners = float("-inf"), False
        try:
            from tf2_msgs.msg import TFMessage
        except ImportError:
            if not _MISSING_SAID:
                _MISSING_SAID = True
                node.get_logger().warning(
                    "no live /tf and /tf_static: tf2_msgs is not installed (the bags still get them); run "
                    "scripts/bootstrap.sh (builds it into the venv) or 'sudo apt-get install ros-<distro>-tf2-msgs'")
            return
        self._tf = node.create_publisher(TFMessage, TF, tf_qos())
        self._static = node.create_publisher(TFMessage, TF_STATIC, tf_static_qos())

    @property
    def active(self) -> bool:
        return self._tf is not None

    #: how often (wall s) the number of /tf subscribers is asked again
    LISTENERS_EVERY_S = 0.2

    def wanted(self) -> bool:
        """Whether anyone on the graph subscribes to /tf (RViz, Foxglove, a tf2 listener),
        asked of the middleware at most every LISTENERS_EVERY_S: with none, the poses are
        not converted for it (most of a session; a listener that joins is served within
        that time)."""
        if self._tf is None:
            return False
        now = time.monotonic()
        if now - self._asked >= self.LISTENERS_EVERY_S:
            self._asked, self._listeners = now, self._tf.get_subscription_count() > 0
        return self._listeners

    def publish(self, cdr: bytes | None) -> None:
        """One /tf message (CDR from ``tf_cdr``/``pose_to_tf``); None is ignored."""
        if self._tf is not None and cdr is not None:
            self._tf.publish(cdr)

    def publish_static(self, cdr: bytes) -> None:
        """The /tf_static message (CDR from ``static_cdr``), kept for late joiners."""
        if self._static is not None:
            self._static.publish(cdr)
