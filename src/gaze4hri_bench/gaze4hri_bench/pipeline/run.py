"""The benchmark run loop: (method, input type) x trials -> one row per frame.

For each job and trial: frames are decoded, the face detected and tracked (crop
inputs, and every method when blinks come from the eye aspect ratio; the trial's face
table is cached so later methods reuse it: pipeline.face_pass), pre-processed per the
method's spec and batched through ONNX Runtime; decoding and pre-processing run in a
bounded prefetch thread, overlapped with inference. Each finished trial is written as
a part file atomically, so an interrupted run resumes where it stopped (finished
trials are skipped); parts are then merged into one Parquet file per (method, input)
with provenance (results.py). Nothing holds more than one trial's rows and a few
batches of frames in memory.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.gaze import angular_error_deg, normalize

from ..data import validity
from ..data.frame_truth import pose_match_options
from ..faces.blinks import blink_source
from ..methods import get_entry, get_method
from ..methods.base import GazeMethod
from ..methods.clips import combine, smooth_sequence
from ..profiles import get_profile, mark_not_scored
from . import results
from .face_pass import (
    FaceModels,
    TrialFaces,
    ensure_profile_faces,
    face_cache_path,
    face_rule_key,
    needs_profile_pass,
    trial_exclusion,
)
from .frames import Assembler, Direct, Sample, StageTimes, frame_context, run_samples, timed_iter
from .progress import RunProgress
from .runtime import ModelFile, Runner, prefetch, resolve_model, vram_used_mb

__all__ = ["RunConfig", "Job", "run_benchmark", "plan_jobs", "process_trial", "timing_lines", "write_job_part",
           "DEFAULT_DETECTOR", "ENGINES"]

DEFAULT_DETECTOR = "auto"  # faces.detectors: yolov8_face_onnx when its weights are present, else mediapipe
ENGINES = ("local", "ray")  # where the trials run: this process, or a Ray cluster (pipeline/engine_ray.py)


@dataclass(frozen=True)
class RunConfig:
    """Everything a run needs; saved (as the command line) in each result's metadata."""

    methods: tuple[str, ...]
    data: Path
    out: Path
    input: str = "best"
    detector: str = DEFAULT_DETECTOR
    subjects: tuple[str, ...] | None = None
    trials: tuple[str, ...] | None = None
    stride: int = 1
    device: str = "auto"
    batch: int = 8
    fp16: bool = False  # --fp16: each model's FP16 copy after a parity check against FP32 (runtime.Runner)
    models_dir: Path | None = None
    threads: int | None = None  # ONNX Runtime intra-op threads per stream (None: the cores shared out)
    streams: int | None = None  # batches of one network in flight at once (None: runtime.resolve_streams)
    progress: bool = True
    prefetch: int = 32
    command_line: str = ""
    blinks: str = "auto"  # faces.blinks.BLINK_SOURCES
    ear_relative: float | None = validity.EAR_RELATIVE  # blink: EAR < this x the trial median (None: off)
    ear_threshold: float | None = None  # blink: EAR < this absolute value (None: off)
    data_format: str = "auto"  # data.reader.FORMATS: auto (detect), session (MCAP) or study (released layout)
    profile: str = "reference"  # profiles.PROFILES: how inputs are prepared and outputs decoded
    engine: str = "local"  # ENGINES: local (this process) or ray (one trial per unit on a Ray cluster: engine_ray.py)
    address: str | None = None  # ray: the cluster to join (None: a local Ray runtime; "auto": the one this node is in)
    workers: int | None = None  # ray: actors to start (None: as many as the cluster's free CPUs/GPUs allow)


@dataclass
class Job:
    """One (method, input type) pair of a run."""

    method: GazeMethod
    input_type: str
    model: ModelFile | None = None
    runner: Runner | None = None
    times: StageTimes = field(default_factory=StageTimes)

    @property
    def key(self) -> str:
        return f"{self.method.name}__{self.input_type}"


def plan_jobs(cfg: RunConfig) -> list[Job]:
    """Resolve every method and input and every model file before any work starts:
    an unknown method or a missing model fails here with one line."""
    jobs: dict[str, Job] = {}
    inputs = ["crop", "rectified"] if cfg.input == "both" else [cfg.input]
    profile = get_profile(cfg.profile)  # unknown profile: one line, before any work
    for name in cfg.methods:
        m = get_method(name, profile=profile) if get_entry(name).kind == "onnx" else get_method(name)
        for inp in inputs:
            it = m.resolve_input(inp)
            job = Job(m, it)
            if job.key in jobs:
                continue
            if m.kind == "onnx":
                job.model = resolve_model(m.spec, cfg.models_dir)
            jobs[job.key] = job
    if not jobs:
        raise Gaze4HRIError("no method to run", "--method", "name at least one method (`gaze4hri-bench methods` lists them)")
    return list(jobs.values())


# -- ground truth -------------------------------------------------------------------------
def _vec(gt: pd.DataFrame, cols: list[str]) -> np.ndarray | None:
    return gt[cols].to_numpy(float) if all(c in gt.columns for c in cols) else None


