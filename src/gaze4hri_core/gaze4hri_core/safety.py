"""Safety limits and the safety monitor, checked before and during every motion in
every robot backend (defence in depth: the node checks too, the driver decides).

Before a motion, ``SafetyMonitor.preview`` checks the sampled trajectory (workspace
box of tool0 and camera, inverse-kinematics reachability with nearest-solution
continuity, TCP speed and acceleration, joint speed, camera-to-head distance).
During a motion, ``SafetyMonitor.check`` is called at the robot's rate with the
measured pose and speed and the latest head-band pose from motion capture; it
returns STOP with a reason on: operator stop, head band lost for longer than
``mocap_loss_timeout_s``, camera closer to the head than ``min_camera_head_m``,
tool0 outside the workspace box, or measured TCP speed above the limit.
The head distance is measured to the eye midpoint once the subject's eye-head offset
is known, and before that to the nearest point of a sphere of ``eye_band_bound_m``
about the head band, wherever the eyes are within it (``SafetyMonitor.eye_source``).
Pure: no I/O and no threads; time comes from the caller (host or simulation clock).
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator
from scipy.spatial.transform import Rotation

from gaze4hri_core import kinematics
from gaze4hri_core.transforms import SE3, quat_xyzw_to_matrix
from gaze4hri_core.transforms import rotation_to_quat_xyzw as quat_of

__all__ = ["SafetyLimits", "Verdict", "SafetyMonitor", "OK", "monitor_for", "finite_pose", "joint_goal_line",
           "EYE_SOURCE_BOUND", "EYE_SOURCE_SUBJECT",
           "configuration_change", "ik_track", "rotvec_of", "se3_unchecked", "exp_so3", "compose", "quat_of",
           "pose_from_quat"]


def finite_pose(T: SE3) -> bool:
    """Whether a pose holds only finite numbers (NaN/inf compare False with every limit)."""
    return bool(np.all(np.isfinite(T.t)) and np.all(np.isfinite(T.R)))


def joint_goal_line(q_goal, speed: float, limits: SafetyLimits, model: str) -> tuple[SE3 | None, str | None]:
    """A joint goal as both backends run it: the tool0 pose FK(q_goal), reached by a
    previewed linear move at the TCP limit; ``speed`` (rad/s) is only checked against the
    joint limit. (goal, None), or (None, the refusal's reason). Issue 20: the real driver
    previewed a line but sent moveJ, whose path peaked at 0.38 m/s."""
    q = np.asarray(q_goal, float).ravel()
    if q.size != 6 or not np.all(np.isfinite(q)):
        return None, "joint goal is not 6 finite numbers"
    if not (np.isfinite(speed) and 0 < speed <= limits.max_joint_speed):
        return None, f"joint speed {speed:.2f} rad/s outside (0, {limits.max_joint_speed:.2f}]"
    T = kinematics.forward(q, model)
    return se3_unchecked(T[:3, :3], T[:3, 3]), None


def configuration_change(q_end, q_goal, tol_rad: float = 1e-3) -> str | None:
    """Why a linear move ending at joints ``q_end`` does not reach joint goal ``q_goal``
    (another arm configuration: movel keeps the start's), or None when it does."""
    d = np.abs((np.asarray(q_end, float) - np.asarray(q_goal, float) + np.pi) % (2 * np.pi) - np.pi)
    if d.max() <= tol_rad:
        return None
    return (f"joint goal is another arm configuration than the linear move reaches (joint {int(d.argmax()) + 1} "
            f"differs by {np.degrees(d.max()):.1f} deg); move there on the pendant")


def rotvec_of(R: np.ndarray) -> np.ndarray:
    """Rotation vector (axis x angle) of a rotation matrix: the SO(3) logarithm
    (Rodrigues), ~20x faster than scipy for single matrices in control loops."""
    c = float(np.clip((R[0, 0] + R[1, 1] + R[2, 2] - 1.0) * 0.5, -1.0, 1.0))
    ang = float(np.arccos(c))
    v = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if ang < 1e-6:
        return 0.5 * v
    if ang > np.pi - 1e-4:  # near pi the skew part vanishes: use the symmetric part
        return Rotation.from_matrix(R).as_rotvec()
    return v * (ang / (2.0 * np.sin(ang)))


def exp_so3(w: np.ndarray) -> np.ndarray:
    """Rotation matrix of a rotation vector (Rodrigues' formula)."""
    x, y, z = w.tolist() if isinstance(w, np.ndarray) else map(float, w)  # floats: 3x3 numpy ops cost more
    th = math.sqrt(x * x + y * y + z * z)
    if not math.isfinite(th):  # as numpy's formula gives it: a non-finite matrix, refused downstream
        return np.full((3, 3), np.nan)
    if th < 1e-12:
        return np.eye(3)
    x, y, z = x / th, y / th, z / th
    s, c = math.sin(th), math.cos(th)
    v = 1.0 - c  # R = I + sin K + (1 - cos) K^2, K the cross-product matrix of the unit axis
    return np.array([[c + v * x * x, v * x * y - s * z, v * x * z + s * y],
                     [v * x * y + s * z, c + v * y * y, v * y * z - s * x],
                     [v * x * z - s * y, v * y * z + s * x, c + v * z * z]])


def compose(*Ts: SE3) -> SE3:
    """T1 @ T2 @ ... without re-validating the product (hot paths at the robot rate)."""
    R, t = Ts[0].R, Ts[0].t
    for T in Ts[1:]:
        R, t = R @ T.R, R @ T.t + t
    return se3_unchecked(R, t)


def se3_unchecked(R: np.ndarray, t: np.ndarray) -> SE3:
    """An SE3 from a rotation known to be proper (a product of rotations), without the
    constructor's validation (which costs ~0.2 ms; this runs at the robot rate)."""
    return SE3._of_proper(np.asarray(R, float), np.asarray(t, float).reshape(3))


def pose_from_quat(xyz, quat_xyzw) -> SE3:
    """``SE3.from_quat`` for the 100 Hz pose streams: the same checks (finite, non-zero
    quaternion: ValueError) without the constructor's re-validation of a rotation that is
    proper by construction (tests/core/test_safety.py)."""
    t = np.asarray(xyz, dtype=float).reshape(3)
    if not np.isfinite(t).all():
        raise ValueError("pose must be finite with a non-zero quaternion (x, y, z, w order)")
    return se3_unchecked(quat_xyzw_to_matrix(quat_xyzw), t)


def _jacobian(q, model: str) -> tuple[np.ndarray, np.ndarray]:
    """Geometric Jacobian (6x6, linear over angular) of tool0 in Base, and the tool0 pose."""
    frames = kinematics.joint_frames(q, model)
    T = frames[-1]
    Z = np.empty((6, 3))
    P = np.empty((6, 3))
    Z[0], P[0] = (0.0, 0.0, 1.0), 0.0
    for i in range(5):
        Z[i + 1], P[i + 1] = frames[i][:3, 2], frames[i][:3, 3]
    D = T[:3, 3] - P
    J = np.empty((6, 6))
    # z x d, written out (np.cross costs ~50 us per call)
    J[0] = Z[:, 1] * D[:, 2] - Z[:, 2] * D[:, 1]
    J[1] = Z[:, 2] * D[:, 0] - Z[:, 0] * D[:, 2]
    J[2] = Z[:, 0] * D[:, 1] - Z[:, 1] * D[:, 0]
    J[3:] = Z.T
    return J, T


def ik_track(T_target: np.ndarray, q_prev, model: str = "ur5", iters: int = 6, tol: float = 1e-7) -> np.ndarray | None:
    """IK that follows the configuration of ``q_prev`` (Newton steps on the geometric
    Jacobian); None when it does not converge (out of reach or singular).

    Along a densely sampled path this yields the nearest-solution continuation that a
    linear move executes; the analytic solver (kinematics.inverse) picks the branch at
    the start. About 20x faster than the analytic solver with FK verification.
    """
    q = np.asarray(q_prev, float).reshape(6).copy()
    Tt = np.asarray(T_target, float)
    for _ in range(iters):
        J, T = _jacobian(q, model)
        dp = Tt[:3, 3] - T[:3, 3]
        w = rotvec_of(Tt[:3, :3] @ T[:3, :3].T)
        err = np.concatenate([dp, w])
        if np.linalg.norm(err) < tol:
            return q
        try:
            dq = np.linalg.solve(J, err)
        except np.linalg.LinAlgError:
            return None
        if not np.all(np.isfinite(dq)) or np.max(np.abs(dq)) > 1.0:
            return None
        q = q + dq
    J, T = _jacobian(q, model)
    ok = np.linalg.norm(Tt[:3, 3] - T[:3, 3]) < 1e-5 and np.linalg.norm(rotvec_of(Tt[:3, :3] @ T[:3, :3].T)) < 1e-4
    return q if ok else None


class SafetyLimits(BaseModel):
    """Limits applied to every motion. Workspace box in the world frame (m)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    workspace_min: tuple[float, float, float] = Field(
        default=(-0.25, -0.55, 0.08), description="lower corner of the tool0/camera box in the world (m)"
    )
    workspace_max: tuple[float, float, float] = Field(
        default=(0.70, 0.55, 0.90), description="upper corner of the tool0/camera box in the world (m)"
    )
    max_tcp_speed: float = Field(default=0.25, gt=0, le=1.0, description="TCP speed limit (m/s)")
    max_tcp_accel: float = Field(default=1.2, gt=0, le=5.0, description="TCP acceleration limit (m/s^2)")
    max_joint_speed: float = Field(default=1.5, gt=0, le=3.2, description="joint speed limit in previews (rad/s)")
    min_camera_head_m: float = Field(default=0.35, ge=0.0, le=2.0, description="minimum camera-to-head distance (m)")
    # Until the subject's eye-head offset is known the eyes are anywhere within this
    # distance of the head band's origin (issue 31). The default subject's offset is
    # 0.117 m (calibration/subjects/default.yaml), subjects' bands sit 0.09-0.11 m behind
    # the eyes (issue 31) and the simulated subjects' offsets reach 0.128 m (the default
    # moved by up to 8 mm per axis, gaze4hri_sim.subject.EYE_HEAD_SPREAD_M): 0.13 m bounds all.
    eye_band_bound_m: float = Field(default=0.13, ge=0.0, le=0.3,
                                    description="largest band-to-eye distance assumed before the eye-head offset (m)")
    mocap_loss_timeout_s: float = Field(default=0.1, gt=0, le=5.0,
                                        description="stop if the head band is lost this long (s)")
    require_head: bool = Field(default=True, description="refuse/stop motions when the head band is not tracked")
    # Measured speeds only (a differentiated pose at the robot rate is noisy); a planned
    # motion is held to the limit itself (issue 20: joint moves passed at 0.256 m/s).
    speed_tolerance: float = Field(default=1.1, ge=1.0, le=2.0,
                                   description="measured speed may exceed the limit by this factor")

    @model_validator(mode="after")
    def _box(self):
        if any(lo >= hi for lo, hi in zip(self.workspace_min, self.workspace_max, strict=True)):
            raise ValueError("workspace_min must be below workspace_max on every axis")
        return self


@dataclass(frozen=True)
class Verdict:
    """Result of a safety check: ``ok`` or STOP with a one-line ``reason`` and a ``code``."""

    ok: bool
    reason: str | None = None
    # ok|operator|mocap_loss|head_distance|workspace|speed|accel|joint_speed|unreachable|ik_flip|invalid
    code: str = "ok"

    def __bool__(self) -> bool:
        return self.ok


OK = Verdict(True)

#: which eye point the distance limit is measured from (``SafetyMonitor.eye_source``)
EYE_SOURCE_BOUND = "nominal bound"
EYE_SOURCE_SUBJECT = "subject calibration"

#: a planned speed or acceleration may exceed its limit by rounding only (samples of an
#: exact trapezoid); measured speeds get ``SafetyLimits.speed_tolerance`` instead
_PLAN_SLACK = 1.0 + 1e-6


def _stop(code: str, reason: str) -> Verdict:
    return Verdict(False, reason, code)


class SafetyMonitor:
    """Live safety state of one robot: head-band track, operator stop, limits.

    Geometry: ``T_world_base`` (registration) and ``T_tool0_camera`` (hand-eye) place the
    camera from forward kinematics (Sezer et al., Sec. III-B). ``eye_in_head`` (the
    eye-head calibration) turns the head-band pose into the eye midpoint; without it the
    distance is to the nearest point of a sphere of ``limits.eye_band_bound_m`` about the
    head band's origin, so eyes anywhere within that bound are never closer than the limit
    (issue 31). Thread-safe: nodes feed it from callbacks.
    """

    def __init__(self, limits: SafetyLimits, T_world_base: SE3, T_tool0_camera: SE3, robot_model: str = "ur5",
                 eye_in_head=None):
        self.limits = limits
        self.T_world_base = T_world_base
        self.T_tool0_camera = T_tool0_camera
        self.robot_model = robot_model
        self.eye_in_head = None if eye_in_head is None else np.asarray(eye_in_head, float).reshape(3)
        self._lock = threading.Lock()
        self._head_world: np.ndarray | None = None  # last tracked eye midpoint (or head-band origin)
        self._head_T: SE3 | None = None  # last tracked head-band pose
        self._head_seen_ns: int | None = None  # stamp of the last tracked sample
        self._head_first_lost_ns: int | None = None
        self._operator: str | None = None
        self._ik_memo: tuple | None = None  # (path key, joint path) of the last preview that passed

    # ------------------------------------------------------------------ inputs
    def update_head(self, stamp_ns: int, T_world_head: SE3 | None) -> None:
        """Feed one head-band sample; None (or an untracked sample) marks it lost."""
        with self._lock:
            if self._head_seen_ns is not None and stamp_ns < self._head_seen_ns:
                return  # an older sample from a second feed (the simulated world and the stream)
            if T_world_head is None:
                if self._head_first_lost_ns is None:
                    self._head_first_lost_ns = int(stamp_ns)
                return
            if not finite_pose(T_world_head):
                if self._head_first_lost_ns is None:  # a non-finite pose is not a track
                    self._head_first_lost_ns = int(stamp_ns)
                return
            self._head_T = T_world_head
            p = T_world_head.apply(self.eye_in_head) if self.eye_in_head is not None else T_world_head.t
            self._head_world = np.asarray(p, float)
            self._head_seen_ns = int(stamp_ns)
            self._head_first_lost_ns = None

    def set_eye_in_head(self, eye_in_head) -> None:
        """The subject's eye-head calibration (head-band frame, m): the distance limit is
        measured from the eye midpoint from now on (Sezer et al., Sec. III-B)."""
        v = None if eye_in_head is None else np.asarray(eye_in_head, float).reshape(3)
        if v is not None and not np.all(np.isfinite(v)):
            raise ValueError("eye-in-head offset must be finite")
        with self._lock:
            self.eye_in_head = v
            if self._head_T is not None:  # the last tracked sample, placed with the new offset
                self._head_world = np.asarray(self._head_T.apply(v) if v is not None else self._head_T.t, float)

    def request_stop(self, reason: str = "operator request") -> None:
        with self._lock:
            self._operator = reason

    def clear_stop(self) -> None:
        """Operator acknowledges; motions are allowed again."""
        with self._lock:
            self._operator = None

    @property
    def operator_stop(self) -> str | None:
        return self._operator

    @property
    def eye_source(self) -> str:
        """Which rule the distance limit follows now: the subject's eye-head offset, or the
        nominal band-to-eye bound (shown by the robot node's diagnostics, the operator view)."""
        return EYE_SOURCE_BOUND if self.eye_in_head is None else EYE_SOURCE_SUBJECT

    def _eye_radius(self) -> float:
        """Radius about the tracked point within which the eyes may be (0: the eye midpoint)."""
        return self.limits.eye_band_bound_m if self.eye_in_head is None else 0.0

    @property
    def head_world(self) -> np.ndarray | None:
        """Last tracked eye midpoint (or head-band origin) in the world."""
        return None if self._head_world is None else self._head_world.copy()

    # ------------------------------------------------------------------ geometry
    def camera_world(self, T_base_tool0: SE3) -> SE3:
        return self.T_world_base @ T_base_tool0 @ self.T_tool0_camera

    def _box(self, p: np.ndarray, what: str) -> Verdict:
        (x, y, z), (lx, ly, lz), (hx, hy, hz) = p.tolist(), self.limits.workspace_min, self.limits.workspace_max
        if x < lx or y < ly or z < lz or x > hx or y > hy or z > hz:
            return _stop("workspace", f"{what} at {np.round(p, 3).tolist()} m leaves the workspace box "
                                      f"{list(self.limits.workspace_min)}..{list(self.limits.workspace_max)}")
        return OK

    def _head_distance(self, cam: np.ndarray, head: np.ndarray | None, radius: float) -> Verdict:
        """The camera against the limit: from the eye midpoint (``radius`` 0), or from the
        nearest point of the sphere of ``radius`` about the head band's origin."""
        if head is None:
            return OK
        band = math.dist(cam.tolist(), head.tolist())
        d = band - radius
        if d < self.limits.min_camera_head_m:
            how = "" if radius == 0 else (f" (head band {band:.3f} m away, eyes assumed anywhere within "
                                          f"{radius:.2f} m of it: no eye-head offset yet)")
            return _stop("head_distance", f"camera {d:.3f} m from the head{how}, below the minimum "
                                          f"{self.limits.min_camera_head_m:.3f} m")
        return OK

    def _mocap(self, now_ns: int) -> Verdict:
        if not self.limits.require_head:
            return OK
        if self._head_seen_ns is None:
            return _stop("mocap_loss", "head band not tracked by motion capture (no sample yet)")
        # lost since the last tracked sample: untracked frames and silence count alike
        gap = now_ns - self._head_seen_ns
        if gap > self.limits.mocap_loss_timeout_s * 1e9:
            return _stop("mocap_loss", f"head band lost by motion capture for {gap / 1e6:.0f} ms "
                                       f"(limit {self.limits.mocap_loss_timeout_s * 1e3:.0f} ms)")
        return OK

    # ------------------------------------------------------------------ checks
    def check(self, now_ns: int, T_base_tool0: SE3, tcp_speed: float = 0.0, moving: bool = True) -> Verdict:
        """Live check at the robot rate: STOP with a reason, or OK."""
        with self._lock:
            if self._operator is not None:
                return _stop("operator", f"operator stop: {self._operator}")
            if moving:
                v = self._mocap(now_ns)
                if not v:
                    return v
            T_wt = compose(self.T_world_base, T_base_tool0)
            cam = T_wt.R @ self.T_tool0_camera.t + T_wt.t
            for p, what in ((T_wt.t, "tool0"), (cam, "camera")):
                v = self._box(p, what)
                if not v:
                    return v
            v = self._head_distance(cam, self._head_world, self._eye_radius())
            if not v:
                return v
            if tcp_speed > self.limits.max_tcp_speed * self.limits.speed_tolerance:
                return _stop("speed",
                             f"measured TCP speed {tcp_speed:.3f} m/s above the limit "
                             f"{self.limits.max_tcp_speed:.3f} m/s")
            return OK

    def check_command(self, speed: float, accel: float) -> Verdict:
        """Commanded speed and acceleration of a move against the limits."""
        if not np.isfinite(speed) or speed <= 0 or speed > self.limits.max_tcp_speed + 1e-12:
            return _stop("speed",
                         f"commanded TCP speed {speed:.3f} m/s outside (0, {self.limits.max_tcp_speed:.3f}] m/s")
        if not np.isfinite(accel) or accel <= 0 or accel > self.limits.max_tcp_accel + 1e-12:
            return _stop("accel",
                         f"commanded TCP acceleration {accel:.3f} m/s^2 outside "
                         f"(0, {self.limits.max_tcp_accel:.3f}] m/s^2")
        return OK

    def preview(self, t: np.ndarray, poses_base: list[SE3], q_start, speed: float, accel: float,
                now_ns: int | None = None, check_mocap: bool = True) -> tuple[Verdict, np.ndarray | None]:
        """Check a sampled motion before it starts. Returns (verdict, joint path (N, 6)).

        ``t`` (s) and ``poses_base`` (tool0 in Base) are the motion sampled at the
        robot rate; the joint path follows the IK solution nearest to the previous
        sample, and a jump above what ``max_joint_speed`` allows between samples is a
        configuration flip (refused: the controller's linear move would fault or
        swing the arm).
        """
        v = self.check_command(speed, accel)
        if not v:
            return v, None
        with self._lock:
            if self._operator is not None:
                return _stop("operator", f"operator stop: {self._operator}"), None
            if check_mocap and now_ns is not None:
                v = self._mocap(now_ns)
                if not v:
                    return v, None
            head = None if self._head_world is None else self._head_world.copy()
            radius = self._eye_radius()
        t = np.asarray(t, float)
        bad = _non_finite(t, poses_base, q_start)  # NaN/inf pass every comparison below: refused here
        if bad is not None:
            return bad, None
        pos = np.array([p.t for p in poses_base])
        if len(t) >= 3:
            dt = np.diff(t)
            vel = np.linalg.norm(np.diff(pos, axis=0), axis=1) / np.where(dt > 0, dt, np.inf)
            if vel.max(initial=0) > self.limits.max_tcp_speed * _PLAN_SLACK:
                return _stop("speed",
                             f"planned TCP speed {vel.max():.3f} m/s above the limit "
                             f"{self.limits.max_tcp_speed:.3f} m/s"), None
            if len(vel) >= 2:
                acc = np.abs(np.diff(vel)) / np.where(dt[1:] > 0, dt[1:], np.inf)
                if acc.max(initial=0) > self.limits.max_tcp_accel * _PLAN_SLACK:
                    return _stop("accel",
                                 f"planned TCP acceleration {acc.max():.2f} m/s^2 above the limit "
                                 f"{self.limits.max_tcp_accel:.2f} m/s^2"), None
        q_prev = np.asarray(q_start, float).reshape(6)
        Ts = np.empty((len(poses_base), 4, 4))
        Ts[:, :3, :3] = np.array([p.R for p in poses_base])
        Ts[:, :3, 3], Ts[:, 3, :] = pos, (0.0, 0.0, 0.0, 1.0)
        # the joint path of the same sampled path from the same joints is the same: the
        # simulated controller previews the motion the robot node has just previewed
        key = (pos.tobytes(), Ts[:, :3, :3].tobytes(), q_prev.tobytes())
        memo = self._ik_memo[1] if self._ik_memo is not None and self._ik_memo[0] == key else None
        g, refusal = self._first_refused_pose(t, Ts, head, radius)
        v, qs = self._joint_path(t, Ts, q_prev, memo, g)
        if not v:
            return v, None
        if refusal is not None:
            return refusal, None
        self._ik_memo = (key, qs.copy())
        return OK, qs

    def _joint_path(self, t: np.ndarray, Ts: np.ndarray, q_prev: np.ndarray, memo, g: int
                    ) -> tuple[Verdict, np.ndarray]:
        """The joint path of the first ``g`` samples (tool0 poses ``Ts``) from ``q_prev``, each
        sample on the IK branch nearest the previous sample's joints (the continuation a linear
        move follows, as ik_track's Newton steps), ``memo`` the last passed path of the same
        samples from the same joints; refused where a pose is out of reach or a joint would
        move faster than ``max_joint_speed`` allows (a configuration flip)."""
        qs = np.zeros((len(t), 6))
        sols = singular = None
        if memo is not None:
            qs[:g], i0 = memo[:g], g
        else:
            sols, singular = kinematics.inverse_many(Ts[:g], self.robot_model)
            i0 = _continue_branch(sols, singular, q_prev, qs)
        if i0 > 1:  # the joint-speed rule below, over the samples solved at once
            dt = np.maximum(np.diff(t[:i0]), 1e-3)
            over = np.abs(np.diff(qs[:i0], axis=0)).max(axis=1) > self.limits.max_joint_speed * dt * 1.5 + 1e-3
            i0 = int(np.argmax(over)) + 1 if over.any() else i0
        if i0 > 0:
            q_prev = qs[i0 - 1]
        for i in range(i0, g):  # from where one branch stopped being the nearest: sample by sample
            ti = t[i]
            q = memo[i] if memo is not None else _nearest(sols[i], q_prev) if not singular[i] else None
            if q is None:  # no branch solved at once (the wrist singularity): solved alone, as before
                q = ik_track(Ts[i], q_prev, self.robot_model)
            if q is None:
                sols_i = kinematics.inverse(Ts[i], self.robot_model, q_near=q_prev)
                if not sols_i:
                    return _stop("unreachable",
                                 f"pose at t={ti:.2f} s, tool0 {np.round(Ts[i, :3, 3], 3).tolist()} m in base, "
                                 "is out of reach"), qs
                q = sols_i[0]
            if i > 0:
                dt_i = max(ti - t[i - 1], 1e-3)
                jump = float(np.max(np.abs(q - q_prev)))
                limit = self.limits.max_joint_speed * dt_i * 1.5 + 1e-3
                if jump > limit and memo is None:
                    # near a singularity the branches' formulas can miss the continuation that
                    # Newton steps from the previous joints find: the smaller move is the one judged
                    q2 = ik_track(Ts[i], q_prev, self.robot_model)
                    if q2 is not None and float(np.max(np.abs(q2 - q_prev))) < jump:
                        q, jump = q2, float(np.max(np.abs(q2 - q_prev)))
                if jump > limit:
                    j = int(np.argmax(np.abs(q - q_prev)))
                    code = "ik_flip" if jump > 0.5 else "joint_speed"
                    return _stop(code,
                                 f"joint {j + 1} would move {np.degrees(jump):.1f} deg in {dt_i * 1e3:.0f} ms at "
                                 f"t={ti:.2f} s (configuration flip or joint speed above "
                                 f"{self.limits.max_joint_speed:.2f} rad/s)"), qs
            qs[i] = q
            q_prev = q
        return OK, qs

    def _first_refused_pose(self, t: np.ndarray, Ts: np.ndarray, head, radius: float) -> tuple[int, Verdict | None]:
        """The first sample whose tool0 or camera leaves the workspace box or comes too near
        the head, with the refusal (``len(t)``, None: none). The margins of all samples are
        computed at once; the samples at or within 1e-9 of a limit are then checked one by
        one with the live check's rules (``_box``, ``_head_distance``), which decide."""
        R = self.T_world_base.R @ Ts[:, :3, :3]
        tool = Ts[:, :3, 3] @ self.T_world_base.R.T + self.T_world_base.t
        cam = R @ self.T_tool0_camera.t + tool
        lo, hi = np.array(self.limits.workspace_min), np.array(self.limits.workspace_max)
        margin = np.minimum(np.minimum(tool - lo, hi - tool), np.minimum(cam - lo, hi - cam)).min(axis=1)
        if head is not None:
            d = np.linalg.norm(cam - head, axis=1) - radius - self.limits.min_camera_head_m
            margin = np.minimum(margin, d)
        for i in np.flatnonzero(margin <= 1e-9):
            T_wt = compose(self.T_world_base, se3_unchecked(Ts[i, :3, :3], Ts[i, :3, 3]))
            cam_i = T_wt.R @ self.T_tool0_camera.t + T_wt.t
            for v in (self._box(T_wt.t, "tool0"), self._box(cam_i, "camera"), self._head_distance(cam_i, head, radius)):
                if not v:
                    return int(i), Verdict(False, f"{v.reason} at t={t[i]:.2f} s", v.code)
        return len(t), None


def _continue_branch(sols: np.ndarray, singular: np.ndarray, q_start: np.ndarray, qs: np.ndarray) -> int:
    """The joint path while one IK branch stays the nearest to the previous sample's joints
    (``_nearest`` at every sample, computed at once): fills ``qs`` and returns how many
    samples it covers (all of them along a path that meets no singularity or branch change)."""
    n = len(sols)
    if n == 0:
        return 0
    first = _nearest(sols[0], q_start) if not singular[0] else None
    if first is None:
        return 0
    b = int(np.nanargmin(np.einsum("ij,ij->i", *(2 * [(sols[0] - first + np.pi) % (2 * np.pi) - np.pi]))))
    step = (np.diff(sols[:, b], axis=0) + np.pi) % (2 * np.pi) - np.pi
    path = first + np.concatenate([np.zeros((1, 6)), np.cumsum(step, axis=0)])
    # sample i's branches against sample i-1's joints: b must be the nearest (ties go to the
    # lowest index, as nanargmin) and every sample solvable without the one-by-one solver
    d = (sols[1:] - path[:-1, None, :] + np.pi) % (2 * np.pi) - np.pi
    dist = np.einsum("nbj,nbj->nb", d, d)
    dist = np.where(np.isnan(dist), np.inf, dist)
    good = (np.argmin(dist, axis=1) == b) & np.isfinite(dist[:, b]) & ~singular[1:]
    k = n if good.all() else int(np.argmin(good)) + 1
    qs[:k] = path[:k]
    return k


def _nearest(sols: np.ndarray, q_prev: np.ndarray) -> np.ndarray | None:
    """The IK branch (rows of ``sols``, NaN: none) nearest ``q_prev``, each joint moved to its
    2*pi-equivalent nearest ``q_prev`` (as ``kinematics.inverse``'s sort); None: no branch."""
    d = (sols - q_prev + np.pi) % (2 * np.pi) - np.pi
    n = np.einsum("ij,ij->i", d, d)
    if not np.isfinite(n).any():
        return None
    return q_prev + d[int(np.nanargmin(n))]


def _non_finite(t: np.ndarray, poses_base: list[SE3], q_start) -> Verdict | None:
    """A refusal when the sampled motion or the start joints hold NaN/inf (or do not match)."""
    if len(t) != len(poses_base) or not np.all(np.isfinite(t)):
        return _stop("workspace", "planned motion has non-finite or mismatched sample times")
    ok = [np.isfinite(T.t).all() and np.isfinite(T.R).all() for T in poses_base]
    if not all(ok):
        return _stop("workspace", f"planned pose {ok.index(False)} is not finite")
    q = np.asarray(q_start, float).ravel()
    if q.size != 6 or not np.all(np.isfinite(q)):
        return _stop("unreachable", "start joint angles are not 6 finite numbers")
    return None


def monitor_for(calibration, limits: SafetyLimits | None = None) -> SafetyMonitor:
    """The robot's one SafetyMonitor from a loaded calibration: registration and hand-eye
    place the camera, the subject's eye-head file (when present) the eye midpoint.
    Built once by the robot's owner (the robot node, a calibration run) and passed to
    the driver, which never builds its own (issue 20)."""
    eye = calibration.T_head_eye.t if calibration.T_head_eye is not None else None
    return SafetyMonitor(limits or SafetyLimits(), calibration.T_world_base, calibration.T_tool0_camera,
                         calibration.robot_model, eye_in_head=eye)
