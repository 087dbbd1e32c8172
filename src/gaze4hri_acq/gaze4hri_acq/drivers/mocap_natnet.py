"""OptiTrack Motive backend on the ``natnet`` package (NatNet 3/4; it parses the real
packets): rigid bodies in the world frame, Z-up (REP-103), exposure time mapped to
the host clock, tracking validity kept.

Time: NatNet 3+ frames carry the camera mid-exposure and transmit stamps in Motive's
high-resolution clock ticks (NatNet SDK, "Latency measurements"). The exposure-to-
transmit latency (transmit - mid_exposure) / f is subtracted from the host arrival
time; f comes from ``clock_frequency_hz`` or is estimated from the frames' own
timestamps (ticks vs seconds over the stream). Network transit (< 1 ms on a LAN) is
not removed. Axes: Motive streams Y-up by default; ``up_axis='y'`` converts once with
``gaze4hri_core.transforms.motive_yup_to_zup``.

Faults survived (issue 20): datagrams from any address but ``server_ip`` are dropped
and counted; a truncated or malformed packet is counted and skipped without ending
the receive thread; a non-finite pose or a non-unit quaternion is untracked. The
counters (``counters``) go to the mocap node's /diagnostics.
"""
from __future__ import annotations

import functools
import math
import socket
import threading
import time
from collections import deque

import numpy as np
from gaze4hri_core.device_config import MocapConfig
from gaze4hri_core.devices import DeviceError, HostClock, MocapFrame, RigidBodySample
from gaze4hri_core.transforms import motive_yup_to_zup

__all__ = ["NatNetMocap", "ClockFrequencyEstimator", "PacketGuard", "QUAT_NORM_TOL"]

_DEVICE = "OptiTrack Motive (NatNet)"
# |1 - |q|| above which a quaternion is corrupt: Motive sends float32 unit quaternions
# (norm error ~1e-7), so 1e-3 passes every real one and catches damaged values.
QUAT_NORM_TOL = 1e-3


class ClockFrequencyEstimator:
    """Ticks per second of Motive's clock from (timestamp_s, mid_exposure_ticks) pairs:
    the slope between the first frame and the latest, so precision grows with time."""

    def __init__(self, fixed_hz: float | None = None):
        self.fixed = fixed_hz
        self._first: tuple[float, int] | None = None
        self.hz: float | None = fixed_hz

    def add(self, timestamp_s: float, ticks: int) -> float | None:
        if self.fixed is not None:
            return self.fixed
        if not math.isfinite(timestamp_s):  # a damaged frame must not poison the slope
            return self.hz
        if self._first is None:
            self._first = (timestamp_s, ticks)
            return self.hz
        dt = timestamp_s - self._first[0]
        if dt > 0:
            self.hz = (ticks - self._first[1]) / dt
        return self.hz


class PacketGuard:
    """What the receive threads saw and dropped: datagrams, foreign sources, malformed
    packets (thread-safe: natnet runs one thread per socket)."""

    def __init__(self, server_ip: str):
        self.server_ip = server_ip
        self.packets = 0
        self.foreign = 0
        self.malformed = 0
        self.last_fault: str | None = None
        self._lock = threading.Lock()

    def seen(self) -> None:
        """One datagram handled (kept or dropped)."""
        with self._lock:
            self.packets += 1

    def drop_foreign(self, addr) -> None:
        with self._lock:
            self.foreign += 1
            self.last_fault = f"dropped a datagram from {addr[0]}:{addr[1]} (not the server {self.server_ip})"

    def drop_malformed(self, addr, why: str) -> None:
        with self._lock:
            self.malformed += 1
            self.last_fault = f"skipped a malformed packet from {addr[0]}:{addr[1]}: {why}"


