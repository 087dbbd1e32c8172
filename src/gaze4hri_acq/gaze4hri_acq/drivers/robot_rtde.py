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
- State: one RTDE data package per state. ur_rtde applies a package under one lock
  (RobotState::lockUpdateStateMutex, rtde.cpp receiveData) but its getters lock one
  field at a time, so ``_sample`` reads the timestamp before and after the getters
  and retries when it changed (a sequence lock): joints, pose, speeds and the
  protective-stop bit always belong to the timestamp they are stamped with.
- Motion: every motion is a linear move, previewed by the SafetyMonitor (the one
  monitor of the robot node, fed by it) before anything is sent: movePath with movel
  entries (or movep, the constant-tool-speed move, for line scans and the arc).
  ``move_joints`` runs as a movel to the forward-kinematics pose of the goal, refused
  when the goal lies in another arm configuration (a movej would swing the tool off
  the previewed line: 0.38 m/s against a 0.25 m/s limit, issue 20). A watchdog thread
  checks the monitor at the RTDE rate during motion, on the same one-package state,
  and calls stopL on STOP. Poses are tool0 in the controller Base frame (the TCP
  offset is set to zero at connect). Completion: the async-operation status word
  (op id, running bit) of rtde_control.script's write_async_progress_register.
"""
from __future__ import annotations

import socket
import struct
import threading
import time
from typing import NamedTuple

import numpy as np
from gaze4hri_core.device_config import RobotConfig
from gaze4hri_core.devices import DeviceError, HostClock, MotionRefused, RobotState
from gaze4hri_core.safety import SafetyMonitor, configuration_change, joint_goal_line
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
        raise DeviceError(_DEVICE, where, "connection refused",
                          "power on the controller, check the robot IP and that RTDE is enabled") from None
    except (TimeoutError, OSError) as e:
        raise DeviceError(_DEVICE, where, f"cannot connect ({e.__class__.__name__})",
                          "check the network cable, the robot IP and the subnet") from None
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
                          "another program may hold the controller, or this is not a UR controller; "
                          "restart the controller's program")
    size, kind, accepted = struct.unpack(">HBB", head)
    if kind != RTDE_REQUEST_PROTOCOL_VERSION or not accepted:
        raise DeviceError(_DEVICE, where,
                          f"RTDE protocol {protocol} not accepted (reply type {kind}, accepted {accepted})",
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
        entry = [*se3_to_ur_pose(T), float(speed), float(accel), float(r)]
        p.addEntry(PathEntry(kind, PathEntry.PositionTcpPose, entry))
    return p


class _Sample(NamedTuple):
    """The fields of one RTDE data package (controller time ``ctrl_s``)."""

    ctrl_s: float
    q: np.ndarray
    qd: np.ndarray
    pose: list
    tcp_speed: np.ndarray
    scaling: float
    pstop: bool


#: how long an asynchronous movePath may take to return (ur_rtde stops and re-uploads its control
#: script for a path, then waits for it to run with no time limit: a program that never starts
#: would hold the node for good; it returns within tens of ms otherwise)
PATH_SEND_S = 10.0
CLOSE_CALL_S = 10.0  # each of close()'s ur_rtde calls


def _within(seconds: float, call, *args) -> bool:
    """``call(*args)`` in a helper thread; False when it has not returned within ``seconds``
    (the thread stays blocked in ur_rtde's C++; the caller reports a device error). An
    exception of the call (ur_rtde's RuntimeError on a lost link) is raised here, as before."""
    out: list = []

    def run() -> None:
        try:
            out.append(bool(call(*args)))
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread
            out.append(e)

    t = threading.Thread(target=run, name="rtde-call", daemon=True)
    t.start()
    t.join(seconds)
    if out and isinstance(out[0], BaseException):
        raise out[0]
    return bool(out and out[0])


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
        self._op_id: int | None = None  # async operation id before the running move was sent
        self._sent_at = 0.0
        self._commanded_speed = 0.0
        self.stop_reason: str | None = None
        self.stop_code: str | None = None  # the stop's fault code (the monitor's verdict code, protective_stop, device)
        self.stopped_ns: int | None = None  # host time of the last stopL sent
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
            raise DeviceError(_DEVICE, host, f"ur_rtde does not import ({e})", "pip install 'ur-rtde==1.6.*'") from None
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
            c = float(self._rx.getTimestamp())  # one getter: the narrowest (host_before, host_after) window
            b = self.clock.now_ns()
            self.clock_map.add(a, c, b)
            time.sleep(1.0 / self.rate_hz)

    def close(self) -> None:
        self._stop_watch.set()
        if self._watch is not None and self._watch is not threading.current_thread():
            self._watch.join(timeout=2)
        self._watch = None
        # bounded: after a lost link ur_rtde's stopScript waits for the script to end and then
        # reconnects with no limit, which would hold the node's shutdown (and a test run) forever
        calls = [self._ctl.stopScript, self._ctl.disconnect] if self._ctl is not None else []
        if self._rx is not None:
            calls.append(self._rx.disconnect)
        for call in calls:
            try:
                _within(CLOSE_CALL_S, call)
            except RuntimeError:
                pass
        self._ctl = self._rx = None

    # ------------------------------------------------------------------ state
    def _need(self, control: bool = False):
        if self._rx is None:
            raise DeviceError(_DEVICE, self.config.host, "not connected", "call connect() first (lifecycle configure)")
        if control and self._ctl is None:
            raise DeviceError(_DEVICE, self.config.host, "connected read-only: motions are disabled",
                              "set read_only:=false to move the robot")

    def _sample(self, tries: int = 100) -> _Sample:
        """One package's fields: timestamp read before and after the getters, retried
        until unchanged (a package arrives every 2-8 ms; a read takes ~50 us)."""
        rx = self._rx
        for _ in range(tries):
            t0 = rx.getTimestamp()
            q, qd, pose = rx.getActualQ(), rx.getActualQd(), rx.getActualTCPPose()
            v, scaling, pstop = rx.getActualTCPSpeed(), rx.getSpeedScaling(), rx.isProtectiveStopped()
            if rx.getTimestamp() == t0:
                return _Sample(float(t0), np.asarray(q, float), np.asarray(qd, float), list(pose),
                               np.asarray(v, float), float(scaling), bool(pstop))
        raise DeviceError(_DEVICE, self.config.host, f"the state changed during each of {tries} reads",
                          "the host is overloaded; free CPU for the robot node")

    def state(self) -> RobotState:
        self._need()
        smp = self._sample()
        now = self.clock.now_ns()
        if not self.clock_map.check(now, smp.ctrl_s):
            self.clock_map.reset()
            self._estimate_offset(5)
        moving = self.is_moving()
        return RobotState(
            stamp_ns=self.clock_map.to_host_ns(smp.ctrl_s), q=smp.q, qd=smp.qd, T_base_tool0=ur_pose_to_se3(smp.pose),
            tcp_speed=smp.tcp_speed, speed_scaling=smp.scaling, protective_stop=smp.pstop,
            connected=bool(self._rx.isConnected()), moving=moving, controller_time_s=smp.ctrl_s,
            stop_reason=self.stop_reason, commanded_speed=self._commanded_speed if moving else 0.0,
        )

    def is_moving(self) -> bool:
        self._need()
        if self._ctl is None:
            return bool(np.linalg.norm(np.asarray(self._rx.getActualTCPSpeed(), float)[:3]) > 1e-3)
        with self._lock:
            if self._moving:
                st = self._ctl.getAsyncOperationProgressEx()
                started = st.operationId() != self._op_id or time.monotonic() - self._sent_at > 1.0
                if started and not st.isAsyncOperationRunning():
                    self._moving = False
            return self._moving

    def _watchdog(self) -> None:
        """Safety at the RTDE rate: STOP -> stopL, reason kept in the state."""
        period = 1.0 / self.rate_hz
        while not self._stop_watch.wait(period):
            try:
                if self._rx is None or not self._moving:
                    continue
                smp = self._sample()
                now = self.clock.now_ns()
                T = ur_pose_to_se3(smp.pose)
                v = float(np.linalg.norm(smp.tcp_speed[:3]))
                self.log.append((now, self._commanded_speed, v))
                if smp.pstop:
                    self.stop_reason, self.stop_code = "protective stop", "protective_stop"
                    self._moving = False
                    continue
                verdict = self.safety.check(now, T, v, moving=True)
                if not verdict:
                    self.stop_code = verdict.code
                    self.stop(reason=f"safety stop: {verdict.reason}", wait=False)
            except (RuntimeError, DeviceError) as e:
                self.stop_reason, self.stop_code = f"connection lost: {e}", "device"
                self._moving = False

    # ------------------------------------------------------------------ motion
    def _preview(self, waypoints: list[SE3], speed: float, accel: float, stops: bool = False) -> np.ndarray:
        """Refuse or pass the linear move from the current pose; returns its joint path
        (``stops``: blend 0, the tool at rest at every waypoint, as the controller runs it)."""
        if self.safety.operator_stop is not None:
            raise MotionRefused(f"operator stop active ({self.safety.operator_stop}); clear it first", _DEVICE)
        smp = self._sample()
        if smp.pstop:
            raise MotionRefused("the robot is in a protective stop; unlock it on the teach pendant first", _DEVICE)
        t, poses, _, _ = sample_path([ur_pose_to_se3(smp.pose), *waypoints], speed, accel, 50.0, stops=stops)
        verdict, qs = self.safety.preview(t, poses, smp.q, speed, accel, now_ns=self.clock.now_ns())
        if not verdict:
            raise MotionRefused(verdict.reason or "refused", _DEVICE)
        return qs

    def _send_path(self, path, speed: float) -> None:
        self.stop_reason = self.stop_code = None
        self._commanded_speed = float(speed)
        self._op_id = self._ctl.getAsyncOperationProgressEx().operationId()
        self._sent_at = time.monotonic()
        if not _within(PATH_SEND_S, self._ctl.movePath, path, True):
            raise DeviceError(_DEVICE, self.config.host, "the controller rejected the path, or did not restart the "
                              f"control script for it within {PATH_SEND_S:g} s",
                              "check the robot is in remote control and not stopped")
        self._moving = True

    def move_linear(self, waypoints: list[SE3], speed: float, accel: float, blend: float = 0.0,
                    constant_speed: bool = False) -> None:
        self._need(control=True)
        with self._lock:
            self._preview(list(waypoints), speed, accel, stops=blend == 0)
            self._send_path(build_path(list(waypoints), speed, accel, blend, constant_speed), speed)

    def move_joints(self, q: np.ndarray, speed: float, accel: float) -> None:
        """Reach joint goal ``q`` by a previewed linear move of tool0 to FK(q) at the TCP
        speed limit (safety.joint_goal_line, as the simulated controller does); refused when
        q is another arm configuration than the line ends in (movel keeps the start's)."""
        self._need(control=True)
        goal, why = joint_goal_line(q, speed, self.safety.limits, self.model)
        if goal is None:
            raise MotionRefused(why, _DEVICE)
        with self._lock:
            v, a = self.safety.limits.max_tcp_speed, min(accel, self.safety.limits.max_tcp_accel)
            why = configuration_change(self._preview([goal], v, a)[-1], q)
            if why:
                raise MotionRefused(why, _DEVICE)
            self._send_path(build_path([goal], v, a), v)

    def stop(self, decel: float = 2.0, reason: str | None = None, wait: bool = True) -> None:
        """stopL at ``decel`` (m/s^2); ``wait=False`` (the watchdog) returns at once while
        the controller decelerates (ur_rtde's asynchronous stopL)."""
        if self._ctl is None:
            return
        if reason is not None:
            self.stop_reason = reason
        self.stopped_ns = self.clock.now_ns()
        with self._lock:
            self._ctl.stopL(float(decel), not wait)
            self._moving = False
