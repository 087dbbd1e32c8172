"""Calibration checks: each file present and valid, its age and residuals against the
session's limits, and live consistency: the camera's rigid body against forward
kinematics x hand-eye, the table's body against its pose at the target survey
(Sezer et al. Sec. III-B: registration, hand-eye, eye-head and target calibrations)."""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from gaze4hri_core.calibration import CALIBRATION_FILES, CAMERA_BODY_FILE, TABLE_FILE, Calibration
from gaze4hri_core.safety import EYE_SOURCE_BOUND, EYE_SOURCE_SUBJECT, SafetyLimits
from gaze4hri_core.transforms import SE3

from .record import Check, failed, passed, warned

__all__ = ["CalibrationLimits", "file_checks", "live_checks", "pose_difference", "file_age_days"]

G = "calibration"
_OPTIONAL = (TABLE_FILE, CAMERA_BODY_FILE)


@dataclass(frozen=True)
class CalibrationLimits:
    """Thresholds: the session's age limits (SessionConfig), the calibration runs' residual
    limits (calib_runs: 2 mm), the live agreement bands (pass below the first pair, warn
    below the second, mm and degrees)."""

    max_age_days: float = 30.0
    eye_head_max_age_hours: float = 12.0
    max_rms_mm: float = 2.0
    live_mm: tuple[float, float] = (5.0, 15.0)
    live_deg: tuple[float, float] = (1.0, 3.0)


def file_age_days(path: Path, now: _dt.datetime, date_field: bool = True) -> float:
    """Age by the session's rules: a subject's file from its ``date`` field, else its mtime
    (orchestrator.calibration._eye_head_age_hours); the rig's files from their mtime
    (``date_field`` False: orchestrator.calibration.check_calibration)."""
    t = None
    try:
        d = (yaml.safe_load(path.read_text("utf-8")) or {}).get("date") if date_field else None
        t = _dt.datetime.fromisoformat(str(d)) if d else None
    except (ValueError, AttributeError, yaml.YAMLError, OSError):
        t = None
    if t is None:
        t = _dt.datetime.fromtimestamp(path.stat().st_mtime, _dt.timezone.utc)
    if t.tzinfo is None:
        t = t.replace(tzinfo=_dt.timezone.utc)
    return max(0.0, (now - t).total_seconds() / 86400.0)


