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

import functools
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

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
    markers: list[tuple[float, float, float]] = field(
        default_factory=lambda: [(0.05, 0.0, 0.0), (-0.05, 0.0, 0.0), (0.0, 0.05, 0.02)])


def server_info_packet(version=(4, 1, 0, 0), app="Motive", clock_hz: int = 10_000_000, data_port: int = 1511) -> bytes:
    """NAT_SERVERINFO: szName[256], Version[4], NatNetVersion[4], then the 3.0+ connection
    info (HighResClockFrequency uint64, DataPort uint16, IsMulticast bool, MulticastGroupAddress[4])."""
    name = app.encode()[:255].ljust(256, b"\0")
    payload = (name + bytes([3, 1, 0, 0]) + bytes(version)
               + struct.pack("<QHB4B", clock_hz, data_port, 0, 239, 255, 42, 99))
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
                 data_received_ticks: int, transmit_ticks: int,
                 labeled: list[tuple[int, tuple]] | None = None) -> bytes:
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
    p += struct.pack("<IIdQQQIIH", 0, 0, timestamp_s, mid_exposure_ticks, data_received_ticks, transmit_ticks,
                     secs, frac, 0)
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


# ------------------------------------------------------------------ real Motive capture
# Replays the packets of a real Motive 2.1 / NatNet 3.0 capture (shared/reference/
# reliability_data/natnet_motive21_v3, from mje-nz/python_natnet test_data/raw, BSD-3)
# over loopback UDP to the real driver, with faults made from the same packets.

CAPTURE_NAME = "natnet_motive21_v3"
SPOOF_SOURCE = "127.0.0.2"  # another loopback address: a foreign host on the same wire
FAULT_KINDS = ("spoofed_source", "truncated", "truncated_resized", "garbage", "garbage_framed", "runt",
               "nan_position", "inf_orientation", "nonunit_quaternion")
# kinds that send an extra bad datagram (counted, not delivered) vs a damaged frame (delivered untracked)
EXTRA_PACKET_KINDS = {"spoofed_source": "packets_foreign", "truncated": "packets_malformed",
                      "truncated_resized": "packets_malformed", "garbage": "packets_malformed",
                      "garbage_framed": "packets_malformed", "runt": "packets_malformed"}


def find_capture_dir() -> Path | None:
    """The capture folder in shared/ beside the repository (CI lays it there), else None."""
    repo = Path(__file__).resolve().parents[4]  # the checkout: src/gaze4hri_acq/gaze4hri_acq/testing/
    for base in (repo.parent / "shared", repo / "shared", Path("/work/shared")):
        d = base / "reference" / "reliability_data" / CAPTURE_NAME
        if (d / "traffic.pcapng").is_file():
            return d
    return None


@dataclass(frozen=True)
class CapturedPacket:
    t: float  # capture time (s)
    src: str
    sport: int
    dst: str
    dport: int
    payload: bytes

    @property
    def message_id(self) -> int:
        return struct.unpack_from("<H", self.payload)[0]


@functools.cache
def load_capture(path: Path) -> tuple[CapturedPacket, ...]:
    """Every UDP datagram of a pcapng capture (Ethernet link), via dpkt."""
    import dpkt

    out = []
    with open(path, "rb") as f:
        for ts, buf in dpkt.pcapng.Reader(f):
            ip = dpkt.ethernet.Ethernet(buf).data
            if isinstance(ip, dpkt.ip.IP) and isinstance(ip.data, dpkt.udp.UDP):
                u = ip.data
                out.append(CapturedPacket(ts, socket.inet_ntoa(ip.src), u.sport, socket.inet_ntoa(ip.dst), u.dport,
                                          bytes(u.data)))
    return tuple(out)


class MotiveCapture:
    """The capture's server replies and data frames (in capture order)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.packets = load_capture(folder / "traffic.pcapng")
        server = next(p for p in self.packets if p.message_id == NAT_SERVERINFO).src
        self.server_ip = server
        self.server_info = next(p for p in self.packets if p.message_id == NAT_SERVERINFO and p.sport == 1510).payload
        self.modeldef = next(p for p in self.packets if p.message_id == NAT_MODELDEF).payload
        self.frames = [p for p in self.packets if p.message_id == NAT_FRAMEOFDATA and p.src == server]


def rigid_bodies_v3(payload: bytes) -> list[tuple[int, int, tuple, tuple, float]]:
    """Independent decode of a NatNet 3.0 NAT_FRAMEOFDATA up to its rigid bodies (NatNet SDK
    3.0 PacketClient.cpp Unpack): frame number; marker sets (name, count, xyz each);
    other markers (count, xyz each); rigid bodies (id, xyz, qxyzw, mean error, params:
    38 bytes each since 3.0). Returns (offset, id, pos, quat, error) per body."""
    off = 8  # message header + frame number
    (nsets,) = struct.unpack_from("<I", payload, off)
    off += 4
    for _ in range(nsets):
        off = payload.index(b"\0", off) + 1
        (n,) = struct.unpack_from("<I", payload, off)
        off += 4 + 12 * n
    (n,) = struct.unpack_from("<I", payload, off)
    off += 4 + 12 * n
    (nrb,) = struct.unpack_from("<I", payload, off)
    off += 4
    out = []
    for _ in range(nrb):
        rid, x, y, z, qx, qy, qz, qw, err, _params = struct.unpack_from("<I3f4ffh", payload, off)
        out.append((off, rid, (x, y, z), (qx, qy, qz, qw), err))
        off += 38
    return out


def frame_number_v3(payload: bytes) -> int:
    return struct.unpack_from("<I", payload, 4)[0]


def with_pose(payload: bytes, pos=None, quat=None) -> bytes:
    """The frame with its first rigid body's position and/or quaternion overwritten (float32)."""
    b = bytearray(payload)
    off = rigid_bodies_v3(payload)[0][0]
    if pos is not None:
        struct.pack_into("<3f", b, off + 4, *pos)
    if quat is not None:
        struct.pack_into("<4f", b, off + 16, *quat)
    return bytes(b)


