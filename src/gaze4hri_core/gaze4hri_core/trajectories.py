"""Camera trajectories of the protocol, computed in the core's frames and previewed
(sampled and safety-checked) before the robot moves.

- fixed: the front camera, on the 0.5 m arc at 0 deg yaw and the scene's elevation
  (calibration/scene.yaml), facing the eyes (Sezer et al., Sec. III-C, exp. 1, 3);
- arc: radius 0.5 m about the subject's *live* eye midpoint, yaw -30 -> +30 deg, the
  optical axis kept on the eyes (exp. 2), lasting the 10 s recording as in the study
  (GazeForHRI/Gaze4HRI@main:config.py:299-306);
- line (mutual gaze, exp. 4.2): the study's raster in the front camera's image plane,
  three passes along the scan axis (h: image x, 0.5 m; v: image y, 0.2 m) joined by two
  steps across it, covering +-0.25 m x +-0.10 m about the front pose
  (GazeForHRI/Gaze4HRI@main:config.py:339-354), at 0.05 or 0.1 m/s, orientation fixed.
  The camera stops at each of the four corners (line_movement_analysis.py:58-59): one
  linear move per side with blend radius 0 (URScript ``movel`` with r = 0 ends at rest),
  so the recording, which lasts the motion (data_collector.py:530-536), is the path
  length at the speed plus one ramp pair per side (rig.raster_scan_points).

Timing is a trapezoidal velocity profile over the path length (UR moves accelerate,
cruise and decelerate along the path; Universal Robots, "The URScript Programming
Language", movel/movep): one trapezoid over a blended path (blend > 0), one per side
when the blend is 0 and the tool stops at every waypoint. Poses: tool0 in the
controller Base frame; the camera is T_world_base^-1 (registration) and the hand-eye
transform away.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from gaze4hri_core.calibration import Calibration
from gaze4hri_core.protocol import ARC_DURATION_S, LINE_HALF_LENGTH_M, MUTUAL_SPEEDS_MPS, Trial
from gaze4hri_core.rig import camera_on_arc, raster_scan_points
from gaze4hri_core.transforms import SE3

from .safety import SafetyMonitor, Verdict, exp_so3, finite_pose, rotvec_of, se3_unchecked

__all__ = [
    "TrajectorySettings",
    "Profile",
    "StopProfile",
    "trapezoid",
    "speed_for_duration",
    "Move",
    "TrialPlan",
    "Preview",
    "sample_path",
    "stop_profile",
    "front_camera_pose",
    "tool0_for_camera",
    "plan_fixed",
    "plan_arc",
    "plan_line",
    "line_accel",
    "line_duration_s",
    "plan_trial",
    "preview_move",
]

# Orientation change counted as path length (m per rad) so that pure reorientations
# get a finite duration; 0.1 m/rad keeps 1 rad/s at 0.1 m/s.
ROT_LENGTH_M_PER_RAD = 0.1


class TrajectorySettings(BaseModel):
    """Speeds and shapes of the trial motions (validated once)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    approach_speed: float = Field(default=0.15, gt=0, le=0.25,
                                  description="TCP speed to reach a trial's start pose (m/s)")
    approach_accel: float = Field(default=0.5, gt=0, le=1.2, description="TCP acceleration of approach moves (m/s^2)")
    motion_accel: float = Field(default=0.5, gt=0, le=1.2, description="TCP acceleration of trial motions (m/s^2)")
    arc_duration_s: float = Field(default=ARC_DURATION_S, gt=1.0, le=60.0,
                                  description="duration of the arc, ramps included: the study's arc lasts its 10 s "
                                              "recording (GazeForHRI/Gaze4HRI@main:config.py:66-67, 305-306)")
    arc_step_deg: float = Field(default=2.0, gt=0.1, le=10.0, description="yaw spacing of the arc's waypoints (deg)")
    arc_blend_m: float = Field(default=0.005, ge=0, le=0.05, description="blend radius between arc waypoints (m)")
    line_half_length_h_m: float = Field(default=LINE_HALF_LENGTH_M["h"], gt=0.01, le=0.3,
                                        description="half width of the mutual-gaze raster, image x: h passes span "
                                                    "twice it, v steps are it "
                                                    "(m; GazeForHRI/Gaze4HRI@main:config.py:344)")
    line_half_length_v_m: float = Field(default=LINE_HALF_LENGTH_M["v"], gt=0.01, le=0.3,
                                        description="half height of the mutual-gaze raster, image y: v passes span "
                                                    "twice it, h steps are it "
                                                    "(m; GazeForHRI/Gaze4HRI@main:config.py:345)")

    def line_half_length_m(self, axis: str) -> float:
        """Half extent of the mutual-gaze raster along image ``axis`` (h: x, v: y)."""
        return self.line_half_length_h_m if axis == "h" else self.line_half_length_v_m
    preview_rate_hz: float = Field(default=50.0, ge=5, le=500, description="sampling rate of previews (Hz)")


