"""Calibration runs as ROS-free step logic over the core's pure procedures; each one
writes the core's validated calibration YAML and reads it back before reporting.

- Registration (robot Base in the motion-capture world): tool0 carries a tracked
  marker through N points spread in 3D; marker in Base (forward kinematics x marker
  offset) vs marker in the world (motion capture) -> Kabsch/Umeyama
  (``procedures.register_points_report``) -> ``registration.yaml``.
- Eye-head (per subject, Sezer et al. Sec. III-B): a tracked tool held above the
  interpupillary midpoint; N simultaneous head-band/tool samples ->
  ``procedures.eye_head_calibration``; residuals above the limits ask for a retry
  (up to ``max_attempts``) -> ``subjects/<id>.yaml``.
- Target survey: the probe's tip held on each marker -> ``procedures.target_survey``
  -> ``targets.yaml`` (targets not surveyed keep their previous values).

Each run is a small state machine (``add``/``evaluate``/``save``) that a ROS node can
drive from callbacks; ``run_*`` functions drive it with driver objects directly (CLI,
simulation, tests), with every wait bounded in time.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from gaze4hri_core.calibration import (
    TABLE_FILE,
    load_calibration,
    load_eye_head,
    load_targets,
    load_transform,
    save_eye_head,
    save_targets,
    save_transform,
)
from gaze4hri_core.errors import CalibrationError
from gaze4hri_core.procedures import (
    EyeHeadReport,
    RegistrationReport,
    SurveyReport,
    eye_head_calibration,
    register_points_report,
    target_survey,
)
from gaze4hri_core.protocol import H_TARGETS, P_TARGETS
from gaze4hri_core.transforms import SE3

__all__ = [
    "RegistrationRun",
    "EyeHeadRun",
    "EyeHeadDecision",
    "TargetSurveyRun",
    "registration_points",
    "run_registration",
    "run_eye_head",
    "run_target_survey",
    "collect",
]


def _pose(sample) -> SE3:
    return SE3.from_quat(sample.position, sample.quat_xyzw)


def collect(mocap, bodies: tuple[str, ...], n: int, timeout_s: float, since_ns: int | None = None,
            optional: tuple[str, ...] = ()) -> list[dict]:
    """Up to ``n`` mocap frames stamped at or after ``since_ns`` in which every body in
    ``bodies`` is tracked (older, queued frames are skipped; bounded by ``timeout_s``
    wall seconds and 50 x n reads); bodies in ``optional`` are added when tracked."""
    out: list[dict] = []
    t_end = time.monotonic() + timeout_s
    for _ in range(50 * n + 10_000):
        if len(out) >= n or time.monotonic() > t_end:
            break
        f = mocap.read(0.1)
        if f is None or (since_ns is not None and f.stamp_ns < since_ns):
            continue
        if all(b in f.bodies and f.bodies[b].tracking_valid for b in bodies):
            out.append({b: f.bodies[b] for b in (*bodies, *optional) if b in f.bodies and f.bodies[b].tracking_valid})
    return out


# --------------------------------------------------------------------------- registration
#: half-extents (m) of the registration's box of tool0 points in Base
REGISTRATION_EXTENT_M = (0.10, 0.15, 0.08)


def registration_points(center: SE3, n: int = 8, extent_m=REGISTRATION_EXTENT_M) -> list[SE3]:
    """``n`` tool0 poses (same orientation) spread over a box about ``center`` (Base):
    the box corners first, then its centre and face centres, so any n >= 4 spans 3D."""
    ex = np.asarray(extent_m, float)
    corners = [np.array([sx, sy, sz]) for sx in (-1, 1) for sy in (-1, 1) for sz in (-1, 1)]
    # alternate corners so the first four are not coplanar
    order = [0, 3, 5, 6, 1, 2, 4, 7]
    pts = [corners[i] for i in order] + [np.zeros(3)] + [s * e for e in np.eye(3) for s in (-1, 1)]
    if not 4 <= n <= len(pts):
        raise ValueError(f"registration needs 4..{len(pts)} points, got {n}")
    return [SE3(center.R, center.t + p * ex) for p in pts[:n]]


@dataclass
class RegistrationRun:
    calibration_dir: Path
    marker_in_tool0: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.03]))
    n_points: int = 8
    samples_per_point: int = 20
    max_rms_m: float = 0.002
    robot_model: str = "ur5"
    base_points: list[np.ndarray] = field(default_factory=list)
    world_points: list[np.ndarray] = field(default_factory=list)
    spreads_m: list[float] = field(default_factory=list)

    def add(self, T_base_tool0: SE3, marker_world) -> None:
        """One point: the robot's pose and the marker's world positions (K, 3) there."""
        M = np.asarray(marker_world, float).reshape(-1, 3)
        if len(M) == 0:
            raise ValueError("no motion-capture samples of the robot marker at this point")
        self.base_points.append(T_base_tool0.apply(np.asarray(self.marker_in_tool0, float)))
        self.world_points.append(M.mean(0))
        self.spreads_m.append(float(np.sqrt(np.mean(np.sum((M - M.mean(0)) ** 2, axis=1)))))

    def result(self) -> RegistrationReport:
        return register_points_report(np.array(self.base_points), np.array(self.world_points))

    def ok(self, rep: RegistrationReport) -> bool:
        return rep.rms_m <= self.max_rms_m

    def save(self, rep: RegistrationReport | None = None) -> Path:
        rep = rep or self.result()
        if not self.ok(rep):
            raise CalibrationError(f"registration RMS {rep.rms_m * 1e3:.2f} mm above {self.max_rms_m * 1e3:.2f} mm",
                                   str(self.calibration_dir),
                                   "check the marker is rigid on the flange and re-run the registration")
        path = Path(self.calibration_dir) / "registration.yaml"
        save_transform(path, rep.T, "world", "base", "gaze4hri/registration@1", robot_model=self.robot_model,
                       rms_m=round(rep.rms_m, 6), max_m=round(rep.max_m, 6), n_points=rep.n_points,
                       marker_in_tool0=[float(x) for x in self.marker_in_tool0],
                       method="gaze4hri-acq calibrate registration")
        load_transform(path, "world", "base")  # read back: the file validates
        return path


def _wait_still(robot, timeout_s: float, clock) -> None:
    t_end = time.monotonic() + timeout_s
    while robot.is_moving():
        if time.monotonic() > t_end:
            robot.stop()
            raise CalibrationError("the robot did not reach a registration point in time", "registration run",
                                   "check the robot and re-run")
        clock.sleep(0.02)
    st = robot.state()
    if st.stop_reason:
        raise CalibrationError(f"the robot stopped: {st.stop_reason}", "registration run", "clear the cause and re-run")


def run_registration(robot, mocap, run: RegistrationRun, center: SE3, clock, speed: float = 0.1, accel: float = 0.5,
                     settle_s: float = 0.3, move_timeout_s: float = 30.0, body: str = "robot_marker",
                     on_point: Callable[[int, int], None] | None = None) -> RegistrationReport:
    """Move through the registration points, sample the marker at each, save if good."""
    for i, T in enumerate(registration_points(center, run.n_points)):
        robot.move_linear([T], speed, accel)
        _wait_still(robot, move_timeout_s, clock)
        clock.sleep(settle_s)
        frames = collect(mocap, (body,), run.samples_per_point, timeout_s=5.0 + run.samples_per_point / 10,
                         since_ns=clock.now_ns())
        if not frames:
            raise CalibrationError(f"motion capture does not see '{body}' at point {i + 1}", "registration run",
                                   f"check the marker on the flange is named '{body}' in Motive and is visible")
        run.add(robot.state().T_base_tool0, [f[body].position for f in frames])
        if on_point:
            on_point(i + 1, run.n_points)
    rep = run.result()
    run.save(rep)
    return rep


# --------------------------------------------------------------------------- eye-head
@dataclass(frozen=True)
class EyeHeadDecision:
    report: EyeHeadReport
    ok: bool
    retry: bool  # ask the operator to re-seat the tool and sample again
    message: str


@dataclass
class EyeHeadRun:
    calibration_dir: Path
    subject: str
    n_samples: int = 50
    max_position_rms_m: float = 0.002
    max_rotation_rms_deg: float = 1.0
    max_eye_head_distance_m: float = 0.25  # a midpoint further from the band is a mis-placed tool
    max_attempts: int = 3
    tip_in_tool: np.ndarray = field(default_factory=lambda: np.zeros(3))
    attempts: int = 1
    heads: list[SE3] = field(default_factory=list)
    tools: list[SE3] = field(default_factory=list)

    def add(self, T_world_head: SE3, T_world_tool: SE3) -> None:
        self.heads.append(T_world_head)
        self.tools.append(T_world_tool @ SE3(np.eye(3), self.tip_in_tool))

    def evaluate(self) -> EyeHeadDecision:
        rep = eye_head_calibration(self.heads, self.tools)
        problems = []
        if not rep.ok(self.max_position_rms_m, self.max_rotation_rms_deg):
            problems.append(f"spread {rep.position_rms_m * 1e3:.2f} mm / {rep.rotation_rms_deg:.2f} deg above "
                            f"{self.max_position_rms_m * 1e3:.1f} mm / {self.max_rotation_rms_deg:.1f} deg")
        d = float(np.linalg.norm(rep.T_head_eye.t))
        if d > self.max_eye_head_distance_m:
            problems.append(f"eye midpoint {d * 1e3:.0f} mm from the head band "
                            f"(max {self.max_eye_head_distance_m * 1e3:.0f} mm)")
        if rep.n_used < max(3, self.n_samples // 2):
            problems.append(f"only {rep.n_used} of {rep.n_samples} samples kept")
        if not problems:
            return EyeHeadDecision(rep, True, False, f"eye-head calibration ok: {rep.position_rms_m * 1e3:.2f} mm, "
                                                     f"{rep.rotation_rms_deg:.2f} deg over {rep.n_used} samples")
        retry = self.attempts < self.max_attempts
        msg = "; ".join(problems) + (": hold the tool still above the eyes and retry "
                                     f"(attempt {self.attempts + 1} of {self.max_attempts})"
                                     if retry else f": giving up after {self.attempts} attempts")
        return EyeHeadDecision(rep, False, retry, msg)

    def next_attempt(self) -> None:
        self.attempts += 1
        self.heads.clear()
        self.tools.clear()

    def save(self, decision: EyeHeadDecision) -> Path:
        if not decision.ok:
            raise CalibrationError(f"eye-head calibration not accepted: {decision.message}", str(self.calibration_dir),
                                   "retry the calibration")
        rep = decision.report
        path = Path(self.calibration_dir) / "subjects" / f"{self.subject}.yaml"
        save_eye_head(path, rep.T_head_eye, self.subject, n_samples=rep.n_samples, n_used=rep.n_used,
                      position_rms_m=round(rep.position_rms_m, 6), rotation_rms_deg=round(rep.rotation_rms_deg, 4),
                      attempts=self.attempts, method="gaze4hri-acq calibrate eye-head")
        load_eye_head(path)
        return path


def run_eye_head(mocap, run: EyeHeadRun, prompt: Callable[[str], bool] | None = None,
                 head: str = "head_band", tool: str = "calib_tool", timeout_s: float = 30.0) -> EyeHeadDecision:
    """Sample, evaluate, and retry while the operator agrees (``prompt`` returns True)."""
    while True:
        frames = collect(mocap, (head, tool), run.n_samples, timeout_s)
        if len(frames) < 3:
            raise CalibrationError(f"motion capture sees '{head}' and '{tool}' together in only {len(frames)} frames",
                                   "eye-head run", "check both rigid bodies are tracked in Motive")
        for f in frames:
            run.add(_pose(f[head]), _pose(f[tool]))
        d = run.evaluate()
        if d.ok:
            run.save(d)
            return d
        if not d.retry or (prompt is not None and not prompt(d.message)):
            return d
        run.next_attempt()


# --------------------------------------------------------------------------- target survey
@dataclass
class TargetSurveyRun:
    calibration_dir: Path
    probe_tip_in_probe: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -0.15]))
    targets: tuple[str, ...] = P_TARGETS + H_TARGETS
    samples_per_target: int = 30
    max_spread_m: float = 0.002
    poses: dict[str, list[SE3]] = field(default_factory=dict)
    table_poses: list[SE3] = field(default_factory=list)  # the table's rigid body during the survey (tracked table)

    def add_table(self, T_world_table: SE3) -> None:
        self.table_poses.append(T_world_table)

    def table_pose(self) -> SE3 | None:
        """Mean table pose over the survey (translation mean; rotation: normalised mean of
        sign-aligned quaternions, exact for the small spread of a still table)."""
        if not self.table_poses:
            return None
        from gaze4hri_core.transforms import matrix_to_quat_xyzw, quat_xyzw_to_matrix

        q = np.array([matrix_to_quat_xyzw(T.R) for T in self.table_poses])
        q[(q @ q[0]) < 0] *= -1
        qm = q.mean(0)
        return SE3(quat_xyzw_to_matrix(qm / np.linalg.norm(qm)), np.mean([T.t for T in self.table_poses], axis=0))

    def add(self, target: str, T_world_probe: SE3) -> None:
        if target not in self.targets:
            raise ValueError(f"unknown target {target!r}; expected one of {self.targets}")
        self.poses.setdefault(target, []).append(T_world_probe)

    def result(self) -> SurveyReport:
        return target_survey({}, self.probe_tip_in_probe, self.poses)

    def bad(self, rep: SurveyReport) -> dict[str, float]:
        return {k: v for k, v in rep.spread_m.items() if v > self.max_spread_m}

    def save(self, rep: SurveyReport | None = None) -> Path:
        rep = rep or self.result()
        bad = self.bad(rep)
        if bad:
            raise CalibrationError(f"probe not still on {sorted(bad)} (spread above {self.max_spread_m * 1e3:.1f} mm)",
                                   str(self.calibration_dir), "hold the probe tip on the marker and survey those again")
        path = Path(self.calibration_dir) / "targets.yaml"
        merged = load_targets(path) if path.is_file() else {}
        merged.update(rep.targets)
        save_targets(path, dict(sorted(merged.items(), key=lambda kv: (kv[0][0], int(kv[0][1:])))))
        load_targets(path)
        T_table = self.table_pose()
        if T_table is not None:  # tracked table: its pose at the survey gives every target its table-frame offset
            tpath = Path(self.calibration_dir) / TABLE_FILE
            spread = max(float(np.linalg.norm(T.t - T_table.t)) for T in self.table_poses)
            if spread > self.max_spread_m:
                raise CalibrationError(f"the table moved during the survey ({spread * 1e3:.1f} mm)", str(tpath),
                                       "keep the table still and survey again")
            save_transform(tpath, T_table, "world", "table", "gaze4hri/table@1", body="table",
                           n_samples=len(self.table_poses), method="gaze4hri-acq calibrate targets")
            load_transform(tpath, "world", "table")
        return path


def run_target_survey(mocap, run: TargetSurveyRun, place: Callable[[str], None], probe: str = "probe",
                      timeout_s: float = 20.0, table: str = "table") -> SurveyReport:
    """For each target: ``place(target)`` (operator prompt, or the simulator moving the
    probe), then sample the probe, and the table's rigid body when it is tracked (the
    study's table-target calibration, GazeForHRI/Gaze4HRI@main:table_target_calibration.py:
    target position in the table frame), written as table.yaml next to targets.yaml."""
    for name in run.targets:
        place(name)
        frames = collect(mocap, (probe,), run.samples_per_target, timeout_s, optional=(table,))
        if not frames:
            raise CalibrationError(f"motion capture does not see '{probe}' on {name}", "target survey",
                                   f"check the probe is named '{probe}' in Motive and is visible")
        for f in frames:
            run.add(name, _pose(f[probe]))
            if table in f:
                run.add_table(_pose(f[table]))
    rep = run.result()
    run.save(rep)
    return rep


def validate_directory(calibration_dir: Path, subject: str | None = None):
    """Load the whole calibration (what the session will use) after a run."""
    return load_calibration(calibration_dir, subject)