def fault_packet(kind: str, frame: bytes, seed: int = 20) -> bytes:
    """A bad datagram made from a real frame (the kinds in FAULT_KINDS)."""
    rng = np.random.default_rng(seed)
    if kind == "spoofed_source":  # a plausible frame, a pose far from the real one
        return with_pose(frame, pos=(9.5, 9.5, 9.5))
    if kind == "truncated":  # cut mid rigid body; the header keeps the full size
        return frame[: rigid_bodies_v3(frame)[0][0] + 10]
    if kind == "truncated_resized":  # cut, and the header's size made to match (the parser must fail)
        cut = frame[: rigid_bodies_v3(frame)[0][0] + 10]
        return struct.pack("<HH", NAT_FRAMEOFDATA, len(cut) - 4) + cut[4:]
    if kind == "garbage":
        return rng.integers(0, 256, 200, dtype=np.uint8).tobytes()
    if kind == "garbage_framed":  # a well-formed header over random bytes
        body = rng.integers(0, 256, len(frame) - 4, dtype=np.uint8).tobytes()
        return struct.pack("<HH", NAT_FRAMEOFDATA, len(body)) + body
    if kind == "runt":
        return frame[:3]
    if kind == "nan_position":
        return with_pose(frame, pos=(float("nan"), 1.0, 0.0))
    if kind == "inf_orientation":
        return with_pose(frame, quat=(0.0, float("inf"), 0.0, 1.0))
    if kind == "nonunit_quaternion":
        _, _, _, q, _ = rigid_bodies_v3(frame)[0]
        return with_pose(frame, quat=tuple(1.5 * v for v in q))
    raise ValueError(f"unknown fault kind {kind!r}; known: {', '.join(FAULT_KINDS)}")


def read_sample_client(path: Path) -> dict[int, dict]:
    """SampleClient_output.txt: FrameID -> {"pos", "quat" (first rigid body, Motive Y-up),
    "system_latency_ms"} as printed (2 decimals)."""
    out: dict[int, dict] = {}
    cur: dict | None = None
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("FrameID :"):
            cur = out.setdefault(int(line.split(":")[1]), {})
        elif cur is not None and line.startswith("System latency :"):
            cur["system_latency_ms"] = float(line.split(":")[1].split()[0])
        elif cur is not None and line.split() == ["x", "y", "z", "qx", "qy", "qz", "qw"] and "pos" not in cur:
            v = [float(x) for x in lines[i + 1].split()]
            cur["pos"], cur["quat"] = tuple(v[:3]), tuple(v[3:])
    return out


class CaptureReplayer:
    """Motive from a capture on 127.0.0.1: answers NAT_CONNECT and NAT_REQUEST_MODELDEF with
    the capture's own replies, sends frames (unicast) to the client's command socket from
    a second socket (Motive's data socket), and spoofed datagrams from 127.0.0.2."""

    def __init__(self, capture: MotiveCapture):
        self.capture = capture
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind((LOOPBACK, 0))
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.data_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.data_sock.bind((LOOPBACK, 0))
        self.spoof_sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.spoof_sock.bind((SPOOF_SOURCE, 0))
        self.client_addr: tuple[str, int] | None = None
        self.sent = 0  # datagrams sent to the client, from any socket
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(timeout=2)
        for s in (self.sock, self.data_sock, self.spoof_sock):
            s.close()

    def _serve(self) -> None:
        deadline = time.monotonic() + 300  # bounded: a replay never runs this long
        while not self._stop.is_set() and time.monotonic() < deadline:
            try:
                data, addr = self.sock.recvfrom(65536)
            except (TimeoutError, OSError):
                continue
            if len(data) < 4:
                continue
            mid = struct.unpack_from("<H", data)[0]
            reply = {NAT_CONNECT: self.capture.server_info, NAT_REQUEST_MODELDEF: self.capture.modeldef}.get(mid)
            if reply is not None:
                self.client_addr = addr
                with self._lock:
                    self.sock.sendto(reply, addr)
                    self.sent += 1

    def send(self, payload: bytes, spoofed: bool = False) -> None:
        assert self.client_addr is not None, "no client connected"
        with self._lock:
            (self.spoof_sock if spoofed else self.data_sock).sendto(payload, self.client_addr)
            self.sent += 1