def gt_geometry(gt: pd.DataFrame) -> dict[int, dict]:
    """frame -> {face_center_cam, R_head_cam, head_forward} from the ground-truth table
    (motion capture; data.reader.trial_ground_truth columns)."""
    n = len(gt)
    c = _vec(gt, ["face_cx", "face_cy", "face_cz"])
    e = _vec(gt, ["eye_cx", "eye_cy", "eye_cz"])
    f = _vec(gt, ["head_fwd_x", "head_fwd_y", "head_fwd_z"])
    rcols = [f"R_head_{i}{j}" for i in range(3) for j in range(3)]
    R = _vec(gt, rcols)
    out = {}
    frames = gt["frame"].to_numpy()
    for i in range(n):
        out[int(frames[i])] = {
            "face_center_cam": c[i] if c is not None else np.full(3, np.nan),
            "head_forward": f[i] if f is not None else np.full(3, np.nan),
            "eye_center_cam": e[i] if e is not None else np.full(3, np.nan),
            "R_head_cam": R[i].reshape(3, 3) if R is not None else np.full((3, 3), np.nan),
        }
    return out


def _intrinsics(ds, tref, shape) -> np.ndarray:
    """K at the image's resolution: the bag's CameraInfo when the dataset reads it, else
    the session calibration's (scaled like the RealSense across 16:9 modes)."""
    cam = getattr(ds, "camera_info", None)
    intr = cam(tref) if callable(cam) else getattr(getattr(tref, "calibration", None), "intrinsics", None)
    if intr is None:
        raise Gaze4HRIError("no camera intrinsics for this trial", f"{tref.subject}/{tref.trial}",
                            "the session's calibration/ folder needs camera_info (docs/calibration.md)")
    h, w = shape[:2]
    if (intr.width, intr.height) != (w, h):
        intr = intr.scaled(w, h)
    return np.asarray(intr.K, float)


# -- one pass over the trials for every job (decode once) -----------------------------------
def _blinks_annotated(ds, tref) -> bool:
    f = getattr(ds, "blinks_annotated", None)
    return bool(f(tref)) if callable(f) else False


class _JobFaces:
    """One job's view of a trial's shared face tables: boxes from ``boxes`` (the run's
    common table, or the job's profile rule), EAR from ``ear`` (the common table)."""

    def __init__(self, tables: dict, boxes: str, ear: str | None):
        self.tables, self.boxes, self.ear = tables, boxes, ear

    def table(self) -> pd.DataFrame:
        return self.tables[self.boxes].table()

    def ear_table(self) -> pd.DataFrame:
        return self.tables[self.ear or self.boxes].table()


class _TrialFaces:
    """The face tables one trial needs for all its jobs, each filled once per frame
    however many jobs read it (pipeline.face_pass): the run's common table (subject
    rule, with EAR when blinks come from it) and one per profile face rule (built by
    its pre-pass, then read from the cache)."""

    def __init__(self, jobs: list[Job], ds, tref, cfg: RunConfig, models: FaceModels, ear_here: bool,
                 cache_of, times: StageTimes):
        self.tables: dict[str, TrialFaces] = {}
        self.views: dict[int, _JobFaces | None] = {}
        common = str(cache_of(cfg.detector))
        for ji, job in enumerate(jobs):
            if job is None:
                continue
            needs = job.method.needs_face(job.input_type)
            if not (needs or ear_here):
                self.views[ji] = None
                continue
            rec = getattr(job.method, "settings", None)
            if needs_profile_pass(rec) and needs:
                path = cache_of(cfg.detector + face_rule_key(rec))
                if str(path) not in self.tables:
                    t0 = time.perf_counter()  # the profile's face rule (study: the most frequent track needs the whole trial)
                    ensure_profile_faces(ds, tref, path, models.with_conf(rec.detector_conf), rec, False)
                    times.detect_s += time.perf_counter() - t0
                    self.tables[str(path)] = TrialFaces(models, path, landmarks=False)
                if ear_here and common not in self.tables:
                    self.tables[common] = TrialFaces(models, Path(common), landmarks=True)
                self.views[ji] = _JobFaces(self.tables, str(path), common if ear_here else None)
            else:
                if common not in self.tables:
                    self.tables[common] = TrialFaces(models, Path(common), landmarks=ear_here)
                self.views[ji] = _JobFaces(self.tables, common, None)
        self.common = common

    def step(self, index: int, image: np.ndarray) -> dict[str, np.ndarray | None]:
        """Every table's box in this frame (detect + track once per table)."""
        return {k: tf.box(index, image) for k, tf in self.tables.items()}

    def box(self, ji: int, boxes: dict) -> np.ndarray | None:
        v = self.views.get(ji)
        return boxes.get(v.boxes) if v is not None else None

    def save(self) -> None:
        for tf in self.tables.values():
            tf.save()


@dataclass
class _JobTrial:
    """One job's state on one trial in flight."""

    acc_sum: dict = field(default_factory=dict)
    acc_n: dict = field(default_factory=dict)
    outstanding: int = 0  # samples queued for inference, not yet back
    preprocess_s: float = 0.0
    infer_s: float = 0.0
    excluded: str | None = None
    bar: object = None


