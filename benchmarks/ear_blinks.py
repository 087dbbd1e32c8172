#!/usr/bin/env python3
"""How well the eye-aspect-ratio blink rule finds blinks: simulated sessions (the
renderer paints closed lids during the simulator's blinks, whose times are recorded
as /sim/truth/blink), MediaPipe detection + face mesh on every frame, then the EAR of
blinked and open frames relative to the trial median, and hits / misses / false alarms
for a range of relative factors. Basis of data.validity.EAR_RELATIVE.

    .venv/bin/python benchmarks/ear_blinks.py --seeds 1 2 3 4
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

TRIALS = ["arc_P1", "arc_P5", "illum010_P5", "mutual_h_fast", "mutual_v_slow"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4], help="one simulated subject per seed")
    ap.add_argument("--trials", nargs="+", default=TRIALS)
    ap.add_argument("--seconds", type=float, default=3.0, help="seconds per trial (the arc adds its motion time)")
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--detector", default="mediapipe")
    a = ap.parse_args()
    import pandas as pd
    from gaze4hri_acq.simulate import run_sim_session
    from gaze4hri_bench.data import validity
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.faces.detectors import get_detector
    from gaze4hri_bench.pipeline.face_pass import track_trial
    from gaze4hri_bench.testing.session import calibration_source

    w, h = (int(v) for v in a.size.split("x"))
    det = get_detector(a.detector)
    tmp = Path(tempfile.mkdtemp(prefix="g4h_ear_"))
    rows = []
    t0 = time.perf_counter()
    try:
        for seed in a.seeds:
            d = tmp / f"seed{seed}"
            d.mkdir()
            cal = calibration_source(d, "S01")
            run_sim_session(
                d / "root", "S01", a.trials, resolution=(w, h), trial_seconds=a.seconds, calibration_dir=cal, seed=seed
            )
            ds = Dataset(d / "root", sim_blinks=True)
            for t in ds.trials():
                gt = ds.trial_ground_truth(t)
                f = track_trial(ds.iter_frames(t), det)
                m = gt[["frame", "invalid_reason", "camera_yaw_deg"]].merge(
                    f[["frame", "x1", "ear"]], on="frame", how="left"
                )
                m["ratio"] = m["ear"] / m["ear"].median()
                m["trial"], m["seed"] = t.trial, seed
                rows.append(m)
    finally:
        det.close()
        shutil.rmtree(tmp, ignore_errors=True)
    df = pd.concat(rows, ignore_index=True)
    blink, open_ = df["invalid_reason"] == "blink", df["invalid_reason"] == ""
    print(
        f"{len(a.seeds)} subject(s) x {len(a.trials)} trials at {a.size}: {len(df)} frames, {int(blink.sum())} blinked "
        f"(simulator truth), {int(df['x1'].isna().sum())} without a face; {time.perf_counter() - t0:.0f} s"
    )
    q = [0, 0.5, 0.9, 1.0]
    print(
        "EAR / trial median, blinked frames (min, median, p90, max):",
        df.loc[blink, "ratio"].quantile(q).round(3).tolist(),
    )
    print(
        "EAR / trial median, open frames (min, p0.1, p1, median):",
        df.loc[open_, "ratio"].quantile([0, 0.001, 0.01, 0.5]).round(3).tolist(),
    )
    print(
        "EAR absolute, blinked (min, max):",
        df.loc[blink, "ear"].agg(["min", "max"]).round(3).tolist(),
        "open (min, median):",
        df.loc[open_, "ear"].agg(["min", "median"]).round(3).tolist(),
    )
    print("\n| rule | blinked frames found | missed | open frames flagged |\n|---|---|---|---|")
    for r in (0.7, 0.75, 0.8, validity.EAR_RELATIVE, 0.9):
        b = df["ratio"] < r
        mark = " (default)" if r == validity.EAR_RELATIVE else ""
        print(
            f"| EAR < {r:g} x median{mark} | {int((b & blink).sum())} | {int((~b & blink).sum())} "
            f"| {int((b & open_).sum())} |"
        )
    b = df["ear"] < validity.EAR_THRESHOLD
    print(
        f"| EAR < {validity.EAR_THRESHOLD:g} (absolute) | {int((b & blink).sum())} | {int((~b & blink).sum())} "
        f"| {int((b & open_).sum())} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
