"""Consistency of the two reader backends: a simulated MCAP session exported to the
study layout (our exporter, lossless FFV1 copy) reads back with the same frames, the
same per-frame ground truth (within 0.01 deg) and the same validity."""
from __future__ import annotations

import json

import numpy as np
import pytest
from gaze4hri_bench.data.reader import Dataset, detect_format
from gaze4hri_bench.export.study import export_study
from gaze4hri_core.gaze import angular_error_deg

pytestmark = pytest.mark.replay


@pytest.fixture(scope="module")
def exported(sessions, tmp_path_factory):
    out = tmp_path_factory.mktemp("study_export") / "study"
    res = export_study(sessions, out, log=lambda s: None)
    return out, res


def test_export_writes_the_layout(exported, sessions):
    out, res = exported
    assert len(res.written) == 3  # S02's trial is incomplete: not exported
    assert any("incomplete" in s for s in res.skipped)
    by = {p.parent.parent.name + "/" + p.parent.name: p for p in res.written}
    assert set(by) == {"lighting_100/p5", "line_movement_fast/horizontal", "circular_movement/p1"}
    d = by["lighting_100/p5"]
    assert d.name.isdigit() and len(d.parents[3].name) == 10  # <date>/<subject>/<exp>/<point>/<stamp_ms>
    for f in ("rgb_video.mp4", "rgb_video.mkv", "rgb_timestamps.npy", "head_poses.npy", "camera_poses.npy",
              "eye_positions.npy", "target_positions.npy", "eye_position_in_head_frame.npy", "camera_intrinsics.npy"):
        assert (d / f).is_file(), f
    assert np.load(d / "head_poses.npy").shape[1] == 17 and np.load(d / "target_positions.npy").shape[1] == 4
    assert len(np.load(d / "rgb_timestamps.npy")) == 29  # 30 frames - 2 dropped + 1 duplicate
    info = json.loads((d.parents[2] / "subject_info.json").read_text())
    assert len(info["gaze4hri_subject_forward_world"]) == 3
    assert detect_format(out) == "study" and detect_format(sessions) == "session"


def test_camera_poses_are_in_body_axes(exported, sessions):
    out, res = exported
    d = next(p for p in res.written if p.parent.name == "p5")
    rows = np.load(d / "camera_poses.npy")
    R_body = rows[0, 1:17].reshape(4, 4)[:3, :3]
    # the camera looks from the robot at the subject: body x (forward) = optical z
    ref = Dataset(sessions, trials=["illum100_P5"]).trials()[0]
    eye = ref.calibration.eye_nominal_world
    to_eye = eye - rows[0, 1:17].reshape(4, 4)[:3, 3]
    assert np.dot(R_body[:, 0], to_eye / np.linalg.norm(to_eye)) > 0.9
    assert R_body[2, 2] > 0.5  # body z is up in the Z-up world


def test_same_ground_truth_and_validity(exported, sessions):
    out, _res = exported
    mc = Dataset(sessions, subjects=["S01"], blink_annotations=False)
    st = Dataset(out, blink_annotations=False)
    assert type(st).__name__ == "StudyDataset" and not st.skipped
    a = {r.trial: r for r in mc.trials()}
    b = {r.trial: r for r in st.trials()}
    assert set(b) == {"illum100_P5", "mutual_h_fast", "arc_P1"}
    for tid in b:
        ga, gb = mc.trial_ground_truth(a[tid]), st.trial_ground_truth(b[tid])
        assert len(ga) == len(gb)
        assert (ga["frame"].to_numpy() == gb["frame"].to_numpy()).all()
        assert (ga["valid"].to_numpy() == gb["valid"].to_numpy()).all(), tid
        assert (ga["invalid_reason"].to_numpy() == gb["invalid_reason"].to_numpy()).all(), tid
        v = ga["valid"].to_numpy()
        assert v.sum() > 10
        e = angular_error_deg(
            ga.loc[v, ["gt_x", "gt_y", "gt_z"]].to_numpy(), gb.loc[v, ["gt_x", "gt_y", "gt_z"]].to_numpy()
        )
        assert np.max(e) < 0.01, (tid, np.max(e))
        print(tid, "max GT difference deg", float(np.max(e)), "valid", int(v.sum()), "of", len(v))
        for c in ("head_gaze_conflict_deg", "camera_yaw_deg"):
            assert np.nanmax(np.abs(ga.loc[v, c].to_numpy() - gb.loc[v, c].to_numpy())) < 0.01, (tid, c)
        assert np.abs(ga["t_ns"].to_numpy() - gb["t_ns"].to_numpy()).max() < 1000  # ms float round trip
    reasons = set(mc.trial_ground_truth(a["illum100_P5"])["invalid_reason"])
    assert {"dropped_frame", "duplicate_frame", "mocap_lost"} <= reasons


def test_same_frames_lossless_and_intrinsics(exported, sessions):
    out, _res = exported
    mc = Dataset(sessions, trials=["arc_P1"])
    st = Dataset(out, trials=["arc_P1"])
    ra, rb = mc.trials()[0], st.trials()[0]
    fa, fb = list(mc.iter_frames(ra)), list(st.iter_frames(rb))
    assert [f.index for f in fa] == [f.index for f in fb]
    assert all(np.array_equal(x.image, y.image) for x, y in zip(fa, fb, strict=True))  # FFV1 is lossless
    ka, kb = mc.camera_info(ra), st.camera_info(rb)
    assert (kb.width, kb.height) == (160, 90) and np.allclose(ka.scaled(160, 90).K, kb.K)
    mp4 = Dataset(out, trials=["arc_P1"], video="mp4")
    g = next(mp4.iter_frames(mp4.trials()[0]))
    assert g.image.shape == fa[0].image.shape and np.abs(g.image.astype(int) - fa[0].image).mean() < 20


def test_stride_and_sim_blinks(exported, sessions):
    out, _res = exported
    st = Dataset(out, trials=["illum100_P5"], stride=3)
    ref = st.trials()[0]
    gt = st.trial_ground_truth(ref)
    assert [f.index for f in st.iter_frames(ref)] == gt["frame"].tolist()


def test_benchmark_means_agree_across_backends(exported, sessions, tmp_path, tiny_models):
    """gaze4hri-bench's run loop on the MCAP session and on its lossless study export:
    the weight-free baselines and a network that reads the pixels (the tiny gradient
    model, through the face pass, on crops and on rectified faces) give the same
    per-trial mean errors to 0.01 deg."""
    import pandas as pd
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark

    out, _res = exported
    means = {}
    for fmt, data in (("session", sessions), ("study", out)):
        cfg = RunConfig(
            methods=("head_pose", "straight", "tiny_test"),
            data=data,
            out=tmp_path / fmt,
            subjects=("S01",),
            blinks="off",
            progress=False,
            command_line="pytest",
            data_format=fmt,
            input="both",
            models_dir=tiny_models,
        )
        for p in run_benchmark(cfg, log=lambda *_: None):
            df = pd.read_parquet(p)
            m = df[df["valid"]].groupby(["method", "input", "trial"])["error_deg"].mean()
            means.setdefault(fmt, []).append(m)
    a, b = pd.concat(means["session"]), pd.concat(means["study"])
    assert len(a) == 12 and a.index.equals(b.index)
    assert set(a.index.get_level_values("input")) == {"none", "crop", "rectified"}
    assert np.abs(a.to_numpy() - b.to_numpy()).max() < 0.01
    assert a.std() > 1.0  # the means differ between trials and methods: the comparison can fail