@dataclass
class _Trial:
    """A trial in flight: its ground truth (blinks applied at its end), the stage times
    it shares with every job (decode, ground truth, faces) and each job's state."""

    tref: object
    jobs: dict[int, _JobTrial]
    times: StageTimes = field(default_factory=StageTimes)
    gt: pd.DataFrame | None = None
    faces: _TrialFaces | None = None
    ended: bool = False
    camera_sources: dict | None = None
    pose_gt: dict = field(default_factory=dict)  # job -> its own pose-matched ground truth (study pose_match)
    peak: float = 0.0
    remaining: int = 0  # jobs whose part of this trial is not written yet


def _timed_run(run, samples: list[Sample]) -> tuple[list[np.ndarray], float]:
    """A batch through ``run`` (runtime.Runner.run) and its wall time (in the stream that ran it)."""
    t0 = time.perf_counter()
    return run_samples(run, samples), time.perf_counter() - t0


class _Engine:
    """Every job over every trial in one pass (docs/pipeline.md, "Run loop"): a producer
    thread decodes each trial once, computes its ground truth and face tables once, and
    runs every job's pre-processing from that decode; the main thread batches each
    network's samples across trial boundaries (full batches) and runs ONNX Runtime. A
    job's trial is written (part file) once its last sample is back, in trial order."""

    def __init__(self, jobs: list[Job], todo: list[set], cfg: RunConfig, ds, face_models: FaceModels,
                 on_part, bars: list | None = None):
        import psutil

        self.jobs, self.todo, self.cfg, self.ds = jobs, todo, cfg, ds
        self.face_models, self.on_part, self.bars = face_models, on_part, bars
        self.proc = psutil.Process()
        self.pending: dict[int, list[tuple[_Trial, Sample]]] = {ji: [] for ji, j in enumerate(jobs) if j.method.kind == "onnx"}
        self.fifo: dict[int, list[_Trial]] = {ji: [] for ji in range(len(jobs))}
        self.inflight: list[_Trial] = []
        self.last_done = [0.0] * len(jobs)
        self.totals = [StageTimes() for _ in jobs]
        self.t_start = 0.0
        self.trials_decoded = 0
        self.shared = StageTimes()  # decode, ground truth, faces of the whole run (once per trial)
        # batches running in ONNX Runtime (Runner.streams > 1: a pool of that many threads),
        # finished strictly in submission order, so rows and part files come out as before
        self.running: deque = deque()
        self.pool: ThreadPoolExecutor | None = None

    # -- producer (prefetch thread) ---------------------------------------------------------
    def _produce(self, trefs: list) -> Iterator:
        cfg, ds = self.cfg, self.ds
        src = blink_source(cfg.blinks)
        for t in trefs:
            key = (t.subject, t.trial)
            here = [ji for ji in range(len(self.jobs)) if key in self.todo[ji]]
            if not here:
                continue
            hold = getattr(ds, "hold", None)  # one open reader for the trial's scan, frames and intrinsics
            with hold(t) if callable(hold) else nullcontext():
                yield from self._produce_trial(t, here, src)

    def _produce_trial(self, t, here: list[int], src) -> Iterator:
        """One trial for the jobs ``here``: ground truth, face tables, every job's samples
        (see _produce)."""
        cfg, ds = self.cfg, self.ds
        tr = _Trial(t, {ji: _JobTrial() for ji in here}, remaining=len(here))
        t0 = time.perf_counter()
        gt = ds.trial_ground_truth(t)
        geo = gt_geometry(gt)
        job_geo, by_opt = {}, {}
        for ji in here:  # a profile that matches poses to frames its own way (study: nearest sample within 20 ms)
            opt = pose_match_options(getattr(self.jobs[ji].method, "settings", None), self.jobs[ji].input_type,
                                     getattr(ds, "gt_options", None))
            if opt is not None:
                if opt not in by_opt:  # once per trial and options (GTOptions is frozen), shared by the jobs
                    pg = ds.trial_ground_truth(t, options=opt)
                    by_opt[opt] = (pg, gt_geometry(pg))
                tr.pose_gt[ji], job_geo[ji] = by_opt[opt]
        tr.times.gt_s = time.perf_counter() - t0
        tr.gt = gt
        yield "start", -1, tr, None
        ear_here = src.ear and not _blinks_annotated(ds, t)
        cache_of = lambda k, t=t: face_cache_path(cfg.out, t.subject, t.trial, k, cfg.stride)  # noqa: E731
        sel = [self.jobs[ji] if ji in tr.jobs else None for ji in range(len(self.jobs))]
        faces = _TrialFaces(sel, ds, t, cfg, self.face_models, ear_here, cache_of, tr.times)
        tr.faces = faces
        asm = {ji: Assembler(self.jobs[ji].method) for ji in here if self.jobs[ji].method.kind == "onnx"}
        need_face = {ji: self.jobs[ji].method.needs_face(self.jobs[ji].input_type) for ji in here}
        K = None
        for fs in timed_iter(ds.iter_frames(t), tr.times, "decode_s"):
            tr.times.frames += 1
            if K is None:
                t0 = time.perf_counter()
                K = _intrinsics(ds, t, fs.image.shape)
                tr.times.decode_s += time.perf_counter() - t0
            t0 = time.perf_counter()
            boxes = faces.step(fs.index, fs.image) if faces.tables else {}
            tr.times.detect_s += time.perf_counter() - t0
            g = geo.get(fs.index)
            for ji in here:
                job, jt = self.jobs[ji], tr.jobs[ji]
                t1 = time.perf_counter()
                gj = job_geo[ji].get(fs.index) if ji in job_geo else g
                ctx = frame_context(fs.index, fs.t_ns, fs.image, faces.box(ji, boxes) if need_face[ji] else None, K, gj)
                out = (asm[ji].push(fs.index, job.method.prepare(ctx, job.input_type)) if ji in asm
                       else [Direct(fs.index, job.method.predict(ctx))])
                jt.preprocess_s += time.perf_counter() - t1
                for item in out:
                    yield "item", ji, tr, item
        for ji, a in asm.items():
            t1 = time.perf_counter()
            out = a.finish()
            tr.jobs[ji].preprocess_s += time.perf_counter() - t1
            for item in out:
                yield "item", ji, tr, item
        t0 = time.perf_counter()
        if faces.tables:
            faces.save()
            if ear_here:
                from ..faces.blinks import ear_blinks

                blink = ear_blinks(tr.gt, faces.tables[faces.common].table(), cfg.ear_threshold, cfg.ear_relative)
                tr.gt = validity.apply_face_reasons(tr.gt, blink=blink)
        for ji in here:
            rec = getattr(self.jobs[ji].method, "settings", None)
            view = faces.views.get(ji)
            if rec is not None and rec.missing_face == "trial" and view is not None and need_face[ji]:
                tr.jobs[ji].excluded = trial_exclusion(tr.gt["frame"].to_numpy(), view.table())
        tr.camera_sources = camera_source_summary(t, tr.gt)
        tr.times.detect_s += time.perf_counter() - t0
        yield "end", -1, tr, None

    # -- consumer (main thread) -------------------------------------------------------------
    def run(self, trefs: list) -> None:
        try:
            self._run(trefs)
        finally:
            if self.pool is not None:
                self.pool.shutdown(wait=True, cancel_futures=True)
                self.pool = None

    def _run(self, trefs: list) -> None:
        self.t_start = time.perf_counter()
        self.last_done = [self.t_start] * len(self.jobs)
        width = max(1, len(self.jobs))
        for kind, ji, tr, item in prefetch(self._produce(trefs), maxsize=self.cfg.prefetch * width):
            if kind == "start":
                tr.peak = self.proc.memory_info().rss
                self.inflight.append(tr)
                for j in tr.jobs:
                    self.fifo[j].append(tr)
                continue
            if kind == "item":
                jt = tr.jobs[ji]
                if isinstance(item, Direct):
                    jt.acc_sum[item.frame] = item.vector
                    jt.acc_n[item.frame] = 1
                    self._bar(ji, tr).update(1)
                    continue
                jt.outstanding += 1
                p = self.pending[ji]
                p.append((tr, item))
                if len(p) >= self.jobs[ji].runner.batch:
                    self.pending[ji] = []
                    self._infer(ji, p)
                continue
            tr.ended = True  # "end": the producer is done with this trial
            self.trials_decoded += 1
            self.shared.add(tr.times)
            for j in tr.jobs:
                self._drain(j)
        for ji, p in self.pending.items():  # the run's last, partial batches
            if p:
                self.pending[ji] = []
                self._infer(ji, p)
        while self.running:
            self._complete()

    def _bar(self, ji: int, tr: _Trial):
        jt = tr.jobs[ji]
        if jt.bar is None:
            jt.bar = self.bars[ji].start_trial(tr.tref) if self.bars is not None else _NoBar()
            jt.bar.total = len(tr.gt)
            jt.bar.refresh()
        return jt.bar

    def _infer(self, ji: int, batch: list[tuple[_Trial, Sample]]) -> None:
        """Run one batch: at once (one stream), or in the pool with at most
        ``runner.streams`` batches in flight, the oldest finished first (_complete)."""
        runner = self.jobs[ji].runner
        samples = [s for _, s in batch]
        if runner.streams <= 1:
            self._finish_batch(ji, batch, *_timed_run(runner.run, samples))
            return
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max(j.runner.streams for j in self.jobs if j.runner is not None),
                                           thread_name_prefix="g4h-infer")
        while len(self.running) >= runner.streams:
            self._complete()
        self.running.append((ji, batch, self.pool.submit(_timed_run, runner.run, samples)))

    def _complete(self) -> None:
        """Wait for the oldest running batch and take its outputs."""
        ji, batch, fut = self.running.popleft()
        self._finish_batch(ji, batch, *fut.result())

    def _finish_batch(self, ji: int, batch: list[tuple[_Trial, Sample]], outs: list, run_s: float) -> None:
        """Decode a batch's outputs into its trials' accumulators, then write what is done.
        ``infer_s``: the batch's ONNX Runtime time in its stream plus this decoding."""
        job = self.jobs[ji]
        t0 = time.perf_counter()
        g = job.method.decode(outs)  # (B,3) or (B,T,3), network frame
        pol = getattr(job.method, "clip_policy", None)
        if g.ndim == 2:  # single-frame networks (per sample, as a one-method run always did: identical bits)
            for i, (tr, s) in enumerate(batch):
                jt = tr.jobs[ji]
                jt.acc_sum[s.frames[0]] = job.method.to_camera(g[i][None], s.to_cam[None])[0]
                jt.acc_n[s.frames[0]] = 1
        else:
            for i, (tr, s) in enumerate(batch):
                jt = tr.jobs[ji]
                positions = [s.read] if s.read is not None else range(g.shape[1])
                for k in positions:
                    f = s.frames[k]
                    if f is None:
                        continue
                    v = job.method.to_camera(g[i, k][None], s.to_cam[k][None])[0]
                    jt.acc_sum[f], jt.acc_n[f] = combine(pol, (jt.acc_sum[f], jt.acc_n[f]) if f in jt.acc_sum else None, v)
        dt = (run_s + time.perf_counter() - t0) / len(batch)
        rss = self.proc.memory_info().rss
        for tr in self.inflight:
            tr.peak = max(tr.peak, rss)
        for tr, _s in batch:
            tr.jobs[ji].infer_s += dt  # a batch across trials: its time shared per sample
        for tr, _s in batch:
            self._bar(ji, tr).update(1)
            tr.jobs[ji].outstanding -= 1
            self._drain(ji)

    def _drain(self, ji: int) -> None:
        """Write this job's finished trials, oldest first."""
        q = self.fifo[ji]
        while q and q[0].ended and q[0].jobs[ji].outstanding == 0:
            self._finish(ji, q.pop(0))

    def _finish(self, ji: int, tr: _Trial) -> None:
        job, jt = self.jobs[ji], tr.jobs[ji]
        t0 = time.perf_counter()
        rec = getattr(job.method, "settings", None)
        preds = {f: normalize(jt.acc_sum[f] / jt.acc_n[f]) for f in jt.acc_sum}
        if rec is not None and rec.smoothing is not None and preds:  # official temporal filter (MCGaze evaluation)
            order = sorted(preds)
            preds = dict(zip(order, smooth_sequence([preds[f] for f in order], rec.smoothing), strict=True))
        if rec is not None and rec.clip_shift:  # the study compared frame f with the output for f - shift
            preds = {f + rec.clip_shift: v for f, v in preds.items()}
        if jt.excluded:
            preds = {}  # the whole trial is excluded: every frame no_face
        df = rows_for_trial(job, tr.tref, tr.gt, preds)
        # frames the profile does not score (study: GaT's last 3 frames; no pose within 20 ms)
        df = mark_not_scored(df, rec, job.input_type, pose_gt=tr.pose_gt.get(ji),
                             last_frame=int(tr.gt["frame"].max()) if len(tr.gt) else None)
        times = StageTimes(decode_s=tr.times.decode_s, detect_s=tr.times.detect_s, preprocess_s=jt.preprocess_s,
                           infer_s=jt.infer_s, frames=tr.times.frames, excluded=jt.excluded, gt_s=tr.times.gt_s)
        times.camera_sources = tr.camera_sources
        times.shared_with = [self.jobs[j].key for j in tr.jobs if j != ji]
        tr.peak = max(tr.peak, self.proc.memory_info().rss)
        times.write_s = time.perf_counter() - t0
        now = time.perf_counter()
        wall = now - self.last_done[ji]  # this job's time since its previous trial was written
        self.on_part(ji, tr.tref, df, times, wall, tr.peak / 2**20)
        times.write_s += time.perf_counter() - now  # the part file itself (printed; the part records the rows' share)
        self.last_done[ji] = time.perf_counter()
        self.totals[ji].add(times)
        if self.bars is not None:
            self.bars[ji].end_trial(self._bar(ji, tr))
        tr.remaining -= 1
        if tr.remaining == 0:
            self.inflight.remove(tr)