@dataclass(frozen=True)
class Profile:
    """Trapezoidal (or triangular) speed profile over a path of ``length`` (m)."""

    length: float
    v: float  # cruise speed reached (m/s)
    a: float
    t_acc: float
    duration: float

    def s(self, t) -> np.ndarray:
        """Arc length travelled at time(s) t (s)."""
        t = np.clip(np.asarray(t, float), 0.0, self.duration)
        ta, T, v, a = self.t_acc, self.duration, self.v, self.a
        return np.where(t < ta, 0.5 * a * t**2,
                        np.where(t <= T - ta, 0.5 * a * ta**2 + v * (t - ta), self.length - 0.5 * a * (T - t) ** 2))

    def speed(self, t) -> np.ndarray:
        t = np.asarray(t, float)
        ta, T = self.t_acc, self.duration
        out = np.where(t < ta, self.a * t, np.where(t <= T - ta, self.v, self.a * (T - t)))
        return np.where((t < 0) | (t > T), 0.0, out)


def trapezoid(length: float, v_max: float, a: float) -> Profile:
    """Time-optimal trapezoid with speed <= v_max and |accel| <= a over ``length``."""
    if not (np.isfinite(length) and np.isfinite(v_max) and np.isfinite(a)) or length < 0 or v_max <= 0 or a <= 0:
        raise ValueError(f"trapezoid: finite length >= 0, v_max > 0 and a > 0 required, got {length}, {v_max}, {a}")
    if length == 0:
        return Profile(0.0, 0.0, a, 0.0, 0.0)
    t_acc = v_max / a
    # triangular: never reaches v_max (products, not **: they overflow to inf, ** raises)
    if a * t_acc * t_acc >= length:
        t_acc = float(np.sqrt(length / a))
        return Profile(length, a * t_acc, a, t_acc, 2 * t_acc)
    cruise = (length - a * t_acc**2) / v_max
    return Profile(length, v_max, a, t_acc, 2 * t_acc + cruise)


