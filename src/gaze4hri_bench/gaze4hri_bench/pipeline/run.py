"""The benchmark run: (method, input type) x trials -> one row per frame, orchestrated.

The jobs are planned once (pipeline/jobs.py: spec, profile record and model file of
each); the trials each job still lacks are found from its part files (an interrupted
run resumes where it stopped); the engine the run names (jobs.ENGINES: ``local``,
pipeline/engine.py; ``ray``, pipeline/engine_ray.py) runs them, writing each finished
trial as a part file atomically; the parts are then merged into one Parquet file per
(method, input) with provenance (results.py), and the run's stage times printed.
"""
from __future__ import annotations

from pathlib import Path

from gaze4hri_core.errors import Gaze4HRIError

from ..data import validity
from ..faces.blinks import blink_source
from . import results
from .engine import Work, make_runner, open_dataset, process_trial, write_job_part
from .jobs import DEFAULT_DETECTOR, ENGINES, IN_PROCESS, Job, RunConfig, plan_job, plan_jobs
from .progress import RunProgress
from .rows import NO_GROUND_TRUTH, camera_source_summary, gt_geometry, rows_for_trial
from .runtime import Runner

__all__ = ["RunConfig", "Job", "run_benchmark", "plan_job", "plan_jobs", "process_trial", "timing_lines",
           "write_job_part", "gt_geometry", "rows_for_trial", "camera_source_summary", "NO_GROUND_TRUTH",
           "DEFAULT_DETECTOR", "ENGINES"]


def run_benchmark(cfg: RunConfig, log=print, jobs: list[Job] | None = None, dataset=None, skipped: list | None = None,
                  runners: dict[str, Runner] | None = None) -> list[Path]:
    """Run every job over every selected trial; return the per-(method, input) files.
    Each trial is decoded once for all jobs (engine.Engine). ``dataset``: an object with
    the data.reader.Dataset interface (default: read cfg.data). ``skipped``: a list that
    receives the reader's SkippedTrial entries (damaged bags, refused study trials),
    which are also listed again at the end of the run. ``runners``: ONNX sessions
    already built, by job key (the others are built here, or in the Ray workers)."""
    engine = ENGINES.get(cfg.engine)  # unknown engine: one line, before any work
    jobs = jobs if jobs is not None else plan_jobs(cfg)
    if blink_source(cfg.blinks).ear and cfg.ear_relative is None and cfg.ear_threshold is None:
        raise Gaze4HRIError("EAR blinks need a rule", "--ear-relative/--ear-threshold",
                            f"keep the default --ear-relative {validity.EAR_RELATIVE}, give --ear-threshold, "
                            "or pass --blinks annotations|off")
    ds = dataset if dataset is not None else open_dataset(cfg)
    trefs = [t for t in ds.trials() if getattr(t, "status", "done") in ("done", "incomplete")]
    bad = list(getattr(ds, "skipped", None) or [])  # damaged bags, bad study-layout trials: listed, the run goes on
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
    with RunProgress(cfg.progress, log) as prog:  # bars (TTY) with messages above them
        runs = [(runners or {}).get(j.key) for j in jobs]
        todo, bars = _plan_todo(cfg, jobs, runs, trefs, prog, sessions=engine.kind == IN_PROCESS)
        stats = engine.load()(Work(cfg, jobs, runs, todo, trefs, bars, prog.write, ds, dataset is not None))
        for bar in bars:
            bar.close()
        for job in jobs:
            written.append(_merge_job(job, cfg, trefs, prog.write))
        for line in timing_lines(jobs, stats, runs):
            prog.write(line)
    if bad:
        log(f"{len(bad)} trial(s) skipped, results written for the others:")
        for sk in bad:
            log(f"  skipped {sk.subject}/{sk.trial}: {sk.reason}")
    return written


def _plan_todo(cfg: RunConfig, jobs: list[Job], runners: list[Runner | None], trefs: list, prog: RunProgress,
               sessions: bool = True) -> tuple[list[set], list]:
    """What each job still has to do (resume: trials without a part file), its ONNX
    session (``sessions``, into ``runners``; the Ray engine builds them in its actors)
    and its bars."""
    todo, bars = [], []
    for k, job in enumerate(jobs):
        parts = results.parts_dir(cfg.out, job.method.name, job.input_type)
        results.check_profile(parts, job.profile)  # resume never mixes pipeline profiles
        mine = [t for t in trefs if not results.part_path(parts, t.subject, t.trial).is_file()]
        todo.append({(t.subject, t.trial) for t in mine})
        label = f"{job.method.name} ({job.input_type})"
        if sessions and mine and job.model is not None and runners[k] is None:
            runners[k] = make_runner(job, cfg, log=prog.write)
        r = runners[k]
        dev = (r.device if r is not None else "cpu") if sessions else f"ray (--device {cfg.device})"
        if sessions and r is not None and r.streams > 1:
            dev += f" ({r.streams} streams x {r.threads} thread{'s' if r.threads != 1 else ''})"
        done = len(trefs) - len(mine)
        prog.write(f"{label}: {len(mine)} trial(s) to run" + (f", {done} already done (resumed)" if done else "")
                   + (f" on {dev}" if mine else ""))
        bars.append(prog.job(label, mine, cfg.stride, position=2 * k))
    return todo, bars


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


def timing_lines(jobs: list[Job], engine, runners: list[Runner | None] | None = None) -> list[str]:
    """The run's per-stage seconds, printed at its end: the shared pass (decode, ground
    truth, faces: once per trial for every job) and each job's own stages, with its wall
    time and frames per second. Stages overlap (producer thread), so they do not add up
    to the wall time. ``engine``: what an engine returns (engine.Engine, or the Ray
    engine's RayRunStats): trials_decoded, shared, totals, t_start, last_done."""
    if not engine.trials_decoded:
        return []
    s = engine.shared
    shared = ", ".join(f"{_STAGE_NAMES[k]} {getattr(s, k):.1f} s" for k in ("decode_s", "gt_s", "detect_s"))
    lines = [f"timing: {engine.trials_decoded} trial(s), {s.frames} frames decoded once for {len(jobs)} job(s): "
             f"{shared}"]
    for ji, job in enumerate(jobs):
        t = engine.totals[ji]
        if not t.frames:
            continue
        wall = engine.last_done[ji] - engine.t_start
        r = runners[ji] if runners is not None else None
        streams = r.streams if r is not None else 1
        own = ", ".join(f"{_STAGE_NAMES[k]} {getattr(t, k):.1f} s"
                        + (f" (summed over {streams} streams)" if k == "infer_s" and streams > 1 else "")
                        for k in ("preprocess_s", "infer_s", "write_s"))
        lines.append(f"timing: {job.method.name} ({job.input_type}): {t.frames} frames in {wall:.1f} s "
                     f"({t.frames / wall if wall > 0 else 0:.1f} frames/s); {own}")
    return lines
