"""Issue 23: the results carry the camera's optical centre in the world per frame
(schema ``cam_world_x/y/z``), copied from the ground truth's camera pose (registration x
tool0 x hand-eye, data/frame_truth.py) on every frame, valid or not. Checked on a short
simulated session (gaze4hri_bench.testing.session: a 0.5 s horizontal line scan) against the
camera pose the simulator moved (``camera_pose``), which the run never sees."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.testing.session import T0, TrialSpec, calibration_source, camera_pose, write_session
from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.protocol import trial_by_id

pytestmark = pytest.mark.replay


def test_results_carry_the_ground_truth_camera_position(tmp_path):
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark

    spec = TrialSpec("mutual_h_fast", seconds=0.5, size=(96, 54), drop=(4,), mocap_gap=(0.2, 0.32))
    root = tmp_path / "root"
    write_session(root, "S01", [spec], tmp=tmp_path)
    cfg = RunConfig(methods=("head_pose",), data=root, out=tmp_path / "out", progress=False, command_line="pytest")
    (path,) = run_benchmark(cfg, log=lambda *_: None)
    df = pd.read_parquet(path)
    cam = df[["cam_world_x", "cam_world_y", "cam_world_z"]].to_numpy(float)
    assert len(df) == 15 and np.isfinite(cam).all()  # every frame, the dropped one and the mocap-lost ones included
    assert (~df["valid"]).sum() >= 4  # so invalid frames are checked too
    # the ground truth's camera pose, frame by frame
    ds = Dataset(root)
    (ref,) = ds.trials()
    gt = ds.trial_ground_truth(ref).set_index("frame")
    np.testing.assert_allclose(
        cam, gt.loc[df["frame"], ["cam_world_x", "cam_world_y", "cam_world_z"]].to_numpy(float), rtol=0, atol=1e-9
    )
    # and the pose the simulator moved the camera to (linear in time, so interpolation is exact)
    cal = load_calibration(calibration_source(tmp_path, "S01"), "S01")
    trial = trial_by_id("mutual_h_fast")
    want = np.array([camera_pose(cal, trial, (t - T0) / 1e9, spec.seconds).t for t in df["t_ns"].to_numpy(np.int64)])
    np.testing.assert_allclose(cam, want, rtol=0, atol=1e-9)
    assert np.ptp(cam[:, :2], axis=0).max() > 0.04  # the camera moved (0.1 m/s for 0.5 s)


def test_camera_position_nan_where_the_camera_pose_is_unknown(tmp_path):
    """A gap in the robot stream longer than the interpolation limit leaves the camera
    position unknown (NaN) there, not extrapolated."""
    from gaze4hri_bench.data.reader import Dataset

    root = tmp_path / "root"
    write_session(
        root, "S01", [TrialSpec("mutual_v_slow", seconds=0.5, size=(96, 54), robot_gap=(0.2, 0.3))], tmp=tmp_path
    )
    ds = Dataset(Path(root))
    (ref,) = ds.trials()
    gt = ds.trial_ground_truth(ref)
    t = (gt["t_ns"].to_numpy(np.int64) - T0) / 1e9
    inside = (t > 0.21) & (t < 0.29)
    assert inside.any() and gt.loc[inside, "cam_world_x"].isna().all()
    assert gt.loc[~inside & (t < 0.19), "cam_world_x"].notna().all()


def test_study_layout_camera_position_from_camera_poses(tmp_path):
    """The study layout: ``camera_poses.npy`` (world <- rgb_camera_link) gives the camera
    position, its translation read at each frame stamp (docs/study_dataset.md); blinks do
    not hide it."""
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.data.study_layout import ms_to_ns

    from .data import _study as S

    d = S.write_trial(
        tmp_path / "BASE",
        exp="line_movement_fast",
        point="horizontal",
        blinks={"a": np.r_[np.ones(5), 3, np.ones(6)].astype(np.int16)},
    )
    rows = np.load(d / "camera_poses.npy")
    t_ms = rows[:, 0]
    pos = S.CAM_POS + np.outer((t_ms - S.T0_MS) / 1000.0, [0.0, -0.1, 0.0])  # 0.1 m/s along -y world
    rows[:, [4, 8, 12]] = pos
    np.save(d / "camera_poses.npy", rows)
    ds = Dataset(tmp_path / "BASE")
    (ref,) = ds.trials()
    gt = ds.trial_ground_truth(ref)
    assert (gt["invalid_reason"] == "blink").sum() == 1
    # camera_poses' translation at each frame stamp, both stamps as the reader converts them
    # (study_layout.ms_to_ns: float ms near 1.7e12 carry 256 ns steps, 1e-8 m at 0.1 m/s)
    tp = ms_to_ns(t_ms)
    want = np.column_stack([np.interp(gt["t_ns"].to_numpy(np.int64) - tp[0], tp - tp[0], pos[:, k]) for k in range(3)])
    np.testing.assert_allclose(
        gt[["cam_world_x", "cam_world_y", "cam_world_z"]].to_numpy(float), want, rtol=0, atol=1e-9
    )
