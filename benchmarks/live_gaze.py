"""Live gaze node speed on this machine: end-to-end latency per frame (camera message
in -> gaze out) and sustained processing rate per method, at 640x360 and 1920x1080.

For each resolution a short simulated trial is recorded (``gaze4hri-acq session
--backend sim``, a fixed-camera trial), then its bag is streamed at its original
30 fps pace into the gaze node (gaze4hri_acq.nodes.gaze_node) through the one-process
runner's in-process bus (the path of ``gaze4hri-acq session``; under ``ros2 launch``
DDS transport comes on top). The node drops frames it cannot keep up with, so the
sustained rate is what it delivers, and latency is measured on the frames it processed.

Networks run with RANDOM weights of the real architectures (``models export
--random-init``: the same ONNX graphs as imported checkpoints, so the timings hold for
real weights) or the tiny test network; baselines need none. Writes a Markdown page.

    nice -n 10 .venv/bin/python benchmarks/live_gaze.py --out docs/perf/live_gaze.md
    .venv/bin/python benchmarks/live_gaze.py --methods straight tiny_test --resolutions 640x360 --seconds 2
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

os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF")

DEFAULT_METHODS = [
    "straight",
    "head_pose",
    "tiny_test",
    "gazetr_eth",
    "puregaze_eth",
    "l2cs_gaze360",
    "mcgaze_gaze360",
    "gat_gaze360",
]
TRIAL = "illum100_P5"


def models(methods: list[str], d: Path) -> dict[str, str]:
    """Random-weight exports of the networks (tiny_test: the gradient network); method -> weights note."""
    from gaze4hri_bench.methods import get_method
    from gaze4hri_bench.methods.testing import TINY_SPEC, build_gradient_onnx
    from gaze4hri_bench.zoo import store
    from gaze4hri_bench.zoo.manage import export_random

    notes = {}
    for m in methods:
        meth = get_method(m)
        if meth.kind != "onnx":
            notes[m] = "none (baseline)"
        elif m == "tiny_test":
            p = build_gradient_onnx(TINY_SPEC, d / TINY_SPEC.weights_file)
            store.write_record(
                d, m, {"method": m, "random_init": True, "onnx": p.name, "onnx_sha256": store.sha256_file(p)}
            )
            notes[m] = "tiny test network (not a gaze estimator)"
        else:
            export_random(m, d, seed=0, quiet=True)
            notes[m] = "RANDOM weights, real architecture"
    return notes


def stream(bag: Path, bus, seconds_cap: float) -> tuple[int, float]:
    """Deliver the bag's CDR messages to the bus at their original pace; (images, wall s)."""
    from gaze4hri_core.session import Topics
    from rosbags.rosbag2 import Reader

    n, t_first, wall0 = 0, None, time.monotonic()
    with Reader(bag) as r:
        for conn, t, raw in r.messages():
            if t_first is None:
                t_first = t
            if (t - t_first) / 1e9 > seconds_cap:
                break
            due = wall0 + (t - t_first) / 1e9
            dt_ = due - time.monotonic()
            if dt_ > 0:
                time.sleep(dt_)
            bus.deliver(conn.topic, bytes(raw))
            n += conn.topic == Topics.IMAGE
    return n, time.monotonic() - wall0