def _extra(path: Path) -> dict:
    try:
        return yaml.safe_load(path.read_text("utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return {}


def file_checks(cal_dir: Path, calib: Calibration | None, error: str | None, limits: CalibrationLimits,
                real: bool, now: _dt.datetime, subject: str | None = None) -> list[Check]:
    """Each file present (the optional table and camera body: warn), the oldest file's age
    (a fail only with the real rig, as the session refuses it), the registration's residual,
    and the subject's eye-head file (missing or old: the session calibrates it first)."""
    out = []
    for name in CALIBRATION_FILES:
        p = cal_dir / name
        if p.is_file():
            age = file_age_days(p, now, date_field=False)
            v = f"{name}: {age:.1f} days old"
            too_old = age > limits.max_age_days
            fix = "re-run the calibration it comes from (docs/calibration.md)"
            out.append((failed if real else warned)(G, name, f"{v} (limit {limits.max_age_days:g})", fix)
                       if too_old else passed(G, name, v))
        elif name in _OPTIONAL:
            out.append(warned(G, name, f"{name}: absent", "run 'gaze4hri-acq calibrate targets' with the table "
                              "tracked" if name == TABLE_FILE else "add camera_body.yaml for the camera's body"))
        else:
            out.append(failed(G, name, f"{name}: missing in {cal_dir}", "copy calibration/ from the repository "
                              "and run the calibrations (docs/calibration.md), or pass --calibration DIR"))
    if error is not None:
        out.append(failed(G, "load", error, "fix the file it names (docs/calibration.md)"))
        return out
    rms = _extra(cal_dir / "registration.yaml").get("rms_m")
    if rms is None:
        v = "registration.yaml has no residual (a default file)"
        out.append(warned(G, "registration rms", v, "run 'gaze4hri-acq calibrate registration'") if real
                   else passed(G, "registration rms", f"{v}; the simulated rig is built from it"))
    else:
        v = f"registration RMS {float(rms) * 1e3:.2f} mm (limit {limits.max_rms_mm:g})"
        out.append(passed(G, "registration rms", v) if float(rms) * 1e3 <= limits.max_rms_mm else
                   failed(G, "registration rms", v, "run 'gaze4hri-acq calibrate registration' again"))
    eye_head = _eye_head(cal_dir, subject, limits, now) if subject else None
    if eye_head is not None:
        out.append(eye_head)
    out.append(_distance_rule(eye_head, subject))
    return out


def _distance_rule(eye_head: Check | None, subject: str | None, safety: SafetyLimits | None = None) -> Check:
    """Which eye point the minimum camera distance is measured from when the session starts
    (issue 31, item 2): the subject's eye-head file when it is used as is, else every point
    within the band-to-eye bound of the head band until the session's eye-head run."""
    s = safety or SafetyLimits()
    d = f"camera >= {s.min_camera_head_m:.2f} m from"
    if eye_head is not None and eye_head.status == "pass":
        return passed(G, "distance rule", f"{d} the eyes of subjects/{subject}.yaml ({EYE_SOURCE_SUBJECT})")
    return passed(G, "distance rule", f"{d} every point within {s.eye_band_bound_m:.2f} m of the head band "
                                      f"({EYE_SOURCE_BOUND}) until the eye-head offset is known")


def _eye_head(cal_dir: Path, subject: str, limits: CalibrationLimits, now: _dt.datetime) -> Check:
    p = cal_dir / "subjects" / f"{subject}.yaml"
    if not p.is_file():
        return warned(G, "eye-head", f"no subjects/{subject}.yaml", "the session starts with the subject's "
                      "eye-head calibration (the operator holds the tool above the eyes)")
    hours = file_age_days(p, now) * 24
    rms = _extra(p).get("position_rms_m")
    v = f"subjects/{subject}.yaml {hours:.1f} h old" + (f", RMS {float(rms) * 1e3:.2f} mm" if rms is not None else "")
    if rms is not None and float(rms) * 1e3 > limits.max_rms_mm:
        return failed(G, "eye-head", v, f"run 'gaze4hri-acq calibrate eye-head --subject {subject}' again")
    if hours > limits.eye_head_max_age_hours:
        return warned(G, "eye-head", f"{v} (reused below {limits.eye_head_max_age_hours:g} h)",
                      "the session calibrates the subject anew at its start")
    return passed(G, "eye-head", v)


def pose_difference(a: SE3, b: SE3) -> tuple[float, float]:
    """Translation (mm) and rotation angle (deg) between two poses of the same frame."""
    dt = float(np.linalg.norm(a.t - b.t)) * 1e3
    c = (np.trace(a.R.T @ b.R) - 1.0) / 2.0
    return dt, float(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))))


def _agree(name: str, what: str, a: SE3, b: SE3, limits: CalibrationLimits, fix: str) -> Check:
    mm, deg = pose_difference(a, b)
    v = f"{what}: {mm:.1f} mm, {deg:.2f} deg"
    if mm <= limits.live_mm[0] and deg <= limits.live_deg[0]:
        return passed(G, name, v)
    if mm <= limits.live_mm[1] and deg <= limits.live_deg[1]:
        return warned(G, name, v, fix)
    return failed(G, name, v, fix)


def live_checks(calib: Calibration, T_base_tool0: SE3 | None, poses: dict[str, SE3],
                limits: CalibrationLimits) -> list[Check]:
    """The camera's body x camera_body.yaml against registration x FK x hand-eye; the table's
    body against table.yaml (its pose at the target survey). Not measured: a warn saying why."""
    from gaze4hri_core.safety import compose

    out = []
    if calib.T_cambody_camera is not None:
        if T_base_tool0 is None or "camera" not in poses:
            why = "no robot pose" if T_base_tool0 is None else "the camera's body not tracked"
            out.append(warned(G, "camera live", f"not measured ({why})", "bring up the robot and track 'camera'"))
        else:
            fk = compose(calib.T_world_base, T_base_tool0, calib.T_tool0_camera)
            body = compose(poses["camera"], calib.T_cambody_camera)
            out.append(_agree("camera live", "camera body vs FK x hand-eye", body, fk, limits,
                              "re-run the registration and hand-eye calibrations, or check the camera's "
                              "body and camera_body.yaml"))
    if calib.T_world_table_survey is not None:
        if "table" not in poses:
            out.append(warned(G, "table live", "not measured (the table's body not tracked)",
                              "track the rigid body 'table'"))
        else:
            out.append(_agree("table live", "table body vs its survey pose", poses["table"],
                              calib.T_world_table_survey, limits,
                              "the table moved since the survey: put it back or run 'gaze4hri-acq calibrate "
                              "targets' again"))
    return out
