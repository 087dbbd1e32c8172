"""``gaze4hri-bench methods check METHOD --data SESSIONS``: run a network on a sample of
valid frames and report its median error under the spec's declared output convention
and under each plausible alternative (conventions.py), loudly when an alternative is
clearly better. The frames go through the benchmark's own code: the dataset reader,
ground truth and validity, the face detector and tracker (crop inputs), the method's
``prepare`` (crop rule or Zhang et al. 2018 data normalization), ONNX Runtime; only the
decoding varies. ``gaze4hri-bench run`` checks each network a spec file brings on the
first trial before it runs the rest (:func:`run_warnings`; docs/models.md, "Your own model")."""
from __future__ import annotations

import argparse
import copy
import dataclasses
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError

from ..conventions import CheckResult, readings, score

__all__ = ["add_check_arguments", "check_main", "check_method", "first_trial_warning", "run_warnings",
           "format_table", "DEFAULT_FRAMES"]

DEFAULT_FRAMES = 200  # frames sampled: the medians settle to a fraction of a degree


def add_check_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``methods check`` (the method is the positional SPEC argument)."""
    p.add_argument("--data", type=Path, default=None, metavar="SESSIONS",
                   help="check: recorded sessions (or the study layout) to sample valid frames from")
    p.add_argument("--frames", type=int, default=DEFAULT_FRAMES, metavar="N",
                   help=f"check: valid frames to sample, spread over the trials (default {DEFAULT_FRAMES})")
    p.add_argument("--subjects", nargs="+", default=None, metavar="ID", help="check: only these subjects")
    p.add_argument("--trials", nargs="+", default=None, metavar="ID", help="check: only these trials")
    p.add_argument("--profile", default=None, metavar="NAME", help="check: pipeline profile (default reference)")


def _job(method: str, models_dir, profile):
    from ..methods import METHODS
    from ..methods.plugins import user_method
    from ..profiles import DEFAULT_PROFILE
    from ..zoo.store import models_dir as _dir
    from .jobs import plan_job

    name = user_method(METHODS, method, _dir(models_dir))
    job = plan_job(name, "best", profile or DEFAULT_PROFILE, models_dir)
    if job.method.kind != "onnx" or job.spec is None:
        raise Gaze4HRIError(f"{method} is not a network (no outputs to decode)", "gaze4hri-bench methods check",
                            "name a network or a spec file (`gaze4hri-bench methods` lists them)")
    if job.spec.clip_len > 1:
        raise Gaze4HRIError(f"{method} takes clips of {job.spec.clip_len} frames", "gaze4hri-bench methods check",
                            "the check runs single-image networks; check a clip network's spec by hand")
    return job


def _swapped(method):
    """The same method fed with the colour order its spec does not declare."""
    other = copy.copy(method)
    other.record = dataclasses.replace(method.record, colour="rgb" if method.record.colour == "bgr" else "bgr")
    return other


def _trial_samples(ds, t, job, want: int, detector: str):
    """Up to ``want`` evenly spaced valid frames of one trial: (tensor, swapped tensor, to_cam, gt)."""
    from ..data.reader import TRIAL_STATUSES_READ
    from .frames import frame_context
    from .rows import gt_geometry, intrinsics

    if getattr(t, "status", "done") not in TRIAL_STATUSES_READ:
        return []
    gt = ds.trial_ground_truth(t)
    ok = gt[gt["valid"]]
    if ok.empty:
        return []
    keep = set(ok["frame"].to_numpy()[np.unique(np.linspace(0, len(ok) - 1, min(want, len(ok))).astype(int))])
    truth = dict(zip(ok["frame"], ok[["gt_x", "gt_y", "gt_z"]].to_numpy(float), strict=True))
    geo, method, inp = gt_geometry(gt), job.method, job.input_type
    swapped, K, out = _swapped(method), None, []
    det = tracker = None
    if method.needs_face(inp):
        from ..faces.detectors import get_detector
        from ..faces.tracking import SubjectTracker

        det, tracker = get_detector(detector), SubjectTracker()
    for fs in ds.iter_frames(t):
        K = intrinsics(ds, t, fs.image.shape) if K is None else K
        box = None
        if det is not None:  # the tracker sees every frame, as in the face pass
            s = tracker.update(det.detect(fs.image), fs.image.shape)
            box = None if s is None else np.asarray(s.box, float).reshape(-1)[:4]
        if fs.index not in keep:
            continue
        ctx = frame_context(fs.index, fs.t_ns, fs.image, box, K, geo.get(fs.index))
        p, q = method.prepare(ctx, inp), swapped.prepare(ctx, inp)
        if p is not None and q is not None:
            out.append((p.tensor, q.tensor, p.to_cam, truth[fs.index]))
    return out


def check_method(method: str, data: Path, frames: int = DEFAULT_FRAMES, subjects=None, trials=None,
                 models_dir=None, profile=None, detector: str | None = None, device: str = "cpu") -> CheckResult:
    """The convention check of ``method`` (a name or a spec file) on up to ``frames``
    valid frames of ``data``, spread evenly over the selected trials."""
    from ..data.reader import Dataset
    from .jobs import DEFAULT_DETECTOR
    from .runtime import Runner

    job = _job(method, models_dir, profile)
    ds = Dataset(data, subjects=list(subjects) if subjects else None, trials=list(trials) if trials else None)
    refs = ds.trials()
    if not refs:
        raise Gaze4HRIError("no trials to sample", str(data), "give --data a folder of recorded sessions")
    samples = []
    for t in refs:
        hold = getattr(ds, "hold", None)
        with hold(t) if callable(hold) else _nothing():
            samples += _trial_samples(ds, t, job, -(-frames // len(refs)), detector or DEFAULT_DETECTOR)
    if not samples:
        raise Gaze4HRIError("no valid frame with a network input", str(data),
                            "check the sessions (`gaze4hri-bench run` lists the invalid frames' reasons)")
    x, xs, to_cam, gt = (np.stack(c) for c in zip(*samples, strict=True))
    runner = Runner(job.model.path, job.spec, device, batch=16, log=lambda _m: None)
    outs, outs_swapped = runner.run(x), runner.run(xs)
    reads = readings(job.record.output, outs, outs_swapped, job.record.colour)
    return score(reads, to_cam, gt)


class _nothing:  # noqa: N801 - a context manager that does nothing
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def format_table(res: CheckResult, method: str) -> str:
    """The check as a table, best reading first, and the verdict line."""
    w = max(len(r[0]) for r in res.rows)
    lines = [f"convention check of {method}: median angular error over {res.n} valid frames",
             f"  {'reading'.ljust(w)}  median   spec change"]
    for name, med, fix in res.rows:
        lines.append(f"  {name.ljust(w)}  {med:6.1f}   {fix or '(as declared)'}")
    lines.append(f"  {'(reference) output ignored: (0, 0)'.ljust(w)}  {res.constant_median:6.1f}   "
                 "an alternative must beat this too")
    lines.append(res.verdict())
    return "\n".join(lines)


def check_main(args: argparse.Namespace) -> int:
    """``methods check SPEC --data SESSIONS``: 0 when the declared convention fits best,
    1 when an alternative is clearly better (the table says which)."""
    if not args.spec or args.data is None:
        raise Gaze4HRIError("check needs a method and --data", "gaze4hri-bench methods check",
                            "e.g. `gaze4hri-bench methods check mynet.yaml --data sessions`")
    res = check_method(args.spec, args.data, args.frames, args.subjects, args.trials, args.models_dir, args.profile)
    print(format_table(res, args.spec))
    return 1 if res.alternative_better else 0


def first_trial_warning(method: str, data: Path, subject: str, trial: str, models_dir=None, profile=None,
                        frames: int = 60, detector: str | None = None) -> str | None:
    """The check on one trial: the warning line when an alternative convention fits
    that trial clearly better, else None (also when the trial gives no frame)."""
    try:
        res = check_method(method, data, frames, [subject], [trial], models_dir, profile, detector)
    except Gaze4HRIError:
        return None
    return f"{method}: {res.verdict()}" if res.alternative_better else None


def run_warnings(jobs, cfg) -> list[str]:
    """``gaze4hri-bench run``'s check of every network a spec file or plugin brought
    (the built-ins' conventions are tested against their official code): its first
    trial's errors under each convention, before the run spends time on the rest."""
    from ..data.reader import Dataset
    from ..methods import get_entry
    from ..methods.plugins import spec_source

    def brought(j) -> bool:  # a spec file's network, or a plugin's (not a built-in, not the tests' tiny_test)
        return spec_source(j.method.name) is not None or get_entry(j.method.name).kind == "plugin"

    nets = [j for j in jobs if j.spec is not None and j.method.kind == "onnx" and j.spec.clip_len == 1
            and brought(j) and cfg.data_format in ("auto", "session")]
    if not nets or not Path(cfg.data).is_dir():
        return []
    refs = Dataset(cfg.data, subjects=list(cfg.subjects) if cfg.subjects else None,
                   trials=list(cfg.trials) if cfg.trials else None).trials()
    if not refs:
        return []
    out = []
    for j in nets:
        line = first_trial_warning(j.spec.name, cfg.data, refs[0].subject, refs[0].trial, cfg.models_dir,
                                   cfg.profile, detector=cfg.detector)
        if line:
            out.append(f"WARNING (first trial {refs[0].subject}/{refs[0].trial}): " + line.replace("WARNING: ", "", 1))
    return out
