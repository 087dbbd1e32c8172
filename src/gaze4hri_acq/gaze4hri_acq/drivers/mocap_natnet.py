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
"""
from __future__ import annotations

import threading
from collections import deque

import numpy as np
from gaze4hri_core.device_config import MocapConfig
from gaze4hri_core.devices import DeviceError, HostClock, MocapFrame, RigidBodySample
from gaze4hri_core.transforms import motive_yup_to_zup

__all__ = ["NatNetMocap", "ClockFrequencyEstimator"]

_DEVICE = "OptiTrack Motive (NatNet)"


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
        if self._first is None:
            self._first = (timestamp_s, ticks)
            return self.hz
        dt = timestamp_s - self._first[0]
        if dt > 0:
            self.hz = (ticks - self._first[1]) / dt
        return self.hz


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
        self.frames_received = 0
        self.frames_dropped = 0  # frame-number gaps
        self._last_fn: int | None = None

    @property
    def address(self) -> str:
        c = self.config
        mode = f"multicast {c.multicast_address}:{c.data_port}" if c.use_multicast else "unicast"
        return f"{c.server_ip}:{c.command_port} ({mode}, local {c.local_ip})"

    @property
    def rigid_body_names(self) -> dict[int, str]:
        return dict(self._names)

    # ------------------------------------------------------------------ lifecycle
    def connect(self, timeout_s: float | None = None) -> None:
        timeout_s = self.config.connect_timeout_s if timeout_s is None else timeout_s
        try:
            from natnet import NatNetClient
            from natnet.exceptions import NatNetError
        except ImportError as e:  # pragma: no cover - the venv has it
            raise DeviceError(_DEVICE, self.address, f"the 'natnet' package is missing ({e})", "pip install natnet==0.3.*") from None
        c = self.config
        client = NatNetClient(server_ip_address=c.server_ip, local_ip_address=c.local_ip, multicast_address=c.multicast_address,
                              command_port=c.command_port, data_port=c.data_port, use_multicast=c.use_multicast)
        client.on_data_description_received_event.handlers.append(self._on_modeldef)
        client.on_data_frame_received_event.handlers.append(self._on_frame)
        try:
            client.connect(timeout=timeout_s)
        except TimeoutError:
            raise DeviceError(_DEVICE, self.address, f"no server info reply within {timeout_s:.1f} s",
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
            if hz:
                latency_ns = max(0, int((suf.stamp_transmit - suf.stamp_camera_mid_exposure) / hz * 1e9))
        fn = int(frame.prefix.frame_number)
        if self._last_fn is not None and fn > self._last_fn + 1:
            self.frames_dropped += fn - self._last_fn - 1
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
        valid = bool(rb.tracking_valid) if rb.tracking_valid is not None else True
        p = np.asarray(rb.pos, float) * self.config.units_m
        q = np.asarray(rb.rot, float)
        if not valid or not np.all(np.isfinite(q)) or np.linalg.norm(q) < 1e-9:
            return RigidBodySample(name, int(rb.id_num), p, np.array([0.0, 0.0, 0.0, 1.0]), False,
                                   float(rb.marker_error) if rb.marker_error is not None else float("nan"))
        if self.config.up_axis == "y":
            p, q = motive_yup_to_zup(p, q)
        else:
            q = q / np.linalg.norm(q)
        return RigidBodySample(name, int(rb.id_num), p, q, True,
                               float(rb.marker_error) * self.config.units_m if rb.marker_error is not None else float("nan"))

    # ------------------------------------------------------------------ reading
    def read(self, timeout_s: float = 0.1) -> MocapFrame | None:
        with self._cv:
            if not self._frames:
                self._cv.wait(timeout_s)
            return self._frames.popleft() if self._frames else None
