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
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.gaze import angular_error_deg, normalize

from ..data import validity
from ..faces.blinks import blink_source
from ..methods import get_entry, get_method
from ..methods.base import GazeMethod
from ..methods.clips import combine, smooth_sequence
from ..profiles import get_profile
from . import results
from .face_pass import (
    FaceModels,
    ProfileFaces,
    TrialFaces,
    ensure_profile_faces,
    face_cache_path,
    face_rule_key,
    needs_profile_pass,
    trial_exclusion,
)
from .frames import Direct, Sample, StageTimes, assemble, frame_context, run_samples, timed_iter
from .progress import RunProgress
from .runtime import ModelFile, Runner, prefetch, resolve_model, vram_used_mb

__all__ = ["RunConfig", "Job", "run_benchmark", "plan_jobs", "process_trial", "DEFAULT_DETECTOR"]

DEFAULT_DETECTOR = "auto"  # faces.detectors: yolov8_face_onnx when its weights are present, else mediapipe


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
    models_dir: Path | None = None
    threads: int | None = None
    progress: bool = True
    prefetch: int = 32
    command_line: str = ""
    blinks: str = "auto"  # faces.blinks.BLINK_SOURCES
    ear_relative: float | None = validity.EAR_RELATIVE  # blink: EAR < this x the trial median (None: off)
    ear_threshold: float | None = None  # blink: EAR < this absolute value (None: off)
    data_format: str = "auto"  # data.reader.FORMATS: auto (detect), session (MCAP) or study (released layout)
    profile: str = "reference"  # profiles.PROFILES: how inputs are prepared and outputs decoded


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


# -- one trial ----------------------------------------------------------------------------
def _stream(job: Job, ds, tref, geo: dict[int, dict], faces: TrialFaces | None, times: StageTimes) -> Iterator:
    """Producer: frames -> Direct predictions (baselines) or Samples (networks). The
    face table is filled here when ``faces`` is not cached (detect_s)."""
    m = job.method
    K = None
    use_box = m.needs_face(job.input_type)

    def prepared():
        nonlocal K
        for fs in timed_iter(ds.iter_frames(tref), times, "decode_s"):
            times.frames += 1
            if K is None:
                K = _intrinsics(ds, tref, fs.image.shape)
            t0 = time.perf_counter()
            box = faces.box(fs.index, fs.image) if faces is not None else None
            t1 = time.perf_counter()
            times.detect_s += t1 - t0
            ctx = frame_context(fs.index, fs.t_ns, fs.image, box if use_box else None, K, geo.get(fs.index))
            if m.kind != "onnx":
                yield Direct(fs.index, m.predict(ctx))
            else:
                p = m.prepare(ctx, job.input_type)
                yield fs.index, p
            times.preprocess_s += time.perf_counter() - t1

    if m.kind != "onnx":
        yield from prepared()
    else:
        yield from assemble(m, prepared())


def _infer(job: Job, batch: list[Sample], acc_sum: dict, acc_n: dict, times: StageTimes) -> None:
    t0 = time.perf_counter()
    outs = run_samples(job.runner.run, batch)
    g = job.method.decode(outs)  # (B,3) or (B,T,3), network frame
    pol = getattr(job.method, "clip_policy", None)
    for i, s in enumerate(batch):
        if g.ndim == 2:
            v = job.method.to_camera(g[i][None], s.to_cam[None])[0]
            acc_sum[s.frames[0]] = v
            acc_n[s.frames[0]] = 1
            continue
        positions = [s.read] if s.read is not None else range(g.shape[1])
        for k in positions:
            f = s.frames[k]
            if f is None:
                continue
            v = job.method.to_camera(g[i, k][None], s.to_cam[k][None])[0]
            acc_sum[f], acc_n[f] = combine(pol, (acc_sum[f], acc_n[f]) if f in acc_sum else None, v)
    times.infer_s += time.perf_counter() - t0


def _blinks_annotated(ds, tref) -> bool:
    f = getattr(ds, "blinks_annotated", None)
    return bool(f(tref)) if callable(f) else False