class _NoBar:
    total = None

    def refresh(self) -> None:
        pass

    def update(self, n: int = 1) -> None:
        pass


def process_trial(job: Job, ds, tref, cfg: RunConfig, face_models: FaceModels | None = None) -> tuple[pd.DataFrame, StageTimes, float]:
    """Run one job on one trial: (rows as in schema.COLUMNS, stage times, peak RSS MB).
    The run loop's engine on a single (job, trial), nothing written but the face cache
    under ``cfg.out``; blinks from EAR (cfg.blinks) are added to the ground truth's
    reasons as in a run."""
    got = {}
    models = face_models or FaceModels(cfg.detector)
    key = (tref.subject, tref.trial)

    def on_part(ji, t, df, times, wall, peak):
        got.update(df=df, times=times, peak=peak)

    eng = _Engine([job], [{key}], cfg, ds, models, on_part)
    if job.method.kind == "onnx" and job.runner is None:
        job.runner = make_runner(job, cfg)
    try:
        eng.run([tref])
    finally:
        if face_models is None:
            models.close()
    return got["df"], got["times"], got["peak"]


def camera_source_summary(tref, gt: pd.DataFrame) -> dict | None:
    """Forward kinematics x hand-eye against the camera's motion-capture rigid body over
    one trial (issue 13, camera pose source): the frames with both poses and the median,
    95th percentile and maximum of their position (mm) and orientation (deg)
    disagreement (data.backends.session.tracked_inputs); None when a source is missing."""
    if "camera_src_diff_mm" not in gt.columns or "camera_src_diff_deg" not in gt.columns:
        return None
    mm = gt["camera_src_diff_mm"].to_numpy(float)
    deg = gt["camera_src_diff_deg"].to_numpy(float)
    ok = np.isfinite(mm) & np.isfinite(deg)
    if not ok.any():
        return None
    source = str(getattr(tref, "camera_pose_source", "fk"))  # read from the manifest once, at listing
    q = lambda v, x: round(float(np.percentile(v[ok], x)), 4)  # noqa: E731
    return {"source": source, "frames": int(ok.sum()), "median_mm": q(mm, 50), "p95_mm": q(mm, 95), "max_mm": round(float(mm[ok].max()), 4),
            "median_deg": q(deg, 50), "p95_deg": q(deg, 95), "max_deg": round(float(deg[ok].max()), 4)}


