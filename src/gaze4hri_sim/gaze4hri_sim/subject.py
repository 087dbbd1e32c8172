"""A simulated subject: looks at the current target, turns the head part-way towards it
(or holds the required head yaw in the head-gaze conflict experiment), sways a little
and blinks at a natural rate. Every quantity is a pure function of time given the
task history, so the camera, the motion capture and the truth agree exactly.

Behaviour: head yaw/pitch follow a fraction of the gaze direction (eye-head
coordination: the head contributes part of large gaze shifts, Freedman 2008,
"Coordination of the eyes and head during visual orienting", Exp. Brain Res.), with
per-task variation; transitions take ``head_turn_s`` (smoothstep). Blinks: Poisson
process at ``blink_rate_per_min`` (spontaneous rate ~17/min, Bentivoglio et al. 1997,
Mov. Disord. 12(6)), each ``blink_duration_s`` long, at least 0.4 s apart.
The head rotates about a neck pivot 9 cm behind and 8 cm below the eye midpoint.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from gaze4hri_core.safety import compose, se3_unchecked
from gaze4hri_core.transforms import SE3

__all__ = ["SubjectTask", "SubjectModel", "PIVOT_IN_EYE", "simulated_eye_head", "EYE_HEAD_SPREAD_M",
           "EYE_HEAD_SPREAD_DEG"]

PIVOT_IN_EYE = np.array([-0.09, 0.0, -0.08])  # neck pivot in the eye frame (x fwd, y left, z up)


# How far a simulated subject's eye midpoint sits from the nominal offset: the band
# rests differently on every head (forehead height, head size), a few millimetres to
# a centimetre; the spread is ours (no study figure), large enough that using the
# default offset instead of the subject's own calibration is a measurable error.
EYE_HEAD_SPREAD_M = 0.008
EYE_HEAD_SPREAD_DEG = 3.0


def simulated_eye_head(subject: str, nominal: SE3) -> SE3:
    """The true eye-head offset of simulated subject ``subject``: the nominal offset
    (calibration/subjects/default.yaml) for "default", otherwise the nominal offset
    moved by up to ``EYE_HEAD_SPREAD_M`` per axis and turned by up to
    ``EYE_HEAD_SPREAD_DEG``, drawn from the subject id alone (the same person whatever
    the session's seed), so the eye-head calibration has something to find."""
    if subject == "default":
        return nominal
    import zlib

    from gaze4hri_core.safety import exp_so3

    rng = np.random.default_rng(zlib.crc32(subject.encode()))
    dt = rng.uniform(-EYE_HEAD_SPREAD_M, EYE_HEAD_SPREAD_M, 3)
    dr = np.radians(rng.uniform(-EYE_HEAD_SPREAD_DEG, EYE_HEAD_SPREAD_DEG, 3))
    return se3_unchecked(nominal.R @ exp_so3(dr), nominal.t + dt)


def _rz(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _ry(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


@dataclass(frozen=True)
class SubjectTask:
    """What the subject does from ``start_ns``: look at ``target`` (a world point, a
    callable t_ns -> point such as the camera centre, or None for straight ahead),
    with the head at ``head_yaw_deg`` (conflict) or following the gaze."""

    start_ns: int
    target: np.ndarray | Callable[[int], np.ndarray] | None
    head_yaw_deg: float | None
    follow_yaw: float
    follow_pitch: float
    start_yaw: float  # head angles (rad) when the task began, for the transition
    start_pitch: float
    label: str = ""


class SubjectModel:
    def __init__(self, eye_home_world, forward_world, T_head_eye: SE3, *, follow_yaw=0.45, follow_pitch=0.35,
                 head_turn_s=0.4, sway_m=0.004, blink_rate_per_min=17.0, blink_duration_s=0.15,
                 seed: int = 0, start_ns: int = 0):
        self.eye_home = np.asarray(eye_home_world, float)
        f = np.asarray(forward_world, float)
        self.base_yaw = float(np.arctan2(f[1], f[0]))
        self.T_head_eye = T_head_eye
        self.T_eye_head = T_head_eye.inv()
        self.follow_yaw, self.follow_pitch = follow_yaw, follow_pitch
        self.head_turn_s = head_turn_s
        self.blink_duration_s = blink_duration_s
        self.blink_rate = blink_rate_per_min
        self._rng = np.random.default_rng(seed)
        self.start_ns = int(start_ns)
        # sway: two sinusoids per axis, 0.05-0.3 Hz, random phases
        self._sway_f = self._rng.uniform(0.05, 0.3, size=(3, 2))
        self._sway_ph = self._rng.uniform(0, 2 * np.pi, size=(3, 2))
        self._sway_a = sway_m * np.array([1.0, 1.0, 0.5])
        self._blinks = np.zeros(0)
        self._eye_at: dict[int, SE3] = {}
        self._blink_horizon_ns = self.start_ns
        self._extend_blinks(self.start_ns + int(600e9))
        self._tasks: list[SubjectTask] = [SubjectTask(self.start_ns, None, None, follow_yaw, follow_pitch, 0.0, 0.0,
                                                      "rest")]

    # ------------------------------------------------------------------ blinks
    def _extend_blinks(self, until_ns: int) -> None:
        if self.blink_rate <= 0:
            self._blink_horizon_ns = max(self._blink_horizon_ns, until_ns)
            return
        t = (self._blinks[-1] if len(self._blinks)
             else self._blink_horizon_ns * 1e-9 + self._rng.exponential(60.0 / self.blink_rate))
        new = []
        while t * 1e9 < until_ns:
            t += max(0.4, self._rng.exponential(60.0 / self.blink_rate))
            new.append(t)
        self._blinks = np.concatenate([self._blinks, new])
        self._blink_horizon_ns = until_ns

    def blink(self, t_ns: int) -> bool:
        """True while the eyes are closed."""
        if t_ns > self._blink_horizon_ns:
            self._extend_blinks(int(t_ns) + int(600e9))
        t = t_ns * 1e-9
        i = np.searchsorted(self._blinks, t, side="right") - 1
        return bool(i >= 0 and t < self._blinks[i] + self.blink_duration_s)

    def blink_times_s(self, t0_ns: int, t1_ns: int) -> np.ndarray:
        """Blink onsets (s, same epoch as the clock) within [t0, t1)."""
        self.blink(t1_ns)
        b = self._blinks
        return b[(b >= t0_ns * 1e-9) & (b < t1_ns * 1e-9)]

    # ------------------------------------------------------------------ tasks
    def set_task(self, t_ns: int, target, head_yaw_deg: float | None = None, label: str = "") -> SubjectTask:
        """Switch to a new task at ``t_ns`` (tasks must be set in time order)."""
        t_ns = int(t_ns)
        yaw0, pitch0 = self.head_angles(t_ns)
        fy = float(np.clip(self.follow_yaw + self._rng.normal(0, 0.08), 0.1, 0.9))
        fp = float(np.clip(self.follow_pitch + self._rng.normal(0, 0.08), 0.05, 0.9))
        if target is not None and not callable(target):
            target = np.asarray(target, float).reshape(3)
        task = SubjectTask(t_ns, target, head_yaw_deg, fy, fp, yaw0, pitch0, label)
        self._tasks = [k for k in self._tasks if k.start_ns < t_ns][-8:] + [task]
        self._eye_at = {}  # poses depend on the tasks
        return task

    def task_at(self, t_ns: int) -> SubjectTask:
        for k in reversed(self._tasks):
            if k.start_ns <= t_ns:
                return k
        return self._tasks[0]

    def target_at(self, t_ns: int) -> np.ndarray | None:
        k = self.task_at(t_ns)
        if k.target is None:
            return None
        return np.asarray(k.target(t_ns) if callable(k.target) else k.target, float)

    def _sway(self, t_ns: int) -> np.ndarray:
        t = (t_ns - self.start_ns) * 1e-9
        return self._sway_a * np.sum(np.sin(2 * np.pi * self._sway_f * t + self._sway_ph), axis=1) / 2

    def head_angles(self, t_ns: int) -> tuple[float, float]:
        """Head (yaw, pitch) in rad relative to the seat's forward direction (+yaw left, +pitch up)."""
        k = self.task_at(t_ns)
        tgt = self.target_at(t_ns)
        if k.head_yaw_deg is not None:
            yaw_d, pitch_d = np.radians(k.head_yaw_deg), 0.0
        elif tgt is None:
            yaw_d, pitch_d = 0.0, 0.0
        else:
            d = tgt - self.eye_home
            gy = np.arctan2(d[1], d[0]) - self.base_yaw
            gy = (gy + np.pi) % (2 * np.pi) - np.pi
            gp = np.arctan2(d[2], np.hypot(d[0], d[1]))
            yaw_d, pitch_d = k.follow_yaw * gy, k.follow_pitch * gp
        u = np.clip((t_ns - k.start_ns) * 1e-9 / self.head_turn_s, 0.0, 1.0)
        w = u * u * (3 - 2 * u)  # smoothstep
        return float(k.start_yaw + w * (yaw_d - k.start_yaw)), float(k.start_pitch + w * (pitch_d - k.start_pitch))

    # ------------------------------------------------------------------ poses
    def T_world_eye(self, t_ns: int) -> SE3:
        """Eye-midpoint frame (x forward, y left, z up) in the world; the last few are
        remembered (the motion capture, the robot's safety feed and the truth ask for the
        same instants) until the next task."""
        cache = self._eye_at
        T = cache.get(t_ns)
        if T is None:
            T = self._eye_pose(t_ns)
            if len(cache) >= 16:
                cache.pop(next(iter(cache)), None)
            cache[t_ns] = T
        return T

    def _eye_pose(self, t_ns: int) -> SE3:
        yaw, pitch = self.head_angles(t_ns)
        R0 = _rz(self.base_yaw)
        R = R0 @ _rz(yaw) @ _ry(-pitch)
        pivot = self.eye_home + R0 @ PIVOT_IN_EYE + self._sway(t_ns)
        eye = pivot - R @ PIVOT_IN_EYE
        return se3_unchecked(R, eye)

    def T_world_head(self, t_ns: int) -> SE3:
        """Head-band pose: T_world_eye composed with the eye-head offset's inverse."""
        return compose(self.T_world_eye(t_ns), self.T_eye_head)

    def gaze_world(self, t_ns: int) -> np.ndarray | None:
        """Unit gaze direction (eye midpoint -> target) in the world, or None at rest."""
        tgt = self.target_at(t_ns)
        if tgt is None:
            return None
        g = tgt - self.T_world_eye(t_ns).t
        return g / np.linalg.norm(g)
