"""Python API for a simulated session (the benchmark's demo calls it): the same nodes,
orchestrator and recorder as ``gaze4hri-acq session --backend sim``, in-process."""
from __future__ import annotations

from pathlib import Path

__all__ = ["run_sim_session", "DEFAULT_REAL_TIME_FACTOR"]

# Simulated seconds per wall second. The camera renders every frame regardless; a
# higher factor only lets the clock run ahead while it catches up (docs/perf/acq.md).
DEFAULT_REAL_TIME_FACTOR = 6.0


def run_sim_session(out_dir: Path, subject: str = "S01", trial_ids: list[str] | None = None, resolution=(640, 360),
                    trial_seconds: float = 2.0, seed: int = 0, calibration_dir: Path | None = None, quiet: bool = True,
                    *, resume: bool = False, compression: str = "none",
                    real_time_factor: float = DEFAULT_REAL_TIME_FACTOR, experiments: list[str] | None = None,
                    device_process: str = "auto") -> Path:
    """Record a simulated session into ``out_dir/<subject>``; returns the session directory.
    ``device_process``: the simulated devices in a second process ("yes"), in this one
    ("no": what a test that patches the simulator needs), or "auto" (split.py).

    Raises Gaze4HRIError (one line) on bad input; an existing session is resumed
    only with ``resume=True``.
    """
    from .session_assembly import run_session_args
    from .session_config import session_config

    args = session_config("run_sim_session", subject=subject, backend="sim", out_dir=Path(out_dir), trial_ids=trial_ids,
                          experiments=experiments, resolution=tuple(resolution), trial_seconds=trial_seconds, seed=seed,
                          calibration_dir=calibration_dir, quiet=quiet, resume=resume, compression=compression,
                          real_time_factor=real_time_factor, sim_device_process=device_process, yes=True)
    return run_session_args(args)
