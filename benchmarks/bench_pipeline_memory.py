#!/usr/bin/env python3
"""Peak memory of `run` on a long session: the pipeline streams frames (one trial's
rows and a few batches in memory), so peak RSS must not grow with the session length
and stays under 2 GB for a 10-minute session.

Records one trial of --minutes at 30 fps with the acquisition simulator (``--source
sim``, default: the real nodes and recorder, the rendered face with its blinks; 640x360
is 12 GB for 10 minutes) or with the synthetic test writer (``--source synthetic``,
gaze4hri_bench/testing/session.py, which holds the whole trial in memory: small sizes only), runs
head_pose (decode + ground truth) and the tiny test network on rectified input (decode
+ data normalization + ONNX inference), with the default blink source: the first job
runs the face pass (MediaPipe detection + face mesh -> EAR blinks) on every frame and
caches it, the second reuses it. The whole process's RSS is sampled every 50 ms.
Repeat with a short trial to see that the peak is flat.

    .venv/bin/python benchmarks/bench_pipeline_memory.py --minutes 10 --size 640x360
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--size", default="640x360")
    ap.add_argument("--blinks", default="auto", help="blink source (auto = EAR face pass on every frame; off = none)")
    ap.add_argument("--detector", default="mediapipe")
    ap.add_argument("--source", choices=("sim", "synthetic"), default="sim")
    a = ap.parse_args()
    import psutil
    from gaze4hri_bench.methods.testing import TINY_SPEC, build_gradient_onnx
    from gaze4hri_bench.pipeline.results import read_metadata
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
    from gaze4hri_bench.testing.session import TrialSpec, write_session
    from gaze4hri_bench.zoo import store

    w, h = (int(v) for v in a.size.split("x"))
    tmp = Path(tempfile.mkdtemp(prefix="g4h_mem_"))
    proc = psutil.Process()
    peak = [proc.memory_info().rss]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.05)

    try:
        t0 = time.perf_counter()
        if a.source == "sim":
            from gaze4hri_acq.simulate import run_sim_session
            from gaze4hri_bench.testing.session import calibration_source

            cal = calibration_source(tmp, "S01")
            run_sim_session(tmp / "sessions", "S01", ["illum100_P5"], resolution=(w, h), trial_seconds=a.minutes * 60,
                            calibration_dir=cal)
        else:
            write_session(
                tmp / "sessions", "S01", [TrialSpec("illum100_P5", seconds=a.minutes * 60, size=(w, h))], tmp=tmp
            )
        bag_mb = sum(p.stat().st_size for p in (tmp / "sessions").rglob("*.mcap")) / 2**20
        print(f"wrote {a.minutes:g} min ({bag_mb:.0f} MB bag) in {time.perf_counter() - t0:.0f} s", flush=True)
        models = tmp / "models"
        p = build_gradient_onnx(TINY_SPEC, models / TINY_SPEC.weights_file)
        store.write_record(
            models, "tiny_test", {"method": "tiny_test", "random_init": True, "onnx_sha256": store.sha256_file(p)}
        )
        base = proc.memory_info().rss
        th = threading.Thread(target=sample, daemon=True)
        th.start()
        t0 = time.perf_counter()
        paths = run_benchmark(
            RunConfig(
                methods=("head_pose", "tiny_test"),
                input="rectified",
                data=tmp / "sessions",
                out=tmp / "out",
                models_dir=models,
                progress=False,
                device="cpu",
                blinks=a.blinks,
                detector=a.detector,
            ),
            log=print,
        )
        stop.set()
        th.join()
        for path in paths:
            t = read_metadata(path)["timing"]
            print(
                f"{path.name}: {t['frames']} frames, {t['fps']} fps (decode {t['decode_s']} s, "
                f"face pass {t['detect_s']} s, pre-process {t['preprocess_s']} s, infer {t['infer_s']} s), "
                f"per-trial peak RSS {t['peak_rss_mb']} MB; "
                f"reasons {t.get('reasons')}"
            )
        print(
            f"process RSS before the run {base / 2**20:.0f} MB, peak during the run {peak[0] / 2**20:.0f} MB "
            f"({time.perf_counter() - t0:.0f} s)"
        )
    finally:
        stop.set()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