def process_trial(job: Job, ds, tref, cfg: RunConfig, faces_cache: Path | None = None, bar=None,
                  face_models: FaceModels | None = None) -> tuple[pd.DataFrame, StageTimes, float]:
    """Run one job on one trial: (rows as in schema.COLUMNS, stage times, peak RSS MB).
    Blinks from EAR (cfg.blinks) are added to the ground truth's reasons here, for every
    method alike, unless the trial's blinks come from an annotation."""
    import psutil

    proc = psutil.Process()
    peak = proc.memory_info().rss
    times = StageTimes()
    gt = ds.trial_ground_truth(tref)
    if bar is not None:
        bar.total = len(gt)
        bar.refresh()
    geo = gt_geometry(gt)
    ear_here = blink_source(cfg.blinks).ear and not _blinks_annotated(ds, tref)
    faces = None
    rec = getattr(job.method, "settings", None)  # the method's pipeline-profile record (networks)
    if job.method.needs_face(job.input_type) or ear_here:
        models = face_models or FaceModels(cfg.detector)
        if needs_profile_pass(rec) and job.method.needs_face(job.input_type) and faces_cache is not None:
            t0 = time.perf_counter()  # the profile's face rule (study: the most frequent track needs the whole trial)
            ensure_profile_faces(ds, tref, faces_cache, models.with_conf(rec.detector_conf), rec, False)
            times.detect_s += time.perf_counter() - t0
            # boxes by the profile's rule; EAR blinks from the run's common face table (same frames for every method)
            ear_cache = face_cache_path(cfg.out, tref.subject, tref.trial, cfg.detector, cfg.stride)
            faces = ProfileFaces(TrialFaces(models, faces_cache, landmarks=False),
                                 TrialFaces(models, ear_cache, landmarks=True) if ear_here else None)
        else:
            faces = TrialFaces(models, faces_cache, landmarks=ear_here)
    acc_sum: dict[int, np.ndarray] = {}
    acc_n: dict[int, int] = {}
    pending: list[Sample] = []
    for item in prefetch(_stream(job, ds, tref, geo, faces, times), maxsize=cfg.prefetch):
        if isinstance(item, Direct):
            acc_sum[item.frame] = item.vector
            acc_n[item.frame] = 1
            if bar is not None:
                bar.update(1)
            continue
        pending.append(item)
        if len(pending) >= job.runner.batch:
            _infer(job, pending, acc_sum, acc_n, times)
            if bar is not None:
                bar.update(len(pending))
            pending = []
            peak = max(peak, proc.memory_info().rss)
    if pending:
        _infer(job, pending, acc_sum, acc_n, times)
        if bar is not None:
            bar.update(len(pending))
    peak = max(peak, proc.memory_info().rss)
    if faces is not None:
        faces.save()
        if ear_here:
            from ..faces.blinks import ear_blinks

            blink = ear_blinks(gt, faces.ear_table(), cfg.ear_threshold, cfg.ear_relative)
            gt = validity.apply_face_reasons(gt, blink=blink)
    preds = {f: normalize(acc_sum[f] / acc_n[f]) for f in acc_sum}
    if rec is not None and rec.smoothing is not None and preds:  # official temporal filter (MCGaze evaluation)
        order = sorted(preds)
        preds = dict(zip(order, smooth_sequence([preds[f] for f in order], rec.smoothing), strict=True))
    if rec is not None and rec.clip_shift:  # the study compared frame f with the output for f - shift
        preds = {f + rec.clip_shift: v for f, v in preds.items()}
    times.excluded = None
    times.camera_sources = camera_source_summary(tref, gt)
    if rec is not None and rec.missing_face == "trial" and faces is not None and job.method.needs_face(job.input_type):
        times.excluded = trial_exclusion(gt["frame"].to_numpy(), faces.table())
        if times.excluded:
            preds = {}  # the whole trial is excluded: every frame no_face
    return rows_for_trial(job, tref, gt, preds), times, peak / 2**20


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
    source = "fk"
    try:
        from gaze4hri_core.session import load_manifest

        source = str(load_manifest(tref.session_dir).settings.get("camera_pose_source", "fk"))
    except (Gaze4HRIError, OSError, AttributeError):
        pass
    q = lambda v, x: round(float(np.percentile(v[ok], x)), 4)  # noqa: E731
    return {"source": source, "frames": int(ok.sum()), "median_mm": q(mm, 50), "p95_mm": q(mm, 95), "max_mm": round(float(mm[ok].max()), 4),
            "median_deg": q(deg, 50), "p95_deg": q(deg, 95), "max_deg": round(float(deg[ok].max()), 4)}


#: A frame the data marked valid whose ground-truth gaze is not a finite vector (e.g. the
#: last frame when no pose follows it): invalid, with this reason, so that `run`, the
#: results and the report count the same valid frames (an error needs a ground truth).
NO_GROUND_TRUTH = "no_ground_truth"


def count_reasons(df: pd.DataFrame) -> dict[str, int]:
    """validity.count_reasons plus :data:`NO_GROUND_TRUTH` where a frame has it."""
    out = validity.count_reasons(df)
    n = int((df["invalid_reason"].astype(str) == NO_GROUND_TRUTH).sum())
    if n:
        out = {**{k: v for k, v in out.items() if k not in ("valid", "total")}, NO_GROUND_TRUTH: n,
               "valid": out["valid"], "total": out["total"]}
    return out


def rows_for_trial(job: Job, tref, gt: pd.DataFrame, preds: dict[int, np.ndarray]) -> pd.DataFrame:
    """One row per ground-truth frame (schema.COLUMNS); invalid frames keep their reason,
    valid frames without a ground-truth vector become ``no_ground_truth``, valid frames
    without a prediction ``no_face``; error NaN where not valid."""
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
    })
    return results.coerce(df)