#: A frame the data marked valid whose ground-truth gaze is not a finite vector (e.g. the
#: last frame when no pose follows it): invalid, with this reason (one of validity.REASONS,
#: so validity.count_reasons counts it), so that `run`, the results and the report count
#: the same valid frames (an error needs a ground truth).
NO_GROUND_TRUTH = "no_ground_truth"
assert NO_GROUND_TRUTH in validity.REASONS


def rows_for_trial(job: Job, tref, gt: pd.DataFrame, preds: dict[int, np.ndarray]) -> pd.DataFrame:
    """One row per ground-truth frame (schema.COLUMNS); invalid frames keep their reason,
    valid frames without a ground-truth vector become ``no_ground_truth``, valid frames
    without a prediction ``no_face``; error NaN where not valid. ``cam_world_*`` copy
    the ground truth's camera position on every row (NaN when the table has none)."""
    from gaze4hri_core.protocol import trial_by_id

    n = len(gt)
    frames = gt["frame"].to_numpy(np.int64)
    pred = np.full((n, 3), np.nan)
    for i, f in enumerate(frames):
        v = preds.get(int(f))
        if v is not None:
            pred[i] = v
    gtv = gt[["gt_x", "gt_y", "gt_z"]].to_numpy(float)
    gt_valid = gt["valid"].to_numpy(bool)
    reason = gt["invalid_reason"].fillna("").astype(str).to_numpy(object)
    no_gt = gt_valid & ~(np.isfinite(gtv).all(axis=1) & (np.linalg.norm(np.nan_to_num(gtv), axis=1) > 0))
    reason = np.where(no_gt, NO_GROUND_TRUTH, reason)
    gt_valid = gt_valid & ~no_gt
    has = np.isfinite(pred).all(axis=1)
    valid = gt_valid & has
    reason = np.where(gt_valid & ~has, "no_face", reason)
    err = np.where(valid, np.asarray(angular_error_deg(gtv, pred), float).reshape(n), np.nan)
    try:
        t = trial_by_id(tref.trial)
        exp, cond, target = t.experiment, str(t.condition), t.target
    except KeyError:
        exp, cond, target = "unknown", "", ""

    def col(name, default=np.nan):
        return gt[name].to_numpy(float) if name in gt.columns else np.full(n, default)

    df = pd.DataFrame({
        "subject": tref.subject, "experiment": exp, "condition": cond, "target": target, "trial": tref.trial,
        "frame": frames, "t_ns": gt["t_ns"].to_numpy(np.int64), "method": job.method.name, "input": job.input_type,
        "valid": valid, "invalid_reason": np.where(valid, "", reason),
        "gt_x": gtv[:, 0], "gt_y": gtv[:, 1], "gt_z": gtv[:, 2],
        "gt_pitch_deg": col("gt_pitch_deg"), "gt_yaw_deg": col("gt_yaw_deg"),
        "pred_x": pred[:, 0], "pred_y": pred[:, 1], "pred_z": pred[:, 2], "error_deg": err,
        "head_gaze_conflict_deg": col("head_gaze_conflict_deg"), "camera_yaw_deg": col("camera_yaw_deg"),
        # the camera's path in the world (the ground truth's camera pose), for every frame
        # whose camera pose is known, valid or not: the study segments its line scans on it
        "cam_world_x": col("cam_world_x"), "cam_world_y": col("cam_world_y"), "cam_world_z": col("cam_world_z"),
    })
    return results.coerce(df)


