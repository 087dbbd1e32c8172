"""The simulated UR arm: the core's UR5/UR5e kinematics, trapezoidal motions previewed
and safety-checked before they start, speed scaling, a safety monitor consulted at
the robot rate during motion, and injectable faults (protective stop, connection loss).

State is a function of simulated time: ``update(t)`` steps the active motion at the
RTDE rate up to ``t`` (checking safety at every tick), and a short history lets the
camera ask for the pose at a frame's stamp in the recent past.
"""
from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from gaze4hri_core.devices import DeviceError, MotionRefused, RobotState
from gaze4hri_core.safety import SafetyMonitor, configuration_change, joint_goal_line, se3_unchecked
from gaze4hri_core.trajectories import sample_path
from gaze4hri_core.transforms import SE3

from gaze4hri_core import kinematics

__all__ = ["SimArm", "HOME_Q"]

# Elbow-up configuration of the default rig near the front camera pose (rad).
HOME_Q = np.radians([-165.3, -69.3, 89.9, -29.0, 134.4, -95.9])


@dataclass
class _Motion:
    t: np.ndarray  # motion time of each sample (s)
    q: np.ndarray  # (N, 6) joint path
    v: np.ndarray  # commanded TCP speed per sample (m/s)
    duration: float
    tau: float = 0.0  # motion time reached (advances at speed_scaling x real time)
    name: str = "move"


def _segment(t: np.ndarray, x: float) -> tuple[int, float]:
    """Where ``x`` falls on the sample times ``t``: index j and weight w of the linear blend
    of samples j and j + 1 (w 0: sample j itself), clamped to the ends as np.interp."""
    if x <= t[0]:
        return 0, 0.0
    if x >= t[-1]:
        return len(t) - 1, 0.0
    j = int(np.searchsorted(t, x, side="right")) - 1
    return j, float((x - t[j]) / (t[j + 1] - t[j]))


