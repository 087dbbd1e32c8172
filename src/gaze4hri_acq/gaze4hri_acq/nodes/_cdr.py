"""Hand-rolled CDR for the hot messages: sensor_msgs/Image, so that a 6 MB frame is
serialized with one copy instead of rclpy's per-element conversion (about 30 ms + 55 ms per
1080p frame, measured in docs/perf/acq.md), and the 100-125 Hz pose, joint-state, speed and
diagnostics streams (below); header-stamp peeking. Output decodes with
``rclpy.serialization.deserialize_message`` to the same message (padding bytes are zero here,
unspecified in rclpy; tests/acq/test_cdr.py)."""
from __future__ import annotations

import importlib
import struct
from types import SimpleNamespace as _NS  # decoded fields, shaped as the rclpy message (m.header.stamp.sec)

import numpy as np

try:  # the rosidl types of rclpy's generated messages (present wherever rclpy is)
    from rosidl_parser.definition import (
        AbstractNestedType,
        AbstractSequence,
        AbstractString,
        Array,
        BasicType,
        NamespacedType,
    )
except ImportError:  # pragma: no cover - encode_image and header_stamp_ns need none of them
    AbstractNestedType = AbstractSequence = AbstractString = Array = BasicType = NamespacedType = ()

__all__ = ["encode_image", "header_stamp_ns", "CDR_LE", "serialize", "cdr_length", "encode_pose", "decode_pose",
           "encode_diagnostics", "decode_diagnostics", "encode_joint_state", "encode_twist", "FAST_DECODERS"]

CDR_LE = b"\x00\x01\x00\x00"  # encapsulation: CDR little-endian


#: the CDR form (length, bytes, NUL) of strings seen lately: names, keys and frame ids
#: repeat at every sample (the motion capture's status: 15 strings, 100 times a second)
_STRINGS: dict[str, bytes] = {}


def _string(buf: bytearray, s: str) -> None:
    _align(buf, 4)
    c = _STRINGS.get(s)
    if c is None:
        b = s.encode("utf-8") + b"\x00"
        c = struct.pack("<I", len(b)) + b
        if len(_STRINGS) >= 4096:  # values that change every sample must not grow it
            _STRINGS.clear()
        _STRINGS[s] = c
    buf += c


def _align(buf: bytearray, n: int) -> None:
    # alignment is relative to the payload, i.e. after the 4-byte encapsulation header
    pad = (-(len(buf) - 4)) % n
    if pad:
        buf += b"\x00" * pad


