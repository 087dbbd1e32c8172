"""Table S10 on a GPU: the study's speed and memory per model (RTX A4000, batch 1, 1000
runs: peak VRAM MB, ms per run, FPS; ../shared/reference/gaze4hri.md "Reference
figures") beside ours on this machine's GPU: ONNX Runtime (CUDA or TensorRT execution
provider, I/O binding, warm-up excluded) at batch 1, and our batched throughput at
``--batch auto`` in FP32 and FP16 (with the FP16 parity check's largest gaze difference).

Models: ``<models-dir>/<method>.onnx`` where imported (labelled with the manifest's
random_init flag), else a random-weight export made here (``models export --random-init``
graph, needs torch; the timings hold for real weights, the FP16 parity figure does not).
Without a CUDA execution provider it writes every row as "not measured (no GPU: <why>)"
and exits 0 (a file that already holds measured figures is kept). The report is
rewritten after each method, so a run cut by ``timeout`` keeps the methods it finished.

    timeout 300 .venv/bin/python benchmarks/gpu_table_s10.py --out docs/perf/gpu.md
    .venv/bin/python benchmarks/gpu_table_s10.py --methods gazetr_eth --runs 200     # quick look, printed
"""
from __future__ import annotations

import argparse
import datetime as dt
import gc
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _machine import cpu_name  # benchmarks/_machine.py (this script's folder is on sys.path)

#: Table S10 (Sezer et al., supplementary; RTX A4000, 1000 runs): peak VRAM MB, ms, FPS
STUDY = {
    "puregaze_eth": ("PureGaze", 142.25, 1.93, 518),
    "gazetr_eth": ("GazeTR", 65.81, 1.84, 543),
    "l2cs_gaze360": ("L2CS-Net", 111.94, 1.92, 521),
    "mcgaze_gaze360": ("MCGaze", 1136.49, 51.09, 19.6),
    "gat_gaze360": ("GaT", 271.11, 14.80, 67.6),
}
MARK = "<!-- gpu_table_s10: measured -->"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def gpu_reason(device: str) -> tuple[str, str] | None:
    """None when ``device`` can run here, else why not: (short, full line)."""
    import onnxruntime as ort
    from gaze4hri_bench.pipeline.runtime import choose_providers
    from gaze4hri_core.errors import Gaze4HRIError

    try:
        choose_providers(device)
    except Gaze4HRIError as e:
        return e.what, f"{e.line()}; onnxruntime {ort.__version__}"
    return None


def model_for(name: str, models_dir: Path | None, work: Path) -> tuple[Path, str]:
    """The method's ONNX file and its label: imported weights, or a random-weight export here."""
    from gaze4hri_bench.pipeline.runtime import MissingWeightsError, resolve_model
    from gaze4hri_bench.specs import SPECS

    try:
        mf = resolve_model(SPECS[name], models_dir, check_hash=False)
        return mf.path, "random-init (manifest)" if mf.random_init else "imported weights"
    except MissingWeightsError:
        pass
    from gaze4hri_bench.zoo.manage import export_random

    t0 = time.perf_counter()
    rec = export_random(name, work, seed=0, quiet=True)
    log(f"  exported {name} with random weights in {time.perf_counter() - t0:.0f} s")
    return work / rec["onnx"], "random-init export (seed 0)"


def timed(fn, runs: int, budget_s: float) -> list[float]:
    """Wall seconds of up to ``runs`` calls, stopping past ``budget_s`` (at least 3)."""
    out, end = [], time.perf_counter() + budget_s
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
        if time.perf_counter() > end and len(out) >= 3:
            break
    return out