# -- the run ------------------------------------------------------------------------------
def run_benchmark(cfg: RunConfig, log=print, jobs: list[Job] | None = None, dataset=None, skipped: list | None = None) -> list[Path]:
    """Run every job over every selected trial; return the per-(method, input) files.
    ``dataset``: an object with the data.reader.Dataset interface (default: read cfg.data).
    ``skipped``: a list that receives the reader's SkippedTrial entries (damaged bags,
    refused study trials), which are also listed again at the end of the run."""
    jobs = jobs if jobs is not None else plan_jobs(cfg)
    src = blink_source(cfg.blinks)
    if src.ear and cfg.ear_relative is None and cfg.ear_threshold is None:
        raise Gaze4HRIError("EAR blinks need a rule", "--ear-relative/--ear-threshold",
                            f"keep the default --ear-relative {validity.EAR_RELATIVE}, give --ear-threshold, or pass --blinks annotations|off")
    if dataset is None:
        from ..data.reader import Dataset

        dataset = Dataset(cfg.data, subjects=list(cfg.subjects) if cfg.subjects else None,
                          trials=list(cfg.trials) if cfg.trials else None, stride=cfg.stride,
                          blink_annotations=src.annotations, sim_blinks=src.sim, format=cfg.data_format)
    ds = dataset
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
            for job in jobs:
                written.append(_run_job(job, cfg, ds, trefs, face_models, prog))
        finally:
            face_models.close()
    if bad:
        log(f"{len(bad)} trial(s) skipped, results written for the others:")
        for sk in bad:
            log(f"  skipped {sk.subject}/{sk.trial}: {sk.reason}")
    return written


def _run_job(job: Job, cfg: RunConfig, ds, trefs: list, face_models: FaceModels, prog: RunProgress) -> Path:
    """One (method, input) job over every trial not done yet; merge into its results file."""
    parts = results.parts_dir(cfg.out, job.method.name, job.input_type)
    todo = [t for t in trefs if not results.part_path(parts, t.subject, t.trial).is_file()]
    results.check_profile(parts, cfg.profile)  # resume never mixes pipeline profiles
    rec = getattr(job.method, "settings", None)
    face_key = cfg.detector + (face_rule_key(rec) if rec is not None and job.method.needs_face(job.input_type) else "")
    skipped = len(trefs) - len(todo)
    label = f"{job.method.name} ({job.input_type})"
    if todo and job.method.kind == "onnx" and job.runner is None:
        job.runner = Runner(job.model.path, job.method.spec, cfg.device, cfg.batch, cfg.threads)
    dev = job.runner.device if job.runner is not None else "cpu"
    log = prog.write
    log(f"{label}: {len(todo)} trial(s) to run" + (f", {skipped} already done (resumed)" if skipped else "")
        + (f" on {dev}" if todo else ""))
    bars = prog.job(label, todo, cfg.stride)
    for t in todo:
        t0 = time.perf_counter()
        with bars.trial(t) as bar:
            cache = face_cache_path(cfg.out, t.subject, t.trial, face_key, cfg.stride)
            df, times, peak = process_trial(job, ds, t, cfg, cache, bar, face_models)
        wall = time.perf_counter() - t0
        vram = vram_used_mb() if dev == "cuda" else None
        results.write_part(results.part_path(parts, t.subject, t.trial), df, {
            "frames": times.frames, "decode_s": times.decode_s, "detect_s": times.detect_s,
            "preprocess_s": times.preprocess_s, "infer_s": times.infer_s, "wall_s": wall,
            "peak_rss_mb": peak, "peak_vram_mb": vram, "device": dev, "batch": cfg.batch,
            "calibration_hashes": _cal_hashes(t), "reasons": count_reasons(df),
            "subject_info": dict(getattr(t, "subject_info", None) or {}),
            "data_backend": _data_backend(t),
            "profile": cfg.profile, "excluded": getattr(times, "excluded", None),
            "camera_sources": getattr(times, "camera_sources", None),
        })
        if getattr(times, "excluded", None):
            log(f"{label}: {t.subject}/{t.trial} excluded under profile {cfg.profile}: {times.excluded}")
    bars.close()
    paths = [results.part_path(parts, t.subject, t.trial) for t in trefs]
    path = results.merge(cfg.out, job, paths, cfg)
    r = results.read_metadata(path)["timing"].get("reasons") or {}
    removed = ", ".join(f"{k} {v}" for k, v in r.items() if k not in ("valid", "total") and v)
    log(f"{label}: {r.get('valid', '?')} of {r.get('total', '?')} frames valid" + (f" (removed: {removed})" if removed else "")
        + f"; wrote {path}")
    return path


def _data_backend(tref) -> str:
    """Where the trial's data came from, for the report's status box: the session's acquisition
    backend (session.yaml ``backend``: sim, real, ...) or the reader backend (``study``)."""
    if getattr(tref, "backend", "session") != "session":
        return str(tref.backend)
    from gaze4hri_core.session import load_manifest

    try:
        return str(load_manifest(tref.session_dir).backend)
    except (Gaze4HRIError, OSError, AttributeError):
        return "unknown"


def _cal_hashes(tref) -> dict:
    cal = getattr(tref, "calibration", None)
    h = getattr(cal, "hashes", None)
    return dict(h) if h else {}
