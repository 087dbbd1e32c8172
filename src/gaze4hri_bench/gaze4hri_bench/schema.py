"""The per-frame results schema (one Parquet file per (method, input type), one row
per frame). Shared by the pipeline (writer) and the statistics (reader). Vectors are
in the OpenCV camera frame (x right, y down, z forward), except the camera's position
(``cam_world_*``, world frame, m); angles in degrees.
Documented field by field in docs/results_schema.md.
"""
from __future__ import annotations

SCHEMA_VERSION = "gaze4hri.results/1"

# column -> (pandas dtype, description)
COLUMNS: dict[str, tuple[str, str]] = {
    "subject": ("string", "subject id, e.g. S12"),
    "experiment": ("string", "illumination | viewpoint | conflict | mutual"),
    "condition": ("string", "10/25/50/100, arc, left/center/right, h_slow/h_fast/v_slow/v_fast"),
    "target": ("string", "P1..P9, H1..H6 or camera"),
    "trial": ("string", "trial id, e.g. illum025_P3"),
    "frame": ("int64", "frame index within the trial (0-based, in recording order)"),
    "t_ns": ("int64", "frame timestamp, host clock, ns"),
    "method": ("string", "registered method name, e.g. puregaze_eth"),
    "input": ("string", "crop | rectified | none (baselines)"),
    "valid": ("bool", "frame counts in the evaluation"),
    "invalid_reason": ("string", "empty when valid; else blink, no_face, mocap_lost, interp_gap, no_ground_truth, "
                                 "dropped_frame, duplicate_frame, trial_incomplete"),
    "gt_x": ("float64", "ground-truth unit gaze, camera frame"),
    "gt_y": ("float64", ""),
    "gt_z": ("float64", ""),
    "gt_pitch_deg": ("float64", "ground-truth pitch, Frame A"),
    "gt_yaw_deg": ("float64", "ground-truth yaw, Frame A"),
    "pred_x": ("float64", "predicted unit gaze, camera frame (NaN when no prediction)"),
    "pred_y": ("float64", ""),
    "pred_z": ("float64", ""),
    "error_deg": ("float64", "angular error, NaN where not valid"),
    "head_gaze_conflict_deg": ("float64", "angle between head-forward and ground-truth gaze"),
    "camera_yaw_deg": ("float64", "camera position yaw about the eye midpoint, +left of the subject"),
    "cam_world_x": ("float64", "camera optical centre in the world frame (m; NaN where the camera pose is unknown)"),
    "cam_world_y": ("float64", ""),
    "cam_world_z": ("float64", ""),
}
REQUIRED = tuple(COLUMNS)
METADATA_KEY = b"gaze4hri"  # Parquet key-value metadata: JSON provenance
