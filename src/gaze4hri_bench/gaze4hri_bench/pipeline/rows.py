"""A trial's ground truth as the run loop reads it, and one job's result rows for it:
the per-frame geometry of the motion-capture ground truth (head, face centre, eye
midpoint), the camera intrinsics at the image's resolution, the camera pose sources'
disagreement, and one row per frame in the results schema (schema.COLUMNS)."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.gaze import angular_error_deg

from ..data import validity
from . import results

if TYPE_CHECKING:
    from .jobs import Job

__all__ = ["gt_geometry", "intrinsics", "camera_source_summary", "NO_GROUND_TRUTH", "rows_for_trial"]


def _vec(gt: pd.DataFrame, cols: list[str]) -> np.ndarray | None:
    return gt[cols].to_numpy(float) if all(c in gt.columns for c in cols) else None


def gt_geometry(gt: pd.DataFrame) -> dict[int, dict]:
    """frame -> {face_center_cam, R_head_cam, head_forward} from the ground-truth table
    (motion capture; data.reader.trial_ground_truth columns)."""
    n = len(gt)
    c = _vec(gt, ["face_cx", "face_cy", "face_cz"])
    e = _vec(gt, ["eye_cx", "eye_cy", "eye_cz"])
    f = _vec(gt, ["head_fwd_x", "head_fwd_y", "head_fwd_z"])
    rcols = [f"R_head_{i}{j}" for i in range(3) for j in range(3)]
    R = _vec(gt, rcols)
    out = {}
    frames = gt["frame"].to_numpy()
    for i in range(n):
        out[int(frames[i])] = {
            "face_center_cam": c[i] if c is not None else np.full(3, np.nan),
            "head_forward": f[i] if f is not None else np.full(3, np.nan),
            "eye_center_cam": e[i] if e is not None else np.full(3, np.nan),
            "R_head_cam": R[i].reshape(3, 3) if R is not None else np.full((3, 3), np.nan),
        }
    return out


def intrinsics(ds, tref, shape) -> np.ndarray:
    """K at the image's resolution: the bag's CameraInfo when the dataset reads it, else
    the session calibration's (scaled like the RealSense across 16:9 modes)."""
    cam = getattr(ds, "camera_info", None)
    intr = cam(tref) if callable(cam) else getattr(getattr(tref, "calibration", None), "intrinsics", None)
    if intr is None:
        raise Gaze4HRIError("no camera intrinsics for this trial", f"{tref.subject}/{tref.trial}",
                            "the session's calibration/ folder needs camera_info (docs/calibration.md)")
    h, w = shape[:2]
    if (intr.width, intr.height) != (w, h):
        intr = intr.scaled(w, h)
    return np.asarray(intr.K, float)



def camera_source_summary(tref, gt: pd.DataFrame) -> dict | None:
    """Forward kinematics x hand-eye against the camera's motion-capture rigid body over
    one trial (issue 13, camera pose source): the frames with both poses and the median,
    95th percentile and maximum of their position (mm) and orientation (deg)
    disagreement (data.backends.session.tracked_inputs); None when a source is missing."""
    if "camera_src_diff_mm" not in gt.columns or "camera_src_diff_deg" not in gt.columns:
        return None
    mm = gt["camera_src_diff_mm"].to_numpy(float)
    deg = gt["camera_src_diff_deg"].to_numpy(float)
    ok = np.isfinite(mm) & np.isfinite(deg)
    if not ok.any():
        return None
    source = str(getattr(tref, "camera_pose_source", "fk"))  # read from the manifest once, at listing
    q = lambda v, x: round(float(np.percentile(v[ok], x)), 4)  # noqa: E731
    return {"source": source, "frames": int(ok.sum()), "median_mm": q(mm, 50), "p95_mm": q(mm, 95),
            "max_mm": round(float(mm[ok].max()), 4),
            "median_deg": q(deg, 50), "p95_deg": q(deg, 95), "max_deg": round(float(deg[ok].max()), 4)}


#: A frame the data marked valid whose ground-truth gaze is not a finite vector (e.g. the
#: last frame when no pose follows it): invalid, with this reason (one of validity.REASONS,
#: so validity.count_reasons counts it), so that `run`, the results and the report count
#: the same valid frames (an error needs a ground truth).
NO_GROUND_TRUTH = "no_ground_truth"
assert NO_GROUND_TRUTH in validity.REASONS


def rows_for_trial(job: Job, tref, gt: pd.DataFrame, preds: dict[int, np.ndarray]) -> pd.DataFrame:
    """One row per ground-truth frame (schema.COLUMNS); invalid frames keep their reason,
    valid frames without a ground-truth vector become ``no_ground_truth``, valid frames
    without a prediction ``no_face``; error NaN where not valid. ``cam_world_*`` copy
    the ground truth's camera position on every row (NaN when the table has none)."""
    from gaze4hri_core.protocol import trial_by_id

    n = len(gt)
    frames = gt["frame"].to_numpy(np.int64)
    pred = np.full((n, 3), np.nan)
    for i, f in enumerate(frames):
        v = preds.get(int(f))
        if v is not None:
            pred[i] = v
    gtv = gt[["gt_x", "gt_y", "gt_z"]].to_numpy(float)
    gt_valid = gt["valid"].to_numpy(bool)
    reason = gt["invalid_reason"].fillna("").astype(str).to_numpy(object)
    no_gt = gt_valid & ~(np.isfinite(gtv).all(axis=1) & (np.linalg.norm(np.nan_to_num(gtv), axis=1) > 0))
    reason = np.where(no_gt, NO_GROUND_TRUTH, reason)
    gt_valid = gt_valid & ~no_gt
    has = np.isfinite(pred).all(axis=1)
    valid = gt_valid & has
    reason = np.where(gt_valid & ~has, "no_face", reason)
    err = np.where(valid, np.asarray(angular_error_deg(gtv, pred), float).reshape(n), np.nan)
    try:
        t = trial_by_id(tref.trial)
        exp, cond, target = t.experiment, str(t.condition), t.target
    except KeyError:
        exp, cond, target = "unknown", "", ""

    def col(name, default=np.nan):
        return gt[name].to_numpy(float) if name in gt.columns else np.full(n, default)

    df = pd.DataFrame({
        "subject": tref.subject, "experiment": exp, "condition": cond, "target": target, "trial": tref.trial,
        "frame": frames, "t_ns": gt["t_ns"].to_numpy(np.int64), "method": job.method.name, "input": job.input_type,
        "valid": valid, "invalid_reason": np.where(valid, "", reason),
        "gt_x": gtv[:, 0], "gt_y": gtv[:, 1], "gt_z": gtv[:, 2],
        "gt_pitch_deg": col("gt_pitch_deg"), "gt_yaw_deg": col("gt_yaw_deg"),
        "pred_x": pred[:, 0], "pred_y": pred[:, 1], "pred_z": pred[:, 2], "error_deg": err,
        "head_gaze_conflict_deg": col("head_gaze_conflict_deg"), "camera_yaw_deg": col("camera_yaw_deg"),
        # the camera's path in the world (the ground truth's camera pose), for every frame
        # whose camera pose is known, valid or not: the study segments its line scans on it
        "cam_world_x": col("cam_world_x"), "cam_world_y": col("cam_world_y"), "cam_world_z": col("cam_world_z"),
    })
    return results.coerce(df)