def _with_header(stamp_ns: int, frame_id: str) -> bytearray:
    """The encapsulation and a std_msgs/Header: every message here starts with one."""
    buf = bytearray(CDR_LE)
    buf += struct.pack("<iI", stamp_ns // 1_000_000_000, stamp_ns % 1_000_000_000)
    _string(buf, frame_id)
    return buf


def encode_image(stamp_ns: int, frame_id: str, image: np.ndarray, encoding: str = "rgb8") -> bytes:
    """CDR bytes of a sensor_msgs/msg/Image holding ``image`` (H, W, C) uint8."""
    if image.dtype != np.uint8 or image.ndim not in (2, 3):
        raise ValueError("image must be a (H, W[, C]) uint8 array")
    h, w = image.shape[:2]
    c = 1 if image.ndim == 2 else image.shape[2]
    buf = _with_header(stamp_ns, frame_id)
    _align(buf, 4)
    buf += struct.pack("<II", h, w)
    _string(buf, encoding)
    buf += b"\x00"  # is_bigendian
    _align(buf, 4)
    data = np.ascontiguousarray(image)
    buf += struct.pack("<II", w * c, data.nbytes)
    return b"".join((bytes(buf), memoryview(data).cast("B")))


def header_stamp_ns(cdr: bytes | memoryview) -> int:
    """Stamp of a message whose first field is a std_msgs/Header."""
    sec, nsec = struct.unpack_from("<iI", cdr, 4)
    return sec * 1_000_000_000 + nsec


# -- exact length of rclpy's serialization --------------------------------------------------
# rclpy's serialize_message (rmw_fastrtps) returns a buffer as long as the type support's
# size *estimate*, which counts the 8-byte alignment after the length of every float64
# sequence even when it is empty; the CDR it writes skips that alignment (no element
# follows), so e.g. JointState(name, position, velocity) with no efforts ends in 4 bytes
# that were never written. OMG CDR (XCDR1, as ROS 2 rmw uses it) aligns an element only
# when one is written, and rosbags' deserialize_cdr accepts at most 3 trailing bytes
# (rosbags/typesys/store.py deserialize_cdr), so rosbags refused every /joint_states
# message. ``serialize`` cuts the buffer to the bytes actually written (tests/acq/test_bag_integrity.py).
_SIZES = {"boolean": 1, "octet": 1, "char": 1, "uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "wchar": 2,
          "int32": 4, "uint32": 4, "float": 4, "int64": 8, "uint64": 8, "double": 8, "long double": 16}
_HAS_SEQ: dict[type, bool] = {}


_FIELDS: dict[type, list[tuple[str, object]]] = {}


def _fields(cls) -> list[tuple[str, object]]:
    """(field name, rosidl type) of a generated rclpy message class, in wire order."""
    got = _FIELDS.get(cls)
    if got is None:
        names = [n[1:] for n in cls.__slots__ if n != "_check_fields"]
        got = _FIELDS[cls] = list(zip(names, cls.SLOT_TYPES, strict=True))
    return got


def _end(value, typ, off: int) -> int:
    """Offset (payload-relative) after ``value`` of rosidl type ``typ`` written at ``off``."""
    if isinstance(typ, BasicType):
        n = _SIZES[typ.typename]
        return off + (-off) % n + n
    if isinstance(typ, AbstractString):
        if type(typ).__name__.endswith("WString"):
            raise TypeError("wstring")  # not used by any message here; the caller keeps rclpy's bytes
        return off + (-off) % 4 + 4 + len(value.encode("utf-8")) + 1
    if isinstance(typ, NamespacedType):
        for name, t in _fields(type(value)):
            off = _end(getattr(value, name), t, off)
        return off
    if isinstance(typ, (Array, AbstractSequence)):
        if isinstance(typ, AbstractSequence):
            off += (-off) % 4 + 4  # uint32 element count
        vt = typ.value_type
        if isinstance(vt, BasicType):
            n = len(value)
            if n:
                size = _SIZES[vt.typename]
                off += (-off) % size + n * size
            return off
        for v in value:
            off = _end(v, vt, off)
        return off
    raise TypeError(f"unsupported rosidl type {type(typ).__name__}")


def cdr_length(msg) -> int:
    """Bytes of the CDR serialization of the rclpy message ``msg``, encapsulation header included."""
    off = 0
    for name, t in _fields(type(msg)):
        off = _end(getattr(msg, name), t, off)
    return 4 + off


def _has_eight(t) -> bool:
    """Whether values of rosidl type ``t`` hold an 8-byte element (double, int64, ...) anywhere."""
    inner = t.value_type if isinstance(t, AbstractNestedType) else t
    if isinstance(inner, BasicType):
        return _SIZES[inner.typename] == 8
    if isinstance(inner, NamespacedType):
        cls = getattr(importlib.import_module(".".join(inner.namespaces)), inner.name)
        return any(_has_eight(ft) for _n, ft in _fields(cls))
    return False


def _has_sequence(cls) -> bool:
    """Whether a message type can come out over-long: it holds a sequence whose elements
    contain an 8-byte field (the estimate's alignment above), anywhere. Others (images,
    diagnostics, strings) skip the length walk."""
    got = _HAS_SEQ.get(cls)
    if got is None:
        got = False
        for _name, t in _fields(cls):
            inner = t.value_type if isinstance(t, AbstractNestedType) else t
            if isinstance(t, AbstractSequence):
                got = _has_eight(t)
            elif isinstance(inner, NamespacedType):
                got = _has_sequence(getattr(importlib.import_module(".".join(inner.namespaces)), inner.name))
            if got:
                break
        _HAS_SEQ[cls] = got
    return got


def serialize(msg) -> bytes:
    """rclpy's CDR bytes of ``msg`` without the never-written tail (see above)."""
    from rclpy.serialization import serialize_message

    data = serialize_message(msg)
    if _has_sequence(type(msg)):
        try:
            n = cdr_length(msg)
        except (TypeError, KeyError):
            return data
        if n < len(data):
            data = data[:n]
    return data


# -- the 100-125 Hz streams: poses and diagnostics without rclpy message objects ------------------
# Each motion-capture frame and robot state is a PoseStamped (and, for motion capture, a
# DiagnosticArray) delivered in-process to the recorder, the robot's safety monitor and the
# orchestrator. rclpy builds (and checks) a Python object per nested field, about as costly as
# everything else the stream does; these write and read the same CDR with struct
# (tests/acq/test_cdr.py: equal to rclpy's bytes and messages).
_POSE_TAIL = struct.Struct("<7d")


def encode_pose(stamp_ns: int, frame_id: str, xyz, quat_xyzw) -> bytes:
    """CDR bytes of a geometry_msgs/PoseStamped (rclpy's bytes)."""
    buf = _with_header(stamp_ns, frame_id)
    _align(buf, 8)
    x, y, z = xyz
    qx, qy, qz, qw = quat_xyzw
    buf += _POSE_TAIL.pack(float(x), float(y), float(z), float(qx), float(qy), float(qz), float(qw))
    return bytes(buf)


def _doubles(buf: bytearray, values) -> None:
    """A float64 sequence: its count, then (aligned to 8 only when one follows) the values."""
    _align(buf, 4)
    buf += struct.pack("<I", len(values))
    if len(values):
        _align(buf, 8)
        buf += struct.pack(f"<{len(values)}d", *(float(v) for v in values))


def encode_joint_state(stamp_ns: int, frame_id: str, names, position, velocity, effort=()) -> bytes:
    """CDR bytes of a sensor_msgs/JointState, as ``serialize`` cuts rclpy's (no unwritten tail)."""
    buf = _with_header(stamp_ns, frame_id)
    _align(buf, 4)
    buf += struct.pack("<I", len(names))
    for n in names:
        _string(buf, n)
    for values in (position, velocity, effort):
        _doubles(buf, values)
    return bytes(buf)


def encode_twist(stamp_ns: int, frame_id: str, linear=(0.0, 0.0, 0.0), angular=(0.0, 0.0, 0.0)) -> bytes:
    """CDR bytes of a geometry_msgs/TwistStamped."""
    buf = _with_header(stamp_ns, frame_id)
    _align(buf, 8)
    buf += struct.pack("<6d", *(float(v) for v in (*linear, *angular)))
    return bytes(buf)


def _read_string(cdr, off: int) -> tuple[str, int]:
    """A CDR string at payload offset ``off`` (aligned here) -> (text, offset after it)."""
    off += (-off) % 4
    (n,) = struct.unpack_from("<I", cdr, 4 + off)
    start = 4 + off + 4
    return str(cdr[start:start + n - 1], "utf-8"), off + 4 + n


def _header(cdr) -> tuple[_NS, int]:
    sec, nsec = struct.unpack_from("<iI", cdr, 4)
    frame_id, off = _read_string(cdr, 8)
    return _NS(stamp=_NS(sec=sec, nanosec=nsec), frame_id=frame_id), off


def decode_pose(cdr) -> _NS:
    """A geometry_msgs/PoseStamped's fields from its CDR bytes, without rclpy."""
    header, off = _header(cdr)
    off += (-off) % 8
    x, y, z, qx, qy, qz, qw = _POSE_TAIL.unpack_from(cdr, 4 + off)
    return _NS(header=header, pose=_NS(position=_NS(x=x, y=y, z=z), orientation=_NS(x=qx, y=qy, z=qz, w=qw)))


def encode_diagnostics(stamp_ns: int, frame_id: str, statuses) -> bytes:
    """CDR bytes of a diagnostic_msgs/DiagnosticArray from ``statuses``: (level, name,
    message, hardware_id, {key: value}) each, values written as ``str(value)``."""
    buf = _with_header(stamp_ns, frame_id)
    _align(buf, 4)
    buf += struct.pack("<I", len(statuses))
    for level, name, message, hardware_id, values in statuses:
        buf.append(int(level) & 0xFF)
        for s in (name, message, hardware_id):
            _string(buf, s)
        _align(buf, 4)
        buf += struct.pack("<I", len(values))
        for k, v in values.items():
            _string(buf, k)
            _string(buf, str(v))
    return bytes(buf)


def decode_diagnostics(cdr) -> _NS:
    """A diagnostic_msgs/DiagnosticArray's fields from its CDR bytes, without rclpy
    (``level`` as rclpy gives it: one byte)."""
    header, off = _header(cdr)
    off += (-off) % 4
    (n,) = struct.unpack_from("<I", cdr, 4 + off)
    off += 4
    status = []
    for _ in range(n):
        level = bytes(cdr[4 + off:5 + off])
        off += 1
        name, off = _read_string(cdr, off)
        message, off = _read_string(cdr, off)
        hardware_id, off = _read_string(cdr, off)
        off += (-off) % 4
        (k,) = struct.unpack_from("<I", cdr, 4 + off)
        off += 4
        values = []
        for _ in range(k):
            key, off = _read_string(cdr, off)
            value, off = _read_string(cdr, off)
            values.append(_NS(key=key, value=value))
        status.append(_NS(level=level, name=name, message=message, hardware_id=hardware_id, values=values))
    return _NS(header=header, status=status)


def _fast_decoders() -> dict:
    """rclpy message type -> the decoder above (empty where rclpy's messages are absent)."""
    try:
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PoseStamped
    except ImportError:  # pragma: no cover
        return {}
    return {PoseStamped: decode_pose, DiagnosticArray: decode_diagnostics}


#: what an in-process subscriber of these types gets instead of rclpy's message (nodes/common.subscribe)
FAST_DECODERS = _fast_decoders()
