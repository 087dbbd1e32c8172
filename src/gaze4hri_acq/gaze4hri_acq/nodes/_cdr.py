"""Hand-rolled CDR for the one hot message (sensor_msgs/Image) and header-stamp
peeking, so that a 6 MB frame is serialized with one copy instead of rclpy's
per-element conversion (about 30 ms + 55 ms per 1080p frame, measured in
docs/perf/acq.md). Output decodes with ``rclpy.serialization.deserialize_message`` to the same message
(padding bytes are zero here, unspecified in rclpy; tests/acq/test_cdr.py)."""
from __future__ import annotations

import struct

import numpy as np

__all__ = ["encode_image", "header_stamp_ns", "CDR_LE"]

CDR_LE = b"\x00\x01\x00\x00"  # encapsulation: CDR little-endian


def _string(buf: bytearray, s: str) -> None:
    _align(buf, 4)
    b = s.encode("utf-8") + b"\x00"
    buf += struct.pack("<I", len(b)) + b


def _align(buf: bytearray, n: int) -> None:
    # alignment is relative to the payload, i.e. after the 4-byte encapsulation header
    pad = (-(len(buf) - 4)) % n
    if pad:
        buf += b"\x00" * pad


def encode_image(stamp_ns: int, frame_id: str, image: np.ndarray, encoding: str = "rgb8") -> bytes:
    """CDR bytes of a sensor_msgs/msg/Image holding ``image`` (H, W, C) uint8."""
    if image.dtype != np.uint8 or image.ndim not in (2, 3):
        raise ValueError("image must be a (H, W[, C]) uint8 array")
    h, w = image.shape[:2]
    c = 1 if image.ndim == 2 else image.shape[2]
    buf = bytearray(CDR_LE)
    buf += struct.pack("<iI", stamp_ns // 1_000_000_000, stamp_ns % 1_000_000_000)
    _string(buf, frame_id)
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
