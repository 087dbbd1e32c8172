"""Decode once (issue 22, item 1): one run with several methods and inputs decodes each
trial once, feeds every method's pre-processing (crop, rectified, clips) from that
decode and runs the face pass once per trial, with results equal row for row to one
method at a time; batches stay full across trial boundaries; per-stage timings land in
the provenance and are printed at the end of the run.

A synthetic in-memory dataset (tests/bench/_synth.py, which counts decoded frames),
tiny gradient ONNX models with each method's exact signature, and a stub face detector
(a moving box, so crops differ frame to frame) keep this fast."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.faces.detectors import FaceDetection
from gaze4hri_bench.pipeline import face_pass, results
from gaze4hri_bench.pipeline.run import RunConfig, plan_jobs, run_benchmark

from ._synth import SynthDataset

pytestmark = pytest.mark.replay

# networks on every kind of pre-processing (crop, rectified, centred and sliding clips) + baselines
JOBS = [("tiny_test", "crop"), ("tiny_test", "rectified"), ("gat_gaze360", "rectified"), ("mcgaze_gaze360", "crop"),
        ("straight", "none"), ("head_pose", "none")]


class _StubDetector:
    """One face whose box drifts with the frame count (the tracker keeps it)."""

    name = "stub"
    has_landmarks = False

    def __init__(self):
        self.calls = 0

    def detect(self, image):
        k = self.calls % 5
        self.calls += 1
        return [FaceDetection(np.array([20.0 + k, 12.0, 70.0 + k, 62.0]), 0.9)]

    def close(self):
        pass


@pytest.fixture
def stub_faces(monkeypatch):
    """Every FaceModels of the run builds the stub; the list records each one built."""
    built = []

    def detector(self):
        if self._det is None:
            self._det = _StubDetector()
            built.append(self._det)
        return self._det

    monkeypatch.setattr(face_pass.FaceModels, "detector", detector)
    return built


def _run(out: Path, models: Path, jobs, ds, batch=5, log=None):
    methods = tuple(dict.fromkeys(m for m, _ in jobs))
    cfg = RunConfig(methods=methods, data=Path("/synthetic"), out=out, models_dir=models, progress=False, blinks="off",
                    batch=batch, detector="stub", command_line="pytest decode once")
    planned = [j for j in plan_jobs(RunConfig(**{**cfg.__dict__, "input": "both"})) + plan_jobs(cfg)
               if (j.method.name, j.input_type) in jobs]
    chosen = list({j.key: j for j in planned}.values())
    return run_benchmark(cfg, log=log or (lambda *_: None), jobs=chosen, dataset=ds)


def test_one_decode_for_every_method_and_rows_equal_single_runs(tmp_path, tiny_models, stub_faces):
    ds = SynthDataset(subjects=("S01",))  # two trials of 12 frames; batch 5 crosses their boundary
    said: list[str] = []
    paths = _run(tmp_path / "all", tiny_models, JOBS, ds, log=said.append)
    trials = len(ds.trials())
    assert ds.decoded == trials * ds.n  # every trial decoded once for the six jobs
    assert len(stub_faces) == 1 and stub_faces[0].calls == trials * ds.n  # the face pass once per trial
    assert sorted(p.name for p in paths) == sorted(f"{m}__{i}.parquet" for m, i in JOBS)
    for m, inp in JOBS:
        one = SynthDataset(subjects=("S01",))
        stub_faces.clear()
        (single,) = _run(tmp_path / f"{m}_{inp}", tiny_models, [(m, inp)], one)
        assert one.decoded == trials * ds.n
        a = pd.read_parquet(tmp_path / "all" / single.name)
        b = pd.read_parquet(single)
        pd.testing.assert_frame_equal(a, b, check_exact=True)  # row for row, bit for bit
        if inp != "none":
            assert a["valid"].sum() > 0.5 * len(a)  # the comparison is about real predictions
    # per-stage timings: in each file's provenance and printed at the end
    md = results.read_metadata(tmp_path / "all" / "tiny_test__crop.parquet")["timing"]
    assert {"decode_s", "gt_s", "detect_s", "preprocess_s", "infer_s", "write_s", "wall_s"} <= set(md)
    assert md["detect_s"] > 0 and md["infer_s"] > 0 and md["gt_s"] > 0
    assert "tiny_test__rectified" in md["shared_with"] and "straight__none" in md["shared_with"]
    timing = [ln for ln in said if ln.startswith("timing:")]
    assert timing[0].startswith(f"timing: {trials} trial(s), {trials * ds.n} frames decoded once for 6 job(s)")
    assert len(timing) == 1 + len(JOBS) and all("inference" in ln for ln in timing[1:])


def test_batches_stay_full_across_trial_boundaries(tmp_path, tiny_models, stub_faces, monkeypatch):
    from gaze4hri_bench.pipeline import runtime

    sizes: list[int] = []
    real = runtime.Runner.run

    def counting(self, *xs):
        sizes.append(len(xs[0]))
        return real(self, *xs)

    monkeypatch.setattr(runtime.Runner, "run", counting)
    ds = SynthDataset()  # 4 trials x 12 frames, every frame has a head pose: 48 rectified samples
    _run(tmp_path, tiny_models, [("tiny_test", "rectified")], ds, batch=5)
    assert sum(sizes) == 48 and sizes == [5] * 9 + [3]  # not 4 x (5, 5, 2) per trial


def test_resume_runs_only_the_missing_jobs_trials(tmp_path, tiny_models, stub_faces):
    ds = SynthDataset()
    jobs = [("tiny_test", "rectified"), ("straight", "none")]
    _run(tmp_path, tiny_models, jobs, ds)
    first = ds.decoded
    part = results.part_path(results.parts_dir(tmp_path, "tiny_test", "rectified"), "S02", "mutual_h_fast")
    before = pd.read_parquet(part)
    part.unlink()
    _run(tmp_path, tiny_models, jobs, ds)
    assert ds.decoded == first + ds.n  # one trial decoded again, for the one job that lacks it
    pd.testing.assert_frame_equal(pd.read_parquet(part), before, check_exact=True)


def test_the_study_profile_leaves_gats_last_three_frames_unscored_in_a_run(tmp_path, tiny_models, stub_faces):
    """Issue 23: the study's analyser never scores the last 3 frames of a GaT video
    (GazeForHRI/Gaze4HRI@main:data_analyer.py:114-121); the run loop applies the
    profile's setting (profiles.mark_not_scored), the reference profile scores them."""
    ds = SynthDataset(subjects=("S01",))
    got = {}
    for prof in ("reference", "study:gat_last_3_unscored"):
        cfg = RunConfig(
            methods=("gat_gaze360",),
            data=Path("/synthetic"),
            out=tmp_path / prof.replace(":", "_"),
            models_dir=tiny_models,
            progress=False,
            blinks="off",
            batch=5,
            detector="stub",
            profile=prof,
            command_line="pytest",
        )
        jobs = [j for j in plan_jobs(RunConfig(**{**cfg.__dict__, "input": "both"})) if j.input_type == "rectified"]
        [p] = run_benchmark(cfg, log=lambda *_: None, jobs=jobs, dataset=ds)
        got[prof] = pd.read_parquet(p)
    ref, study = got["reference"], got["study:gat_last_3_unscored"]
    for trial, rows in study.groupby("trial"):
        last = rows["frame"].max()
        tail = rows[rows["frame"] > last - 3]
        assert (tail["invalid_reason"] == "not_scored").all() and not tail["valid"].any(), trial
        assert "not_scored" not in set(rows[rows["frame"] <= last - 3]["invalid_reason"])
    assert "not_scored" not in set(ref["invalid_reason"])