def run_one(session: Path, method: str, models_dir: Path, args) -> dict:
    import threading

    import rclpy
    from gaze4hri_acq.nodes._bus import IntraProcessBus
    from gaze4hri_acq.nodes.gaze_node import GazeNode
    from gaze4hri_core.session import bag_dir
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    ctx = Context()
    rclpy.init(context=ctx, args=[])
    bus = IntraProcessBus()
    node = GazeNode(
        "gaze",
        bus=bus,
        context=ctx,
        parameter_overrides={
            "method": method,
            "models_dir": str(models_dir),
            "device": args.device,
            "threads": args.threads,
            "calibration_dir": str(session / "calibration"),
            "subject": session.name,
            "head_pose": "auto",
        },
    )
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    th = threading.Thread(target=ex.spin, daemon=True)
    th.start()
    try:
        t0 = time.perf_counter()
        node.trigger_configure()
        if node.last_error:
            return {"method": method, "error": node.last_error}
        node.trigger_activate()
        setup = time.perf_counter() - t0
        frames, wall = stream(bag_dir(session, TRIAL), bus, args.seconds)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and node._slot is not None:
            time.sleep(0.01)
        time.sleep(min(5.0, 0.5 + 3 * (max(node.latencies_ms) / 1e3 if node.latencies_ms else 0)))
        s = node.stats()
        lat = sorted(node.latencies_ms)
        return {
            "method": method,
            "setup_s": setup,
            "frames_in": s["received"],
            "processed": s["processed"],
            "dropped": s["dropped"],
            "published": s["published"],
            "wall_s": wall,
            "rate_hz": s["processed"] / wall if wall else float("nan"),
            "lat_median_ms": s["latency_ms_median"],
            "lat_p95_ms": s["latency_ms_p95"],
            "lat_min_ms": lat[0] if lat else float("nan"),
            "head_ms": s["head_pose_ms_median"],
            "wait_ms": s["pose_wait_ms_median"],
            "estimate_ms": s["estimate_ms_median"],
            "head": ", ".join(
                f"{k[len('head_pose_') :]} {v}"
                for k, v in s.items()
                if k.startswith("head_pose_") and not k.endswith("_ms_median")
            ),
            "latencies": [round(x, 1) for x in node.latencies_ms],
        }
    finally:
        ex.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def render(rows: list[dict], notes: dict, args, env: dict) -> str:
    out = [
        "# Live gaze node: latency and sustained rate on CPU",
        "",
        f"Measured {env['date']} by `benchmarks/live_gaze.py` ({' '.join(env['argv'])}).",
        f"Machine: {env['cpu']}, {env['cores']} logical cores, no GPU; ONNX Runtime {env['ort']} on {args.device}; "
        f"Python {env['python']}.",
        f"Load average: {env['load_before']} before, {env['load_after']} after "
        "(shared machine: figures are upper bounds for latency).",
        f"Input: a simulated fixed-camera trial (`{TRIAL}`, face photograph renderer) "
        "streamed at its recorded 30 fps into the node "
        "through the in-process bus; the node drops frames it cannot keep up with (never blocks the camera).",
        "Latency = image callback -> gaze published (decode, face detection and tracking, "
        "head pose from motion capture with "
        "the wait for the bracketing poses, pre-processing, ONNX Runtime at batch 1, decoding, publishing).",
        "",
        "Stages (medians per processed frame): pose wait = waiting for the head-band and robot poses "
        "stamped after the frame (interpolation needs both brackets; limit `pose_wait_s`); "
        "head pose = the wait plus the one-row ground truth; estimate = face, pre-processing, inference, decoding.",
        "",
        "| resolution | method | weights | frames in | processed | dropped | sustained rate (Hz) "
        "| latency median (ms) | p95 (ms) | pose wait (ms) | head pose (ms) | estimate (ms) | head pose source |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        if "error" in r:
            out.append(
                f"| {r['res']} | `{r['method']}` | {notes.get(r['method'], '')} "
                f"| - | - | - | - | - | - | - | - | - | error: {r['error']} |"
            )
            continue
        out.append(
            f"| {r['res']} | `{r['method']}` | {notes.get(r['method'], '')} "
            f"| {r['frames_in']} | {r['processed']} | {r['dropped']} | "
            f"{r['rate_hz']:.1f} | {r['lat_median_ms']:.1f} | {r['lat_p95_ms']:.1f} | {r['wait_ms']:.1f} "
            f"| {r['head_ms']:.1f} | {r['estimate_ms']:.1f} | {r['head']} |"
        )
    out += [
        "",
        "Rows with RANDOM weights time the real architecture; their gaze output is meaningless. "
        "No GPU was lent for this measurement: GPU figures are still to be measured (`--device cuda`).",
        "",
    ]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--methods", nargs="+", default=DEFAULT_METHODS)
    ap.add_argument("--resolutions", nargs="+", default=["640x360", "1920x1080"])
    ap.add_argument("--seconds", type=float, default=6.0, help="seconds of the trial streamed per run")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--out", type=Path, help="write the Markdown page here (default: print it)")
    args = ap.parse_args()
    import onnxruntime as ort
    from gaze4hri_acq.simulate import run_sim_session

    env = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "argv": ["benchmarks/live_gaze.py", *sys.argv[1:]],
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "ort": ort.__version__,
        "python": platform.python_version(),
        "load_before": " ".join(f"{x:.1f}" for x in os.getloadavg()),
    }
    rows = []
    with tempfile.TemporaryDirectory(prefix="live_gaze_") as tmp:
        tmp = Path(tmp)
        notes = models(args.methods, tmp / "models")
        for res in args.resolutions:
            w, h = (int(x) for x in res.split("x"))
            t0 = time.perf_counter()
            session = run_sim_session(
                tmp / f"s{res}",
                subject="S01",
                trial_ids=[TRIAL],
                resolution=(w, h),
                trial_seconds=args.seconds + 0.5,
                real_time_factor=2.0,
            )
            print(f"{res}: recorded {TRIAL} in {time.perf_counter() - t0:.1f} s", flush=True)
            for m in args.methods:
                r = run_one(session, m, tmp / "models", args)
                r["res"] = res
                rows.append(r)
                print(r, flush=True)
    env["load_after"] = " ".join(f"{x:.1f}" for x in os.getloadavg())
    text = render(rows, notes, args, env)
    if args.out:
        args.out.write_text(text)
        print(f"wrote {args.out}")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
