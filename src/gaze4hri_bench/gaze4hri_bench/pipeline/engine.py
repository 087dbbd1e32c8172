"""The run loop's engine: every planned job over every trial in one pass (decode once),
and the pieces both engines share (pipeline/jobs.py ENGINES: ``local``, this process;
``ray``, pipeline/engine_ray.py, which runs this engine on one trial per work unit):
each job's ONNX Runtime session (:func:`make_runner`), the dataset
(:func:`open_dataset`) and the atomic part file of a finished trial
(:func:`write_job_part`, with its timings and provenance).

For each trial: frames are decoded once, the ground truth and face tables computed once
(crop inputs, and every method when blinks come from the eye aspect ratio: the trial's
face table is cached so later runs reuse it, pipeline.face_pass), each job's input
prepared per its planned spec and profile record and batched through ONNX Runtime;
decoding and pre-processing run in a bounded prefetch thread, overlapped with inference.
Nothing holds more than one trial's rows and a few batches of frames in memory.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.gaze import normalize

from ..data import validity
from ..data.frame_truth import pose_match_options
from ..faces.blinks import blink_source
from ..methods.clips import combine, smooth_sequence
from ..profiles import mark_not_scored
from . import results
from .face_pass import FaceModels, face_cache_path, trial_exclusion
from .frames import Assembler, Direct, Sample, StageTimes, frame_context, run_samples, timed_iter
from .job_faces import TrialFaceTables
from .jobs import Job, RunConfig
from .rows import camera_source_summary, gt_geometry, intrinsics, rows_for_trial
from .runtime import Runner, prefetch, vram_used_mb

__all__ = ["Engine", "Work", "run_local", "process_trial", "make_runner", "open_dataset", "write_job_part",
           "excluded_line"]


def _blinks_annotated(ds, tref) -> bool:
    f = getattr(ds, "blinks_annotated", None)
    return bool(f(tref)) if callable(f) else False


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
    faces: TrialFaceTables | None = None
    ended: bool = False
    camera_sources: dict | None = None
    pose_gt: dict = field(default_factory=dict)  # job -> its own pose-matched ground truth (study pose_match)
    peak: float = 0.0
    remaining: int = 0  # jobs whose part of this trial is not written yet


def _timed_run(run, samples: list[Sample]) -> tuple[list[np.ndarray], float]:
    """A batch through ``run`` (runtime.Runner.run) and its wall time (in the stream that ran it)."""
    t0 = time.perf_counter()
    return run_samples(run, samples), time.perf_counter() - t0


class Engine:
    """Every job over every trial in one pass (docs/pipeline.md, "Run loop"): a producer
    thread decodes each trial once, computes its ground truth and face tables once, and
    runs every job's pre-processing from that decode; the main thread batches each
    network's samples across trial boundaries (full batches) and runs ONNX Runtime. A
    job's trial is written (part file) once its last sample is back, in trial order."""

    def __init__(self, jobs: list[Job], todo: list[set], cfg: RunConfig, ds, face_models: FaceModels,
                 on_part, bars: list | None = None, runners: list[Runner | None] | None = None):
        import psutil

        self.jobs, self.todo, self.cfg, self.ds = jobs, todo, cfg, ds
        self.runners = list(runners) if runners is not None else [None] * len(jobs)  # each job's ONNX session
        self.face_models, self.on_part, self.bars = face_models, on_part, bars
        self.proc = psutil.Process()
        self.pending: dict[int, list[tuple[_Trial, Sample]]] = {
            ji: [] for ji, j in enumerate(jobs) if j.method.kind == "onnx"}
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
            opt = pose_match_options(self.jobs[ji].record, self.jobs[ji].input_type, getattr(ds, "gt_options", None))
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
        faces = TrialFaceTables(sel, ds, t, cfg, self.face_models, ear_here, cache_of, tr.times)
        tr.faces = faces
        asm = {ji: Assembler(self.jobs[ji].method) for ji in here if self.jobs[ji].method.kind == "onnx"}
        need_face = {ji: self.jobs[ji].method.needs_face(self.jobs[ji].input_type) for ji in here}
        K = None
        for fs in timed_iter(ds.iter_frames(t), tr.times, "decode_s"):
            tr.times.frames += 1
            if K is None:
                t0 = time.perf_counter()
                K = intrinsics(ds, t, fs.image.shape)
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
            rec = self.jobs[ji].record
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
                if len(p) >= self.runners[ji].batch:
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
        ``runner.streams`` batches in flight, the oldest finished first. A stream that
        frees up gets its next batch before the finished one's outputs are decoded and
        its trials written (this thread's work overlaps the network's, in order still)."""
        runner = self.runners[ji]
        samples = [s for _, s in batch]
        if runner.streams <= 1:
            self._finish_batch(ji, batch, *_timed_run(runner.run, samples))
            return
        if self.pool is None:
            self.pool = ThreadPoolExecutor(max(r.streams for r in self.runners if r is not None),
                                           thread_name_prefix="g4h-infer")
        done = []
        while len(self.running) >= runner.streams:
            done.append(self._oldest())
        self.running.append((ji, batch, self.pool.submit(_timed_run, runner.run, samples)))
        for d in done:
            self._finish_batch(*d)

    def _oldest(self) -> tuple:
        """Wait for the oldest running batch: (job, batch, outputs, run seconds)."""
        ji, batch, fut = self.running.popleft()
        return (ji, batch, *fut.result())

    def _complete(self) -> None:
        """Wait for the oldest running batch and take its outputs."""
        self._finish_batch(*self._oldest())

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
                    got = (jt.acc_sum[f], jt.acc_n[f]) if f in jt.acc_sum else None
                    jt.acc_sum[f], jt.acc_n[f] = combine(pol, got, v)
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
        rec = job.record
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


def process_trial(job: Job, ds, tref, cfg: RunConfig, face_models: FaceModels | None = None,
                  runner: Runner | None = None) -> tuple[pd.DataFrame, StageTimes, float]:
    """Run one job on one trial: (rows as in schema.COLUMNS, stage times, peak RSS MB).
    The run loop's engine on a single (job, trial), nothing written but the face cache
    under ``cfg.out``; blinks from EAR (cfg.blinks) are added to the ground truth's
    reasons as in a run. ``runner``: the job's ONNX session (default: built here)."""
    got = {}
    models = face_models or FaceModels(cfg.detector)
    key = (tref.subject, tref.trial)

    def on_part(ji, t, df, times, wall, peak):
        got.update(df=df, times=times, peak=peak)

    if runner is None and job.model is not None:
        runner = make_runner(job, cfg)
    eng = Engine([job], [{key}], cfg, ds, models, on_part, runners=[runner])
    try:
        eng.run([tref])
    finally:
        if face_models is None:
            models.close()
    return got["df"], got["times"], got["peak"]


