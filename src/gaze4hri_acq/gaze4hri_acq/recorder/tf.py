"""/tf and /tf_static for every trial bag, so RViz and Foxglove place world, base,
tool0, the camera, the tracked bodies and the targets (docs/session_layout.md, Frames).

tf2_msgs has no PyPI wheel (``pip download ros-kilted-tf2-msgs``: no matching
distribution), so rclpy here cannot publish tf2_msgs/TFMessage; the recorder derives
the transforms from what it records and writes them as TFMessage CDR, the bytes a
tf2 broadcaster would have sent:
- /tf, one TransformStamped per pose message with the same stamp and the same
  numbers: base -> tool0 from /robot/tcp_pose, world -> <body> from each
  /mocap/rigid_bodies/<body>/pose (body 'camera' -> frame 'camera_body');
- /tf_static once at the trial's start from the session's calibration snapshot:
  world -> base (registration), tool0 -> camera_color_optical_frame (hand-eye),
  world -> target_<id> (surveyed targets, identity rotation).
"""
from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
from gaze4hri_core.session import FRAMES, Topics

__all__ = ["TF", "TF_STATIC", "TF_TYPES", "tf_cdr", "pose_to_tf", "is_pose_topic", "static_transforms", "static_cdr", "body_frame"]

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


def pose_to_tf(topic: str, data: bytes) -> bytes | None:
    """The /tf message for one recorded pose message, else None (not a pose topic)."""
    if not is_pose_topic(topic):
        return None
    if topic == Topics.TCP_POSE:
        child = FRAMES["tool0"]
    else:
        child = body_frame(topic[len(Topics.MOCAP_PREFIX):-len("/pose")])
    from geometry_msgs.msg import PoseStamped
    from rclpy.serialization import deserialize_message

    m = deserialize_message(data, PoseStamped)
    p, q = m.pose.position, m.pose.orientation
    stamp = m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
    return tf_cdr([(stamp, m.header.frame_id, child, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w))])


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
