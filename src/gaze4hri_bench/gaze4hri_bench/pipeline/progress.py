"""What a benchmark run shows while it works.

- :func:`plan_lines`: before any work, which methods run (device, weights provenance,
  RANDOM weights said loudly), which registered methods are skipped and why, and the
  face detector that ``auto`` resolves to.
- :class:`RunProgress`: one overall bar per job (trials i/N, frames, rate, ETA) with the
  current trial's bar beneath it; messages are written above the bars, never into them.
  Without a terminal it prints a line per job and at most one progress line every
  ``quiet_every_s`` seconds, so logs stay short.
"""
from __future__ import annotations

import contextlib
import sys
import time
import warnings

__all__ = ["RunProgress", "JobProgress", "plan_lines", "skipped_methods", "detector_line"]

_OVERALL_FMT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} frames [{elapsed}<{remaining}, {rate_fmt}]"
_TRIAL_FMT = "  {desc}: {n_fmt}/{total_fmt} frames |{bar}| {rate_fmt}"


def _frames_of(tref, stride: int) -> int:
    rec = getattr(tref, "record", None)
    n = int(getattr(rec, "frames", 0) or 0)
    return -(-n // max(1, stride)) if n else 0


class _TrialBar:
    """The per-trial handle the run loop drives (``total``, ``refresh``, ``update``):
    each update moves the trial's bar and the job's overall bar."""

    def __init__(self, job: JobProgress, estimate: int, bar):
        self._job, self._estimate, self._bar = job, estimate, bar
        self.n = 0
        self._total = None

    @property
    def total(self):
        return self._total

    @total.setter
    def total(self, value) -> None:
        self._total = value
        if self._bar is not None:
            self._bar.total = value
        if value is not None:  # the ground truth knows the frame count: correct the job's estimate
            self._job._retotal(int(value) - self._estimate)
            self._estimate = int(value)

    def refresh(self) -> None:
        if self._bar is not None:
            self._bar.refresh()

    def update(self, n: int = 1) -> None:
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        self._job._advance(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class JobProgress:
    """One (method, input) job over its trials. ``position``: the terminal row of its
    overall bar (its trial bar is the row below), so the jobs of one run, which advance
    together (each trial is decoded once for all of them), each keep their own rows."""

    def __init__(self, run: RunProgress, label: str, trefs: list, stride: int = 1, position: int = 0):
        self.run, self.label, self.trefs = run, label, list(trefs)
        self.position = position
        self.estimates = [_frames_of(t, stride) for t in self.trefs]
        self.i = 0
        self.frames = 0
        self.t0 = time.monotonic()
        self._last_line = self.t0
        self.bar = None
        if run.enabled:
            from tqdm import tqdm

            total = sum(self.estimates) or None
            self.bar = tqdm(total=total, desc=label, unit="frame", position=position, leave=True, dynamic_ncols=True,
                            file=run.stream, bar_format=_OVERALL_FMT, mininterval=0.2, miniters=1, smoothing=0.1)
            self._set_postfix()

    def _set_postfix(self) -> None:
        if self.bar is not None:
            self.bar.set_description_str(f"{self.label} trial {min(self.i, len(self.trefs))}/{len(self.trefs)}",
                                         refresh=False)

    def _retotal(self, delta: int) -> None:
        if self.bar is not None and delta and self.bar.total is not None:
            self.bar.total = max(self.bar.n, self.bar.total + delta)
            self.bar.refresh()

    def _advance(self, n: int) -> None:
        self.frames += n
        if self.bar is not None:
            self.bar.update(n)

    @contextlib.contextmanager
    def trial(self, tref):
        """Context for one trial; yields its handle (:meth:`start_trial`, :meth:`end_trial`)."""
        handle = self.start_trial(tref)
        try:
            yield handle
        finally:
            self.end_trial(handle)

    def start_trial(self, tref) -> _TrialBar:
        """The next trial's handle (``total``, ``refresh``, ``update``); end it with :meth:`end_trial`."""
        k = min(self.i, max(len(self.estimates) - 1, 0))
        self.i += 1
        self._set_postfix()
        sub = None
        if self.run.enabled:
            from tqdm import tqdm

            sub = tqdm(total=(self.estimates[k] if self.estimates else 0) or None, desc=f"{tref.subject}/{tref.trial}",
                       unit="frame", position=self.position + 1, leave=False, dynamic_ncols=True, file=self.run.stream,
                       bar_format=_TRIAL_FMT, mininterval=0.2, miniters=1)
        return _TrialBar(self, self.estimates[k] if self.estimates else 0, sub)

    def end_trial(self, handle: _TrialBar) -> None:
        handle.close()
        if self.bar is None:
            now = time.monotonic()
            if now - self._last_line >= self.run.quiet_every_s and self.i < len(self.trefs):
                self._last_line = now
                rate = self.frames / max(now - self.t0, 1e-9)
                self.run.write(f"{self.label}: trial {self.i}/{len(self.trefs)}, {self.frames} frames, "
                               f"{rate:.1f} frames/s")

    def close(self) -> None:
        if self.bar is not None:
            if self.bar.total is not None and self.bar.n != self.bar.total:
                self.bar.total = self.bar.n
            self._set_postfix()
            self.bar.refresh()
            self.bar.close()
            self.bar = None


class RunProgress:
    """The run's console: bars on ``stream`` (stderr) when ``enabled``, messages through
    ``log`` written above any bar; Python warnings become one line each."""

    def __init__(self, enabled: bool, log=print, stream=None, quiet_every_s: float = 10.0):
        self.enabled = bool(enabled)
        self.log = log
        self.stream = stream if stream is not None else sys.stderr
        self.quiet_every_s = quiet_every_s
        self._old_showwarning = None
        self._jobs: list[JobProgress] = []

    def write(self, msg: str) -> None:
        if self.enabled:
            from tqdm import tqdm

            with tqdm.external_write_mode(file=self.stream):
                self.log(msg)
        else:
            self.log(msg)

    def job(self, label: str, trefs: list, stride: int = 1, position: int = 0) -> JobProgress:
        j = JobProgress(self, label, trefs, stride, position)
        self._jobs.append(j)
        return j

    def __enter__(self) -> RunProgress:
        self._old_showwarning = warnings.showwarning

        def one_line(message, category, filename, lineno, file=None, line=None):
            self.write(f"warning: {category.__name__}: {str(message).splitlines()[0] if str(message) else ''}")

        warnings.showwarning = one_line
        return self

    def __exit__(self, *exc) -> None:
        for j in self._jobs:  # an error mid-job: end its bar's line so the error stays one clean line
            j.close()
        if self._old_showwarning is not None:
            warnings.showwarning = self._old_showwarning


# -- what the run says before it starts -----------------------------------------------------
def skipped_methods(chosen, models_dir=None) -> dict[str, str]:
    """Registered networks not in ``chosen`` -> why they are not run (missing weights,
    with the import command)."""
    from ..methods import METHODS, get_method
    from .runtime import MissingWeightsError, import_command, resolve_model

    out = {}
    chosen = set(chosen)
    for e in METHODS.entries():
        if e.name in chosen or e.kind != "onnx":
            continue
        spec = get_method(e.name).spec
        try:
            resolve_model(spec, models_dir, check_hash=False)
            out[e.name] = "not selected"
        except MissingWeightsError:
            out[e.name] = f"no weights ({spec.weights_file}): `{import_command(spec)}`"
    return out


def detector_line(detector: str) -> str:
    """The face detector a run uses; for ``auto``, which one it picks and why."""
    try:
        from ..faces.detectors import available, find_yolo_weights
    except ImportError:  # pragma: no cover - faces always ships
        return f"face detector: {detector}"
    if detector != "auto":
        return f"face detector: {detector}"
    picked = available()["auto"][1]
    why = (f"weights {find_yolo_weights()}" if picked == "yolov8_face_onnx"
           else "yolov8n-face.onnx not found; `gaze4hri-bench methods` says how to add it")
    return f"face detector: auto -> {picked} ({why})"


def plan_lines(jobs, cfg, defaulted: bool) -> list[str]:
    """Lines printed before a run: methods run (weights provenance, RANDOM loudly),
    methods skipped and why (when the method list was the default), the detector."""
    lines = []
    for j in jobs:
        m = j.method
        if m.kind != "onnx":
            what = "baseline, no weights"
        else:
            rec = (j.model.record or {}) if j.model is not None else {}
            if j.model is not None and j.model.random_init:
                what = "RANDOM WEIGHTS - gaze output is meaningless (timing and tests only)"
            elif rec.get("checkpoint_sha256") or rec.get("checkpoint"):
                what = f"weights {j.model.path.name} from {rec.get('checkpoint') or 'checkpoint'}"
            else:
                what = f"weights {j.model.path.name if j.model else '?'} (not recorded in manifest.yaml)"
        lines.append(f"run  {j.key:32s} {what}")
    if defaulted:
        for name, why in skipped_methods([j.method.name for j in jobs], cfg.models_dir).items():
            lines.append(f"skip {name:32s} {why}")
    needs_faces = any(j.method.needs_face(j.input_type) for j in jobs)
    from ..faces.blinks import blink_source

    if needs_faces or blink_source(cfg.blinks).ear:
        lines.append(detector_line(cfg.detector))
    prof = getattr(cfg, "profile", "reference")
    if prof != "reference":  # profiles.PROFILES; recorded in every results file
        from ..profiles import get_profile

        n = len(get_profile(prof).settings)
        lines.append(f"pipeline profile: {prof} ({n} documented settings; docs/pipeline.md)")
    return lines