# -- the run ------------------------------------------------------------------------------
def run_benchmark(cfg: RunConfig, log=print, jobs: list[Job] | None = None, dataset=None, skipped: list | None = None) -> list[Path]:
    """Run every job over every selected trial; return the per-(method, input) files.
    Each trial is decoded once for all jobs (_Engine). ``dataset``: an object with the
    data.reader.Dataset interface (default: read cfg.data). ``skipped``: a list that
    receives the reader's SkippedTrial entries (damaged bags, refused study trials),
    which are also listed again at the end of the run."""
    if cfg.engine not in ENGINES:
        raise Gaze4HRIError(f"unknown engine {cfg.engine!r}", "--engine", f"use one of: {', '.join(ENGINES)}")
    jobs = jobs if jobs is not None else plan_jobs(cfg)
    src = blink_source(cfg.blinks)
    if src.ear and cfg.ear_relative is None and cfg.ear_threshold is None:
        raise Gaze4HRIError("EAR blinks need a rule", "--ear-relative/--ear-threshold",
                            f"keep the default --ear-relative {validity.EAR_RELATIVE}, give --ear-threshold, or pass --blinks annotations|off")
    dataset_given = dataset
    ds = dataset if dataset is not None else open_dataset(cfg)
    trefs = [t for t in ds.trials() if getattr(t, "status", "done") in ("done", "incomplete")]
    bad = list(getattr(ds, "skipped", None) or [])  # damaged bags, bad trials of the study layout: listed, the run goes on
    if skipped is not None:
        skipped.extend(bad)
    for sk in bad:
        log(f"skipped {sk.subject}/{sk.trial}: {sk.reason}")
    for w in getattr(ds, "warnings", None) or []:
        log(f"warning: {w}")
    if not trefs:
        raise Gaze4HRIError(f"no recorded trials under {cfg.data}", "--data",
                            "pass a folder of sessions (<root>/<subject>/session.yaml) or check --subjects/--trials")
    cfg.out.mkdir(parents=True, exist_ok=True)
    written = []
    face_models = FaceModels(cfg.detector)
    with RunProgress(cfg.progress, log) as prog:  # bars (TTY) with messages above them
        try:
            todo, bars = _plan_todo(cfg, jobs, trefs, prog, sessions=cfg.engine == "local")

            def on_part(ji, t, df, times, wall, peak):
                write_job_part(cfg, jobs[ji], t, df, times, wall, peak)
                if times.excluded:
                    prog.write(excluded_line(cfg, jobs[ji], t, times.excluded))

            if cfg.engine == "ray":  # imported here: the local engine never imports Ray
                from .engine_ray import run_ray

                engine = run_ray(cfg, jobs, todo, trefs, bars, prog.write, dataset=None if dataset_given is None else ds)
            else:
                engine = _Engine(jobs, todo, cfg, ds, face_models, on_part, bars)
                engine.run(trefs)
            for bar in bars:
                bar.close()
            for job in jobs:
                written.append(_merge_job(job, cfg, trefs, prog.write))
            for line in timing_lines(jobs, engine):
                prog.write(line)
        finally:
            face_models.close()
    if bad:
        log(f"{len(bad)} trial(s) skipped, results written for the others:")
        for sk in bad:
            log(f"  skipped {sk.subject}/{sk.trial}: {sk.reason}")
    return written


