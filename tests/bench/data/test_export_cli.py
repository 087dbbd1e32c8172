"""``gaze4hri-bench export`` as users run it: the study layout (CLI) and ETH-XGaze HDF5
training sets whose labels map back to the ground truth."""
from __future__ import annotations

import json

import numpy as np
import pytest
from gaze4hri_bench.cli import main
from gaze4hri_bench.data.reader import Dataset
from gaze4hri_core.gaze import angular_error_deg, pitchyaw_to_vector

pytestmark = pytest.mark.replay


def test_export_study_cli_and_refuses_overwrite(sessions, tmp_path, capsys):
    out = tmp_path / "study"
    assert main(["export", str(sessions), str(out), "--format", "study", "--subjects", "S01", "--trials", "arc_P1",
                 "--no-lossless"]) == 0
    assert "exported 1 trial(s)" in capsys.readouterr().out
    assert not list(out.rglob("*.mkv")) and len(list(out.rglob("rgb_video.mp4"))) == 1
    assert (
        main(["export", str(sessions), str(out), "--format", "study", "--subjects", "S01", "--trials", "arc_P1"]) == 2
    )
    o = capsys.readouterr().out
    assert "trial folder exists already" in o and "skipped 1" in o


def test_export_ethxgaze_h5(sessions, tmp_path, capsys):
    h5py = pytest.importorskip("h5py")
    out = tmp_path / "xgaze"
    assert (
        main(
            [
                "export",
                str(sessions),
                str(out),
                "--format",
                "ethxgaze-h5",
                "--subjects",
                "S01",
                "--trials",
                "illum100_P5",
                "arc_P1",
                "--test-subjects",
                "S01",
            ]
        )
        == 0
    )
    split = json.loads((out / "train_test_split.json").read_text())
    assert split == {"train": [], "val": [], "test": ["subjectS01.h5"]}
    ds = Dataset(sessions, subjects=["S01"], trials=["illum100_P5", "arc_P1"])
    gts = {r.trial: ds.trial_ground_truth(r).set_index("frame") for r in ds.trials()}
    with h5py.File(out / "test" / "subjectS01.h5", "r") as f:
        patch, gaze, head, R = f["face_patch"][:], f["face_gaze"][:], f["face_head_pose"][:], f["face_mat_norm"][:]
        trial = [t.decode() if isinstance(t, bytes) else t for t in f["trial"][:]]
        frame = f["frame_index"][:, 0]
    n_valid = sum(int(g["valid"].sum()) for g in gts.values())
    assert patch.shape == (n_valid, 224, 224, 3) and patch.dtype == np.uint8 and gaze.shape == (n_valid, 2)
    assert patch.std() > 10  # a real image, not a black patch
    # labels map back to the camera-frame ground truth with R^T (Zhang et al. 2018)
    g_cam = np.einsum("nji,nj->ni", R, pitchyaw_to_vector(gaze[:, 0].astype(float), gaze[:, 1].astype(float)))
    truth = np.array(
        [gts[t].loc[k, ["gt_x", "gt_y", "gt_z"]].to_numpy(float) for t, k in zip(trial, frame, strict=True)]
    )
    assert np.max(angular_error_deg(g_cam, truth)) < 0.01
    assert np.all(np.abs(head) < np.radians(60))  # a head facing the camera region, pitch/yaw in radians


def test_export_joint_states_and_fk(tmp_path):
    """A session recorded with joint states: ur5_joint_states.npy [t_ms, q1..q6], whose
    forward kinematics (core) x hand-eye reproduces camera_poses (body axes)."""
    from gaze4hri_bench.data import study_layout as L
    from gaze4hri_bench.export.study import export_study
    from gaze4hri_bench.testing.session import TrialSpec, write_session
    from gaze4hri_core.calibration import load_calibration
    from gaze4hri_core.kinematics import forward

    root = tmp_path / "root"
    write_session(root, "S03", [TrialSpec("arc_P2", seconds=0.3, extra={"joints": True})], tmp=tmp_path)
    res = export_study(root, tmp_path / "out", lossless=False, log=lambda s: None)
    d = res.written[0]
    j, cam = np.load(d / "ur5_joint_states.npy"), np.load(d / "camera_poses.npy")
    assert (
        j.shape[1] == 7 and len(j) > len(cam) and np.all(np.diff(j[:, 0]) > 0)
    )  # joints at 125 Hz, pose rows at 100 Hz
    cal = load_calibration(root / "S03" / "calibration", "S03")
    k = int(np.flatnonzero(np.isin(j[:, 0], cam[:, 0]))[0])  # a joint sample at a row stamp (the first, -50 ms)
    r = int(np.flatnonzero(cam[:, 0] == j[k, 0])[0])
    T = cal.T_world_base.matrix @ forward(j[k, 1:], cal.robot_model) @ cal.T_tool0_camera.matrix
    T_body = cam[r, 1:].reshape(4, 4)
    assert np.allclose(T[:3, 3], T_body[:3, 3], atol=1e-6) and np.allclose(
        T[:3, :3] @ L.R_OPT_FROM_BODY, T_body[:3, :3], atol=1e-6
    )


def test_export_ethxgaze_from_study_layout(tmp_path, capsys):
    pytest.importorskip("h5py")
    from . import _study as S

    base = tmp_path / "BASE"
    S.write_trial(base)
    assert main(["export", str(base), str(tmp_path / "x"), "--format", "ethxgaze-h5"]) == 0
    import h5py

    with h5py.File(tmp_path / "x" / "train" / "subject0005.h5", "r") as f:
        assert f["face_patch"].shape == (12, 224, 224, 3)
        g = f["face_gaze"][:]
    # the scene's gaze (down and towards the camera) normalized: pitch negative (looking down), in radians
    assert np.all(g[:, 0] < -0.3) and np.all(np.abs(g[:, 1]) < 0.2)


def test_export_head_bboxes_read_back_as_face_boxes(sessions, tmp_path):
    """--boxes: the detector's subject box, grown 10 % per side, as head_bboxes.npy; the
    study reader gives it back per frame slot around the rendered face."""
    pytest.importorskip("mediapipe")
    from gaze4hri_bench.testing.session import render

    detector = "mediapipe"  # OpenCV's Haar cascade misses the 63-pixel face of these 160x90 frames

    out = tmp_path / "study"
    assert (
        main(
            [
                "export",
                str(sessions),
                str(out),
                "--format",
                "study",
                "--subjects",
                "S01",
                "--trials",
                "arc_P1",
                "--no-lossless",
                "--boxes",
                detector,
            ]
        )
        == 0
    )
    ds = Dataset(out)
    ref = ds.trials()[0]
    b = ds.face_boxes(ref)
    assert b.shape == (30, 5)
    found = np.isfinite(b[:, 0])
    assert found.sum() >= 20
    img = render((160, 90), 0.003)  # frame 0: the face photograph (non-grey pixels) lies inside the box
    ys, xs = np.nonzero(np.abs(img.astype(int) - 90).sum(axis=2) > 0)
    assert found[0]
    x1, y1, x2, y2 = b[0, :4]
    cx, cy = xs.mean(), ys.mean()
    assert x1 < cx < x2 and y1 < cy < y2 and b[0, 4] >= 0
