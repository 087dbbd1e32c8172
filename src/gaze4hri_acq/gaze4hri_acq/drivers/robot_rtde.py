"""UR robot backend on ur_rtde (RTDEReceiveInterface for state at the RTDE rate,
RTDEControlInterface for motion): CB3 streams at 125 Hz, e-Series at 500 Hz.

- Connection: ur_rtde's constructors hang (holding the GIL, so a thread cannot time
  them out) when a port accepts but never answers. ``probe_rtde`` first speaks the
  RTDE handshake itself (RTDE_REQUEST_PROTOCOL_VERSION, Universal Robots "Real-Time
  Data Exchange (RTDE) Guide") with a socket timeout; only a controller that answers
  is handed to ur_rtde. A refusal or silence is a one-line DeviceError.
- Time: getTimestamp() is controller uptime (s). ``ClockMapper`` maps it to host ns
  with the offset of the least-delayed (host_before, ctrl, host_after) sample
  (Cristian's algorithm, Distributed Computing 3(3), 1989); the offset is re-estimated
  when the mapped stamps drift from the host clock by more than ``max_clock_drift_ms``.
- Motion: movePath with movel entries (or movep, the constant-tool-speed move, for
  line scans and the arc), previewed by the SafetyMonitor before anything is sent;
  a watchdog thread checks the monitor at the RTDE rate during motion and calls
  stopL on STOP. Poses are tool0 in the controller Base frame (the TCP offset is set
  to zero at connect).
"""
from __future__ import annotations

import socket
import struct
import threading
import time

import numpy as np
from gaze4hri_core.device_config import RobotConfig
from gaze4hri_core.devices import DeviceError, HostClock, MotionRefused, RobotState
from gaze4hri_core.safety import SafetyMonitor
from gaze4hri_core.trajectories import sample_path
from gaze4hri_core.transforms import SE3, se3_to_ur_pose, ur_pose_to_se3

__all__ = ["RtdeRobot", "ClockMapper", "probe_rtde", "build_path", "RTDE_PORT"]

_DEVICE = "UR robot (RTDE)"
RTDE_PORT = 30004
RTDE_REQUEST_PROTOCOL_VERSION = 86  # 'V'


def probe_rtde(host: str, port: int = RTDE_PORT, timeout_s: float = 2.0, protocol: int = 2) -> None:
    """Check that an RTDE server answers the protocol-version request within ``timeout_s``."""
    where = f"{host}:{port}"
    try:
        s = socket.create_connection((host, port), timeout=timeout_s)
    except ConnectionRefusedError:
        raise DeviceError(_DEVICE, where, "connection refused", "power on the controller, check the robot IP and that RTDE is enabled") from None
    except (TimeoutError, OSError) as e:
        raise DeviceError(_DEVICE, where, f"cannot connect ({e.__class__.__name__})", "check the network cable, the robot IP and the subnet") from None
    try:
        s.settimeout(timeout_s)
        s.sendall(struct.pack(">HBH", 5, RTDE_REQUEST_PROTOCOL_VERSION, protocol))
        head = b""
        t_end = time.monotonic() + timeout_s
        while len(head) < 4 and time.monotonic() < t_end:
            chunk = s.recv(4 - len(head))
            if not chunk:
                break
            head += chunk
    except (TimeoutError, OSError):
        head = b""
    finally:
        s.close()
    if len(head) < 4:
        raise DeviceError(_DEVICE, where, f"the port accepts but RTDE does not answer within {timeout_s:.1f} s",
                          "another program may hold the controller, or this is not a UR controller; restart the controller's program")
    size, kind, accepted = struct.unpack(">HBB", head)
    if kind != RTDE_REQUEST_PROTOCOL_VERSION or not accepted:
        raise DeviceError(_DEVICE, where, f"RTDE protocol {protocol} not accepted (reply type {kind}, accepted {accepted})",
                          "update the controller software (CB3 >= 3.4 or e-Series) or ur_rtde")


class ClockMapper:
    """Controller uptime (s) -> host time (ns) by the least-delayed exchange."""

    def __init__(self, max_drift_ms: float = 5.0):
        self.max_drift_ns = max_drift_ms * 1e6
        self.offset_ns: int | None = None
        self.rtt_ns: int | None = None
        self.reestimates = 0

    def add(self, host_before_ns: int, ctrl_s: float, host_after_ns: int) -> None:
        # integer ns throughout: a float64 near 1.7e18 ns resolves only 256 ns
        rtt = int(host_after_ns) - int(host_before_ns)
        off = (int(host_before_ns) + int(host_after_ns)) // 2 - int(round(ctrl_s * 1e9))
        if self.rtt_ns is None or rtt < self.rtt_ns:
            self.rtt_ns, self.offset_ns = rtt, off

    def to_host_ns(self, ctrl_s: float) -> int:
        if self.offset_ns is None:
            raise RuntimeError("ClockMapper: no sample yet")
        return int(round(ctrl_s * 1e9)) + self.offset_ns

    def check(self, host_now_ns: int, ctrl_s: float) -> bool:
        """True if the mapping still holds (the newest state cannot lie in the future,
        nor further in the past than the drift bound plus a state period)."""
        d = host_now_ns - self.to_host_ns(ctrl_s)
        return -self.max_drift_ns <= d <= self.max_drift_ns + 10e6

    def reset(self) -> None:
        self.offset_ns = self.rtt_ns = None
        self.reestimates += 1