def measure(name: str, path: Path, args) -> dict:
    from gaze4hri_bench.pipeline.runtime import AUTO, Runner, gpu_memory_mb, probe_inputs
    from gaze4hri_bench.specs import SPECS
    from gaze4hri_core.errors import Gaze4HRIError

    spec = SPECS[name]
    row: dict = {"clip_len": spec.clip_len}
    gc.collect()
    before = gpu_memory_mb()
    r = Runner(path, spec, args.device, batch=1, io_binding=True, log=log)
    x1 = probe_inputs(spec, 1, seed=2)
    t = timed(lambda r=r, x1=x1: r.run(*x1), args.runs, args.budget)
    after = gpu_memory_mb()
    row.update(b1_ms=1e3 * statistics.fmean(t), b1_median_ms=1e3 * statistics.median(t), b1_n=len(t),
               warmup_s=r.warmup_s, provider=r.provider)
    row["b1_fps"] = 1e3 / row["b1_ms"]
    if before and after:
        row["mem_mb"], row["mem_scope"] = after["used"] - before["used"], after["scope"]
    log(f"  batch 1: {row['b1_ms']:.2f} ms mean ({row['b1_n']} runs), {row['b1_fps']:.0f} runs/s, "
        f"memory {row.get('mem_mb', float('nan')):.0f} MB ({row.get('mem_scope', 'n/a')})")
    del r
    gc.collect()
    for key, fp16 in (("fp32", False), ("fp16", True)):
        if fp16 and args.no_fp16:
            break
        try:
            # FP16 measured whatever its parity (limit off here); the table marks a figure a run would refuse
            rb = Runner(path, spec, args.device, batch=row.get("batch", AUTO), io_binding=True, fp16=fp16, log=log,
                        fp16_max_deg=float("inf") if fp16 else None)
        except Gaze4HRIError as e:
            row[f"{key}_refused"] = e.line()
            log(f"  {key}: {e.line()}")
            continue
        xb = probe_inputs(spec, rb.batch, seed=3)
        tb = timed(lambda rb=rb, xb=xb: rb.run(*xb), args.batched_runs, args.batched_budget)
        row.setdefault("batch", rb.batch)
        row.setdefault("batch_note", rb.batch_note)
        row[f"{key}_sps"] = rb.batch / statistics.fmean(tb)
        row[f"{key}_n"] = len(tb)
        if fp16:
            row["fp16_deg"] = rb.fp16_deviation_deg
        log(f"  batch {rb.batch} {key}: {row[f'{key}_sps']:.0f} samples/s ({len(tb)} runs)")
        del rb
        gc.collect()
    return row


def _f(v, fmt: str) -> str:
    return "-" if v is None else format(v, fmt)


