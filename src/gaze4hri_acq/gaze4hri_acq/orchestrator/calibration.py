"""The calibration a session records with: the rig's files checked (present, recent, the
camera pose source's file), and the subject's eye-head file found recent enough or
calibrated anew at the session's start."""
from __future__ import annotations

import time
from pathlib import Path

from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.errors import SessionError
from gaze4hri_core.session import copy_calibration

from ..session_config import SessionConfig
from .view import say

__all__ = ["default_calibration", "check_calibration", "check_camera_source", "subject_eye_head"]


def default_calibration() -> Path:
    from gaze4hri_core.device_config import DEFAULT_CALIBRATION

    return Path(DEFAULT_CALIBRATION)


def check_calibration(cal_dir: Path, cfg: SessionConfig, need_subject: bool = True):
    """The calibration in ``cal_dir`` (with the subject's file when there is one), refused
    on the real rig without the subject's file (``need_subject``) or when too old."""
    subj = cfg.subject if (cal_dir / "subjects" / f"{cfg.subject}.yaml").is_file() else None
    calib = load_calibration(cal_dir, subj)
    if subj is None and cfg.backend == "real" and need_subject:
        raise SessionError(f"no eye-head calibration for subject {cfg.subject}", str(cal_dir / "subjects"),
                           f"run 'gaze4hri-acq calibrate eye-head --subject {cfg.subject}' first")
    if cfg.backend == "real":
        oldest = min((cal_dir / n).stat().st_mtime for n in calib.hashes)
        age = (time.time() - oldest) / 86400
        if age > cfg.calibration_max_age_days:
            raise SessionError(f"calibration is {age:.0f} days old (limit {cfg.calibration_max_age_days:.0f})",
                               str(cal_dir), "re-run 'gaze4hri-acq calibrate registration' and 'calibrate targets'")
    return calib


def check_camera_source(cfg: SessionConfig, calib, cal_dir: Path) -> None:
    if cfg.camera_pose_source not in ("fk", "mocap"):
        raise SessionError(f"unknown camera pose source {cfg.camera_pose_source!r}", None, "use fk or mocap")
    if cfg.camera_pose_source == "mocap" and calib.T_cambody_camera is None:
        raise SessionError("camera pose source 'mocap' needs the camera rigid body's calibration",
                           str(cal_dir / "camera_body.yaml"),
                           "add camera_body.yaml (camera_body -> camera_color_optical_frame) "
                           "or use --camera-pose-source fk")


def _eye_head_age_hours(path: Path) -> float | None:
    """Age of a subject's eye-head file from its ``date`` field (else its mtime); None if absent."""
    if not path.is_file():
        return None
    from datetime import datetime, timezone

    import yaml

    try:
        d = yaml.safe_load(path.read_text("utf-8")).get("date")
        t = datetime.fromisoformat(str(d)).timestamp() if d else path.stat().st_mtime
    except (ValueError, AttributeError, yaml.YAMLError):
        t = path.stat().st_mtime
    return max(0.0, (datetime.now(timezone.utc).timestamp() - t) / 3600.0)


def subject_eye_head(cfg: SessionConfig, src_dir: Path, sdir: Path, eye_head, view) -> tuple[Path, dict]:
    """The calibration directory the session uses, with the subject's eye-head file in
    it: the existing file when recent enough (or with --skip-calibration), else a new
    eye-head calibration run now. The simulator never writes into the lab's
    calibration: its run goes into the session's own calibration/ snapshot."""
    f = src_dir / "subjects" / f"{cfg.subject}.yaml"
    age = _eye_head_age_hours(f)
    if cfg.skip_calibration:
        if age is None:
            raise SessionError(f"--skip-calibration: no eye-head file for subject {cfg.subject}", str(f),
                               "drop --skip-calibration: the session then starts with the subject's "
                               "eye-head calibration")
        say(view, f"eye-head calibration skipped: using {f} ({age:.1f} h old)")
        return src_dir, {"file": str(f.resolve()), "age_hours": round(age, 2), "calibrated_now": False, "skipped": True}
    if age is not None and age <= cfg.eye_head_max_age_hours:
        say(view, f"eye-head calibration of {cfg.subject}: using {f} ({age:.1f} h old, "
                  f"limit {cfg.eye_head_max_age_hours:g} h)")
        return src_dir, {"file": str(f.resolve()), "age_hours": round(age, 2), "calibrated_now": False,
                         "skipped": False}
    why = "none found" if age is None else f"{age:.0f} h old, limit {cfg.eye_head_max_age_hours:g} h"
    if eye_head is None:
        raise SessionError(f"no usable eye-head calibration for subject {cfg.subject} ({why})", str(f),
                           f"run 'gaze4hri-acq calibrate eye-head --subject {cfg.subject}' first")
    out = src_dir
    if cfg.backend == "sim":
        out = sdir / "calibration"
        out.mkdir(parents=True, exist_ok=True)
        copy_calibration(src_dir, sdir, None)
    view.status(f"eye-head calibration of {cfg.subject} ({why})")
    res = eye_head(out)
    path = out / "subjects" / f"{cfg.subject}.yaml"
    msg = getattr(res, "message", "")
    say(view, f"eye-head calibration of {cfg.subject} ({why}): {msg} -> {path}")
    return out, {"file": str(path.resolve()), "age_hours": 0.0, "calibrated_now": True, "skipped": False,
                 "report": msg}