@dataclass(frozen=True)
class StopProfile:
    """Consecutive trapezoids, one per side of a path on which the tool stops at every
    waypoint (URScript moves with blend radius 0 end at rest; the controller emulator
    groups moves only while r > 0, gaze4hri_sim.ur_motion). Same interface as Profile."""

    sides: tuple[Profile, ...]

    @property
    def length(self) -> float:
        return float(sum(p.length for p in self.sides))

    @property
    def duration(self) -> float:
        return float(sum(p.duration for p in self.sides))

    @property
    def v(self) -> float:
        return max((p.v for p in self.sides), default=0.0)

    def _side(self, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        t = np.clip(np.asarray(t, float), 0.0, self.duration)
        t_end = np.cumsum([p.duration for p in self.sides])
        k = np.minimum(np.searchsorted(t_end, t, side="right"), len(self.sides) - 1)
        t0 = np.concatenate([[0.0], t_end])[k]
        return t, k, t - t0

    def s(self, t) -> np.ndarray:
        """Arc length travelled at time(s) t (s)."""
        t, k, tau = self._side(t)
        s0 = np.concatenate([[0.0], np.cumsum([p.length for p in self.sides])])
        out = np.array([s0[ki] + float(self.sides[ki].s(ti)) for ki,
                        ti in zip(np.atleast_1d(k), np.atleast_1d(tau), strict=True)])
        return out.reshape(np.shape(t))

    def speed(self, t) -> np.ndarray:
        t_in = np.asarray(t, float)
        t, k, tau = self._side(t_in)
        out = np.array([float(self.sides[ki].speed(ti)) for ki,
                        ti in zip(np.atleast_1d(k), np.atleast_1d(tau), strict=True)])
        return np.where((t_in < 0) | (t_in > self.duration), 0.0, out.reshape(np.shape(t)))


def stop_profile(poses: list[SE3], v_max: float, a: float) -> StopProfile:
    """One trapezoid per side of the path through ``poses`` (the tool at rest at each)."""
    return StopProfile(tuple(trapezoid(float(L), v_max, a) for L in _seg_lengths(poses)))


def _seg_lengths(poses: list[SE3]) -> np.ndarray:
    out = []
    for A, B in zip(poses[:-1], poses[1:], strict=True):
        lin = float(np.linalg.norm(B.t - A.t))
        ang = float(np.linalg.norm(rotvec_of(A.R.T @ B.R)))
        out.append(max(lin, ang * ROT_LENGTH_M_PER_RAD))
    return np.array(out)


def interpolate_path(poses: list[SE3], s: np.ndarray) -> list[SE3]:
    """Poses at arc lengths ``s`` along the piecewise-linear path (SLERP per segment)."""
    L = _seg_lengths(poses)
    cum = np.concatenate([[0.0], np.cumsum(L)])
    rels = [rotvec_of(A.R.T @ B.R) for A, B in zip(poses[:-1], poses[1:], strict=True)]
    out = []
    for si in np.atleast_1d(s):
        k = int(np.clip(np.searchsorted(cum, si, side="right") - 1, 0, len(L) - 1)) if len(L) else 0
        if not len(L):
            out.append(poses[0])
            continue
        w = 0.0 if L[k] == 0 else float(np.clip((si - cum[k]) / L[k], 0.0, 1.0))
        A, B = poses[k], poses[k + 1]
        R = A.R @ exp_so3(rels[k] * w)
        out.append(se3_unchecked(R, A.t + w * (B.t - A.t)))
    return out


#: most samples of one preview (10 min at 50 Hz): preview_move refuses a longer move,
#: sample_path samples it more coarsely (never an allocation the size of the duration)
MAX_PREVIEW_SAMPLES = 30_000


def sample_path(poses: list[SE3], speed: float, accel: float, rate_hz: float,
                stops: bool = False) -> tuple[np.ndarray, list[SE3], np.ndarray, Profile | StopProfile]:
    """Sample a move through ``poses`` (start first) at ``rate_hz``: (t, poses, speed, profile).

    One trapezoid over the whole path (blended waypoints, as movePath/movep run them), or
    with ``stops`` one per side, the tool at rest at every waypoint (blend radius 0).
    A move that cannot be timed (non-finite or non-positive speed, acceleration or
    rate, non-finite poses or length) is returned unsampled, its waypoints at t = 0,
    so that SafetyMonitor.preview refuses it with a reason instead of this raising.
    """
    poses = list(poses)
    vals = np.array([speed, accel, rate_hz], float)
    ok = bool(np.all(np.isfinite(vals)) and np.all(vals > 0) and poses and all(finite_pose(T) for T in poses))
    length = float(_seg_lengths(poses).sum()) if ok and len(poses) > 1 else 0.0
    if not ok or not np.isfinite(length):
        z = np.zeros(len(poses))
        return z, poses, z.copy(), Profile(0.0, 0.0, 0.0, 0.0, 0.0)
    prof = stop_profile(poses, speed, accel) if stops and len(poses) > 2 else trapezoid(length, speed, accel)
    n = int(min(max(2.0, np.ceil(prof.duration * rate_hz) + 1), MAX_PREVIEW_SAMPLES))
    t = np.linspace(0.0, prof.duration, n)
    return t, interpolate_path(poses, prof.s(t)), prof.speed(t), prof


@dataclass(frozen=True)
class Move:
    """One robot motion: tool0 through Base-frame waypoints (the start is the robot's pose)."""

    name: str
    waypoints_base: tuple[SE3, ...]
    speed: float
    accel: float
    blend: float = 0.0
    constant_speed: bool = False  # movep (constant tool speed) instead of movel
    camera_speed: float | None = None  # the camera's speed when it differs from tool0's (arc)

    def path(self, start: SE3) -> list[SE3]:
        return [start, *self.waypoints_base]

    @property
    def stops(self) -> bool:
        """The tool stops at every waypoint: blend radius 0 (URScript ``movel``/``movep`` with
        r = 0 end at rest; robot_rtde.build_path sends ``blend`` on every entry but the last)."""
        return self.blend == 0


@dataclass(frozen=True)
class TrialPlan:
    """The motions of one trial: an approach before recording, a motion during it (or none)."""

    trial_id: str
    kind: str  # fixed | arc | line
    approach: Move
    motion: Move | None
    eye_world: np.ndarray
    camera_start_world: SE3
    camera_end_world: SE3
    notes: dict = field(default_factory=dict)


@dataclass
class Preview:
    verdict: Verdict
    t: np.ndarray
    poses_base: list[SE3]
    commanded_speed: np.ndarray
    q: np.ndarray | None
    duration_s: float

    @property
    def ok(self) -> bool:
        return self.verdict.ok


def front_camera_pose(calib: Calibration, eye_world=None) -> SE3:
    """The fixed front camera: on the arc at 0 deg yaw, the scene's distance and elevation."""
    eye = calib.eye_nominal_world if eye_world is None else np.asarray(eye_world, float)
    return camera_on_arc(eye, calib.subject_forward_world, calib.front_camera_distance_m, 0.0,
                         calib.front_camera_elevation_deg)


def tool0_for_camera(calib: Calibration, T_world_camera: SE3) -> SE3:
    """tool0 in Base that puts the camera at ``T_world_camera`` (inverse of FK x hand-eye)."""
    return calib.T_world_base.inv() @ T_world_camera @ calib.T_tool0_camera.inv()


def plan_fixed(calib: Calibration, eye_world, settings: TrajectorySettings, trial_id: str = "fixed") -> TrialPlan:
    cam = front_camera_pose(calib, eye_world)
    approach = Move("approach", (tool0_for_camera(calib, cam),), settings.approach_speed, settings.approach_accel)
    return TrialPlan(trial_id, "fixed", approach, None, np.asarray(eye_world, float), cam, cam)


def plan_arc(calib: Calibration, eye_world, settings: TrajectorySettings, yaw_deg=(-30.0, 30.0),
             radius_m: float = 0.5, trial_id: str = "arc") -> TrialPlan:
    """Arc about the live eye midpoint, waypoints every ``arc_step_deg``; the optical
    axis stays on the eyes (camera_on_arc looks at the centre)."""
    eye = np.asarray(eye_world, float)
    y0, y1 = float(yaw_deg[0]), float(yaw_deg[1])
    n = max(2, int(np.ceil(abs(y1 - y0) / settings.arc_step_deg)) + 1)
    el = calib.front_camera_elevation_deg
    cams = [camera_on_arc(eye, calib.subject_forward_world, radius_m, y, el) for y in np.linspace(y0, y1, n)]
    tools = [tool0_for_camera(calib, c) for c in cams]
    cam_len = radius_m * np.radians(abs(y1 - y0)) * np.cos(np.radians(el))
    tool_len = float(_seg_lengths(tools).sum())
    tool_speed = speed_for_duration(tool_len, settings.arc_duration_s, settings.motion_accel)
    approach = Move("approach", (tools[0],), settings.approach_speed, settings.approach_accel)
    motion = Move("arc", tuple(tools[1:]), tool_speed, settings.motion_accel, blend=settings.arc_blend_m,
                  constant_speed=True, camera_speed=tool_speed * cam_len / tool_len)
    return TrialPlan(trial_id, "arc", approach, motion, eye, cams[0], cams[-1],
                     {"yaw_deg": [y0, y1], "radius_m": radius_m, "waypoints": n, "duration_s": settings.arc_duration_s})


def speed_for_duration(length: float, duration: float, accel: float) -> float:
    """Cruise speed whose trapezoid (ramps at ``accel``) covers ``length`` in ``duration``:
    the smaller root of v^2/a - T v + L = 0 (duration = L/v + v/a)."""
    disc = duration**2 - 4.0 * length / accel
    if disc < 0:
        raise ValueError(f"{length:.3f} m cannot be covered in {duration:.2f} s with acceleration {accel} m/s^2")
    return float(accel * (duration - np.sqrt(disc)) / 2.0)


def line_accel(speed: float, motion_accel: float) -> float:
    """Acceleration (m/s^2) of a mutual-gaze scan at ``speed``: ``motion_accel`` at the fast
    speed (0.1 m/s), scaled by (speed / fast)^2 below it, so that a scan at half the speed is
    the fast scan at half the time rate (line_movement_analysis.py:64); never above
    ``motion_accel``."""
    fast = MUTUAL_SPEEDS_MPS["fast"]
    return float(motion_accel * min(1.0, speed / fast) ** 2)


def line_duration_s(axis: str, speed: float, settings: TrajectorySettings | None = None) -> float:
    """Duration (s) of a mutual-gaze scan, its trial's recording time: the raster's path at
    ``speed``, the camera at rest at each corner (one trapezoid per side, :func:`line_accel`);
    h 18 s fast, 36 s slow; v 12 s, 24 s with the defaults."""
    st = settings or TrajectorySettings()
    along, across = (st.line_half_length_h_m,
                     st.line_half_length_v_m) if axis == "h" else (st.line_half_length_v_m, st.line_half_length_h_m)
    a = line_accel(float(speed), st.motion_accel)
    sides = [2 * along, across, 2 * along, across, 2 * along]
    return float(sum(trapezoid(L, float(speed), a).duration for L in sides))


def plan_line(calib: Calibration, eye_world, settings: TrajectorySettings, axis: str, speed: float,
              trial_id: str = "line") -> TrialPlan:
    """Mutual-gaze scan: the study's raster about the front camera pose (rig.raster_scan_points),
    orientation fixed, as the study's analysis regresses the error on the gaze angle in the
    camera, which varies along each pass (line_movement_analysis_paper.py:206-208).

    The approach brings the camera to the raster's start; the motion is one linear move per
    side (five waypoints, blend 0), the camera at rest at each of the four corners
    (line_movement_analysis.py:58-59). Its duration, the trial's recording time
    (data_collector.py:530-536), is the path length at ``speed`` plus five ramp pairs:
    h 1.7 m, v 1.1 m (notes["duration_s"]).

    The slow scan is the fast one run at half the time rate, as the study says of its
    corners (line_movement_analysis.py:64, 65-76: every slow corner at twice the fast
    one's row): half the speed and a quarter of the acceleration (:func:`line_accel`), so
    ramps and stops last twice as long and stay as visible to the corner finder
    (stats.study_tables.path_corners) at 30 fps as the fast scan's."""
    centre = front_camera_pose(calib, eye_world)
    pts = raster_scan_points(centre, axis, settings.line_half_length_h_m, settings.line_half_length_v_m)
    cams = [SE3(centre.R, p) for p in pts]
    tools = [tool0_for_camera(calib, c) for c in cams]
    approach = Move("approach", (tools[0],), settings.approach_speed, settings.approach_accel)
    accel = line_accel(float(speed), settings.motion_accel)
    motion = Move(f"line_{axis}", tuple(tools[1:]), float(speed), accel, blend=0.0)
    cam_prof = stop_profile(cams, float(speed), accel)
    return TrialPlan(trial_id, "line", approach, motion, np.asarray(eye_world, float), cams[0], cams[-1],
                     {"axis": axis, "speed_mps": float(speed), "length_m": cam_prof.length, "corners": len(cams) - 2,
                      "duration_s": cam_prof.duration, "corners_camera_world": pts[1:-1].tolist()})


def plan_trial(trial: Trial, calib: Calibration, eye_world, settings: TrajectorySettings | None = None) -> TrialPlan:
    """The plan of one protocol trial from its CameraMotion (core protocol data)."""
    settings = settings or TrajectorySettings()
    cm = trial.camera_motion
    if cm.kind == "fixed":
        return plan_fixed(calib, eye_world, settings, trial.trial_id)
    if cm.kind == "arc":
        return plan_arc(calib, eye_world, settings, cm.yaw_deg or (-30.0, 30.0), cm.radius_m or 0.5, trial.trial_id)
    if cm.kind == "line":
        return plan_line(calib, eye_world, settings, cm.axis or "h", cm.speed_mps or 0.05, trial.trial_id)
    raise ValueError(f"unknown camera motion {cm.kind!r}; expected fixed, arc or line")


def preview_move(move: Move, start_base: SE3, q_start, monitor: SafetyMonitor, rate_hz: float = 50.0,
                 now_ns: int | None = None, check_mocap: bool = True) -> Preview:
    """Sample ``move`` from ``start_base`` and check it with the monitor before moving.
    Invalid input (non-finite speed, acceleration, blend, poses or joint angles) is a
    refused Preview with the reason, never an exception."""
    v = _invalid_move(move, start_base, q_start, rate_hz)
    if v:
        v = monitor.check_command(move.speed, move.accel)
    if not v:
        z = np.zeros(0)
        return Preview(v, z, [], z.copy(), None, 0.0)
    path = move.path(start_base)
    length = float(_seg_lengths(path).sum())
    if not np.isfinite(length) or _duration(path, length, move) * rate_hz > MAX_PREVIEW_SAMPLES:
        z = np.zeros(0)
        return Preview(Verdict(False,
                               f"motion '{move.name}' ({length:.3g} m at {move.speed:.3g} m/s, {move.accel:.3g} m/s^2) "
                               f"would last longer than the {MAX_PREVIEW_SAMPLES / rate_hz:.0f} s a preview covers",
                                      "invalid"), z, [], z.copy(), None, 0.0)
    t, poses, v, prof = sample_path(path, move.speed, move.accel, rate_hz, stops=move.stops)
    verdict, q = monitor.preview(t, poses, q_start, move.speed, move.accel, now_ns=now_ns, check_mocap=check_mocap)
    return Preview(verdict, t, poses, v, q, prof.duration)


def _duration(path: list[SE3], length: float, move: Move) -> float:
    """The move's duration (s) as sample_path will time it."""
    if move.stops and len(path) > 2:
        return stop_profile(path, move.speed, move.accel).duration
    return trapezoid(length, move.speed, move.accel).duration


def _invalid_move(move: Move, start_base: SE3, q_start, rate_hz: float) -> Verdict:
    """A refusal for a move whose numbers cannot be checked (NaN/inf compare False with
    every limit, so they would pass the limit checks or break the sampling)."""
    bad = [k for k,
           x in (("speed", move.speed), ("acceleration", move.accel), ("blend", move.blend), ("preview rate", rate_hz))
           if not _finite_number(x)]
    if bad:
        code = {"speed": "speed", "acceleration": "accel"}.get(bad[0], "invalid")
        return Verdict(False, f"motion '{move.name}': {', '.join(bad)} not a finite number", code)
    if move.blend < 0 or rate_hz <= 0:
        return Verdict(False,
                       f"motion '{move.name}': blend {move.blend} m and preview rate {rate_hz} Hz must be >= 0 and > 0",
                       "invalid")
    if move.camera_speed is not None and not _finite_number(move.camera_speed):
        return Verdict(False, f"motion '{move.name}': camera speed {move.camera_speed} not a finite number", "speed")
    if not move.waypoints_base:
        return Verdict(False, f"motion '{move.name}' has no waypoint", "invalid")
    for k, T in enumerate((start_base, *move.waypoints_base)):
        if not finite_pose(T):
            where = "start pose" if k == 0 else f"waypoint {k}"
            return Verdict(False, f"motion '{move.name}': {where} is not finite", "workspace")
    q = np.asarray(q_start, float) if q_start is not None else np.zeros(6)
    if q.size != 6 or not np.all(np.isfinite(q)):
        return Verdict(False,
                       f"motion '{move.name}': start joint angles {np.round(q.ravel(), 3).tolist()} are not 6 finite "
                       "numbers", "unreachable")
    return Verdict(True)


def _finite_number(x) -> bool:
    try:
        return bool(np.isfinite(float(x)))
    except (TypeError, ValueError):
        return False