class _PoseMatchedSynth(SynthDataset):
    """The synthetic dataset whose nearest-sample table (GTOptions sync="nearest") places the
    face 2 cm away from the interpolated one, and counts how often it is asked for."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.nearest_calls = 0

    def trial_ground_truth(self, ref, options=None):
        gt = super().trial_ground_truth(ref)
        if options is not None and getattr(options, "sync", None) == "nearest":
            self.nearest_calls += 1
            gt = gt.copy()
            gt["face_cx"] = gt["face_cx"] + 0.02
        return gt


def test_the_study_pose_match_feeds_the_rectification_once_per_trial(tmp_path, tiny_models, stub_faces):
    """Issue 23: ``rect_pose_nearest_20ms`` rectifies with the motion-capture sample nearest
    each frame (unrectification.py:103-105): the run loop builds that table once per trial
    (shared by the jobs) and the rectified inputs, hence the predictions, come from it."""
    preds = {}
    for prof in ("reference", "study:rect_pose_nearest_20ms"):
        ds = _PoseMatchedSynth(subjects=("S01",))
        cfg = RunConfig(
            methods=("gat_gaze360",),
            data=Path("/synthetic"),
            out=tmp_path / prof.replace(":", "_"),
            models_dir=tiny_models,
            progress=False,
            blinks="off",
            batch=5,
            detector="stub",
            profile=prof,
            command_line="pytest",
        )
        jobs = [j for j in plan_jobs(RunConfig(**{**cfg.__dict__, "input": "both"})) if j.input_type == "rectified"]
        [p] = run_benchmark(cfg, log=lambda *_: None, jobs=jobs, dataset=ds)
        preds[prof] = pd.read_parquet(p)[["pred_x", "pred_y", "pred_z"]].to_numpy()
        assert ds.nearest_calls == (0 if prof == "reference" else len(ds.trials())), (prof, ds.nearest_calls)
    a, b = preds.values()
    ok = np.isfinite(a).all(axis=1) & np.isfinite(b).all(axis=1)
    assert ok.sum() > 5 and np.abs(a[ok] - b[ok]).max() > 1e-4  # the nearest-sample geometry reached the network


def test_streams_run_batches_at_once_with_rows_equal_to_one_stream(tmp_path, tiny_models, stub_faces, monkeypatch):
    """--streams (runtime.resolve_streams): up to N batches in ONNX Runtime at once, from
    as many threads; the rows equal one stream's bit for bit (same intra-op threads), the
    provenance records the streams and threads, and a stream's error reaches the run."""
    import threading

    from gaze4hri_bench.pipeline import runtime

    jobs = [("tiny_test", "rectified"), ("gat_gaze360", "rectified")]
    callers: set[str] = set()
    real = runtime.Runner.run

    def spying(self, *xs):
        callers.add(threading.current_thread().name)
        return real(self, *xs)

    monkeypatch.setattr(runtime.Runner, "run", spying)
    out = {}
    for streams in (1, 3):
        cfg = RunConfig(
            methods=tuple(m for m, _ in jobs),
            data=Path("/synthetic"),
            out=tmp_path / f"s{streams}",
            models_dir=tiny_models,
            progress=False,
            blinks="off",
            batch=4,
            detector="stub",
            threads=1,
            streams=streams,
            command_line="pytest",
        )
        planned = [
            j
            for j in plan_jobs(RunConfig(**{**cfg.__dict__, "input": "both"}))
            if (j.method.name, j.input_type) in jobs
        ]
        callers.clear()
        out[streams] = run_benchmark(cfg, log=lambda *_: None, jobs=planned, dataset=SynthDataset())
        if streams == 1:
            assert callers == {threading.main_thread().name}
        else:
            assert callers and all(c.startswith("g4h-infer") for c in callers)
    for a, b in zip(sorted(out[1]), sorted(out[3]), strict=True):
        pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), check_exact=True)
    md = results.read_metadata(sorted(out[3])[0])["timing"]
    assert md["streams"] == 3 and md["threads"] == 1

    def failing(self, *xs):
        raise RuntimeError("stream broke")

    monkeypatch.setattr(runtime.Runner, "run", failing)
    cfg = RunConfig(
        methods=("tiny_test",),
        data=Path("/synthetic"),
        out=tmp_path / "fail",
        models_dir=tiny_models,
        progress=False,
        blinks="off",
        batch=4,
        detector="stub",
        threads=1,
        streams=2,
        command_line="pytest",
    )
    with pytest.raises(RuntimeError, match="stream broke"):
        run_benchmark(
            cfg,
            log=lambda *_: None,
            jobs=[j for j in plan_jobs(cfg) if j.input_type == "rectified"] or plan_jobs(cfg),
            dataset=SynthDataset(),
        )
    assert not [p for p in (tmp_path / "fail").rglob("*.parquet") if ".cache" not in p.parts]  # no result half-written


def test_resolve_streams_shares_the_cores():
    from gaze4hri_bench.pipeline.runtime import CPU_STREAMS, resolve_streams

    assert resolve_streams(None, True, None, cores=2) == (CPU_STREAMS, 1)
    assert resolve_streams(None, True, None, cores=16) == (CPU_STREAMS, 8)
    assert resolve_streams(None, True, None, cores=1) == (1, None)  # one core: as before
    assert resolve_streams(None, True, 4, cores=16) == (1, 4)  # --threads alone: one stream, as before
    assert resolve_streams(3, True, None, cores=16) == (3, 5)
    assert resolve_streams(4, False, None, cores=16) == (1, None)  # a GPU: one stream
