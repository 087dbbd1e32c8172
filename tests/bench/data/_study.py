"""Write study-layout trials by hand from the layout spec (study-code.md), not with our
exporter, so the ``study`` reader is tested against the spec itself.

Scene (world Z-up, metres): the eye midpoint at (0, 0, 1.2), the subject facing +x;
the head band 8 cm behind and 10 cm above the eyes with the study's band axes (x
forward, y up, z right); the camera at (0.6, 0, 1.2) looking back at the subject
(rgb_camera_link body axes: x forward = -x world, y left = -y world, z up); target
P5 on the table at (0.3, 0, 0.9). The gaze eye -> target is then, in the optical
frame, (0, +1, -1)/sqrt(2) (down in the image, towards the camera) and the
head-forward (+x world) is (0, 0, -1): a 45 deg head-gaze conflict.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np

T0_MS = 1_700_000_000_000.0
R_BAND = np.column_stack([[1.0, 0, 0], [0, 0, 1.0], [0, -1.0, 0]])  # band axes in the world
BAND_ORIGIN = np.array([-0.08, 0.0, 1.3])
EYE_IN_BAND = np.array([0.08, -0.10, 0.0])  # 8 cm forward, 10 cm down (band y is up)
R_CAM_BODY = np.column_stack([[-1.0, 0, 0], [0, -1.0, 0], [0, 0, 1.0]])
CAM_POS = np.array([0.6, 0.0, 1.2])
TARGET = np.array([0.3, 0.0, 0.9])
EXPECTED_GAZE = np.array([0.0, 1.0, -1.0]) / np.sqrt(2.0)
EXPECTED_HEAD_FWD = np.array([0.0, 0.0, -1.0])


def _rows(t_ms, R, p) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return np.column_stack([t_ms, np.tile(T.reshape(16), (len(t_ms), 1))])


def write_video(path: Path, n: int, size=(160, 90), fourcc="mp4v") -> None:
    import cv2

    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 30.0, size)
    assert w.isOpened()
    for i in range(n):
        img = np.full((size[1], size[0], 3), 40 + 5 * i, np.uint8)
        img[:, : size[0] // 2, 2] = 200  # left half red in BGR -> RGB red
        w.write(img)
    w.release()


def write_trial(
    base: Path,
    subject: str = "0005",
    exp: str = "lighting_100",
    point: str = "p5",
    stamp: int = 1700000000000,
    n_frames: int = 12,
    seconds: float = 0.5,
    date: str = "2025-03-04",
    blinks: dict | None = None,
    boxes: bool = True,
    info: dict | None = None,
) -> Path:
    """One trial folder written from the spec; returns it."""
    d = base / date / subject / exp / point / str(stamp)
    d.mkdir(parents=True, exist_ok=True)
    t_pose = T0_MS - 50 + np.arange(int((seconds + 0.1) * 100)) * 10.0  # 100 Hz, starting 50 ms early
    head = _rows(t_pose, R_BAND, BAND_ORIGIN)
    np.save(d / "head_poses.npy", head)
    np.save(
        d / "eye_positions.npy",
        np.column_stack([t_pose, np.tile(BAND_ORIGIN + R_BAND @ EYE_IN_BAND, (len(t_pose), 1))]),
    )
    np.save(d / "camera_poses.npy", _rows(t_pose, R_CAM_BODY, CAM_POS))
    np.save(d / "target_positions.npy", np.column_stack([t_pose, np.tile(TARGET, (len(t_pose), 1))]))
    np.save(d / "eye_position_in_head_frame.npy", EYE_IN_BAND)
    np.save(d / "table_pose.npy", np.eye(4))
    base_pose = np.eye(4)
    base_pose[:3, 3] = [1.0, 0.0, 0.8]
    np.save(d / "ur5_base_pose.npy", base_pose)
    np.save(d / "rgb_timestamps.npy", T0_MS + 3.0 + np.arange(n_frames) * (1000.0 / 30.0))
    np.save(
        d / "camera_intrinsics.npy",
        np.array(
            {"fx": 120.0, "fy": 121.0, "cx": 80.0, "cy": 45.0, "distortion_coeffs": [0.0, 0.0, 0.0, 0.0, 0.0]},
            dtype=object,
        ),
        allow_pickle=True,
    )
    (d / "rgb_camera_settings.json").write_text(
        json.dumps({"exposure": 250, "gain": 90, "white_balance": 3000, "saturation": 68})
    )
    write_video(d / "rgb_video.mp4", n_frames)
    for who, codes in (blinks or {}).items():
        np.save(d / f"blink_annotations_by_{who}.npy", np.asarray(codes, np.int16))
    if boxes:
        k = np.arange(n_frames)
        np.save(
            d / "head_bboxes.npy", np.column_stack([10 + k, 5 + 0 * k, 60 + k, 70 + 0 * k, 1 + 0 * k, k]).astype(float)
        )
    subj = base / date / subject / "subject_info.json"
    subj.write_text(
        json.dumps(
            info if info is not None else {"gender": "female", "birth_year": 1995, "glasses": True, "height": 168}
        )
    )
    return d
