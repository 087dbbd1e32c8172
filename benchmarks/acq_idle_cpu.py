"""CPU time of a short simulated session: wall time, process CPU time (user + sys of the
session process) and, per thread, the CPU each of the session's threads used (the sim
pacer, each device's stream thread, the executor ...), with the 1-minute load average
before and after. Runs ``gaze4hri-acq session`` as a child process, so ``--src`` can
point it at another checkout's sources (the code before a change) on the same machine.

    .venv/bin/python benchmarks/acq_idle_cpu.py --rtf 2 --runs 2
    .venv/bin/python benchmarks/acq_idle_cpu.py --rtf 2 --src /tmp/base/src   # before

docs/perf/acq.md, "Simulation pacer", holds the figures.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

TRIALS = ("illum100_P1", "illum100_P2", "arc_P5")


def _thread_cpu(samples: dict) -> None:
    """Latest CPU seconds (user + sys) of every live thread, by native id (/proc/self/task)."""
    tick = os.sysconf("SC_CLK_TCK")
    for t in threading.enumerate():
        tid = getattr(t, "native_id", None)
        try:
            fields = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        samples[tid] = (
            t.name,
            (int(fields[11]) + int(fields[12])) / tick,
        )  # utime, stime: stat fields 14, 15 (proc(5))


def child(cli_args: list[str], out: Path) -> int:
    """Run the CLI in this process while a sampler thread records per-thread CPU."""
    from gaze4hri_acq.cli import main

    samples: dict = {}
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            _thread_cpu(samples)

    s = threading.Thread(target=sample, name="cpu-sampler", daemon=True)
    s.start()
    try:
        rc = main(cli_args)
    finally:
        _thread_cpu(samples)
        done.set()
        by: dict[str, float] = {}
        for name, cpu in samples.values():
            key = name.split(" ")[0]
            by[key] = round(by.get(key, 0.0) + cpu, 2)
        out.write_text(json.dumps(by))
    return int(rc or 0)


def run_once(rtf: float, src: Path | None, resolution: str, trial_seconds: float, trials=TRIALS) -> dict:
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(src / p) for p in ("gaze4hri_acq", "gaze4hri_sim", "gaze4hri_core"))
    with tempfile.TemporaryDirectory(prefix="acq_idle_cpu_") as d:
        threads = Path(d) / "threads.json"
        args = [
            "session",
            "--subject",
            "S01",
            "--backend",
            "sim",
            *(("--trials", *trials) if trials else ()),
            "--trial-seconds",
            str(trial_seconds),
            "--resolution",
            resolution,
            "--real-time-factor",
            str(rtf),
            "--out-dir",
            str(Path(d) / "out"),
            "--quiet",
            "--live-view",
            "off",
        ]
        load0 = os.getloadavg()[0]
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        p = subprocess.run(
            [sys.executable, __file__, "--child", str(threads), "--", *args], env=env, capture_output=True, text=True
        )
        wall = time.monotonic() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        per_thread = json.loads(threads.read_text()) if threads.is_file() else {}
    if p.returncode != 0:
        raise SystemExit(f"session failed (exit {p.returncode}): {p.stderr.strip().splitlines()[-1:]}")
    return {
        "rtf": rtf,
        "code": "before" if src else "this tree",
        "wall_s": round(wall, 1),
        "cpu_s": round((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), 1),
        "load_1min": [round(load0, 1), round(os.getloadavg()[0], 1)],
        "threads_cpu_s": dict(sorted(per_thread.items(), key=lambda kv: -kv[1])[:8]),
    }


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        return child(sys.argv[sys.argv.index("--") + 1 :], Path(sys.argv[2]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rtf", type=float, default=2.0, help="--real-time-factor of the session")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--src", type=Path,
                    help="run another checkout's src/ (gaze4hri_acq, gaze4hri_sim and gaze4hri_core from there)")
    ap.add_argument("--resolution", default="424x240")
    ap.add_argument("--trial-seconds", type=float, default=2.0)
    ap.add_argument("--trials", nargs="+", default=list(TRIALS),
                    help="trial ids (default: %(default)s); 'all': the 63 trials of the protocol")
    a = ap.parse_args()
    trials = () if a.trials == ["all"] else tuple(a.trials)
    for _ in range(a.runs):
        print(json.dumps(run_once(a.rtf, a.src, a.resolution, a.trial_seconds, trials)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