def render(rows: dict[str, dict], env: dict, reason: tuple[str, str] | None) -> str:
    from gaze4hri_bench.pipeline.runtime import FP16_MAX_DEG

    out = ["# GPU: Table S10 beside our ONNX Runtime path", ""]
    if reason:
        out += [f"Written {env['date']} by `{' '.join(env['argv'])}`.", "",
                f"**Not measured: no GPU** ({reason[1]}). Every row below says so; run "
                "`timeout 300 .venv/bin/python benchmarks/gpu_table_s10.py --out docs/perf/gpu.md` on a machine with "
                "onnxruntime-gpu and a GPU to fill it.", ""]
    else:
        out += [MARK, "", f"Measured {env['date']} by `{' '.join(env['argv'])}`.",
                f"Device: **{env['gpu']}** ({env['gpu_total']:.0f} MB), ONNX Runtime {env['ort']} `{env['provider']}`, "
                f"CPU {env['cpu']}, Python {env['python']}.", ""]
    out += [
        "Study: Table S10 (RTX A4000, PyTorch, batch 1, 1000 runs): peak VRAM, ms per run, FPS = runs per second "
        "(a run is one image, or one clip for MCGaze (7 frames) and GaT (8 frames)).",
        "Ours, batch 1: the same per-run figure for `Runner.run` (host-to-device copy of the input, the network, one "
        "copy of the output back; I/O binding; the warm-up run at session creation excluded), mean of up to "
        f"{env['runs']} runs or {env['budget']:g} s. Memory: device memory the session added (nvidia-smi, "
        "this process, or the whole GPU where nvidia-smi does not list it; CUDA arena grows by what is asked), "
        "not PyTorch's allocator peak, so compare orders of magnitude only.",
        "Ours, batched: `--batch auto` (sized to free memory after probe runs, capped at 256 images / 32 clips), "
        "samples (images or clips) per second, FP32 and FP16 (the cached FP16 copy; its parity figure is the largest "
        f"gaze difference to FP32 on 4 probe samples, which `run --fp16` refuses above {FP16_MAX_DEG:g} deg; measured "
        "here either way).",
        "",
        "| method | model | study VRAM (MB) | study ms | study FPS | ours VRAM (MB) | ours ms (batch 1) | ours FPS "
        "(batch 1) | batch | FP32 samples/s | FP16 samples/s | FP16 max diff (deg) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, (label, vram, ms, fps) in STUDY.items():
        r = rows.get(name)
        head = f"| {label} (`{name}`) | {r.get('model', '-') if r else '-'} | {vram:.2f} | {ms:.2f} | {fps:g} |"
        if r is None or "skipped" in r:
            why = (r or {}).get("skipped") or (f"no GPU: {reason[0]}" if reason else "not run")
            out.append(f"{head} not measured ({why}) | - | - | - | - | - | - |")
            continue
        fp16 = "failed" if r.get("fp16_refused") else _f(r.get("fp16_sps"), ".0f")
        deg = _f(r.get("fp16_deg"), ".4f")
        if r.get("fp16_deg") is not None and not r["fp16_deg"] <= FP16_MAX_DEG:
            deg = f"**{deg}** (over {FP16_MAX_DEG:g}: `--fp16` refuses it)"
        out.append(
            f"{head} {_f(r.get('mem_mb'), '.0f')} | {r['b1_ms']:.2f} | {r['b1_fps']:.0f} | {r.get('batch', '-')} | "
            f"{_f(r.get('fp32_sps'), '.0f')} | {fp16} | {deg} |"
        )
    notes = [
        f"- `{n}`: {r['batch_note']}" + (f"; FP16: {r['fp16_refused']}" if r.get("fp16_refused") else "")
        for n, r in rows.items()
        if r.get("batch_note")
    ]
    if notes:
        out += ["", "Batch sizing and refusals:", "", *notes]
    return "\n".join(out) + "\n"


def write(text: str, out: Path | None) -> None:
    if out is None:
        print(text)
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--methods",
        nargs="+",
        default=list(STUDY),
        choices=list(STUDY),
        metavar="NAME",
        help="Table S10's models (default: all five)",
    )
    p.add_argument("--device", choices=("cuda", "tensorrt"), default="cuda", help="execution provider (default cuda)")
    p.add_argument(
        "--models-dir",
        type=Path,
        default=None,
        help="imported models (default $GAZE4HRI_MODELS / models/); missing ones are exported here with random weights",
    )
    p.add_argument("--runs", type=int, default=1000, help="batch-1 runs per method (study: 1000; default %(default)s)")
    p.add_argument(
        "--budget", type=float, default=15.0, help="max seconds of batch-1 runs per method (default %(default)s)"
    )
    p.add_argument(
        "--batched-runs", type=int, default=50, help="batched runs per method and precision (default %(default)s)"
    )
    p.add_argument("--batched-budget", type=float, default=5.0, help="max seconds of them (default %(default)s)")
    p.add_argument(
        "--deadline",
        type=float,
        default=270.0,
        help="seconds after which the remaining methods are left 'not measured (time)' (default %(default)s)",
    )
    p.add_argument("--no-fp16", action="store_true", help="skip the FP16 rows")
    p.add_argument("--out", type=Path, help="write the Markdown report here (default: print it)")
    args = p.parse_args(argv)

    t_start = time.perf_counter()
    reason = gpu_reason(args.device)
    argv_s = ["benchmarks/gpu_table_s10.py", *(argv if argv is not None else sys.argv[1:])]
    date = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    if reason:
        if args.out and args.out.is_file() and MARK in args.out.read_text():
            print(f"not measured: no GPU ({reason[1]}); {args.out} keeps its measured figures")
            return 0
        write(render({}, {"runs": args.runs, "budget": args.budget, "date": date, "argv": argv_s}, reason), args.out)
        print(
            f"not measured: no GPU ({reason[1]})" + (f"; wrote {args.out} with 'not measured' rows" if args.out else "")
        )
        return 0

    import onnxruntime
    from gaze4hri_bench.pipeline.runtime import gpu_memory_mb

    g = gpu_memory_mb() or {"name": "unknown GPU (no nvidia-smi)", "total": float("nan")}
    env = {
        "date": date,
        "argv": argv_s,
        "gpu": g["name"],
        "gpu_total": g["total"],
        "ort": onnxruntime.__version__,
        "cpu": cpu_name(),
        "python": platform.python_version(),
        "runs": args.runs,
        "budget": args.budget,
        "provider": "?",
    }
    log(f"{env['gpu']}, onnxruntime {env['ort']}, --device {args.device}")
    rows: dict[str, dict] = {}
    with tempfile.TemporaryDirectory(prefix="gpu_s10_") as d:
        # the CUDA context first (a tiny model's session, kept open), so that each method's
        # memory figure is what its own session adds, not the context's few hundred MB
        from gaze4hri_bench.methods.testing import TINY_SPEC, build_gradient_onnx
        from gaze4hri_bench.pipeline.runtime import Runner

        context = Runner(build_gradient_onnx(TINY_SPEC, Path(d) / "context.onnx"), TINY_SPEC, args.device, batch=1)
        for name in args.methods:
            if time.perf_counter() - t_start > args.deadline:
                rows[name] = {"skipped": f"time: past --deadline {args.deadline:g} s"}
                continue
            log(f"{name} ...")
            path, label = model_for(name, args.models_dir, Path(d))
            try:
                row = measure(name, path, args)
            except Exception as e:  # noqa: BLE001 - one method's failure is its row, the others still run
                row = {"skipped": f"failed: {type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"}
                log(f"  {row['skipped']}")
            row["model"] = label
            env["provider"] = row.get("provider", env["provider"])
            rows[name] = row
            if label.startswith("random-init export"):  # its export, FP16 copy and TensorRT engines: disk back
                for f in Path(d).glob(f"{name}*"):
                    shutil.rmtree(f) if f.is_dir() else f.unlink(missing_ok=True)
            write(render(rows, env, None), args.out)
        del context
    log(f"done in {time.perf_counter() - t_start:.0f} s" + (f"; wrote {args.out}" if args.out else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
