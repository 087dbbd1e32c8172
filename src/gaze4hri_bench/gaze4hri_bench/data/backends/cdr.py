"""Direct CDR readers for the messages the ``session`` backend reads in bulk (images,
pose streams, joint states): the same fields and errors as rosbags' deserializer, without
building a message object per call."""
from __future__ import annotations

import struct

import numpy as np
from gaze4hri_core.errors import SessionError
from gaze4hri_core.session import MSG_TYPES

from ..frame_truth import PoseStream, fk_stream
from .bag import _FIX_BAG, _short, open_bag

__all__ = ["image_cdr", "joint_state_cdr"]


class _Cdr:
    """A reader of plain CDR (XCDR1) fields with ROS 2's alignment (relative to the end of
    the 4-byte encapsulation header), for the two message types read in bulk: the
    per-frame Image and the pose streams. rosbags' generic deserializer builds a message
    object per call (~20 us); this reads the same fields in ~2 us. Errors are the ones
    rosbags raises for the same bytes (typesys/store.py ``deserialize_cdr``): bad
    encapsulation, a field past the end, trailing bytes beyond alignment."""

    __slots__ = ("raw", "e", "o")

    def __init__(self, raw: bytes):
        if len(raw) < 4 or raw[:2] not in (b"\x00\x00", b"\x00\x01"):
            raise ValueError("Invalid or unsupported CDR encapsulation.")
        self.raw, self.e, self.o = raw, "<" if raw[1] == 1 else ">", 4

    def _at(self, n: int, size: int) -> int:
        o = self.o + (-(self.o - 4)) % n
        if o + size > len(self.raw):
            raise ValueError("message is shorter than its fields")
        self.o = o + size
        return o

    def u32(self) -> int:
        return struct.unpack_from(self.e + "I", self.raw, self._at(4, 4))[0]

    def i32(self) -> int:
        return struct.unpack_from(self.e + "i", self.raw, self._at(4, 4))[0]

    def f8(self, n: int) -> tuple:
        return struct.unpack_from(f"{self.e}{n}d", self.raw, self._at(8, 8 * n))

    def u8(self) -> int:
        return self.raw[self._at(1, 1)]

    def string(self) -> str:
        n = self.u32()
        return bytes(self.raw[self._at(1, n):self.o]).rstrip(b"\x00").decode() if n else ""

    def stamp(self) -> int:
        """std_msgs/Header: the stamp in ns; frame_id read past."""
        sec, nsec = self.i32(), self.u32()
        self.string()
        return sec * 1_000_000_000 + nsec

    def end(self) -> None:
        if self.o + 3 < len(self.raw):
            raise ValueError("CDR message size mismatch")


class _ImageMsg:
    """The fields of a sensor_msgs/Image that decode_image reads; ``data`` is a read-only
    view of the raw bytes (as rosbags returns it)."""

    __slots__ = ("height", "width", "encoding", "step", "data")


def image_cdr(raw: bytes) -> _ImageMsg:
    """A CDR sensor_msgs/Image (header, height, width, encoding, is_bigendian, step,
    data; sensor_msgs/msg/Image.msg) without copying its pixels."""
    c = _Cdr(raw)
    m = _ImageMsg()
    c.stamp()
    m.height, m.width, m.encoding = c.u32(), c.u32(), c.string()
    c.u8()  # is_bigendian: rgb8 and its kin are bytes, so it does not matter
    m.step = c.u32()
    n = c.u32()
    m.data = np.frombuffer(raw, np.uint8, n, c._at(1, n))
    c.end()
    return m


def _poses(bag: open_bag, topic: str, raws: list[bytes]) -> PoseStream:
    """PoseStamped messages -> PoseStream (header stamps; geometry_msgs/msg/PoseStamped:
    header, then position xyz and orientation xyzw as float64)."""
    t, P = [], []
    for raw in raws:
        try:
            c = _Cdr(raw)
            t.append(c.stamp())
            P.append(c.f8(7))
            c.end()
        except (ValueError, struct.error, UnicodeDecodeError) as e:
            raise SessionError(f"cannot decode a {MSG_TYPES[topic]} message on {topic} ({_short(e)})", str(bag.path),
                               _FIX_BAG) from None
    if not t:
        return PoseStream.empty()
    a = np.array(P, float)
    return PoseStream(np.array(t, np.int64), a[:, :3].copy(), a[:, 3:].copy())


def joint_state_cdr(raw: bytes) -> tuple[int, np.ndarray]:
    """(stamp ns, positions) of a CDR sensor_msgs/JointState, parsed directly.

    rclpy (Fast-CDR) and rosbags disagree on the padding of empty float64 sequences
    (JointState with no efforts: 268 vs 264 bytes), and rosbags' strict size check then
    rejects what a real ROS 2 recorder wrote; the fields read here (header stamp, name
    sequence, position sequence) lie before any such padding in both layouts."""
    little = raw[1] == 1
    e = "<" if little else ">"
    o = 4  # CDR alignment is relative to the end of the 4-byte encapsulation header

    def align(off: int, n: int) -> int:
        return off + (-(off - 4)) % n

    sec, nsec = struct.unpack_from(e + "iI", raw, o)
    o += 8
    n = struct.unpack_from(e + "I", raw, o)[0]  # frame_id
    o += 4 + n
    o = align(o, 4)
    count = struct.unpack_from(e + "I", raw, o)[0]  # names
    o += 4
    for _ in range(count):
        o = align(o, 4)
        n = struct.unpack_from(e + "I", raw, o)[0]
        o += 4 + n
    o = align(o, 4)
    count = struct.unpack_from(e + "I", raw, o)[0]  # position
    o = align(o + 4, 8)
    if o + 8 * count > len(raw):
        raise ValueError("JointState position sequence runs past the message")
    return sec * 1_000_000_000 + nsec, np.frombuffer(raw, e + "f8", count, o).astype(float)


def _joints(bag: open_bag, raws: list[bytes], model: str) -> PoseStream:
    """JointState messages -> tool0 poses by forward kinematics."""
    t, J = [], []
    for raw in raws:
        try:
            stamp, pos = joint_state_cdr(raw)
        except (struct.error, ValueError) as e:
            raise SessionError(f"cannot decode a sensor_msgs/msg/JointState message ({e})", str(bag.path),
                               _FIX_BAG) from None
        if len(pos) < 6:
            continue
        t.append(stamp)
        J.append(pos[:6])
    if not t:
        return PoseStream.empty()
    return fk_stream(np.array(t, np.int64), np.array(J), model)