class SimArm:
    def __init__(self, clock, monitor: SafetyMonitor, model: str = "ur5", rate_hz: float = 125.0, q0=None,
                 head_feed: Callable[[int], None] | None = None, preview_rate_hz: float = 50.0):
        self.clock = clock
        self.monitor = monitor
        self.model = model
        self.rate_hz = float(rate_hz)
        self.preview_rate_hz = preview_rate_hz
        self._head_feed = head_feed
        self._lock = threading.RLock()
        self._q = np.asarray(HOME_Q if q0 is None else q0, float).copy()
        self._qd = np.zeros(6)
        self._tcp_v = np.zeros(6)
        self._motion: _Motion | None = None
        self._t = clock.now_ns()
        self._hist: deque[tuple[int, np.ndarray]] = deque(maxlen=int(self.rate_hz * 4))
        self._hist.append((self._t, self._q.copy()))
        self._fk_cache: dict[bytes, np.ndarray] = {}
        self.speed_scaling = 1.0
        self.protective_stop = False
        self.connected = True
        self.stop_reason: str | None = None
        self.stop_code: str | None = None
        self._fault_pstop_ns: int | None = None
        self._fault_link_ns: int | None = None
        self.commanded_log: list[tuple[int, float, float]] = []  # (stamp, commanded, measured) during motions

    # ------------------------------------------------------------------ faults
    def inject_protective_stop(self, at_ns: int | None = None) -> None:
        self._fault_pstop_ns = self.clock.now_ns() if at_ns is None else int(at_ns)

    def inject_connection_loss(self, at_ns: int | None = None) -> None:
        self._fault_link_ns = self.clock.now_ns() if at_ns is None else int(at_ns)

    def unlock_protective_stop(self) -> None:
        with self._lock:
            self.update()
            self.protective_stop = False
            self._fault_pstop_ns = None
            self.stop_reason = self.stop_code = None

    def reconnect(self) -> None:
        with self._lock:
            self._fault_link_ns = None
            self.connected = True
            self.stop_reason = self.stop_code = None

    # ------------------------------------------------------------------ time
    def _halt(self, reason: str | None, code: str | None = None) -> None:
        self.stop_code = code  # the stop's fault code, as the real driver reports it (RtdeRobot.stop_code)
        self._motion = None
        self._qd[:] = 0
        self._tcp_v[:] = 0
        if reason is not None:
            self.stop_reason = reason

    def update(self, t_ns: int | None = None) -> None:
        """Advance the arm to simulated time ``t_ns`` (default now)."""
        with self._lock:
            t_ns = self.clock.now_ns() if t_ns is None else int(t_ns)
            if t_ns <= self._t:
                return
            dt_ns = int(1e9 / self.rate_hz)
            while self._t < t_ns:
                t_next = min(self._t + dt_ns, t_ns) if self._motion is not None else t_ns
                self._tick(t_next)
            if self._head_feed is not None:
                self._head_feed(t_ns)

    def _tick(self, t: int) -> None:
        dt = (t - self._t) * 1e-9
        self._t = t
        if self._fault_link_ns is not None and t >= self._fault_link_ns and self.connected:
            self.connected = False
            self._halt("connection lost (simulated): the controller stopped the program", "device")
        if self._fault_pstop_ns is not None and t >= self._fault_pstop_ns and not self.protective_stop:
            self.protective_stop = True
            self._halt("protective stop (simulated)", "protective_stop")
        m = self._motion
        if m is not None:
            if self._head_feed is not None:
                self._head_feed(t)
            m.tau = min(m.tau + dt * self.speed_scaling, m.duration)
            j, w = _segment(m.t, m.tau)
            q_new = m.q[j] + w * (m.q[j + 1] - m.q[j]) if w else m.q[j].copy()
            T_old = self._forward(self._q)
            T_new = self._forward(q_new)
            self._qd = (q_new - self._q) / dt if dt > 0 else np.zeros(6)
            v_lin = (T_new[:3, 3] - T_old[:3, 3]) / dt if dt > 0 else np.zeros(3)
            self._tcp_v = np.concatenate([v_lin, np.zeros(3)])
            self._q = q_new
            v_cmd = float(m.v[j] + w * (m.v[j + 1] - m.v[j]) if w else m.v[j]) * self.speed_scaling
            speed = math.hypot(*v_lin.tolist())
            self.commanded_log.append((t, v_cmd, speed))
            verdict = self.monitor.check(t, se3_unchecked(T_new[:3, :3], T_new[:3, 3]), speed, moving=True)
            if not verdict:
                self._halt(f"safety stop: {verdict.reason}", verdict.code)
            elif m.tau >= m.duration:
                self._halt(None)
        self._hist.append((t, self._q.copy()))

    def _forward(self, q: np.ndarray) -> np.ndarray:
        """Forward kinematics (4x4, a copy) of ``q``, remembered for the last few joint
        vectors: a still arm (every fixed-camera trial) is asked for the same pose by the
        robot stream, the camera, the motion capture and the truth at every sample."""
        key = q.tobytes()
        T = self._fk_cache.get(key)
        if T is None:
            if len(self._fk_cache) >= 8:
                self._fk_cache.pop(next(iter(self._fk_cache)))
            T = self._fk_cache[key] = kinematics.forward(q, self.model)
        return T.copy()

    def q_at(self, t_ns: int) -> np.ndarray:
        """Joint angles at simulated time ``t_ns`` (interpolated from the recent history)."""
        with self._lock:
            if t_ns >= self._t:
                self.update(t_ns)
                return self._q.copy()
            # the streams ask for the last few samples: search from the newest (bisect_right's index)
            hist = self._hist
            i = len(hist)
            for t, _q in reversed(hist):
                if t <= t_ns:
                    break
                i -= 1
            if i == 0:
                return hist[0][1].copy()
            if i >= len(hist):
                return hist[-1][1].copy()
            (t0, q0), (t1, q1) = hist[i - 1], hist[i]
            w = (t_ns - t0) / (t1 - t0) if t1 > t0 else 0.0
            return q0 + w * (q1 - q0)

    def T_base_tool0(self, t_ns: int | None = None) -> SE3:
        q = self.q_at(self.clock.now_ns() if t_ns is None else t_ns)
        T = self._forward(q)
        return se3_unchecked(T[:3, :3], T[:3, 3])

    # ------------------------------------------------------------------ state
    def state_at(self, t_ns: int) -> RobotState:
        """The state sampled at simulated time ``t_ns``, as a real controller samples at
        its own rate: the simulation clock may have moved past ``t_ns`` in one step
        (it advances frame by frame), so the pose comes from the recent history."""
        with self._lock:
            t_ns = int(t_ns)
            if t_ns >= self._t:
                self.update(t_ns)
                return self.state(_update=False)
            q = self.q_at(t_ns)
            q_prev = self.q_at(t_ns - int(1e9 / self.rate_hz))
            qd = (q - q_prev) * self.rate_hz
            T = self._forward(q)
            Tp = self._forward(q_prev)
            v_lin = (T[:3, 3] - Tp[:3, 3]) * self.rate_hz
            m = self._motion
            return RobotState(
                stamp_ns=t_ns, q=q, qd=qd, T_base_tool0=se3_unchecked(T[:3, :3], T[:3, 3]),
                tcp_speed=np.concatenate([v_lin, np.zeros(3)]), speed_scaling=self.speed_scaling,
                protective_stop=self.protective_stop, connected=self.connected, moving=m is not None,
                controller_time_s=(t_ns - self.clock.start_ns) * 1e-9, stop_reason=self.stop_reason,
                commanded_speed=self._commanded_speed(),
            )

    def state(self, _update: bool = True) -> RobotState:
        with self._lock:
            if _update:
                self.update()
            T = self._forward(self._q)
            m = self._motion
            v_cmd = self._commanded_speed()
            return RobotState(
                stamp_ns=self._t, q=self._q.copy(), qd=self._qd.copy(), T_base_tool0=se3_unchecked(T[:3, :3], T[:3, 3]),
                tcp_speed=self._tcp_v.copy(), speed_scaling=self.speed_scaling, protective_stop=self.protective_stop,
                connected=self.connected, moving=m is not None,
                controller_time_s=(self._t - self.clock.start_ns) * 1e-9,
                stop_reason=self.stop_reason, commanded_speed=v_cmd,
            )

    def _commanded_speed(self) -> float:
        """The planned TCP speed at the active motion's time (m/s), scaled as the arm runs it."""
        m = self._motion
        if m is None:
            return 0.0
        j, w = _segment(m.t, m.tau)
        return float(m.v[j] + w * (m.v[j + 1] - m.v[j]) if w else m.v[j]) * self.speed_scaling

    def is_moving(self) -> bool:
        with self._lock:
            self.update()
            return self._motion is not None

    # ------------------------------------------------------------------ motion
    def _ready(self, what: str) -> None:
        if self._head_feed is not None:
            self._head_feed(self._t)  # the monitor sees motion capture up to now
        if not self.connected:
            raise DeviceError("UR robot (sim)", "sim", f"{what}: no connection to the controller",
                              "reconnect the robot (sim: reconnect())")
        if self.protective_stop:
            raise MotionRefused("the robot is in a protective stop; unlock it on the teach pendant first",
                                "UR robot (sim)")
        if self.monitor.operator_stop is not None:
            raise MotionRefused(f"operator stop active ({self.monitor.operator_stop}); clear it first",
                                "UR robot (sim)")

    def move_linear(self, waypoints: list[SE3], speed: float, accel: float, blend: float = 0.0,
                    constant_speed: bool = False, name: str = "move") -> float:
        """Start a linear move through Base-frame waypoints; returns its duration (s).

        Previewed first (workspace, reach, flips, speed, acceleration, head distance,
        head tracking); raises MotionRefused with the reason and does not move. With
        ``blend`` 0 the tool stops at every waypoint (one trapezoid per side), as the
        controller runs moves with blend radius 0 (gaze4hri_sim.ur_motion); with a blend
        one trapezoid covers the whole path.
        """
        with self._lock:
            self.update()
            self._ready("move_linear")
            start = self.T_base_tool0(self._t)
            t, poses, v, prof = sample_path([start, *waypoints], speed, accel, self.preview_rate_hz, stops=blend == 0)
            verdict, q = self.monitor.preview(t, poses, self._q, speed, accel, now_ns=self._t)
            if not verdict:
                raise MotionRefused(verdict.reason or "refused", "UR robot (sim)")
            self.stop_reason = self.stop_code = None
            self._motion = _Motion(t, q, v, prof.duration, name=name)
            if prof.duration == 0:
                self._motion = None
            return prof.duration

    def move_joints(self, q_goal, speed: float, accel: float) -> float:
        """Reach joint goal ``q_goal`` as the real backend does (safety.joint_goal_line: a
        previewed linear move to FK(q_goal) at the TCP limit, refused for another arm
        configuration); the same command type in both backends (issue 20)."""
        with self._lock:
            self.update()
            self._ready("move_joints")
            goal, why = joint_goal_line(q_goal, speed, self.monitor.limits, self.model)
            if goal is None:
                raise MotionRefused(why, "UR robot (sim)")
            v, a = self.monitor.limits.max_tcp_speed, min(accel, self.monitor.limits.max_tcp_accel)
            t, poses, vel, prof = sample_path([self.T_base_tool0(self._t), goal], v, a, self.preview_rate_hz)
            verdict, q = self.monitor.preview(t, poses, self._q, v, a, now_ns=self._t)
            if not verdict:
                raise MotionRefused(verdict.reason or "refused", "UR robot (sim)")
            why = configuration_change(q[-1], q_goal)
            if why:
                raise MotionRefused(why, "UR robot (sim)")
            self.stop_reason = self.stop_code = None
            self._motion = _Motion(t, q, vel, prof.duration, name="move_joints") if prof.duration > 0 else None
            return prof.duration

    def stop(self, reason: str | None = None) -> None:
        """Stop now (the simulated stopL decelerates within one tick)."""
        with self._lock:
            self.update()
            self._halt(reason)
