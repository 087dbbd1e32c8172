"""Against a session recorded by the acquisition simulator (gaze4hri_acq.simulate):
the reader's ground truth matches the simulator's own truth (Topics.SIM_GAZE_TRUTH)
to below 0.1 deg, and frames decode at the recorded resolution."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_core.gaze import angular_error_deg

pytestmark = [pytest.mark.replay, pytest.mark.slow]


@pytest.fixture(scope="module")
def sim_root(tmp_path_factory):
    try:
        from gaze4hri_acq.simulate import run_sim_session
    except ImportError as e:
        pytest.skip(f"gaze4hri_acq.simulate not importable ({e})")
    tmp = tmp_path_factory.mktemp("sim")
    root = tmp / "root"
    # the session starts with S01's eye-head calibration against the simulated subject
    # (its own offset, not the default subject's), so no subject file is written by hand
    run_sim_session(
        root,
        "S01",
        ["illum100_P5", "mutual_v_fast"],
        resolution=(640, 360),
        trial_seconds=1.0,
        real_time_factor=50,
    )
    return root


def test_ground_truth_matches_simulator(sim_root):
    from gaze4hri_bench.data import validity
    from gaze4hri_bench.data.reader import Dataset

    ds = Dataset(sim_root)
    refs = ds.trials()
    assert [r.trial for r in refs] == ["illum100_P5", "mutual_v_fast"]
    for ref in refs:
        gt = ds.trial_ground_truth(ref)
        counts = validity.count_reasons(gt)
        assert counts["valid"] >= 5, (ref.trial, counts)
        m = gt[gt["valid"]].merge(ds.sim_truth(ref), on="t_ns", how="inner")
        assert len(m) >= 0.8 * counts["valid"], ref.trial
        err = angular_error_deg(m[["gt_x", "gt_y", "gt_z"]].to_numpy(), m[["x", "y", "z"]].to_numpy())
        assert np.nanmax(err) < 0.1, (ref.trial, float(np.nanmax(err)))
        f = next(ds.iter_frames(ref))
        assert f.image.shape == (360, 640, 3) and f.image.dtype == np.uint8


def test_simulator_blinks_as_annotation(sim_root):
    from gaze4hri_bench.data import validity
    from gaze4hri_bench.data.reader import Dataset

    plain, withb = Dataset(sim_root), Dataset(sim_root, sim_blinks=True)
    total = 0
    for a, b in zip(plain.trials(), withb.trials(), strict=True):
        ga, gb = plain.trial_ground_truth(a), withb.trial_ground_truth(b)
        assert validity.count_reasons(ga)["blink"] == 0 and not plain.blinks_annotated(a)
        assert withb.blinks_annotated(b)
        blinked = gb["invalid_reason"] == "blink"
        # only frames the data reasons left valid become blinks; nothing else changes
        assert (ga.loc[blinked, "invalid_reason"] == "").all()
        assert (ga.loc[~blinked, "invalid_reason"] == gb.loc[~blinked, "invalid_reason"]).all()
        total += int(blinked.sum())
    assert total > 0  # the simulated subject blinks within these three seconds


def _blink_frames(path) -> set[tuple[str, int]]:
    import pandas as pd

    df = pd.read_parquet(path, columns=["trial", "frame", "invalid_reason"])
    b = df[df["invalid_reason"] == "blink"]
    return set(zip(b["trial"], b["frame"].astype(int), strict=True))


def test_ear_blinks_in_the_run_loop_match_the_simulator(sim_root, tmp_path):
    """Blinks found by EAR in the run loop (no annotation) mask the same frames for every
    method, baselines included, and agree with the simulator's blink truth."""
    pytest.importorskip("mediapipe")
    from pathlib import Path

    from gaze4hri_bench.data import validity
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.pipeline.results import read_metadata
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark

    truth_ds = Dataset(sim_root, sim_blinks=True)
    truth = set()
    for ref in truth_ds.trials():
        gt = truth_ds.trial_ground_truth(ref)
        truth |= {(ref.trial, int(f)) for f in gt.loc[gt["invalid_reason"] == "blink", "frame"]}
    assert truth  # the simulated subject blinks within these three seconds

    def run(out: Path, **kw):
        cfg = RunConfig(
            methods=("straight", "head_pose"), data=sim_root, out=out, detector="mediapipe", progress=False, **kw
        )
        return run_benchmark(cfg, log=lambda *_: None)

    a, b = run(tmp_path / "ear")
    ear = _blink_frames(a)
    assert ear == _blink_frames(b)  # one face pass, the same mask for both baselines
    hit = len(ear & truth)
    assert hit >= 0.8 * len(truth) and len(ear - truth) <= 1, (sorted(ear), sorted(truth))
    md = read_metadata(a)
    assert md["blinks"]["source"] == "auto" and md["blinks"]["ear_relative"] == validity.EAR_RELATIVE
    assert md["timing"]["reasons"]["blink"] == len(ear)
    # no job reads face boxes: the tracked EAR pass (faces.ear_pass) built the table
    assert list((tmp_path / "ear" / ".cache" / "faces").glob("S01__*__mediapipe+ear__s1.parquet"))

    s, _ = run(tmp_path / "sim", blinks="sim")
    assert _blink_frames(s) == truth
    off, _ = run(tmp_path / "off", blinks="off")
    assert not _blink_frames(off)


def test_tracked_ear_pass_decides_blinks_as_the_full_pass(sim_root):
    """faces.ear_pass against the full pass (detector and face mesh on every frame) on
    simulated trials with blinks: the same decisions on >= 99.5 % of frames, every
    simulator-truth blink found, no open frame flagged that the full pass leaves, with
    the detector run only to find the face and landmarks skipped on some frames."""
    pytest.importorskip("mediapipe")
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.data.validity import blink_from_ear
    from gaze4hri_bench.faces.ear_pass import EAR_PASSES
    from gaze4hri_bench.pipeline.face_pass import FaceModels, FaceTrack, face_table

    ds = Dataset(sim_root, sim_blinks=True)
    models = FaceModels("mediapipe")
    n_frames = n_measured = 0
    try:
        for ref in ds.trials():
            gt = ds.trial_ground_truth(ref)
            frames = [(f.index, f.image) for f in ds.iter_frames(ref)]
            full = FaceTrack(models.detector(), landmarker=models.landmarker())
            tracked = models.ear_pass(EAR_PASSES.get("tracked"))
            for i, im in frames:
                full.step(i, im)
                tracked.step(i, im)
            a = full.table().set_index("frame")["ear"].reindex(gt["frame"]).to_numpy()
            b = face_table(tracked.rows()).set_index("frame")["ear"].reindex(gt["frame"]).to_numpy()
            assert np.isfinite(b).all()  # a face every frame, as the full pass finds
            fa, fb = blink_from_ear(a), blink_from_ear(b)
            truth = (gt["invalid_reason"] == "blink").to_numpy()
            assert (fa == fb).mean() >= 0.995, (ref.trial, np.flatnonzero(fa != fb))
            assert not (fb & ~truth & ~fa).any()
            m = np.r_[False, truth, False].astype(int)
            edges = np.flatnonzero(np.diff(m))
            for s0, e0 in zip(edges[::2], edges[1::2], strict=True):
                assert fb[s0:e0].any(), (ref.trial, s0, e0)
            assert tracked.acquired <= 2, tracked.acquired  # the detector found the face once, then tracked
            n_frames, n_measured = n_frames + len(frames), n_measured + tracked.measured
    finally:
        models.close()
    assert n_measured < 0.9 * n_frames, (n_measured, n_frames)  # past the warm-up, frames were skipped
