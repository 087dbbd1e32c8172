"""Review rendering speed (``gaze4hri-bench review``): frames/s of the whole render
(decode + ground truth + drawing + H.264 encoding) and of the encoder alone, at
640x360 and 1920x1080.

For each resolution a short simulated trial is recorded, ``gaze4hri-bench run`` writes
the weight-free baselines' results (straight, head_pose), and the trial is rendered
with both methods' arrows.

    nice -n 10 .venv/bin/python benchmarks/review_render.py --out docs/perf/review.md
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from _machine import cpu_name  # benchmarks/_machine.py (this script's folder is on sys.path)

TRIAL = "illum100_P5"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--resolutions", nargs="+", default=["640x360", "1920x1080"])
    ap.add_argument("--seconds", type=float, default=4.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    import numpy as np
    from gaze4hri_acq.simulate import run_sim_session
    from gaze4hri_bench.cli import main as bench
    from gaze4hri_bench.review.render import ReviewConfig, review_trial
    from gaze4hri_bench.review.video import Mp4Writer, count_frames

    env = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "load_before": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="review_bench_") as tmp:
        tmp = Path(tmp)
        for res in args.resolutions:
            w, h = (int(x) for x in res.split("x"))
            root = tmp / res
            run_sim_session(
                root,
                subject="S01",
                trial_ids=[TRIAL],
                resolution=(w, h),
                trial_seconds=args.seconds,
                real_time_factor=2.0,
            )
            out = tmp / f"results_{res}"
            assert (
                bench(
                    [
                        "run",
                        "-m",
                        "straight",
                        "-m",
                        "head_pose",
                        "--data",
                        str(root),
                        "--out",
                        str(out),
                        "--no-progress",
                        "--blinks",
                        "off",
                    ]
                )
                == 0
            )
            r = review_trial(ReviewConfig(out, TRIAL, data=root, out=tmp / f"review_{res}"), log=print)
            n, codec = count_frames(r.mp4)
            frames = [np.random.default_rng(i).integers(0, 255, (h, w, 3), dtype=np.uint8) for i in range(4)]
            wr = Mp4Writer(tmp / f"enc_{res}.mp4", 30.0)
            t0 = time.perf_counter()
            for i in range(60):
                wr.write(frames[i % 4])
            wr.close()
            enc = 60 / (time.perf_counter() - t0)
            rows.append(
                {
                    "res": res,
                    "frames": r.frames,
                    "decoded": n,
                    "codec": codec,
                    "fps": r.fps,
                    "enc_fps": enc,
                    "mp4_kb": r.mp4.stat().st_size / 1e3,
                    "png_kb": r.png.stat().st_size / 1e3,
                }
            )
            print(rows[-1], flush=True)
    env["load_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "# Review rendering speed",
        "",
        f"Measured {env['date']} by `benchmarks/review_render.py` "
        f"({' '.join(sys.argv[1:]) or 'defaults'}).",
        f"Machine: {env['cpu']}, {env['cores']} logical cores; Python {env['python']}; "
        "ffmpeg from imageio-ffmpeg 0.8.1 "
        "(libx264, CRF 23, preset veryfast, yuv420p). "
        f"Load average {env['load_before']} before, {env['load_after']} after "
        "(shared machine: lower bounds).",
        f"Input: a simulated trial (`{TRIAL}`), results of `straight` and `head_pose`; "
        "render = read the bag, ground truth, "
        "draw the ground-truth and two method arrows with the legend, encode; "
        "encoder alone = 60 noise frames (the worst case for H.264).",
        "",
        "| resolution | frames | decoded back | codec | render frames/s | encoder alone frames/s "
        "| MP4 (kB) | contact sheet (kB) |",
        "|---|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['res']} | {r['frames']} | {r['decoded']} | {r['codec']} | {r['fps']:.1f} | {r['enc_fps']:.1f} | "
            f"{r['mp4_kb']:.0f} | {r['png_kb']:.0f} |"
        )
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