@dataclass
class FaultOutcome:
    kind: str
    frame_number: int  # the genuine frame it was injected at
    survived: bool
    why: str = ""


@dataclass
class ReplayRun:
    frames: list  # MocapFrame, as delivered
    outcomes: list[FaultOutcome]
    counters: dict
    sent_frames: list[int]  # frame numbers delivered untouched (no fault at them)
    driver: object = None  # the NatNetMocap, closed (its counters stay readable)

    @property
    def survived(self) -> int:
        return sum(o.survived for o in self.outcomes)


def _wait(cond, timeout_s: float) -> bool:
    t_end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > t_end:
            return False
        time.sleep(0.001)
    return True


def replay_capture(capture: MotiveCapture, n_frames: int | None = None, speed: float = 10.0,
                   faults: dict[int, str] | None = None, sync_every: int = 32, timeout_s: float = 15.0) -> ReplayRun:
    """Replay the first ``n_frames`` frames into a real NatNetMocap (backend real,
    unicast, server 127.0.0.1) at ``speed`` x the captured rate; ``faults`` maps a frame
    index to a FAULT_KINDS entry injected there. Each injection is checked on its own:
    the right counter moves by one, nothing else does, the frame after it is delivered
    (an extra bad datagram is never delivered; a damaged frame is delivered untracked).
    The sender waits for the client to catch up every ``sync_every`` datagrams (the
    loopback socket buffer is finite), never on a fixed sleep."""
    from gaze4hri_core.device_config import MocapConfig

    from gaze4hri_acq.drivers.registry import make_mocap

    frames = capture.frames[: n_frames or len(capture.frames)]
    faults = dict(faults or {})
    delivered, outcomes, untouched = [], [], []
    with CaptureReplayer(capture) as rep:
        cfg = MocapConfig(server_ip=LOOPBACK, local_ip=LOOPBACK, command_port=rep.port, use_multicast=False,
                          bodies={"RaceQuad": "race_quad"}, rate_hz=120.0, connect_timeout_s=5.0)
        m = make_mocap("real", cfg)
        m.connect()
        try:
            def sync() -> bool:
                ok = _wait(lambda: m.counters["packets"] >= rep.sent, timeout_s)
                while (f := m.read(0.0)) is not None:
                    delivered.append(f)
                return ok

            since_sync, k = 0, 0
            while k < len(frames):
                if k > 0:
                    time.sleep(max(0.0, (frames[k].t - frames[k - 1].t) / speed))
                kind = faults.get(k)
                if kind is None:
                    rep.send(frames[k].payload)
                    untouched.append(frame_number_v3(frames[k].payload))
                    since_sync += 1
                    if since_sync >= sync_every:
                        sync()
                        since_sync = 0
                    k += 1
                    continue
                if not sync():
                    outcomes.append(FaultOutcome(kind, frame_number_v3(frames[k].payload), False,
                                                 "stream stalled before it"))
                    break
                c0, n0 = dict(m.counters), len(delivered)
                fn = frame_number_v3(frames[k].payload)
                if kind in EXTRA_PACKET_KINDS:  # bad datagram, then the genuine frame k
                    rep.send(fault_packet(kind, frames[k].payload), spoofed=kind == "spoofed_source")
                    rep.send(frames[k].payload)
                    want = [(fn, True)]
                    untouched.append(fn)
                    k += 1
                else:  # frame k damaged, then the genuine frame k + 1
                    rep.send(fault_packet(kind, frames[k].payload))
                    want = [(fn, False)]
                    if k + 1 < len(frames):
                        rep.send(frames[k + 1].payload)
                        want.append((frame_number_v3(frames[k + 1].payload), True))
                        untouched.append(want[-1][0])
                    k += len(want)
                ok = sync()
                got = [(f.frame_number, f.bodies["race_quad"].tracking_valid) for f in delivered[n0:]]
                delta = {key: v - c0[key] for key, v in m.counters.items() if v != c0[key]}
                expect = {"packets": len(want) + (kind in EXTRA_PACKET_KINDS), "frames_received": len(want)}
                if kind in EXTRA_PACKET_KINDS:
                    expect[EXTRA_PACKET_KINDS[kind]] = 1
                else:
                    expect.update(poses_invalid=1, poses_untracked=1)
                good = ok and got == want and delta == expect
                why = "" if good else f"delivered {got} (want {want}), counters moved {delta} (want {expect})"
                outcomes.append(FaultOutcome(kind, fn, good, why))
            sync()
        finally:
            m.close()
    return ReplayRun(delivered, outcomes, dict(m.counters), untouched, m)
