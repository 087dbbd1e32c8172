#!/usr/bin/env python3
"""Throughput of the benchmark's data side on this CPU: bag decode, ground truth, face
detection (+ tracking) and pre-processing (crop rules, data normalization, tensor).

Writes real MCAP bags with the test fixture's writer (gaze4hri_bench/testing/session.py:
rosbags Writer, rgb8 frames showing a real face photograph) at 640x360 and at the
study's 1920x1080, then times each stage per frame (median of the per-frame times,
and frames per second over the whole pass). Prints JSON; ``--md`` writes the table.

    .venv/bin/python benchmarks/bench_data_throughput.py --md docs/perf/bench_data.md

yolov8_face_onnx is timed only when its weights (models/yolov8n-face.onnx) exist;
otherwise the row says so (no stand-in model is timed in its place).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _machine import cpu_name  # benchmarks/_machine.py (this script's folder is on sys.path)

os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("YOLO_CONFIG_DIR", os.path.join(tempfile.gettempdir(), "gaze4hri_yolo"))


def _timed(fn, items):
    ts = []
    out = None
    for x in items:
        t0 = time.perf_counter()
        out = fn(x)
        ts.append(time.perf_counter() - t0)
    ts = np.array(ts)
    return {"n": len(ts), "median_ms": float(np.median(ts) * 1e3), "fps": float(len(ts) / ts.sum())}, out


def bench(size: tuple[int, int], seconds: float, tmp: Path, detectors: list[str]) -> dict:
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.faces import crops, normalization
    from gaze4hri_bench.faces.detectors import available, get_detector
    from gaze4hri_bench.faces.tracking import SubjectTracker
    from gaze4hri_bench.specs import get_spec
    from gaze4hri_bench.testing.session import TrialSpec, write_session

    w, h = size
    root = tmp / f"root_{w}x{h}"
    t0 = time.perf_counter()
    write_session(root, "S01", [TrialSpec("illum100_P5", seconds=seconds, size=size)], tmp=tmp)
    res: dict = {"size": f"{w}x{h}", "write_s": time.perf_counter() - t0}
    bag = next((root / "S01" / "bags" / "illum100_P5").glob("*.mcap"))
    res["bag_mb"] = bag.stat().st_size / 2**20
    ds = Dataset(root)
    ref = ds.trials()[0]
    t0 = time.perf_counter()
    ds.frame_table(ref)
    res["frame_table_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n = 0
    frames = []
    for f in ds.iter_frames(ref):
        n += 1
        if len(frames) < 30:
            frames.append(f)
    dec = time.perf_counter() - t0
    res["decode"] = {"n": n, "fps": n / dec, "ms_per_frame": dec / n * 1e3, "MB_per_s": res["bag_mb"] / dec}
    t0 = time.perf_counter()
    gt = ds.trial_ground_truth(ref)
    res["ground_truth"] = {"n": len(gt), "s": time.perf_counter() - t0}
    imgs = [f.image for f in frames]

    av = available()
    res["detect"] = {}
    for name in detectors:
        if not av.get(name, (False, ""))[0]:
            res["detect"][name] = {"skipped": av.get(name, (False, "unknown"))[1]}
            continue
        kw = {"landmarks": False} if name == "mediapipe_boxes" else {}
        d = get_detector("mediapipe" if name == "mediapipe_boxes" else name, **kw)
        d.detect(imgs[0])  # warm-up (graph / cascade load)
        stats, _ = _timed(d.detect, imgs)
        res["detect"][name] = stats
        d.close()
    # tracking alone, fed detections of the first detector that ran
    det0 = next((get_detector(n) for n in ("opencv_haar",) if av[n][0]), None)
    dets = [det0.detect(im) for im in imgs[:10]] if det0 else []
    trk = SubjectTracker()
    res["track"], _ = _timed(lambda d: trk.update(d, imgs[0].shape), dets * 3)

    K = ref.calibration.intrinsics.scaled(w, h).K
    c = gt.loc[gt["valid"], ["face_cx", "face_cy", "face_cz"]].to_numpy(float)[0]
    R = gt.loc[gt["valid"], [f"R_head_{i}{j}" for i in range(3) for j in range(3)]].to_numpy(float)[0].reshape(3, 3)
    box = np.array([0.35 * w, 0.15 * h, 0.65 * w, 0.85 * h])
    pre = {}
    pre["normalize_224"], patch = _timed(lambda im: normalization.normalize(im, K, c, R)[0], imgs)
    pre["to_tensor_bgr_224"], _ = _timed(lambda p: crops.to_tensor(p, get_spec("puregaze_eth")), [patch] * 30)
    pre["crop_l2cs_448"], p448 = _timed(lambda im: crops.crop(im, box, "l2cs_face_box", 448), imgs)
    pre["to_tensor_imagenet_448"], _ = _timed(lambda p: crops.to_tensor(p, get_spec("l2cs_gaze360")), [p448] * 30)
    pre["crop_mcgaze_448"], _ = _timed(lambda im: crops.crop(im, box, "mcgaze_head_square", 448), imgs)
    pre["crop_gat_224"], _ = _timed(lambda im: crops.crop(im, box, "gat_head_box", 224), imgs)
    res["preprocess"] = pre
    return res


def to_md(results: list[dict], cmd: str) -> str:
    import cv2
    import onnxruntime

    lines = [
        "# Data-side throughput (decode, detect, pre-process)",
        "",
        f"Measured {dt.datetime.now(dt.timezone.utc):%Y-%m-%d %H:%M} UTC by "
        f"`benchmarks/bench_data_throughput.py` (`{cmd}`).",
        "",
        f"- Machine: {os.cpu_count()} CPU cores ({cpu_name()}), Python {platform.python_version()}, "
        f"numpy {np.__version__}, OpenCV {cv2.__version__}, ONNX Runtime {onnxruntime.__version__}; "
        "cores shared with other jobs, so times vary.",
        "- Data: one trial written by the test fixture's rosbags writer (MCAP, uncompressed, rgb8, 30 fps) showing the "
        "astronaut photograph (skimage) as the face; decode = read + CDR deserialize + RGB view, one frame at a time.",
        "- Per-frame figures: median over 30 frames (detection: after one warm-up call); fps = frames / total time.",
        "",
    ]
    lines += ["| stage | " + " | ".join(r["size"] for r in results) + " |", "|---|" + "---:|" * len(results)]

    def row(label, get):
        vals = []
        for r in results:
            try:
                vals.append(get(r))
            except (KeyError, TypeError):
                vals.append("n/a")
        lines.append(f"| {label} | " + " | ".join(vals) + " |")

    row("bag size (MB) / frames", lambda r: f"{r['bag_mb']:.0f} / {r['decode']['n']}")
    row("frame table (s, one pass over the bag)", lambda r: f"{r['frame_table_s']:.2f}")
    row(
        "decode (ms/frame; fps; MB/s)",
        lambda r: f"{r['decode']['ms_per_frame']:.1f}; {r['decode']['fps']:.0f}; {r['decode']['MB_per_s']:.0f}",
    )
    row("ground truth, whole trial (s)", lambda r: f"{r['ground_truth']['s']:.2f}")
    for name in results[0]["detect"]:
        row(
            f"detect {name} (ms/frame; fps)",
            lambda r, n=name: (
                f"skipped: {r['detect'][n]['skipped']}"
                if "skipped" in r["detect"][n]
                else f"{r['detect'][n]['median_ms']:.1f}; {r['detect'][n]['fps']:.1f}"
            ),
        )
    row("BYTETracker update (ms/frame)", lambda r: f"{r['track']['median_ms']:.2f}")
    for k in results[0]["preprocess"]:
        row(f"{k} (ms/frame)", lambda r, k=k: f"{r['preprocess'][k]['median_ms']:.2f}")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=2.0, help="trial length per resolution (30 fps)")
    ap.add_argument("--sizes", default="640x360,1920x1080")
    ap.add_argument("--detectors", default="mediapipe,mediapipe_boxes,opencv_haar,yolov8_face_onnx")
    ap.add_argument("--md", type=Path, help="write the Markdown table here")
    a = ap.parse_args(argv)
    from gaze4hri_bench.faces.detectors import available

    av = available()
    av["mediapipe_boxes"] = av["mediapipe"]
    import gaze4hri_bench.faces.detectors as D

    D.available = lambda: av  # noqa: E731  (adds the boxes-only mediapipe variant to the table)
    sizes = [tuple(int(x) for x in s.split("x")) for s in a.sizes.split(",")]
    with tempfile.TemporaryDirectory() as td:
        results = [bench(s, a.seconds, Path(td), a.detectors.split(",")) for s in sizes]
    print(json.dumps(results, indent=1))
    if a.md:
        cmd = "python benchmarks/bench_data_throughput.py " + " ".join(sys.argv[1:])
        a.md.write_text(to_md(results, cmd.strip()))
        print(f"wrote {a.md}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
