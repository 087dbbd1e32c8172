"""Recorder throughput: 1920x1080 RGB at 30 Hz + motion capture 100 Hz + robot 125 Hz
through the real nodes, in-process bus and MCAP recorder, on the simulation clock
driven as fast as the machine allows (the pacer), for ``--sim-seconds`` of
simulated time. Reports wall time, the sustained frame rate (frames per wall
second; 30 = real time), dropped frames, bytes per second of the bag, and the
process's peak RSS (an upper bound of the recorder's memory: every node lives in
this one process).

The face renderer costs ~14 ms per 640x360 frame and ~10x that at 1080p (measured
here with --render-only); it would cap the rate at a few fps and measure the
simulator, not the recorder. So the camera renders ``--distinct`` frames once
(--distinct 0 renders every frame) and serves them on the sim clock's 30 Hz grid
with consecutive frame numbers: every other part of the path is the one a session runs.

    .venv/bin/python benchmarks/acq_record.py --sim-seconds 600 --compression none
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src" / "gaze4hri_acq"))


class CyclingCamera:
    """Wraps the simulated camera: renders ``k`` frames once, then cycles them."""

    def __init__(self, cam, world, k: int):
        self._cam, self.world, self.k = cam, world, k
        self.intrinsics, self.fps = cam.intrinsics, cam.fps
        self._cache = []

    @property
    def dropped_frames(self):
        return self._cam.dropped_frames

    def start(self):
        self._cam.start()

    def stop(self):
        self._cam.stop()

    def read(self, timeout_s=1.0):
        from gaze4hri_core.devices import CameraFrame

        if len(self._cache) < self.k:
            f = self._cam.read(timeout_s)
            if f is not None:
                self._cache.append(f.image)
            return f
        clk = self.world.clock
        n = self._cam._next
        t = self._cam.frame_time(n)
        if clk.now_ns() < t:
            return None
        self._cam._next += 1
        return CameraFrame(t, n, self._cache[n % self.k], (t - clk.start_ns) / 1e6, "sim", None)


def run(sim_seconds: float, compression: str, width: int, height: int, distinct: int, out: Path) -> dict:
    from gaze4hri_acq.runner import Stack, StackConfig

    wrap = {"camera": lambda d, w: CyclingCamera(d, w, distinct)} if distinct else {}
    cfg = StackConfig(backend="sim", params={"camera": {"width": width, "height": height, "fps": 30},
                                             "recorder": {"compression": compression, "backpressure": True}},
                      sim={"real_time_factor": 1000.0}, wrap_drivers=wrap)
    proc = psutil.Process()
    peak = [proc.memory_info().rss]
    halt = threading.Event()

    def sample():
        while not halt.wait(0.2):
            peak[0] = max(peak[0], proc.memory_info().rss)

    threading.Thread(target=sample, daemon=True).start()
    with Stack(cfg) as st:
        c = st.nodes["orchestrator"]
        for n in ("camera", "mocap", "robot"):
            c.bring_up(n, "sim")
        while c.stream_ns["camera"] == 0:
            time.sleep(0.05)
        if distinct:  # let the cache fill before timing
            while len(st.nodes["camera"].driver._cache) < distinct:
                time.sleep(0.05)
        cam = st.nodes["camera"]
        dropped0 = cam.dropped
        ack = c.request(
            "recorder",
            "start",
            trial="bench",
            bag_dir=str(out / "bench"),
            compression=compression,
            start_ns=c.device_ns,
        )
        t0_ns = int(ack["start_ns"])
        w0 = time.monotonic()
        end = t0_ns + int(sim_seconds * 1e9)
        c.wait_device_time(end, timeout_wall_s=sim_seconds * 30 + 60, streams=("camera", "mocap", "robot"))
        ack = c.request("recorder", "stop", timeout_s=600.0, end_ns=end)
        wall = time.monotonic() - w0
        frames = ack["counts"].get("/camera/color/image_raw", 0)
        drops = cam.dropped - dropped0 + ack.get("dropped_messages", 0)
    halt.set()
    size = sum(p.stat().st_size for p in (out / "bench").glob("*"))
    return {
        "sim_seconds": sim_seconds,
        "resolution": f"{width}x{height}",
        "compression": compression,
        "wall_s": round(wall, 1),
        "frames": frames,
        "expected_frames": int(sim_seconds * 30),
        "dropped": drops,
        "fps_sustained": round(frames / wall, 1),
        "real_time_factor": round(sim_seconds / wall, 2),
        "bag_bytes": size,
        "bytes_per_sim_s": int(size / sim_seconds),
        "bytes_per_wall_s": int(size / wall),
        "peak_rss_mb": round(peak[0] / 2**20),
        "counts": ack["counts"],
        "frames_pre_rendered": distinct,
    }


def render_only(width: int, height: int, n: int = 10) -> float:
    from gaze4hri_acq.drivers.registry import make_camera, make_world
    from gaze4hri_core.device_config import CameraConfig, SimConfig

    w = make_world(SimConfig())
    cam = make_camera("sim", CameraConfig(width=width, height=height), world=w)
    tr = w.truth(w.clock.now_ns())
    t = time.perf_counter()
    for _ in range(n):
        cam._renderer.render(tr.T_world_camera, tr.T_world_head @ w.subject.T_head_eye, False, 100.0)
    return (time.perf_counter() - t) / n * 1e3


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim-seconds", type=float, default=600.0)
    ap.add_argument("--compression", choices=("none", "zstd", "lz4"), default="none")
    ap.add_argument("--resolution", default="1920x1080")
    ap.add_argument("--distinct", type=int, default=30, help="frames rendered once and cycled (0: render every frame)")
    ap.add_argument("--out", type=Path, help="where the bag goes (default: a temporary directory, removed)")
    ap.add_argument("--json", type=Path, help="append the result as one JSON line")
    ap.add_argument("--render-only", action="store_true", help="time the face renderer alone")
    a = ap.parse_args()
    w, h = (int(x) for x in a.resolution.split("x"))
    if a.render_only:
        print(json.dumps({"resolution": a.resolution, "render_ms": round(render_only(w, h), 1)}))
        return 0
    if a.out is not None:
        a.out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="acq_bench_", dir=a.out))
    try:
        r = run(a.sim_seconds, a.compression, w, h, a.distinct, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    line = json.dumps(r)
    print(line)
    if a.json:
        with open(a.json, "a") as f:
            f.write(line + "\n")
    return 0 if r["dropped"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
