"""Model-zoo timing on this machine's CPU: export + verification time per method, and ONNX
Runtime latency per frame (batch 1) and throughput (batch 32) of the exported models.

Uses random weights (``models export --random-init`` path: identical graphs to imported
checkpoints, so the timings hold for real weights). Writes a Markdown report.

    .venv/bin/python benchmarks/zoo_perf.py                      # PureGaze, GazeTR, L2CS
    .venv/bin/python benchmarks/zoo_perf.py --methods all --clip-batch 4 --out docs/perf/zoo.md
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _machine import cpu_name  # benchmarks/_machine.py (this script's folder is on sys.path)

DEFAULT_METHODS = ["puregaze_eth", "gazetr_eth", "l2cs_gaze360"]




def time_runs(fn, warmup: int, repeats: int, budget_s: float) -> list[float]:
    """Wall times of ``repeats`` calls after ``warmup`` calls (stops early past ``budget_s``)."""
    for _ in range(warmup):
        fn()
    times, t_end = [], time.perf_counter() + budget_s
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        if time.perf_counter() > t_end and len(times) >= 3:
            break
    return times


def bench_method(name: str, workdir: Path, args) -> dict:
    from gaze4hri_bench.specs import SPECS
    from gaze4hri_bench.zoo import export as ex
    from gaze4hri_bench.zoo.manage import export_random

    spec = SPECS[name]
    t0 = time.perf_counter()
    rec = export_random(name, workdir, seed=0, quiet=True)
    total = time.perf_counter() - t0
    path = workdir / rec["onnx"]
    sess = ex.ort_session(path, threads=args.threads)
    row = {"method": name, "onnx_mb": path.stat().st_size / 1e6, "export_verify_s": total,
           "export_s": rec["seconds"]["export_s"], "verify_s": rec["seconds"]["verify_s"],
           "parity": rec["parity"]["max_abs_diff"], "clip_len": spec.clip_len}
    for batch in (1, args.batch if spec.clip_len == 1 else args.clip_batch):
        feeds = {n: x.numpy() for n, x in zip(spec.onnx_inputs, ex.example_inputs(spec, batch, seed=1), strict=True)}
        times = time_runs(lambda f=feeds: sess.run(None, f), warmup=1 if batch > 1 else 2,
                          repeats=args.repeats if batch == 1 else max(3, args.repeats // 4), budget_s=args.budget)
        med = statistics.median(times)
        frames = batch * spec.clip_len
        row[f"b{batch}_ms"] = med * 1e3
        row[f"b{batch}_fps"] = frames / med
        row[f"b{batch}_n"] = len(times)
        if batch > 1:
            row["big_batch"] = batch
    return row


def render(rows: list[dict], args, env: dict) -> str:
    lines = [
        "# Model zoo: export time and ONNX Runtime speed on CPU",
        "",
        f"Measured {env['date']} by `benchmarks/zoo_perf.py` ({' '.join(env['argv'])}).",
        f"Machine: {env['cpu']}, {env['cores']} logical cores; ONNX Runtime {env['ort']} CPUExecutionProvider "
        f"({'default' if not args.threads else args.threads} intra-op threads), torch {env['torch']}, "
        f"Python {env['python']}.",
        f"Load average during the run: {env['load_before']} before, {env['load_after']} after "
        "(shared machine: other jobs ran at the same time, so the figures are upper bounds).",
        "Random weights (identical graph to an imported checkpoint); inputs are random tensors of the spec's shape.",
        "",
        "## Export and verification (`models export --random-init`, same steps as `models import`)",
        "",
        "| Method | ONNX size (MB) | build + export (s) | contract + parity (s) | total (s) | parity max abs diff |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| `{r['method']}` | {r['onnx_mb']:.1f} | {r['export_s']:.1f} | {r['verify_s']:.1f} | "
            f"{r['export_verify_s']:.1f} | {r['parity']:.2g} |"
        )
    lines += [
        "",
        "Total includes building the network with random weights and BatchNorm calibration; "
        "an import instead loads and maps the checkpoint (about a second).",
        "",
        "## ONNX Runtime inference",
        "",
        "Median wall time of `session.run` (n runs after warm-up). Per frame = per sample for single-image methods; "
        "for clip methods one run predicts every frame of the clip.",
        "",
        "| Method | batch 1: latency (ms) | batch 1: frames/s | large batch "
        "| large batch: ms per run | large batch: frames/s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        b = r["big_batch"]
        unit = "clips" if r["clip_len"] > 1 else "images"
        lines.append(
            f"| `{r['method']}` | {r['b1_ms']:.1f} (n={r['b1_n']}) | {r['b1_fps']:.1f} | {b} {unit} | "
            f"{r[f'b{b}_ms']:.0f} (n={r[f'b{b}_n']}) | {r[f'b{b}_fps']:.1f} |"
        )
    lines += [
        "",
        "Requirement (issue 5): export + verification of each method under 2 minutes on this CPU: "
        + (
            "met"
            if all(r["export_verify_s"] < 120 for r in rows)
            else "NOT met for " + ", ".join(r["method"] for r in rows if r["export_verify_s"] >= 120)
        )
        + ".",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--methods", nargs="+", default=DEFAULT_METHODS, help="method names, or 'all' (default: %(default)s)"
    )
    p.add_argument("--batch", type=int, default=32, help="large batch for single-image methods (default 32)")
    p.add_argument("--clip-batch", type=int, default=4, help="large batch for clip methods (default 4)")
    p.add_argument("--repeats", type=int, default=20, help="timed runs at batch 1 (default 20)")
    p.add_argument("--budget", type=float, default=60.0, help="max seconds of timed runs per setting (default 60)")
    p.add_argument("--threads", type=int, default=0, help="ONNX Runtime intra-op threads (0: its default)")
    p.add_argument("--out", type=Path, help="write the Markdown report here (default: print)")
    args = p.parse_args(argv)

    import onnxruntime
    import torch
    from gaze4hri_bench.specs import SPECS
    from gaze4hri_bench.zoo import families

    methods = list(SPECS) if args.methods == ["all"] else args.methods
    methods = [m for m in methods if families.family_status(SPECS[m].family) == "ok"]
    env = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "argv": ["benchmarks/zoo_perf.py", *(argv or sys.argv[1:])],
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "ort": onnxruntime.__version__,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "load_before": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for m in methods:
            print(f"{m} ...", file=sys.stderr, flush=True)
            rows.append(bench_method(m, Path(d), args))
            print(f"  {rows[-1]}", file=sys.stderr, flush=True)
            (Path(d) / rows[-1]["method"]).with_suffix(".onnx").unlink(missing_ok=True)
    env["load_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    text = render(rows, args, env)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