def build_path(waypoints: list[SE3], speed: float, accel: float, blend: float = 0.0, constant_speed: bool = False):
    """An ur_rtde Path of movel (or movep) entries through Base-frame tool0 poses; the
    last entry has zero blend so the robot stops on it. ``path.toScriptCode()`` is the
    URScript the controller runs."""
    from rtde_control import Path, PathEntry

    p = Path()
    kind = PathEntry.MoveP if constant_speed else PathEntry.MoveL
    for i, T in enumerate(waypoints):
        r = blend if i < len(waypoints) - 1 else 0.0
        p.addEntry(PathEntry(kind, PathEntry.PositionTcpPose, [*se3_to_ur_pose(T), float(speed), float(accel), float(r)]))
    return p


class RtdeRobot:
    """RobotDriver for backend:=real."""

    def __init__(self, config: RobotConfig, safety: SafetyMonitor, clock=None, port: int = RTDE_PORT):
        self.config = config
        self.model = config.model
        self.rate_hz = config.state_rate_hz
        self.safety = safety
        self.clock = clock or HostClock()
        self.port = port
        self.clock_map = ClockMapper(config.max_clock_drift_ms)
        self._rx = None
        self._ctl = None
        self._lock = threading.RLock()
        self._watch: threading.Thread | None = None
        self._stop_watch = threading.Event()
        self._moving = False
        self._commanded_speed = 0.0
        self.stop_reason: str | None = None
        self.log: list[tuple[int, float, float]] = []  # (stamp, commanded, measured TCP speed) during motions

    # ------------------------------------------------------------------ lifecycle
    def connect(self, timeout_s: float | None = None) -> None:
        timeout_s = self.config.connect_timeout_s if timeout_s is None else timeout_s
        host = self.config.host
        probe_rtde(host, self.port, timeout_s)
        try:
            import rtde_control
            import rtde_receive
        except ImportError as e:
            raise DeviceError(_DEVICE, host, f"ur_rtde does not import ({e})", "pip install ur-rtde==1.6.*") from None
        try:
            self._rx = rtde_receive.RTDEReceiveInterface(host, self.rate_hz)
            if not self.config.read_only:
                self._ctl = rtde_control.RTDEControlInterface(host, self.rate_hz)
        except RuntimeError as e:
            self.close()
            raise DeviceError(_DEVICE, f"{host}:{self.port}", f"ur_rtde could not connect ({str(e).splitlines()[0]})",
                              "put the robot in remote control mode and release any protective stop") from None
        if self._ctl is not None:
            self._ctl.setTcp([0.0] * 6)  # poses are tool0 (the calibration's hand-eye is relative to tool0)
        self._estimate_offset()
        self._stop_watch.clear()
        self._watch = threading.Thread(target=self._watchdog, name="rtde-safety", daemon=True)
        self._watch.start()

    def _estimate_offset(self, n: int = 20) -> None:
        for _ in range(n):
            a = self.clock.now_ns()
            c = float(self._rx.getTimestamp())
            b = self.clock.now_ns()
            self.clock_map.add(a, c, b)
            time.sleep(1.0 / self.rate_hz)

    def close(self) -> None:
        self._stop_watch.set()
        if self._watch is not None and self._watch is not threading.current_thread():
            self._watch.join(timeout=2)
        self._watch = None
        if self._ctl is not None:
            try:
                self._ctl.stopScript()
                self._ctl.disconnect()
            except RuntimeError:
                pass
        if self._rx is not None:
            try:
                self._rx.disconnect()
            except RuntimeError:
                pass
        self._ctl = self._rx = None

    # ------------------------------------------------------------------ state
    def _need(self, control: bool = False):
        if self._rx is None:
            raise DeviceError(_DEVICE, self.config.host, "not connected", "call connect() first (lifecycle configure)")
        if control and self._ctl is None:
            raise DeviceError(_DEVICE, self.config.host, "connected read-only: motions are disabled", "set read_only:=false to move the robot")

    def state(self) -> RobotState:
        self._need()
        rx = self._rx
        ctrl_s = float(rx.getTimestamp())
        now = self.clock.now_ns()
        if not self.clock_map.check(now, ctrl_s):
            self.clock_map.reset()
            self._estimate_offset(5)
        T = ur_pose_to_se3(rx.getActualTCPPose())
        moving = self.is_moving()
        return RobotState(
            stamp_ns=self.clock_map.to_host_ns(ctrl_s), q=np.asarray(rx.getActualQ(), float), qd=np.asarray(rx.getActualQd(), float),
            T_base_tool0=T, tcp_speed=np.asarray(rx.getActualTCPSpeed(), float), speed_scaling=float(rx.getSpeedScaling()),
            protective_stop=bool(rx.isProtectiveStopped()), connected=bool(rx.isConnected()), moving=moving,
            controller_time_s=ctrl_s, stop_reason=self.stop_reason, commanded_speed=self._commanded_speed if moving else 0.0,
        )

    def is_moving(self) -> bool:
        self._need()
        if self._ctl is None:
            return bool(np.linalg.norm(np.asarray(self._rx.getActualTCPSpeed(), float)[:3]) > 1e-3)
        with self._lock:
            if self._moving and self._ctl.getAsyncOperationProgress() < 0:
                self._moving = False
            return self._moving

    def _watchdog(self) -> None:
        """Safety at the RTDE rate: STOP -> stopL, reason kept in the state."""
        period = 1.0 / self.rate_hz
        while not self._stop_watch.wait(period):
            try:
                if self._rx is None or not self._moving:
                    continue
                now = self.clock.now_ns()
                T = ur_pose_to_se3(self._rx.getActualTCPPose())
                v = float(np.linalg.norm(np.asarray(self._rx.getActualTCPSpeed(), float)[:3]))
                self.log.append((now, self._commanded_speed, v))
                if self._rx.isProtectiveStopped():
                    self.stop_reason = "protective stop"
                    self._moving = False
                    continue
                verdict = self.safety.check(now, T, v, moving=True)
                if not verdict:
                    self.stop(reason=f"safety stop: {verdict.reason}")
            except RuntimeError as e:
                self.stop_reason = f"connection lost: {e}"
                self._moving = False

    # ------------------------------------------------------------------ motion
    def _preview(self, waypoints: list[SE3], speed: float, accel: float) -> None:
        if self.safety.operator_stop is not None:
            raise MotionRefused(f"operator stop active ({self.safety.operator_stop}); clear it first", _DEVICE)
        if self._rx.isProtectiveStopped():
            raise MotionRefused("the robot is in a protective stop; unlock it on the teach pendant first", _DEVICE)
        start = ur_pose_to_se3(self._rx.getActualTCPPose())
        q0 = np.asarray(self._rx.getActualQ(), float)
        t, poses, _, _ = sample_path([start, *waypoints], speed, accel, 50.0)
        verdict, _ = self.safety.preview(t, poses, q0, speed, accel, now_ns=self.clock.now_ns())
        if not verdict:
            raise MotionRefused(verdict.reason or "refused", _DEVICE)

    def move_linear(self, waypoints: list[SE3], speed: float, accel: float, blend: float = 0.0, constant_speed: bool = False) -> None:
        self._need(control=True)
        with self._lock:
            self._preview(list(waypoints), speed, accel)
            path = build_path(list(waypoints), speed, accel, blend, constant_speed)
            self.stop_reason = None
            self._commanded_speed = float(speed)
            if not self._ctl.movePath(path, True):
                raise DeviceError(_DEVICE, self.config.host, "the controller rejected the path", "check the robot is in remote control and not stopped")
            self._moving = True

    def move_joints(self, q: np.ndarray, speed: float, accel: float) -> None:
        self._need(control=True)
        from gaze4hri_core import kinematics

        with self._lock:
            T = kinematics.forward(q, self.model)
            self._preview([SE3(T[:3, :3], T[:3, 3])], min(self.safety.limits.max_tcp_speed, 0.25), min(accel, self.safety.limits.max_tcp_accel))
            if speed > self.safety.limits.max_joint_speed:
                raise MotionRefused(f"joint speed {speed:.2f} rad/s above {self.safety.limits.max_joint_speed:.2f}", _DEVICE)
            self.stop_reason = None
            self._commanded_speed = 0.0
            self._ctl.moveJ([float(x) for x in q], float(speed), float(accel), True)
            self._moving = True

    def stop(self, decel: float = 2.0, reason: str | None = None) -> None:
        if self._ctl is None:
            return
        with self._lock:
            self._ctl.stopL(float(decel), False)
            self._moving = False
            if reason is not None:
                self.stop_reason = reason