def open_dataset(cfg: RunConfig):
    """The data.reader.Dataset that ``cfg`` selects (the driver's, and each Ray worker's own)."""
    from ..data.reader import Dataset

    src = blink_source(cfg.blinks)
    return Dataset(cfg.data, subjects=list(cfg.subjects) if cfg.subjects else None,
                   trials=list(cfg.trials) if cfg.trials else None, stride=cfg.stride,
                   blink_annotations=src.annotations, sim_blinks=src.sim, format=cfg.data_format)


def _plan_todo(cfg: RunConfig, jobs: list[Job], trefs: list, prog: RunProgress, sessions: bool = True) -> tuple[list[set], list]:
    """What each job still has to do (resume: trials without a part file), its ONNX
    session (``sessions``; the Ray engine builds them in its actors) and its bars."""
    todo, bars = [], []
    for k, job in enumerate(jobs):
        parts = results.parts_dir(cfg.out, job.method.name, job.input_type)
        results.check_profile(parts, cfg.profile)  # resume never mixes pipeline profiles
        mine = [t for t in trefs if not results.part_path(parts, t.subject, t.trial).is_file()]
        todo.append({(t.subject, t.trial) for t in mine})
        label = f"{job.method.name} ({job.input_type})"
        if sessions and mine and job.method.kind == "onnx" and job.runner is None:
            job.runner = make_runner(job, cfg, log=prog.write)
        dev = (job.runner.device if job.runner is not None else "cpu") if sessions else f"ray (--device {cfg.device})"
        if sessions and job.runner is not None and job.runner.streams > 1:
            dev += f" ({job.runner.streams} streams x {job.runner.threads} thread{'s' if job.runner.threads != 1 else ''})"
        done = len(trefs) - len(mine)
        prog.write(f"{label}: {len(mine)} trial(s) to run" + (f", {done} already done (resumed)" if done else "")
                   + (f" on {dev}" if mine else ""))
        bars.append(prog.job(label, mine, cfg.stride, position=2 * k))
    return todo, bars


