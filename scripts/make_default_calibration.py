"""Write the default calibration in calibration/ for a plausible Gaze4HRI rig.

World (REP-103, Z-up): origin at the centre of the table top (160 x 70 cm), +x from
the subject towards the robot, +y to the subject's left, +z up. The subject's eyes are
10 cm behind the near table edge, 1 cm left of centre, 32 cm above the table top. The robot (UR5) stands
on the far side, 25 cm beyond the table edge, facing the subject. The front camera
sits on the 0.5 m arc about the eyes at 0 deg yaw, 6 deg below eye height, which puts
it just beyond the farthest target row (gaze4hri.md). Targets P1..P9: a 3x3 grid with
rows 15 cm apart and columns 30 cm apart; H1..H6: 2x3 grid between the P rows.
These numbers were chosen so that the ground-truth (pitch, yaw) from the nominal eye
position lies within 3 deg of the study's Table S11 means (tests/core/test_default_calibration.py).
Re-run after editing: ``.venv/bin/python scripts/make_default_calibration.py``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
from gaze4hri_core.calibration import CameraIntrinsics, save_camera_info, save_eye_head, save_targets, save_transform
from gaze4hri_core.fileio import write_yaml_atomic
from gaze4hri_core.transforms import SE3
from scipy.spatial.transform import Rotation

OUT = Path(__file__).resolve().parents[1] / "calibration"
EYE = np.array([-0.45, 0.01, 0.32])
ROW_X = {"closest": -0.30, "middle": -0.15, "farthest": 0.0}
COL_Y = {"left": -0.30, "middle": 0.0, "right": 0.30}  # left/right as seen from the camera
GRID = {
    "closest": {"left": "P9", "middle": "P8", "right": "P7"},
    "middle": {"left": "P6", "middle": "P5", "right": "P4"},
    "farthest": {"left": "P3", "middle": "P2", "right": "P1"},
}


def main() -> None:
    targets = {}
    for row, cols in GRID.items():
        for col, name in cols.items():
            targets[name] = np.array([ROW_X[row], COL_Y[col], 0.0])
    # H1..H3 (x = -0.225) and H4..H6 (x = -0.075); H1/H4 on the subject's left (+y).
    for i, x in enumerate((-0.225, -0.075)):
        for j, y in enumerate((0.20, 0.0, -0.20)):
            targets[f"H{3 * i + j + 1}"] = np.array([x, y, 0.0])
    targets = dict(sorted(targets.items(), key=lambda kv: (kv[0][0], int(kv[0][1:]))))
    save_targets(OUT / "targets.yaml", targets)

    # Intel RealSense D435i colour stream, 1920x1080 (typical factory intrinsics).
    K = np.array([[1380.0, 0.0, 959.5], [0.0, 1380.0, 539.5], [0.0, 0.0, 1.0]])
    save_camera_info(OUT / "camera_info.yaml", CameraIntrinsics(1920, 1080, K, np.zeros(5), "plumb_bob", "d435i_color"))

    # Hand-eye: optical frame in tool0; optical z along tool0 z (out of the flange),
    # camera 6.5 cm off the flange axis, image x along -tool0 y.
    R_tc = Rotation.from_euler("z", -90, degrees=True).as_matrix()
    save_transform(OUT / "hand_eye.yaml", SE3(R_tc, [0.0, 0.065, 0.035]), "tool0", "camera_color_optical_frame",
                   "gaze4hri/hand_eye@1", method="default (replace with your hand-eye calibration)")

    # Robot controller Base in the world: 25 cm beyond the far table edge, table
    # height, base x axis pointing at the subject (yaw pi).
    T_wb = SE3(Rotation.from_euler("z", 180, degrees=True).as_matrix(), [0.60, 0.0, 0.0])
    save_transform(
        OUT / "registration.yaml",
        T_wb,
        "world",
        "base",
        "gaze4hri/registration@1",
        robot_model="ur5",
        rms_m=None,
        n_points=None,
        method="default (replace with 'gaze4hri-acq calibrate registration')",
    )

    write_yaml_atomic(
        OUT / "scene.yaml",
        {
            "format": "gaze4hri/scene@1",
            "eye_nominal_world": [float(x) for x in EYE],
            "subject_forward_world": [1.0, 0.0, 0.0],
            "head_band_above_eye_m": 0.10,
            "front_camera": {"distance_m": 0.5, "elevation_deg": -6.0},
            "table_size_m": [1.6, 0.7],
        },
        header="Seating geometry of the default rig (scripts/make_default_calibration.py)",
    )

    # Tracked table (optional, table.yaml): the table's motion-capture rigid body, pivot
    # at the far right corner of the top (x 0.35, y -0.80), its x axis along the long
    # edge (+y world); its pose at the target survey, so targets have table-frame offsets.
    save_transform(
        OUT / "table.yaml",
        SE3(Rotation.from_euler("z", 90, degrees=True).as_matrix(), [0.35, -0.80, 0.0]),
        "world",
        "table",
        "gaze4hri/table@1",
        body="table",
        method="default (replace with 'gaze4hri-acq calibrate targets' with the table tracked)",
    )
    # Camera rigid body (optional, camera_body.yaml): markers on the camera housing; the
    # optical frame 3 cm below and 2 cm behind the body's pivot, axes as the body's.
    save_transform(
        OUT / "camera_body.yaml",
        SE3(np.eye(3), [0.0, 0.03, -0.02]),
        "camera_body",
        "camera_color_optical_frame",
        "gaze4hri/camera_body@1",
        body="camera",
        method="default (measure the pivot on your camera mount)",
    )

    # Default subject: head band 10 cm above and 6 cm behind the eye midpoint, tilted
    # 8 deg nose-down on the head; eye frame x forward, y left, z up (REP-103).
    R_head_in_eyeframe = Rotation.from_euler("y", 8, degrees=True).as_matrix()
    T_eye_head = SE3(R_head_in_eyeframe, [-0.06, 0.0, 0.10])
    save_eye_head(
        OUT / "subjects" / "default.yaml",
        T_eye_head.inv(),
        subject="default",
        method="default (replace with 'gaze4hri-acq calibrate eye-head')",
    )
    print(f"wrote the default calibration to {OUT}")


if __name__ == "__main__":
    main()
