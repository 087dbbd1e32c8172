#!/usr/bin/env python3
"""Pipeline throughput per method and input type on this machine's CPU, split into
decode, detect (face detection + tracking), pre-process and infer, plus peak RSS.

Data: one real MCAP session written like the data tests (gaze4hri_bench/testing/session.py:
a face photograph moving across a 640x360 frame, 30 fps). Models: the zoo's
random-init ONNX exports (same graphs as imported checkpoints; `gaze4hri-bench models
export METHOD --random-init`, or the test cache ~/.cache/gaze4hri/tests/bench/zoo_onnx),
else the tiny gradient models (gaze4hri_bench.methods.testing): the table says which.
Each (method, input) runs alone with a cold face cache, so detection is counted for
every crop row. Writes docs/perf/bench.md's table to stdout and --md.

    .venv/bin/python benchmarks/bench_pipeline_throughput.py --seconds 1 --md /tmp/bench.md
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from _machine import cpu_name  # noqa: E402 - benchmarks/_machine.py


def _models(tmp: Path, methods: list[str]) -> dict[str, str]:
    """Fill a models folder; method -> provenance of its ONNX file."""
    from gaze4hri_bench.methods import get_method
    from gaze4hri_bench.methods.testing import build_gradient_onnx
    from gaze4hri_bench.zoo import store

    cache = Path(os.environ.get("GAZE4HRI_TEST_CACHE", Path.home() / ".cache" / "gaze4hri" / "tests")) / "zoo_onnx"
    mine = store.models_dir(None)
    what = {}
    tmp.mkdir(parents=True, exist_ok=True)
    for name in methods:
        spec = get_method(name).spec
        dst = tmp / spec.weights_file
        rec = store.read_records(mine).get(name) if mine.is_dir() else None
        cands = sorted(cache.glob(f"{name}-*.onnx"), key=lambda p: p.stat().st_mtime) if cache.is_dir() else []
        if rec and rec.get("random_init") and (mine / spec.weights_file).is_file():
            shutil.copy2(mine / spec.weights_file, dst)
            what[name] = "zoo random-init export (models/)"
        elif cands:
            shutil.copy2(cands[-1], dst)
            what[name] = "zoo random-init export"
        else:
            build_gradient_onnx(spec, dst)
            what[name] = "tiny gradient model"
        store.write_record(tmp, name, {"method": name, "random_init": True, "onnx_sha256": store.sha256_file(dst)})
    return what


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=1.0, help="trial length (s at 30 fps; default 1)")
    ap.add_argument("--size", default="640x360", help="frame size WxH (default 640x360)")
    ap.add_argument("--methods", nargs="*", default=None, help="default: every spec plus the baselines")
    ap.add_argument("--inputs", nargs="*", default=["crop", "rectified"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--detector", default="auto")
    ap.add_argument("--md", type=Path, default=None, help="also write the Markdown table here")
    a = ap.parse_args()
    from gaze4hri_bench.pipeline.results import read_metadata
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
    from gaze4hri_bench.specs import SPECS
    from gaze4hri_bench.testing.session import TrialSpec, write_session

    w, h = (int(v) for v in a.size.split("x"))
    methods = a.methods or list(SPECS) + ["head_pose", "straight"]
    tmp = Path(tempfile.mkdtemp(prefix="g4h_bench_"))
    try:
        t0 = time.perf_counter()
        write_session(tmp / "sessions", "S01", [TrialSpec("illum100_P5", seconds=a.seconds, size=(w, h))], tmp=tmp)
        print(f"session written in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        nets = [m for m in methods if m in SPECS]
        what = _models(tmp / "models", nets)
        rows = []
        for m in methods:
            for inp in (a.inputs if m in SPECS else ["none"]):
                out = tmp / f"out_{m}_{inp}"
                cfg = RunConfig(methods=(m,), data=tmp / "sessions", out=out, input=inp, detector=a.detector,
                                device="cpu", batch=a.batch, models_dir=tmp / "models", progress=False,
                                command_line="benchmarks/bench_pipeline_throughput.py")
                (path,) = run_benchmark(cfg, log=lambda *_: None)
                t = read_metadata(path)["timing"]
                n = t["frames"]
                per = {k: 1000 * t[k] / n for k in ("decode_s", "detect_s", "preprocess_s", "infer_s")}
                rows.append(
                    {
                        "method": m,
                        "input": inp,
                        "model": what.get(m, "none (baseline)"),
                        "frames": n,
                        "fps": t["fps"],
                        **{k.replace("_s", "_ms"): round(v, 2) for k, v in per.items()},
                        "peak_rss_mb": t["peak_rss_mb"],
                    }
                )
                print(json.dumps(rows[-1]), file=sys.stderr)
        import onnxruntime

        head = (
            f"CPU: {cpu_name()}, {os.cpu_count()} cores; onnxruntime "
            f"{onnxruntime.__version__} (CPUExecutionProvider); {w}x{h} frames, {a.seconds:g} s trial at 30 fps; "
            f"batch {a.batch}; detector {a.detector}"
        )
        cols = ["method", "input", "model", "fps", "decode_ms", "detect_ms", "preprocess_ms", "infer_ms", "peak_rss_mb"]
        md = [head, "", "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        md += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
        text = "\n".join(md) + "\n\n(ms are per frame; fps = frames / wall time of the trial, stages overlap)\n"
        print(text)
        if a.md:
            a.md.write_text(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