def make_runner(job: Job, cfg: RunConfig, threads: int | None = None, log=print, streams: int | None = None) -> Runner:
    """The ONNX Runtime session of one job as the run's settings ask (device, batch, threads,
    streams, FP16); the one place the local engine, process_trial and the Ray workers build it."""
    return Runner(job.model.path, job.method.spec, cfg.device, cfg.batch, cfg.threads if threads is None else threads,
                  fp16=cfg.fp16, log=log, streams=cfg.streams if streams is None else streams)


def write_job_part(cfg: RunConfig, job: Job, t, df: pd.DataFrame, times: StageTimes, wall: float, peak: float) -> Path:
    """One job's finished trial as its atomic part file, with its timings and provenance
    (results.write_part); where the trial ran (this process or a Ray worker) writes it."""
    dev = job.runner.device if job.runner is not None else "cpu"
    vram = vram_used_mb() if dev == "cuda" else None
    return results.write_part(results.part_path(results.parts_dir(cfg.out, job.method.name, job.input_type), t.subject, t.trial), df, {
        "frames": times.frames, "decode_s": times.decode_s, "gt_s": times.gt_s, "detect_s": times.detect_s,
        "preprocess_s": times.preprocess_s, "infer_s": times.infer_s, "write_s": times.write_s, "wall_s": wall,
        "shared_with": times.shared_with,
        "peak_rss_mb": peak, "peak_vram_mb": vram, "device": dev,
        "batch": job.runner.batch if job.runner is not None else cfg.batch,  # --batch auto: the size it chose
        "streams": job.runner.streams if job.runner is not None else 1,  # --streams: batches in flight at once
        "threads": job.runner.threads if job.runner is not None else cfg.threads,  # intra-op threads per stream (None: ORT's)
        "calibration_hashes": _cal_hashes(t), "reasons": validity.count_reasons(df),
        "subject_info": dict(getattr(t, "subject_info", None) or {}),
        "data_backend": _data_backend(t),
        "profile": cfg.profile, "excluded": times.excluded,
        "camera_sources": times.camera_sources,
    })


def excluded_line(cfg: RunConfig, job: Job, t, why: str) -> str:
    return f"{job.method.name} ({job.input_type}): {t.subject}/{t.trial} excluded under profile {cfg.profile}: {why}"


def _merge_job(job: Job, cfg: RunConfig, trefs: list, log) -> Path:
    """Merge one job's part files into its results file and say how many frames are valid."""
    parts = results.parts_dir(cfg.out, job.method.name, job.input_type)
    paths = [results.part_path(parts, t.subject, t.trial) for t in trefs]
    path = results.merge(cfg.out, job, paths, cfg)
    r = results.read_metadata(path)["timing"].get("reasons") or {}
    removed = ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("valid", "total") and v)
    log(f"{job.method.name} ({job.input_type}): {r.get('valid', '?')} of {r.get('total', '?')} frames valid"
        + (f" (removed: {removed})" if removed else "") + f"; wrote {path}")
    return path


_STAGE_NAMES = {"decode_s": "decode", "gt_s": "ground truth", "detect_s": "faces", "preprocess_s": "pre-process",
                "infer_s": "inference", "write_s": "writing"}


def timing_lines(jobs: list[Job], engine: _Engine) -> list[str]:
    """The run's per-stage seconds, printed at its end: the shared pass (decode, ground
    truth, faces: once per trial for every job) and each job's own stages, with its wall
    time and frames per second. Stages overlap (producer thread), so they do not add up
    to the wall time."""
    if not engine.trials_decoded:
        return []
    s = engine.shared
    shared = ", ".join(f"{_STAGE_NAMES[k]} {getattr(s, k):.1f} s" for k in ("decode_s", "gt_s", "detect_s"))
    lines = [f"timing: {engine.trials_decoded} trial(s), {s.frames} frames decoded once for {len(jobs)} job(s): {shared}"]
    for ji, job in enumerate(jobs):
        t = engine.totals[ji]
        if not t.frames:
            continue
        wall = engine.last_done[ji] - engine.t_start
        streams = job.runner.streams if job.runner is not None else 1
        own = ", ".join(f"{_STAGE_NAMES[k]} {getattr(t, k):.1f} s" + (f" (summed over {streams} streams)" if k == "infer_s" and streams > 1 else "")
                        for k in ("preprocess_s", "infer_s", "write_s"))
        lines.append(f"timing: {job.method.name} ({job.input_type}): {t.frames} frames in {wall:.1f} s "
                     f"({t.frames / wall if wall > 0 else 0:.1f} frames/s); {own}")
    return lines


def _data_backend(tref) -> str:
    """Where the trial's data came from, for the report's status box: the session's acquisition
    backend (session.yaml ``backend``: sim, real, ...; read at listing) or the reader backend (``study``)."""
    if getattr(tref, "backend", "session") != "session":
        return str(tref.backend)
    known = str(getattr(tref, "session_backend", "unknown"))
    if known != "unknown":
        return known
    from gaze4hri_core.session import load_manifest  # a reference built without the listing's field

    try:
        return str(load_manifest(tref.session_dir).backend)
    except (Gaze4HRIError, OSError, AttributeError):
        return "unknown"


def _cal_hashes(tref) -> dict:
    cal = getattr(tref, "calibration", None)
    h = getattr(cal, "hashes", None)
    return dict(h) if h else {}
