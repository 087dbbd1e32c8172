"""The disk space a session and each of its trials need, and the disk-full lines that
end a session with the operator's fix (issue 20, item 6)."""
from __future__ import annotations

import errno
from pathlib import Path

from gaze4hri_core.errors import SessionError
from gaze4hri_core.protocol import ARC_DURATION_S, Trial
from gaze4hri_core.session import save_manifest
from gaze4hri_core.trajectories import line_duration_s

from .errors import DiskFullBeforeTrial

__all__ = ["trial_seconds_estimate", "estimate_session_bytes", "gb", "trial_bytes", "free_bytes", "check_session_disk",
           "check_trial_disk", "disk_full_error", "save_or_disk_full"]


def trial_seconds_estimate(t: Trial, trial_seconds: float) -> float:
    """Recording length of a trial: fixed camera ``trial_seconds``; a moving camera as
    long as its motion (arc: its 10 s; lines: the raster at their speed, trajectories.line_duration_s)
    plus 1 s."""
    cm = t.camera_motion
    if cm.kind == "arc":
        return max(trial_seconds, ARC_DURATION_S + 1.0)
    if cm.kind == "line":
        return max(trial_seconds, line_duration_s(cm.axis or "h", cm.speed_mps or 0.05) + 1.0)
    return trial_seconds


def estimate_session_bytes(trials: list[Trial], resolution: tuple[int, int], fps: float, trial_seconds: float,
                           margin: float = 1.2) -> int:
    """Raw frames dominate: W x H x 3 bytes per frame, plus poses and status."""
    w, h = resolution
    per_s = w * h * 3 * fps + 100 * 300 + 125 * 500 + 2000
    return int(sum(trial_seconds_estimate(t, trial_seconds) for t in trials) * per_s * margin)


def gb(n: int) -> str:
    """Bytes for the operator: GB, or MB below 1 GB (a small disk read "0.0 GB free")."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def trial_bytes(cfg, trial: Trial) -> int:
    """The free space one trial needs (the recorder refuses to start with less)."""
    return estimate_session_bytes([trial], cfg.resolution, cfg.fps, cfg.trial_seconds, cfg.disk_margin)


def free_bytes(sdir: Path) -> int:
    from ..nodes.common import disk_free_bytes

    return disk_free_bytes(Path(sdir) / "bags")


def check_session_disk(cfg, root: Path, trials: list[Trial]) -> None:
    """A new session: refused before anything is written when the disk cannot hold it."""
    need = estimate_session_bytes(trials, cfg.resolution, cfg.fps, cfg.trial_seconds, cfg.disk_margin)
    from ..nodes.common import disk_free_bytes

    free = disk_free_bytes(root)
    if free < need:
        raise SessionError(f"not enough disk space for the session: {gb(need)} needed, {gb(free)} free", str(root),
                           "free space, pick another --out-dir, or use --compression zstd")


def disk_full_error(sdir: Path, trial: Trial, need: int) -> SessionError:
    return DiskFullBeforeTrial(f"disk full before trial {trial.trial_id}: {gb(free_bytes(sdir))} free, "
                               f"about {gb(need)} needed; it and the trials after it are still pending", str(sdir),
                               "free disk space (or move the session folder to a larger disk and pass that --out-dir), "
                               "then run the session again with --resume")


def check_trial_disk(cfg, sdir: Path, trial: Trial) -> None:
    """Between trials: too little room for the next one ends the session with one line
    and its fix, the trial still pending (issue 20, item 6: every remaining trial was
    marked failed by the recorder's refusal, with no error line)."""
    need = trial_bytes(cfg, trial)
    if free_bytes(sdir) < need:
        raise disk_full_error(sdir, trial, need)


def save_or_disk_full(sdir: Path, manifest, context: str) -> None:
    """save_manifest; ENOSPC becomes the one-line disk-full error with its fix."""
    try:
        save_manifest(sdir, manifest)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise SessionError(f"disk full: session.yaml could not be saved ({context})", str(sdir),
                           "free disk space, then run the session again with --resume (it repairs the trial)") from None
