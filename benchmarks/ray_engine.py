#!/usr/bin/env python3
"""The Ray engine against the local engine on the demo set (issue 22, item 4).

Runs the same benchmark three ways on this machine, each into a fresh results folder
(cold face cache): ``--engine local``; ``--engine ray`` with 1 worker holding all the
cores (``--threads`` = cores); ``--engine ray`` with one worker per core (1 thread
each). All use the same cores, so the differences are the engine's cost: Ray's start
(ray.init, measured apart), each worker's start (a process that imports the pipeline
and builds its ONNX sessions) and the per-unit round trip (driver -> actor -> driver,
outside the unit's own work). Results are checked equal to the local engine's, row for
row. Prints JSON lines and, with --md, the Markdown of docs/perf/ray.md; the machine
and its load average (before and after each run) head the table.

Data: the demo sessions (out/demo/sessions, `gaze4hri-bench demo`), one subject by
default; without them a 13-trial session is written like the data tests
(gaze4hri_bench/testing/session.py). Models: the zoo's random-init exports from the test
cache (benchmarks/bench_pipeline_throughput.py's _models), else tiny gradient models.

    .venv/bin/python benchmarks/ray_engine.py --md /tmp/ray.md
    .venv/bin/python benchmarks/ray_engine.py --subjects S01 S02 --methods gazetr_eth head_pose straight
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from _machine import cpu_name  # noqa: E402 - benchmarks/_machine.py


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _data(args, tmp: Path) -> tuple[Path, str]:
    demo = REPO / "out" / "demo" / "sessions"
    if demo.is_dir() and all((demo / s / "session.yaml").is_file() for s in args.subjects):
        return demo, f"demo sessions {demo.relative_to(REPO)} ({', '.join(args.subjects)})"
    from gaze4hri_bench.demo import DEMO_TRIALS
    from gaze4hri_bench.testing.session import TrialSpec, write_session

    for s in args.subjects:
        write_session(tmp / "sessions", s, [TrialSpec(t, seconds=1.0, size=(640, 360)) for t in DEMO_TRIALS], tmp=tmp)
    return tmp / "sessions", f"written sessions ({len(args.subjects)} x {len(DEMO_TRIALS)} trials x 1 s, 640x360)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subjects", nargs="+", default=["S01"])
    ap.add_argument("--methods", nargs="+", default=["gazetr_eth", "head_pose", "straight"])
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--md", type=Path, default=None, help="also write the Markdown here")
    args = ap.parse_args()

    import pandas as pd
    import ray
    from bench_pipeline_throughput import _models
    from gaze4hri_bench.pipeline import engine_ray
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
    from gaze4hri_bench.specs import SPECS

    cores = os.cpu_count() or 1
    tmp = Path(tempfile.mkdtemp(prefix="g4h_ray_"))
    rows, lines = [], []
    try:
        data, what = _data(args, tmp)
        models = _models(tmp / "models", [m for m in args.methods if m in SPECS])

        def cfg(name: str, **kw) -> RunConfig:
            return RunConfig(methods=tuple(args.methods), data=data, out=tmp / name, subjects=tuple(args.subjects),
                             models_dir=tmp / "models", device="cpu", batch=args.batch, progress=False,
                             command_line=f"benchmarks/ray_engine.py {name}", **kw)

        def timed(name: str, c: RunConfig) -> dict:
            before = _load()
            t0 = time.perf_counter()
            paths = run_benchmark(c, log=lines.append)
            wall = time.perf_counter() - t0
            frames = pd.read_parquet(paths[0], columns=["frame"]).shape[0]
            return {"engine": name, "wall_s": round(wall, 2), "frames": frames, "paths": paths, "load_before": before,
                    "load_after": _load()}

        local = timed("local", cfg("local"))
        t0 = time.perf_counter()
        ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, configure_logging=False)
        init_s = time.perf_counter() - t0
        runs = [local]
        for n in (1, 2):
            r = timed(f"ray, {n} worker(s)", cfg(f"ray{n}", engine="ray", workers=n, threads=max(1, cores // n)))
            st = engine_ray.LAST_STATS[0]
            work = sum(u["worker_s"] for u in st.units)
            trip = [u["round_trip_s"] - u["worker_s"] for u in st.units]
            r.update(units=len(st.units), workers=st.workers, unit_work_s=round(work, 2),
                     overhead_per_unit_s=round((r["wall_s"] * n - work) / len(st.units), 3),
                     round_trip_median_ms=round(1000 * statistics.median(trip), 1),
                     extra_vs_local_per_unit_s=round((r["wall_s"] - local["wall_s"]) / len(st.units), 3))
            for a, b in zip(local["paths"], r["paths"], strict=True):  # the same rows as the local engine
                pd.testing.assert_frame_equal(pd.read_parquet(a), pd.read_parquet(b), check_exact=True)
            r["equal_to_local"] = True
            runs.append(r)
        ray.shutdown()
        for r in runs:
            r["fps"] = round(r["frames"] / r["wall_s"], 2)
            r.pop("paths")
            rows.append(r)
            print(json.dumps(r), file=sys.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    import onnxruntime

    head = (f"CPU: {cpu_name()}, {cores} cores; ray {ray.__version__}; onnxruntime {onnxruntime.__version__}; "
            f"data: {what}; methods: {', '.join(args.methods)} (input best; models: "
            f"{', '.join(f'{k} {v}' for k, v in models.items()) or 'none'}), batch {args.batch}; "
            f"ray.init (local runtime, {cores} CPUs): {init_s:.1f} s, not in the walls below")
    md = [
        head,
        "",
        "| engine | wall s | frames/s (per job) | units | unit work s (sum) | overhead per unit s "
        "| round trip median ms | extra vs local per unit s | equal to local | load avg before | load avg after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for r in rows:
        md.append(
            f"| {r['engine']} | {r['wall_s']} | {r['fps']} | {r.get('units', '-')} | {r.get('unit_work_s', '-')} | "
            f"{r.get('overhead_per_unit_s', '-')} | {r.get('round_trip_median_ms', '-')} | "
            f"{r.get('extra_vs_local_per_unit_s', '-')} | {'yes' if r.get('equal_to_local') else '(reference)'} | "
            f"{r['load_before']} | {r['load_after']} |"
        )
    text = "\n".join(md) + "\n"
    print(text)
    if args.md:
        args.md.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