@functools.cache
def _guarded_client_class():
    """A ``natnet.NatNetClient`` whose per-datagram step filters by source and survives bad
    packets.

    natnet 0.3.0 (nat_net_client.py, ``NatNetClient.__process_socket``) is the only place
    that sees the sender address of a datagram, and it discards it; a parse error there
    ends the socket thread (``__socket_thread_func`` has no handler). That private method
    (name-mangled ``_NatNetClient__process_socket``) is the narrowest seam, so it is
    replaced; parsing stays the library's ``__process_message``.
    """
    from natnet import NatNetClient
    from natnet.packet_buffer import PacketBuffer

    for name in ("_NatNetClient__process_socket", "_NatNetClient__process_message"):
        if not hasattr(NatNetClient, name):  # pragma: no cover - natnet is pinned
            raise DeviceError(_DEVICE, "natnet", f"the installed 'natnet' has no {name} (the guarded seam)",
                              "pip install natnet==0.3.0 (requirements/base.txt)")

    class GuardedNatNetClient(NatNetClient):
        def __init__(self, *args, guard: PacketGuard, **kw):
            super().__init__(*args, **kw)
            self.guard = guard

        def _NatNetClient__process_socket(self, in_socket, recv_buffer_size: int = 64 * 1024,
                                          send_keep_alive: bool = False) -> bool:
            g = self.guard
            if send_keep_alive:
                try:
                    self.send_request(self.NAT_KEEPALIVE)
                except OSError as e:  # e.g. the network is down: keep listening
                    g.last_fault = f"keep-alive not sent: {e}"
            try:
                data, addr = in_socket.recvfrom(recv_buffer_size)
            except (TimeoutError, BlockingIOError):
                return False
            except OSError as e:  # not a timeout: note it and back off instead of spinning
                g.last_fault = f"receive failed: {e}"
                time.sleep(0.01)
                return False
            if not data:
                return False
            try:
                self._guarded_message(data, addr)
            finally:
                g.seen()  # after the handling, so a reader of ``packets`` sees its effects
            return True

        def _guarded_message(self, data: bytes, addr) -> None:
            g = self.guard
            if addr[0] != g.server_ip:
                g.drop_foreign(addr)
                return
            # NatNetTypes.h sPacket: uint16 iMessage, uint16 nDataBytes, payload; natnet
            # only prints a warning on a size mismatch and parses garbage on.
            size = int.from_bytes(data[2:4], "little") if len(data) >= 4 else None
            if size != len(data) - 4:
                g.drop_malformed(addr, f"{len(data)} bytes, header says {size} + 4")
                return
            try:
                self._NatNetClient__process_message(PacketBuffer(data))
            except Exception as e:  # noqa: BLE001 - any parse error: skip the packet, keep the thread
                g.drop_malformed(addr, f"message {int.from_bytes(data[:2], 'little')}: {type(e).__name__}: {e}")

    return GuardedNatNetClient


