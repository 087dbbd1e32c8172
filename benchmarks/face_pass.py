#!/usr/bin/env python3
"""The face pass's cost and its blink decisions: the full pass (detector and face mesh on
every frame, pipeline.face_pass.FaceTrack) against the tracked EAR pass (faces.ear_pass)
on simulated sessions with blinks (the simulator's blink truth, /sim/truth/blink), side
by side in one process on the same decoded frames.

Reports ms per frame of each pass, the share of frames whose blink decision (the run's
rule, data.validity.blink_from_ear) agrees, the simulator-truth blinks each finds and the
open frames each flags.

    .venv/bin/python benchmarks/face_pass.py --seeds 1 2
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

TRIALS = ["arc_P1", "arc_P5", "illum010_P5", "mutual_h_fast", "mutual_v_slow"]


def _sessions(root: Path, seeds, trials, size, seconds) -> list[Path]:
    from gaze4hri_acq.simulate import run_sim_session
    from gaze4hri_bench.testing.session import calibration_source

    out = []
    for seed in seeds:
        d = root / f"seed{seed}"
        if not (d / "root").is_dir():
            d.mkdir(parents=True, exist_ok=True)
            cal = calibration_source(d, "S01")
            run_sim_session(d / "root", "S01", trials, resolution=size, trial_seconds=seconds, calibration_dir=cal,
                            seed=seed)
        out.append(d / "root")
    return out


def _blink_events(mask) -> list[tuple[int, int]]:
    import numpy as np

    m = np.r_[False, np.asarray(mask, bool), False]
    d = np.flatnonzero(np.diff(m.astype(int)))
    return list(zip(d[::2], d[1::2], strict=True))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2], help="one simulated subject per seed")
    ap.add_argument("--trials", nargs="+", default=TRIALS)
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds per trial (the arc adds its motion time)")
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--detector", default="mediapipe")
    ap.add_argument("--keep", type=Path, help="keep (or reuse) the generated sessions in this folder")
    ap.add_argument("--stride", type=int, default=None, help="the tracked pass's stride (default: its setting)")
    ap.add_argument("--refine-below", type=float, default=None)
    ap.add_argument("--refine-jump", type=float, default=None)
    a = ap.parse_args()
    import dataclasses

    import numpy as np
    import pandas as pd
    from gaze4hri_bench.data import validity
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.faces.ear_pass import EAR_PASSES
    from gaze4hri_bench.pipeline.face_pass import FaceModels, FaceTrack, face_table

    settings = EAR_PASSES.get("tracked")
    changes = {k: v for k, v in (("stride", a.stride), ("refine_below", a.refine_below),
                                 ("refine_jump", a.refine_jump)) if v is not None}
    settings = dataclasses.replace(settings, **changes)
    w, h = (int(v) for v in a.size.split("x"))
    tmp = a.keep or Path(tempfile.mkdtemp(prefix="g4h_facepass_"))
    models = FaceModels(a.detector)
    rows, cost = [], {"full": 0.0, "tracked": 0.0}
    counts = {"measured": 0, "refined": 0, "acquired": 0}
    try:
        for root in _sessions(tmp, a.seeds, a.trials, (w, h), a.seconds):
            ds = Dataset(root, sim_blinks=True)
            for t in ds.trials():
                gt = ds.trial_ground_truth(t)
                frames = [(f.index, f.image) for f in ds.iter_frames(t)]
                full = FaceTrack(models.detector(), landmarker=models.landmarker())
                t0 = time.perf_counter()
                for i, im in frames:
                    full.step(i, im)
                cost["full"] += time.perf_counter() - t0
                tracked = models.ear_pass(settings)
                t0 = time.perf_counter()
                for i, im in frames:
                    tracked.step(i, im)
                tab = face_table(tracked.rows())
                cost["tracked"] += time.perf_counter() - t0
                for k in counts:
                    counts[k] += getattr(tracked, k)
                m = gt[["frame", "invalid_reason"]].merge(full.table()[["frame", "ear"]], on="frame", how="left")
                m = m.merge(tab[["frame", "ear"]].rename(columns={"ear": "ear_tracked"}), on="frame", how="left")
                m["full"] = validity.blink_from_ear(m["ear"].to_numpy())
                m["tracked"] = validity.blink_from_ear(m["ear_tracked"].to_numpy())
                m["trial"] = f"{root.parent.name}/{t.trial}"
                rows.append(m)
    finally:
        models.close()
        if a.keep is None:
            shutil.rmtree(tmp, ignore_errors=True)
    df = pd.concat(rows, ignore_index=True)
    n = len(df)
    truth, open_ = df["invalid_reason"] == "blink", df["invalid_reason"] == ""
    events = [(tr, s, e) for tr, g in df.groupby("trial", sort=False)
              for s, e in _blink_events((g["invalid_reason"] == "blink").to_numpy())]

    def found(col: str) -> int:
        k = 0
        for tr, s, e in events:
            g = df[df["trial"] == tr]
            k += bool(g[col].to_numpy()[s:e].any())
        return k

    load = os.getloadavg()[0]
    print(f"{len(a.seeds)} subject(s) x {len(a.trials)} trials at {a.size}: {n} frames, {len(events)} simulator-truth "
          f"blinks ({int(truth.sum())} frames); detector {a.detector}; load average {load:.2f}, {os.cpu_count()} cores")
    print(f"tracked pass: {settings}")
    print("\n| pass | ms per frame | blinks found | blinked frames flagged | open frames flagged |")
    print("|---|---|---|---|---|")
    for col in ("full", "tracked"):
        print(f"| {col} | {1e3 * cost[col] / n:.2f} | {found(col)} / {len(events)} | {int((df[col] & truth).sum())} "
              f"| {int((df[col] & open_).sum())} |")
    agree = float((df["full"] == df["tracked"]).mean())
    d = (df["ear"] - df["ear_tracked"]).abs()
    print(f"\nblink decisions agree on {100 * agree:.2f} % of frames; |EAR full - tracked| median {d.median():.4f}, "
          f"p99 {d.quantile(0.99):.4f}; tracked pass: {counts['measured']} frames tracked, {counts['refined']} "
          f"refined, {counts['acquired']} detector calls; speed-up {cost['full'] / max(cost['tracked'], 1e-9):.2f}x")
    return 0 if np.isfinite(agree) else 1


if __name__ == "__main__":
    sys.exit(main())
