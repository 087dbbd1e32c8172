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
    assert list((tmp_path / "ear" / ".cache" / "faces").glob("S01__*__mediapipe__s1.parquet"))

    s, _ = run(tmp_path / "sim", blinks="sim")
    assert _blink_frames(s) == truth
    off, _ = run(tmp_path / "off", blinks="off")
    assert not _blink_frames(off)