class NatNetMocap:
    """MocapDriver for backend:=real. ``read`` returns frames in arrival order."""

    def __init__(self, config: MocapConfig, clock=None, queue_len: int = 2000):
        self.config = config
        self.rate_hz = config.rate_hz
        self.clock = clock or HostClock()
        self._client = None
        self._names: dict[int, str] = {}
        self._have_modeldef = threading.Event()
        self._frames: deque[MocapFrame] = deque(maxlen=queue_len)
        self._cv = threading.Condition()
        self._freq = ClockFrequencyEstimator(config.clock_frequency_hz)
        self.guard = PacketGuard(config.server_ip)
        self.frames_received = 0
        self.frames_missed = 0  # frame-number gaps (lost on the wire or skipped as malformed)
        self.poses_untracked = 0  # poses delivered untracked: Motive's untracked ones plus poses_invalid
        self.poses_invalid = 0  # reported tracked, but non-finite or a non-unit quaternion: untracked
        self._last_fn: int | None = None

    @property
    def address(self) -> str:
        c = self.config
        mode = f"multicast {c.multicast_address}:{c.data_port}" if c.use_multicast else "unicast"
        return f"{c.server_ip}:{c.command_port} ({mode}, local {c.local_ip})"

    @property
    def rigid_body_names(self) -> dict[int, str]:
        return dict(self._names)

    @property
    def counters(self) -> dict[str, int]:
        """Stream health for /diagnostics: datagrams seen, frames delivered, frame-number
        gaps, datagrams dropped from a foreign source, malformed packets skipped, poses
        delivered untracked (all of them: Motive's own and the rejected ones), and of those
        the poses rejected as non-finite / non-unit."""
        g = self.guard
        return {"packets": g.packets, "frames_received": self.frames_received, "frames_missed": self.frames_missed,
                "packets_foreign": g.foreign, "packets_malformed": g.malformed,
                "poses_untracked": self.poses_untracked, "poses_invalid": self.poses_invalid}

    @property
    def last_fault(self) -> str | None:
        return self.guard.last_fault

    # ------------------------------------------------------------------ lifecycle
    def connect(self, timeout_s: float | None = None) -> None:
        timeout_s = self.config.connect_timeout_s if timeout_s is None else timeout_s
        try:
            from natnet.exceptions import NatNetError
        except ImportError as e:  # pragma: no cover - the venv has it
            raise DeviceError(_DEVICE, self.address, f"the 'natnet' package is missing ({e})",
                              "pip install 'natnet==0.3.*'") from None
        c = self.config
        try:
            self.guard.server_ip = socket.gethostbyname(c.server_ip)
        except OSError:
            raise DeviceError(_DEVICE, self.address, f"cannot resolve server_ip {c.server_ip!r}",
                              "set motive_ip / server_ip to the Motive PC's IPv4 address") from None
        client = _guarded_client_class()(server_ip_address=self.guard.server_ip, local_ip_address=c.local_ip,
                                         multicast_address=c.multicast_address, command_port=c.command_port,
                                         data_port=c.data_port, use_multicast=c.use_multicast, guard=self.guard)
        client.on_data_description_received_event.handlers.append(self._on_modeldef)
        client.on_data_frame_received_event.handlers.append(self._on_frame)
        try:
            client.connect(timeout=timeout_s)
        except TimeoutError:
            g = self.guard
            foreign = f" ({g.foreign} from elsewhere dropped, last: {g.last_fault})" if g.foreign else ""
            raise DeviceError(_DEVICE, self.address, f"no server info reply within {timeout_s:.1f} s{foreign}",
                              "start Motive, enable Streaming ('Broadcast Frame Data'), match unicast/multicast "
                              "and check server_ip / local_ip") from None
        except (OSError, NatNetError) as e:
            raise DeviceError(_DEVICE, self.address, f"cannot open the NatNet sockets ({str(e).splitlines()[0]})",
                              "check local_ip is an address of this PC and the ports are free") from None
        self._client = client
        client.run_async()
        client.request_modeldef()
        if not self._have_modeldef.wait(timeout_s):
            self.close()
            raise DeviceError(_DEVICE, self.address, f"no model definitions within {timeout_s:.1f} s",
                              "in Motive's streaming pane enable Rigid Bodies; check the firewall for UDP 1510/1511")

    def close(self) -> None:
        if self._client is not None:
            try:
                self._client.shutdown()
            finally:
                self._client = None

    # ------------------------------------------------------------------ callbacks
    def _on_modeldef(self, descs) -> None:
        for rb in descs.rigid_bodies:
            name = rb.name if rb.name is not None else f"rb{rb.id_num}"
            self._names[int(rb.id_num)] = self.config.bodies.get(name, name)
        self._have_modeldef.set()

    def _on_frame(self, frame) -> None:
        host_ns = self.clock.now_ns()
        suf = frame.suffix
        latency_ns = 0
        if suf.stamp_camera_mid_exposure is not None and suf.stamp_transmit is not None:
            hz = self._freq.add(float(suf.timestamp), int(suf.stamp_camera_mid_exposure))
            if hz is not None and math.isfinite(hz) and hz > 0:
                latency_ns = max(0, int((suf.stamp_transmit - suf.stamp_camera_mid_exposure) / hz * 1e9))
        fn = int(frame.prefix.frame_number)
        if self._last_fn is not None and fn > self._last_fn + 1:
            self.frames_missed += fn - self._last_fn - 1
        self._last_fn = fn
        bodies = {}
        for rb in frame.rigid_bodies or ():
            name = self._names.get(int(rb.id_num), f"rb{rb.id_num}")
            bodies[name] = self._convert(name, rb)
        mf = MocapFrame(host_ns - latency_ns, fn, bodies, latency_ns)
        with self._cv:
            self._frames.append(mf)
            self.frames_received += 1
            self._cv.notify_all()

    def _convert(self, name: str, rb) -> RigidBodySample:
        """Motive's pose to ours; untracked (zeros, identity) when Motive says so or when
        the values cannot be a pose (NaN / inf, a quaternion off unit norm)."""
        valid = bool(rb.tracking_valid) if rb.tracking_valid is not None else True
        p = np.asarray(rb.pos, float) * self.config.units_m
        q = np.asarray(rb.rot, float)
        err = float(rb.marker_error) * self.config.units_m if rb.marker_error is not None else float("nan")
        if valid:
            finite = bool(np.all(np.isfinite(p)) and np.all(np.isfinite(q)))
            if not finite or abs(float(np.linalg.norm(q)) - 1.0) > QUAT_NORM_TOL:
                self.poses_invalid += 1
                valid = False
        if not valid:
            self.poses_untracked += 1
            return RigidBodySample(name, int(rb.id_num), np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]), False, err)
        if self.config.up_axis == "y":
            p, q = motive_yup_to_zup(p, q)
        else:
            q = q / np.linalg.norm(q)
        return RigidBodySample(name, int(rb.id_num), p, q, True, err)

    # ------------------------------------------------------------------ reading
    def read(self, timeout_s: float = 0.1) -> MocapFrame | None:
        with self._cv:
            if not self._frames:
                self._cv.wait(timeout_s)
            return self._frames.popleft() if self._frames else None
