#!/usr/bin/env python3
"""The benchmark pipeline against ONNX Runtime alone, side by side (issue 22, item 2).

Per method: `gaze4hri-bench run`'s pipeline (listing with the bags' CRC check, decode,
ground truth, faces, pre-process, inference, writing) in frames per second, and a plain
ONNX Runtime session of the same ONNX file (the pipeline's session options, CPU, the same
intra-op threads: `--threads`, default ONNX Runtime's one per core) running as many
samples at the same batch size on a pre-built input; the ratio pipeline / ORT is the
pipeline's share of the network's speed (goal >= 0.9 for single-frame methods), by wall
time and by CPU time of the process (all threads). Order per method: the data side alone
(producer_alone: where the CPU gap goes), then ORT, pipeline, ORT, pipeline, ORT, ...;
each pipeline run is compared with the mean of the ORT runs just before and after it,
so that a load that drifts during a pair hits both sides alike (the machine is shared);
the 1-minute load average is printed with each pair, and `idle_core_s`: the core-seconds
the pipeline left unused during its run (process CPU sampled every 50 ms). Under heavy load ONNX Runtime's
spinning worker threads burn CPU while they wait for a core, so neither ratio is clean
then: rerun, and read the load column.

Data: the demo sessions (out/demo/sessions, `gaze4hri-bench demo`), one subject; when
they are missing a small session is simulated (gaze4hri_acq.simulate.run_sim_session).
Models: random-weight exports from the model zoo (same graphs as imported checkpoints;
`gaze4hri-bench models export METHOD --random-init`). Session creation and one warm-up
batch are excluded from both timings (the pipeline gets a warmed Runner).

    .venv/bin/python benchmarks/pipeline_vs_ort.py                       # GazeTR + PureGaze (ETH), rectified, batch 32
    .venv/bin/python benchmarks/pipeline_vs_ort.py --methods gazetr_eth --trials illum100_P5 arc_P5 --repeats 1
    .venv/bin/python benchmarks/pipeline_vs_ort.py --blinks auto --fresh-faces    # the default run, face pass included
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

from _machine import cpu_name  # benchmarks/_machine.py (this script's folder is on sys.path)

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "out" / "demo" / "sessions"


def _data(args, tmp: Path) -> Path:
    if args.data is not None:
        return args.data
    if (DEMO / args.subject / "session.yaml").is_file():
        return DEMO
    from gaze4hri_acq.simulate import run_sim_session

    print(f"no demo sessions under {DEMO}: simulating {args.subject} (3 trials of 2 s at 640x360)", file=sys.stderr)
    run_sim_session(tmp / "sessions", args.subject, ["illum100_P5", "arc_P5", "mutual_h_fast"], (640, 360), 2.0, seed=1)
    return tmp / "sessions"


def _models(args, tmp: Path) -> Path:
    if args.models_dir is not None:
        return args.models_dir
    from gaze4hri_bench.zoo.manage import export_random

    d = tmp / "models"
    for m in args.methods:
        export_random(m, d, seed=0, quiet=True)
    return d


def sample_inputs(spec, batch: int) -> dict:
    """One random batch for every ONNX input of ``spec``: B = ``batch``; H and W (MCGaze's
    frame-sized clip) = the spec's input size; a ``frame_hw`` input holds a 640x360 frame's size."""
    import numpy as np

    rng = np.random.default_rng(0)
    out = {}
    for name, dims in spec.onnx_inputs.items():
        shape = tuple(batch if d == "B" else spec.size if d in ("H", "W") else d for d in dims)
        out[name] = (np.broadcast_to(np.float32([360, 640]), shape).copy() if name == "frame_hw"
                     else rng.random(shape, dtype=np.float32))
    return out


def ort_alone(path: Path, spec, batch: int, n: int, threads: int | None, streams: int = 1) -> tuple[float, float]:
    """Frames per wall second and per CPU second of a plain ONNX Runtime CPU session on
    ``n`` samples at ``batch``, ``threads`` intra-op threads, called from ``streams``
    threads at once (ONNX Runtime sessions take concurrent runs)."""
    from concurrent.futures import ThreadPoolExecutor

    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    if threads:
        so.intra_op_num_threads = threads
    s = ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])
    xs = sample_inputs(spec, batch)
    s.run(None, xs)  # warm-up
    c0, t0 = _cpu(), time.perf_counter()
    with ThreadPoolExecutor(streams) as ex:
        list(ex.map(lambda i: s.run(None, {k: v[: min(batch, n - i)] for k, v in xs.items()}), range(0, n, batch)))
    return n / (time.perf_counter() - t0), n / (_cpu() - c0)


def ort_best(
    path: Path, spec, batch: int, n: int, threads: int | None, plan: tuple[int, int | None]
) -> tuple[float, float, dict]:
    """ONNX Runtime alone at its best: one caller with ``threads`` (default: ONNX Runtime's
    one per core) and, when the pipeline runs several streams, the pipeline's plan
    (streams callers x threads each); the faster one, and both figures."""
    got = {"1 caller": ort_alone(path, spec, batch, n, threads)}
    if plan[0] > 1:
        got[f"{plan[0]} callers x {plan[1]} thread(s)"] = ort_alone(path, spec, batch, n, plan[1], plan[0])
    best = max(got.values(), key=lambda v: v[0])
    return best[0], best[1], {k: round(v[0], 2) for k, v in got.items()}


class _IdleMeter:
    """Core-seconds this process left unused while the block ran: its CPU time (all
    threads) sampled every 50 ms, and per sample max(0, cores - cores used) x its length
    (where the pipeline starves its own inference streams: start, trial ends, last batch)."""

    def __init__(self, period_s: float = 0.05):
        self.period_s, self.core_s = period_s, 0.0
        self._stop = None

    def _sample(self) -> None:
        cores = os.cpu_count() or 1
        t, c = time.perf_counter(), _cpu()
        while not self._stop.wait(self.period_s):
            t1, c1 = time.perf_counter(), _cpu()
            self.core_s += max(0.0, cores * (t1 - t) - (c1 - c))
            t, c = t1, c1

    def __enter__(self):
        import threading

        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="idle-meter", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _cpu() -> float:
    """CPU seconds of this process, every thread (user + system)."""
    t = os.times()
    return t.user + t.system


def pipeline(args, m: str, data: Path, models: Path, out: Path, face_cache: Path | None) -> tuple[float, dict]:
    """Frames/s of `run` (one method, one input) over the selected trials, and its timing."""
    from gaze4hri_bench.pipeline import run as _run
    from gaze4hri_bench.pipeline.results import read_metadata
    from gaze4hri_bench.pipeline.run import RunConfig, plan_jobs
    from gaze4hri_bench.pipeline.runtime import Runner

    shutil.rmtree(out, ignore_errors=True)
    if face_cache is not None:
        shutil.copytree(face_cache, out / ".cache")
    cfg = RunConfig(
        methods=(m,),
        data=data,
        out=out,
        input=args.input,
        blinks=args.blinks,
        batch=args.batch,
        device="cpu",
        models_dir=models,
        threads=args.threads,
        streams=args.streams,
        progress=False,
        subjects=(args.subject,),
        trials=tuple(args.trials) if args.trials else None,
        command_line="benchmarks/pipeline_vs_ort.py",
    )
    jobs = plan_jobs(cfg)
    j = jobs[0]
    runner = Runner(j.model.path, j.spec, "cpu", args.batch, args.threads, streams=args.streams)
    runner.run(*sample_inputs(j.spec, args.batch).values())  # warm-up, as for ORT alone
    said: list[str] = []
    idle = _IdleMeter()
    c0, t0 = _cpu(), time.perf_counter()
    with idle:
        (path,) = _run.run_benchmark(cfg, log=said.append, jobs=jobs, runners={j.key: runner})
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    t = read_metadata(path)["timing"]
    return t["frames"] / wall, {
        "cpu_fps": t["frames"] / cpu,
        **{k: t[k] for k in t if k.endswith("_s")},
        "frames": t["frames"],
        "samples": network_samples(j, path),
        "wall": wall,
        "idle_core_s": idle.core_s,
        "lines": [ln for ln in said if ln.startswith("timing:")],
    }


def network_samples(job, results: Path) -> int:
    """How many network inputs the run gave its model: one per frame, except under a sliding
    clip window (MCGaze: a 7-frame clip every 4 frames, each read at every position), where
    it is the number of windows per trial (methods/clips.SlidingWindow.starts). ORT alone runs
    as many, so both sides do the same network work."""
    import pandas as pd
    from gaze4hri_bench.methods.clips import SlidingWindow, policy_for

    frames = pd.read_parquet(results, columns=["subject", "trial"]).groupby(["subject", "trial"]).size()
    pol = policy_for(job.spec, job.record)
    if not isinstance(pol, SlidingWindow):
        return int(frames.sum())
    return sum(len(pol.starts(int(n))) for n in frames)


def producer_alone(args, m: str, data: Path, models: Path, out: Path, face_cache: Path | None) -> dict:
    """The pipeline's data side without inference, for where the gap goes: CPU seconds of
    listing the trials (manifests, every bag's CRC check: data.backends.session.bag_damage)
    and of the producer (engine.Engine's prefetch-thread generator: bag reads, ground truth,
    faces, pre-processing of every sample) run alone in this thread, with its stage times
    (wall; alone, so close to CPU on an idle machine)."""
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.faces.blinks import blink_source
    from gaze4hri_bench.pipeline.engine import Engine as _Engine
    from gaze4hri_bench.pipeline.face_pass import FaceModels
    from gaze4hri_bench.pipeline.run import RunConfig, plan_jobs

    shutil.rmtree(out, ignore_errors=True)
    if face_cache is not None:
        shutil.copytree(face_cache, out / ".cache")
    cfg = RunConfig(
        methods=(m,),
        data=data,
        out=out,
        input=args.input,
        blinks=args.blinks,
        batch=args.batch,
        device="cpu",
        models_dir=models,
        progress=False,
        subjects=(args.subject,),
        trials=tuple(args.trials) if args.trials else None,
    )
    src = blink_source(cfg.blinks)
    c0 = _cpu()  # the listing checks bags on several threads: the process's CPU (nothing else runs yet)
    ds = Dataset(
        cfg.data,
        subjects=[args.subject],
        trials=list(cfg.trials) if cfg.trials else None,
        blink_annotations=src.annotations,
        sim_blinks=src.sim,
    )
    trefs = [t for t in ds.trials() if getattr(t, "status", "done") in ("done", "incomplete")]
    list_cpu = _cpu() - c0
    c1 = time.thread_time()
    models_ = FaceModels(cfg.detector)
    try:
        eng = _Engine(plan_jobs(cfg), [{(t.subject, t.trial) for t in trefs}], cfg, ds, models_, lambda *a: None)
        stages = {"decode_s": 0.0, "gt_s": 0.0, "detect_s": 0.0, "preprocess_s": 0.0}
        frames = 0
        for kind, _ji, tr, _item in eng._produce(trefs):
            if kind == "end":
                frames += tr.times.frames
                for k in ("decode_s", "gt_s", "detect_s"):
                    stages[k] += getattr(tr.times, k)
                stages["preprocess_s"] += sum(j.preprocess_s for j in tr.jobs.values())
    finally:
        models_.close()
    c2 = time.thread_time()
    return {
        "list_cpu_s": list_cpu,
        "producer_cpu_s": c2 - c1,
        **{k: round(v, 2) for k, v in stages.items()},
        "frames": frames,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", nargs="+", default=["gazetr_eth", "puregaze_eth"])
    ap.add_argument("--data", type=Path, default=None, help=f"sessions folder (default: {DEMO}, else a simulated one)")
    ap.add_argument("--subject", default="S01")
    ap.add_argument("--trials", nargs="*", default=None, help="only these trials (default: all of the subject)")
    ap.add_argument("--input", default="rectified", choices=("rectified", "crop"))
    ap.add_argument(
        "--blinks", default="off", help="run's --blinks (default off; 'auto' reuses a face cache built first)"
    )
    ap.add_argument(
        "--fresh-faces",
        action="store_true",
        help="with --blinks: every pipeline run builds its own face table (a first run on new recordings: the face "
        "pass is part of the pipeline's time) instead of reading one built before",
    )
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=None, help="ONNX Runtime intra-op threads (default: all cores)")
    ap.add_argument(
        "--streams",
        type=int,
        default=None,
        help="the pipeline's --streams (default auto: runtime.resolve_streams); ORT alone is measured both "
        "as one caller and with the pipeline's streams x threads, and the faster counts",
    )
    ap.add_argument("--repeats", type=int, default=2, help="ORT/pipeline pairs per method (median reported)")
    ap.add_argument("--models-dir", type=Path, default=None, help="default: fresh random-init zoo exports")
    ap.add_argument("--md", type=Path, default=None, help="also write the Markdown table here")
    ap.add_argument(
        "--no-breakdown",
        dest="breakdown",
        action="store_false",
        help="skip the data side alone (producer_alone: where the CPU gap goes)",
    )
    args = ap.parse_args()
    import onnxruntime
    from gaze4hri_bench.methods import get_method
    from gaze4hri_bench.methods.clips import SlidingWindow, policy_for
    from gaze4hri_bench.pipeline.runtime import resolve_streams

    plan = resolve_streams(args.streams, True, args.threads)  # what the pipeline's Runner will choose

    for m in args.methods:  # ORT alone needs the input size the pipeline feeds
        if args.input != "crop" and any(d in ("H", "W") for dims in get_method(m).spec.onnx_inputs.values()
                                        for d in dims):
            sys.exit(f"pipeline_vs_ort: error: {m} takes frame-sized clips whose size the crop rule sets: "
                     "pass --input crop")
    tmp = Path(tempfile.mkdtemp(prefix="g4h_pvo_"))
    rows = []

    try:
        data = _data(args, tmp)
        models = _models(args, tmp)
        cache = None
        if args.blinks != "off" and not args.fresh_faces:  # the face pass once, then read from its cache
            _fps, _t = pipeline(args, args.methods[0], data, models, tmp / "warm", None)
            cache = tmp / "warm" / ".cache"
        for m in args.methods:
            spec = get_method(m).spec
            side = producer_alone(args, m, data, models, tmp / f"alone_{m}", cache) if args.breakdown else None
            if side is not None:
                print(
                    json.dumps(
                        {
                            "method": m,
                            "data side alone": {k: round(v, 2) for k, v in side.items()},
                            "load1": round(os.getloadavg()[0], 2),
                        }
                    ),
                    file=sys.stderr,
                )
            pairs = []
            path = models / spec.weights_file
            # a sliding clip window runs fewer network inputs than frames: its ORT runs follow the pipeline's count
            sliding = isinstance(policy_for(spec), SlidingWindow)
            before = (ort_best(path, spec, args.batch, side["frames"], args.threads, plan)
                      if side is not None and not sliding else None)
            for r in range(args.repeats):
                fps_p, t = pipeline(args, m, data, models, tmp / f"out_{m}_{r}", cache)
                # ORT alone runs as many network inputs as the pipeline did (a clip per window), and
                # its rate is counted in the pipeline's frames, so the ratio compares the same work
                after = ort_best(path, spec, args.batch, t["samples"], args.threads, plan)
                scale = t["frames"] / t["samples"]
                after = (after[0] * scale, after[1] * scale, {k: round(v * scale, 2) for k, v in after[2].items()})
                # bracketed: the pipeline against the mean of the ORT runs just before and after it
                # (a load that drifts during the pair then hits both sides alike)
                fps_o, cpu_o = (
                    [statistics.mean(v) for v in zip(before[:2], after[:2], strict=True)] if before else after[:2]
                )
                t["ort_fps_each"] = [before[2]] if before else []
                t["ort_fps_each"].append(after[2])
                before = after
                load = os.getloadavg()[0]
                t["cpu_ratio"] = t["cpu_fps"] / cpu_o
                t["cpu"] = {"pipeline": t["frames"] / t["cpu_fps"], "ort": t["frames"] / cpu_o}
                pairs.append((fps_p, fps_o, load, t))
                print(
                    json.dumps(
                        {
                            "method": m,
                            "repeat": r,
                            "pipeline_fps": round(fps_p, 2),
                            "ort_fps": round(fps_o, 2),
                            "ort_fps_before_after": t["ort_fps_each"],
                            "ratio": round(fps_p / fps_o, 3),
                            "cpu_ratio": round(t["cpu_ratio"], 3),
                            "load1": round(load, 2),
                            **{k: round(v, 2) for k, v in t.items() if k.endswith("_s")},
                        }
                    ),
                    file=sys.stderr,
                )
                for ln in t["lines"]:
                    print("  " + ln, file=sys.stderr)
            ratios = [p / o for p, o, _, _ in pairs]
            t = pairs[-1][3]
            rows.append(
                {
                    "method": m,
                    "frames": t["frames"],
                    "pipeline": statistics.median(p for p, _, _, _ in pairs),
                    "ort": statistics.median(o for _, o, _, _ in pairs),
                    "ratio": statistics.median(ratios),
                    "ratios": ratios,
                    "load": [round(x[2], 1) for x in pairs],
                    "cpu_ratio": statistics.median(x[3]["cpu_ratio"] for x in pairs),
                    "stages": {k: round(v, 1) for k, v in t.items()
                               if k.endswith("_s") and k not in ("wall_s", "idle_core_s")},
                    "cpu": t["cpu"],
                    "side": side,
                }
            )
        head = (
            f"{cpu_name()}, {os.cpu_count()} cores; onnxruntime {onnxruntime.__version__} (CPU); {args.input} input, "
            f"batch {args.batch}; pipeline: {plan[0]} stream(s) x {plan[1] or 'default (one per core)'} "
            "intra-op thread(s); "
            f"ORT alone: the faster of one caller with {args.threads or 'default (one per core)'} threads"
            + (f" and {plan[0]} callers x {plan[1]} thread(s) (the pipeline's plan)" if plan[0] > 1 else "")
            + f"; blinks {args.blinks}{' (face pass in each run)' if args.fresh_faces else ''}, "
            + f"subject {args.subject} of {data}"
        )
        cols = (
            "| method | frames | pipeline frames/s | ORT alone frames/s | ratio (median; each pair) | CPU-time ratio "
            "| load avg (1 min) | last pipeline's stages (s) |"
        )
        md = [head, "", cols, "|---|---:|---:|---:|---|---:|---|---|"]
        for r in rows:
            md.append(
                f"| {r['method']} | {r['frames']} | {r['pipeline']:.1f} | {r['ort']:.1f} | {r['ratio']:.2f} "
                f"({', '.join(f'{x:.2f}' for x in r['ratios'])}) | {r['cpu_ratio']:.2f} "
                f"| {', '.join(map(str, r['load']))} | "
                + ", ".join(f"{k[:-2]} {v}" for k, v in r["stages"].items())
                + " |"
            )
        if any(r["side"] for r in rows):
            md += [
                "",
                "Where the CPU goes (seconds of CPU time of this process, all threads; last pair; the data side "
                "measured alone, without inference):",
                "",
                "| method | pipeline | ORT alone | gap | listing (manifests, bag CRC check) | data side alone "
                "(decode, ground truth, faces, pre-process: wall when alone) | rest (main thread: batching, rows, "
                "part files; contention) |",
                "|---|---:|---:|---:|---:|---|---:|",
            ]
            for r in rows:
                if not r["side"]:
                    continue
                sd, c = r["side"], r["cpu"]
                gap = c["pipeline"] - c["ort"]
                md.append(
                    f"| {r['method']} | {c['pipeline']:.1f} | {c['ort']:.1f} | {gap:.1f} | {sd['list_cpu_s']:.2f} | "
                    f"{sd['producer_cpu_s']:.2f} ({sd['decode_s']:.2f}, {sd['gt_s']:.2f}, {sd['detect_s']:.2f}, "
                    f"{sd['preprocess_s']:.2f}) | {gap - sd['list_cpu_s'] - sd['producer_cpu_s']:.1f} |"
                )
        text = "\n".join(md) + "\n"
        print(text)
        if args.md:
            args.md.write_text(text)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