@dataclass
class Work:
    """What an engine runs (pipeline.jobs.ENGINES): the planned jobs and the ONNX session
    of each where the driver built them (in-process engines), the trials each job still
    lacks, the dataset (``dataset_given``: handed in by the caller, not opened from
    ``cfg.data``), the run's progress bars and ``write``, which prints a line above them."""

    cfg: RunConfig
    jobs: list[Job]
    runners: list[Runner | None]
    todo: list[set]
    trefs: list
    bars: list
    write: Callable[[str], None]
    dataset: object
    dataset_given: bool = False


def run_local(work: Work) -> Engine:
    """The ``local`` engine: every job over every trial in this process, each finished
    trial written here as its job's part file; returns the engine (its stage times)."""
    cfg, jobs = work.cfg, work.jobs

    def on_part(ji, t, df, times, wall, peak):
        write_job_part(cfg, jobs[ji], work.runners[ji], t, df, times, wall, peak)
        if times.excluded:
            work.write(excluded_line(jobs[ji], t, times.excluded))

    face_models = FaceModels(cfg.detector)
    try:
        engine = Engine(jobs, work.todo, cfg, work.dataset, face_models, on_part, work.bars, work.runners)
        engine.run(work.trefs)
    finally:
        face_models.close()
    return engine


def open_dataset(cfg: RunConfig):
    """The data.reader.Dataset that ``cfg`` selects (the driver's, and each Ray worker's own)."""
    from ..data.reader import Dataset

    src = blink_source(cfg.blinks)
    return Dataset(cfg.data, subjects=list(cfg.subjects) if cfg.subjects else None,
                   trials=list(cfg.trials) if cfg.trials else None, stride=cfg.stride,
                   blink_annotations=src.annotations, sim_blinks=src.sim, format=cfg.data_format)


def make_runner(job: Job, cfg: RunConfig, threads: int | None = None, log=print, streams: int | None = None) -> Runner:
    """The ONNX Runtime session of one job as the run's settings ask (device, batch, threads,
    streams, FP16); the one place the local engine, process_trial and the Ray workers build it."""
    return Runner(job.model.path, job.spec, cfg.device, cfg.batch, cfg.threads if threads is None else threads,
                  fp16=cfg.fp16, log=log, streams=cfg.streams if streams is None else streams)


def write_job_part(cfg: RunConfig, job: Job, runner: Runner | None, t, df: pd.DataFrame, times: StageTimes,
                   wall: float, peak: float) -> Path:
    """One job's finished trial as its atomic part file, with its timings and provenance
    (results.write_part); where the trial ran (this process or a Ray worker) writes it."""
    dev = runner.device if runner is not None else "cpu"
    vram = vram_used_mb() if dev == "cuda" else None
    path = results.part_path(results.parts_dir(cfg.out, job.method.name, job.input_type), t.subject, t.trial)
    return results.write_part(path, df, {
        "frames": times.frames, "decode_s": times.decode_s, "gt_s": times.gt_s, "detect_s": times.detect_s,
        "preprocess_s": times.preprocess_s, "infer_s": times.infer_s, "write_s": times.write_s, "wall_s": wall,
        "shared_with": times.shared_with,
        "peak_rss_mb": peak, "peak_vram_mb": vram, "device": dev,
        "batch": runner.batch if runner is not None else cfg.batch,  # --batch auto: the size it chose
        "streams": runner.streams if runner is not None else 1,  # --streams: batches in flight at once
        "threads": runner.threads if runner is not None else cfg.threads,  # intra-op threads per stream (None: ORT's)
        "calibration_hashes": _cal_hashes(t), "reasons": validity.count_reasons(df),
        "subject_info": dict(getattr(t, "subject_info", None) or {}),
        "data_backend": _data_backend(t),
        "profile": job.profile, "excluded": times.excluded,
        "camera_sources": times.camera_sources,
    })


def excluded_line(job: Job, t, why: str) -> str:
    """The line a run prints for a trial its job's profile excludes (missing_face = trial)."""
    return f"{job.method.name} ({job.input_type}): {t.subject}/{t.trial} excluded under profile {job.profile}: {why}"


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
