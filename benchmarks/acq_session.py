"""Whole simulated session: the 63 trials at 640x360, 2 s per fixed-camera trial,
through the nodes, orchestrator and recorder (``run_sim_session``), timed on the
wall clock; reports the per-status counts, frames, drops and the bag size.

    .venv/bin/python benchmarks/acq_session.py [--resolution 640x360] [--trial-seconds 2]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--resolution", default="640x360")
    ap.add_argument("--trial-seconds", type=float, default=2.0)
    ap.add_argument("--out", type=Path, help="keep the session here (default: a temporary directory, removed)")
    ap.add_argument("--json", type=Path, help="append the result as one JSON line")
    a = ap.parse_args()
    from gaze4hri_acq.simulate import run_sim_session
    from gaze4hri_core.session import load_manifest

    w, h = (int(x) for x in a.resolution.split("x"))
    out = a.out or Path(tempfile.mkdtemp(prefix="acq_session_"))
    try:
        t0 = time.monotonic()
        sdir = run_sim_session(
            out, subject="S01", resolution=(w, h), trial_seconds=a.trial_seconds, real_time_factor=100.0
        )
        wall = time.monotonic() - t0
        m = load_manifest(sdir)
        by: dict[str, int] = {}
        for r in m.trials.values():
            by[r.status] = by.get(r.status, 0) + 1
        size = sum(p.stat().st_size for p in (sdir / "bags").rglob("*.mcap"))
        res = {
            "trials": len(m.trials),
            "status": by,
            "wall_s": round(wall, 1),
            "resolution": a.resolution,
            "trial_seconds": a.trial_seconds,
            "frames": sum(r.frames or 0 for r in m.trials.values()),
            "dropped_frames": sum(r.dropped_frames or 0 for r in m.trials.values()),
            "bag_bytes": size,
            "failed": {k: r.reason for k, r in m.trials.items() if r.status != "done"},
        }
    finally:
        if a.out is None:
            shutil.rmtree(out, ignore_errors=True)
    line = json.dumps(res)
    print(line)
    if a.json:
        with open(a.json, "a") as f:
            f.write(line + "\n")
    return 0 if by.get("done", 0) == len(m.trials) else 1


if __name__ == "__main__":
    sys.exit(main())
