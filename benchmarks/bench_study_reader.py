#!/usr/bin/env python3
"""Reading speed of the ``study`` reader backend next to the ``session`` (MCAP) backend
on the same 1080p trial, and peak memory against trial length (issue 12, "Numbers").

One simulated trial is written as an MCAP session with the test fixture's writer
(gaze4hri_bench/testing/session.py: rosbags, rgb8, 30 fps, a real face photograph), then
exported to the study layout with ``gaze4hri_bench.export.study`` (rgb_video.mp4,
mp4v, and the lossless FFV1 rgb_video.mkv). Each backend then reads every frame
(decode, RGB) and computes the trial's ground truth, in a fresh child process so
that its peak RSS (VmHWM) belongs to that read alone. Frames/s = frames /
(decode + ground truth) seconds. Two trial lengths show whether memory grows with
the trial (it must not: frames are decoded one at a time).

    nice -n 10 .venv/bin/python benchmarks/bench_study_reader.py --seconds 2 6 --md docs/perf/study_reader.md
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _machine import cpu_name  # benchmarks/_machine.py (this script's folder is on sys.path)

READERS = {  # label -> (Dataset format, study video choice)
    "session (MCAP, rgb8)": ("session", None),
    "study (mp4v)": ("study", "mp4"),
    "study (FFV1 mkv, lossless)": ("study", "mkv"),
    "study (mp4v, frames + sensor noise)": ("study_noisy", "mp4"),
}
NOISE_SIGMA = 4.0  # grey levels: the synthetic frames are flat grey, unlike a camera's; noise makes mp4v work harder


def _vm_hwm_mb() -> float:
    """Peak resident memory of this process image (VmHWM; unlike ru_maxrss it does not
    inherit the parent's peak across fork + exec on Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(fmt: str, video: str | None, data: str) -> dict:
    """Read one trial fully: every frame decoded, then its ground truth."""
    from gaze4hri_bench.data.reader import Dataset

    kw = {"video": video} if video else {}
    rss0 = _vm_hwm_mb()
    ds = Dataset(data, format=fmt, **kw)
    ref = ds.trials()[0]
    t0 = time.perf_counter()
    n = 0
    for f in ds.iter_frames(ref):
        n += int(f.image.shape[0] > 0)
    t1 = time.perf_counter()
    gt = ds.trial_ground_truth(ref)
    t2 = time.perf_counter()
    return {"frames": n, "gt_rows": len(gt), "decode_s": t1 - t0, "gt_s": t2 - t1,
            "fps": n / (t2 - t0), "decode_fps": n / (t1 - t0),
            "peak_rss_mb": _vm_hwm_mb(), "rss_after_import_mb": rss0}


def make(tmp: Path, seconds: float, size: tuple[int, int]) -> tuple[Path, Path, dict]:
    from gaze4hri_bench.export.study import export_study
    from gaze4hri_bench.testing.session import TrialSpec, write_session

    root = tmp / f"sessions_{seconds:g}s"
    write_session(root, "S01", [TrialSpec("illum100_P5", seconds=seconds, size=size)], tmp=tmp)
    out = tmp / f"study_{seconds:g}s"
    t0 = time.perf_counter()
    res = export_study(root, out, log=lambda s: None)
    d = res.written[0]
    sizes = {
        "bag_mb": sum(p.stat().st_size for p in (root / "S01" / "bags").rglob("*.mcap")) / 2**20,
        "mp4_mb": (d / "rgb_video.mp4").stat().st_size / 2**20,
        "mkv_mb": (d / "rgb_video.mkv").stat().st_size / 2**20,
        "export_s": time.perf_counter() - t0,
    }
    noisy = tmp / f"study_noisy_{seconds:g}s"
    shutil.copytree(out, noisy)
    nd = noisy / d.relative_to(out)
    (nd / "rgb_video.mkv").unlink()
    _noisy_mp4(d / "rgb_video.mkv", nd / "rgb_video.mp4")
    sizes["noisy_mp4_mb"] = (nd / "rgb_video.mp4").stat().st_size / 2**20
    return root, out, sizes


def _noisy_mp4(src: Path, dst: Path) -> None:
    """The same frames with Gaussian sensor noise, re-encoded as mp4v."""
    import cv2
    import numpy as np

    rng = np.random.default_rng(0)
    cap = cv2.VideoCapture(str(src))
    w = None
    while True:
        ok, img = cap.read()
        if not ok:
            break
        if w is None:
            w = cv2.VideoWriter(str(dst), cv2.VideoWriter_fourcc(*"mp4v"), 30.0, (img.shape[1], img.shape[0]))
        n = rng.normal(0.0, NOISE_SIGMA, img.shape).astype(np.float32)
        w.write(np.clip(img.astype(np.float32) + n, 0, 255).astype(np.uint8))
    cap.release()
    w.release()


def to_md(rows: list[dict], cmd: str, size: str) -> str:
    import cv2
    import numpy as np

    lines = [
        "# Study-layout reader vs MCAP reader (issue 12)",
        "",
        f"Measured {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC by "
        f"`benchmarks/bench_study_reader.py` (`{cmd}`).",
        "",
        f"- Machine: {os.cpu_count()} CPU cores ({cpu_name()}), Python {platform.python_version()}, "
        f"numpy {np.__version__}, OpenCV {cv2.__version__} (video decode); "
        "cores shared with other jobs, so times vary "
        f"(load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}).",
        f"- Data: one simulated trial at {size}, 30 fps, "
        "written as an MCAP session by the test fixture's rosbags writer, "
        "then exported with `gaze4hri-bench export --format study` (mp4v rgb_video.mp4 + FFV1 rgb_video.mkv). "
        "Each row reads every frame (decode to RGB) and computes the trial's ground truth, in a fresh process. "
        "The synthetic frames are mostly flat grey, which mp4v compresses unusually well; "
        f"the last row re-encodes the same frames with Gaussian sensor noise (sigma {NOISE_SIGMA:g} grey levels) "
        "as a closer stand-in for camera video.",
        "- fps = frames / (decode + ground truth); peak RSS = the child process's VmHWM (Python, numpy, pandas, "
        "OpenCV and rosbags imported included).",
        "",
        "| reader | trial | frames | files (MB) | decode fps | ground truth (s) | decode + GT fps "
        "| RSS after imports (MB) | peak RSS (MB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['reader']} | {r['seconds']:g} s | {r['frames']} | {r['file_mb']:.0f} | {r['decode_fps']:.1f} | "
            f"{r['gt_s']:.3f} | {r['fps']:.1f} | {r['rss_after_import_mb']:.0f} | {r['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--seconds", type=float, nargs="+", default=[2.0, 6.0], help="trial lengths (memory must stay flat)"
    )
    ap.add_argument("--size", default="1920x1080")
    ap.add_argument("--md", type=Path, help="write the Markdown table here")
    ap.add_argument("--child", nargs=3, metavar=("FORMAT", "VIDEO", "DATA"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        fmt, video, data = a.child
        print(json.dumps(child(fmt, None if video == "-" else video, data)))
        return 0
    size = tuple(int(x) for x in a.size.split("x"))
    rows = []
    with tempfile.TemporaryDirectory() as td:
        for s in a.seconds:
            root, out, sizes = make(Path(td), s, size)
            print(f"{s:g} s: {json.dumps(sizes)}", file=sys.stderr)
            for label, (fmt, video) in READERS.items():
                data = {"session": root, "study": out, "study_noisy": Path(str(out).replace("study_", "study_noisy_"))}[
                    fmt
                ]
                fmt = "study" if fmt == "study_noisy" else fmt
                r = subprocess.run(
                    [sys.executable, __file__, "--child", fmt, video or "-", str(data)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                res = json.loads(r.stdout.strip().splitlines()[-1])
                fm = (
                    sizes["bag_mb"]
                    if fmt == "session"
                    else sizes["noisy_mp4_mb" if "noise" in label else f"{video}_mb"]
                )
                rows.append({"reader": label, "seconds": s, "file_mb": fm, **res})
                print(json.dumps(rows[-1]), file=sys.stderr)
            for p in (root, out, Path(str(out).replace("study_", "study_noisy_"))):
                shutil.rmtree(p)
    print(json.dumps(rows, indent=1))
    if a.md:
        cmd = "python benchmarks/bench_study_reader.py " + " ".join(sys.argv[1:])
        a.md.write_text(to_md(rows, cmd.strip(), a.size))
        print(f"wrote {a.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
