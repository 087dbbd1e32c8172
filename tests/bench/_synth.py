"""A small in-memory dataset with the data.reader.Dataset interface (trials(),
iter_frames(), trial_ground_truth()), for run-loop tests that must not depend on
rosbag decoding: synthetic images and ground truth with known answers."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.calibration import CameraIntrinsics
from gaze4hri_core.gaze import angular_error_deg, normalize, pitchyaw_to_vector

W, H = 96, 72
K = np.array([[80.0, 0, 47.5], [0, 80.0, 35.5], [0, 0, 1]])


@dataclass
class Cal:
    intrinsics: CameraIntrinsics = field(default_factory=lambda: CameraIntrinsics(W, H, K.copy(), np.zeros(5)))
    hashes: dict = field(default_factory=lambda: {"camera_info.yaml": "ab" * 32})


@dataclass
class TrialRef:
    subject: str
    trial: str
    session_dir: Path = Path("/nonexistent")
    bag_dir: Path = Path("/nonexistent")
    status: str = "done"
    calibration: Cal = field(default_factory=Cal)


@dataclass
class FrameSample:
    index: int
    t_ns: int
    image: np.ndarray
    frame_number: int


class SynthDataset:
    """``n`` frames per trial; frame 2 of every trial is a blink (invalid)."""

    def __init__(self, subjects=("S01", "S02"), trials=("illum100_P5", "mutual_h_fast"), n=12, seed=0):
        self.refs = [TrialRef(s, t) for s in subjects for t in trials]
        self.n = n
        self.seed = seed
        self.decoded = 0

    def trials(self):
        return list(self.refs)

    def _rng(self, ref):
        return np.random.default_rng(abs(hash((ref.subject, ref.trial, self.seed))) % 2**32)

    def iter_frames(self, ref):
        rng = self._rng(ref)
        xx = np.linspace(0, 1, W)[None, :, None]
        for i in range(self.n):
            img = (255 * np.clip(0.3 + 0.4 * xx * (i % 3) / 2 + 0.1 * rng.random((H, W, 3)), 0, 1)).astype(np.uint8)
            self.decoded += 1
            yield FrameSample(i, 1_000_000_000 + i * 33_333_333, img, 1000 + i)

    def trial_ground_truth(self, ref) -> pd.DataFrame:
        rng = self._rng(ref)
        n = self.n
        pitch = np.radians(rng.uniform(-40, 0, n))
        yaw = np.radians(rng.uniform(-40, 40, n))
        g = pitchyaw_to_vector(pitch, yaw)
        fwd = normalize(g + rng.normal(0, 0.3, (n, 3)))
        face = np.tile([0.02, -0.01, 0.6], (n, 1))
        R = np.tile(np.eye(3).ravel(), (n, 1))  # frontal upright face (OpenCV head axes)
        valid = np.ones(n, bool)
        valid[2] = False
        df = pd.DataFrame({
            "frame": np.arange(n), "t_ns": 1_000_000_000 + np.arange(n) * 33_333_333,
            "gt_x": g[:, 0], "gt_y": g[:, 1], "gt_z": g[:, 2],
            "gt_pitch_deg": np.degrees(pitch), "gt_yaw_deg": np.degrees(yaw),
            "head_gaze_conflict_deg": angular_error_deg(fwd, g), "camera_yaw_deg": np.zeros(n),
            "head_fwd_x": fwd[:, 0], "head_fwd_y": fwd[:, 1], "head_fwd_z": fwd[:, 2],
            "face_cx": face[:, 0], "face_cy": face[:, 1], "face_cz": face[:, 2],
            "valid": valid, "invalid_reason": np.where(valid, "", "blink"),
        })
        for k in range(9):
            df[f"R_head_{k // 3}{k % 3}"] = R[:, k]
        return df
