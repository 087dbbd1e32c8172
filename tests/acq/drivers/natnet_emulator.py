"""A Motive stand-in for tests: answers NatNet 4.1 requests and streams frames over
loopback UDP in unicast, byte for byte in the NatNet layout, so the real ``natnet``
client parses them.

Packet layouts follow the NatNet SDK 4.1 (NatNetTypes.h sSender_Server and the SDK's
PacketClient / NatNetClient.py unpackers): every message is
``uint16 message_id, uint16 payload_size, payload``; little-endian; 4.1 adds a
uint32 byte size after each data-set count. Unicast: Motive replies to, and streams
frames to, the address the client's NAT_CONNECT came from (its command socket).
Only 127.0.0.1 is ever used.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass, field

import numpy as np

NAT_CONNECT, NAT_SERVERINFO, NAT_REQUEST, NAT_RESPONSE = 0, 1, 2, 3
NAT_REQUEST_MODELDEF, NAT_MODELDEF, NAT_REQUEST_FRAMEOFDATA, NAT_FRAMEOFDATA = 4, 5, 6, 7
NAT_KEEPALIVE = 10
DS_RIGIDBODY = 1  # data-set type of a rigid-body description

LOOPBACK = "127.0.0.1"


def _msg(message_id: int, payload: bytes) -> bytes:
    return struct.pack("<HH", message_id, len(payload)) + payload


def _cstr(s: str) -> bytes:
    return s.encode("utf-8") + b"\0"


@dataclass
class EmulatedBody:
    name: str
    id: int
    markers: list[tuple[float, float, float]] = field(default_factory=lambda: [(0.05, 0.0, 0.0), (-0.05, 0.0, 0.0), (0.0, 0.05, 0.02)])


def server_info_packet(version=(4, 1, 0, 0), app="Motive", clock_hz: int = 10_000_000, data_port: int = 1511) -> bytes:
    """NAT_SERVERINFO: szName[256], Version[4], NatNetVersion[4], then the 3.0+ connection
    info (HighResClockFrequency uint64, DataPort uint16, IsMulticast bool, MulticastGroupAddress[4])."""
    name = app.encode()[:255].ljust(256, b"\0")
    payload = name + bytes([3, 1, 0, 0]) + bytes(version) + struct.pack("<QHB4B", clock_hz, data_port, 0, 239, 255, 42, 99)
    return _msg(NAT_SERVERINFO, payload)


def modeldef_packet(bodies: list[EmulatedBody]) -> bytes:
    """NAT_MODELDEF with one rigid-body description per body (NatNet 4.1: no quaternion,
    which arrives in 4.2; marker positions, active labels and names since 4.0)."""
    sets = []
    for b in bodies:
        d = _cstr(b.name) + struct.pack("<Ii3f", b.id, -1, 0.0, 0.0, 0.0)
        d += struct.pack("<I", len(b.markers))
        d += b"".join(struct.pack("<3f", *m) for m in b.markers)
        d += b"".join(struct.pack("<I", 0) for _ in b.markers)
        d += b"".join(_cstr(f"Marker{i + 1}") for i in range(len(b.markers)))
        sets.append(struct.pack("<II", DS_RIGIDBODY, len(d)) + d)
    return _msg(NAT_MODELDEF, struct.pack("<I", len(sets)) + b"".join(sets))


def _dataset(items: list[bytes]) -> bytes:
    body = b"".join(items)
    return struct.pack("<II", len(items), len(body)) + body


def frame_packet(frame_number: int, bodies: dict[int, tuple], timestamp_s: float, mid_exposure_ticks: int,
                 data_received_ticks: int, transmit_ticks: int, labeled: list[tuple[int, tuple]] | None = None) -> bytes:
    """NAT_FRAMEOFDATA for NatNet 4.1.

    ``bodies``: id -> (pos (3,), quat xyzw (4,), tracking_valid, mean_error).
    Layout: frame number; marker sets; legacy unlabeled markers; rigid bodies (id, pos,
    quat, mean error, params bit0 = tracking valid); skeletons; assets (4.1); labeled
    markers; force plates; devices; suffix (timecode, subframe, timestamp f64, camera
    mid-exposure / data received / transmit ticks, precision timestamp secs and
    fraction (4.0+), params).
    """
    p = struct.pack("<I", frame_number)
    p += _dataset([])  # marker sets
    p += _dataset([])  # unlabeled ("other") markers
    rbs = []
    for rid, (pos, quat, valid, err) in bodies.items():
        rbs.append(struct.pack("<I3f4ffH", rid, *pos, *quat, err, 0x01 if valid else 0x00))
    p += _dataset(rbs)
    p += _dataset([])  # skeletons
    p += _dataset([])  # assets (4.1)
    lm = [struct.pack("<I3ffHf", mid, *pos, 0.014, 0x04, 0.0002) for mid, pos in (labeled or [])]
    p += _dataset(lm)
    p += _dataset([])  # force plates
    p += _dataset([])  # devices
    secs = int(timestamp_s)
    frac = int((timestamp_s - secs) * 2**32) & 0xFFFFFFFF
    p += struct.pack("<IIdQQQIIH", 0, 0, timestamp_s, mid_exposure_ticks, data_received_ticks, transmit_ticks, secs, frac, 0)
    return _msg(NAT_FRAMEOFDATA, p)


class MotiveEmulator:
    """Answers NAT_CONNECT / NAT_REQUEST_MODELDEF on 127.0.0.1 and sends frames to the client.

    ``latency_s`` is the exposure-to-transmit delay written into each frame's tick
    stamps; ``clock_hz`` is Motive's tick rate.
    """

    def __init__(self, bodies: list[EmulatedBody], version=(4, 1, 0, 0), clock_hz: int = 10_000_000,
                 latency_s: float = 0.004, answer: bool = True):
        self.bodies = bodies
        self.version = version
        self.clock_hz = clock_hz
        self.latency_s = latency_s
        self.answer = answer
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((LOOPBACK, 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.client_addr: tuple[str, int] | None = None
        self.requests: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._t0 = time.monotonic()

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        self.sock.close()

    def _serve(self) -> None:
        deadline = time.monotonic() + 120  # bounded: tests never run this long
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                data, addr = self.sock.recvfrom(65536)
            except (TimeoutError, OSError):
                continue
            if addr[0] != LOOPBACK or len(data) < 4:
                continue
            mid = struct.unpack_from("<H", data)[0]
            self.requests.append(mid)
            if not self.answer:
                continue
            if mid == NAT_CONNECT:
                self.client_addr = addr
                self.sock.sendto(server_info_packet(self.version, clock_hz=self.clock_hz), addr)
            elif mid == NAT_REQUEST_MODELDEF:
                self.client_addr = addr
                self.sock.sendto(modeldef_packet(self.bodies), addr)

    def wait_client(self, timeout_s: float = 2.0) -> bool:
        t_end = time.monotonic() + timeout_s
        while self.client_addr is None and time.monotonic() < t_end:
            time.sleep(0.01)
        return self.client_addr is not None

    def send_frame(self, frame_number: int, poses: dict[str, tuple], rate_hz: float = 100.0) -> None:
        """Send one frame; ``poses``: body name -> (pos Y-up (3,), quat xyzw (4,), valid)."""
        assert self.client_addr is not None, "no client connected"
        ts = frame_number / rate_hz
        mid = int(round(ts * self.clock_hz)) + 123_456_789
        rx = mid + int(0.001 * self.clock_hz)
        tx = mid + int(round(self.latency_s * self.clock_hz))
        by_name = {b.name: b.id for b in self.bodies}
        bodies = {by_name[n]: (tuple(np.asarray(p, float)), tuple(np.asarray(q, float)), bool(v), 0.0003)
                  for n, (p, q, v) in poses.items()}
        self.sock.sendto(frame_packet(frame_number, bodies, ts, mid, rx, tx), self.client_addr)
