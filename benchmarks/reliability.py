#!/usr/bin/env python3
"""The reliability line of issue 20, measured with real processes and the real client
libraries, printed as one line and written to docs/perf/reliability.md:

- kill/resume moments survived: a real ``gaze4hri-acq session`` (simulated lab) is
  SIGKILLed at each moment below, then ``--resume`` finishes it; survived when the
  resume exits 0, every trial is done and every bag passes its CRC check and reads
  with rosbags (recorder/bag.check_bag, rosbags.rosbag2.Reader);
- overlapping runs refused and disk-full cases handled (benchmarks/reliability_session.py);
- fuzzed moves, joint and Cartesian, non-finite included: unsafe accepted and
  exceptions (benchmarks/reliability_fuzz.py);
- NatNet faults survived on the real Motive capture (benchmarks/reliability_natnet.py);
- whether the real-backend robot completed a trial against the UR controller emulator
  (benchmarks/reliability_ur.py).

    .venv/bin/python benchmarks/reliability.py [--only kill fuzz natnet session ur]
"""
from __future__ import annotations

import argparse
import importlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]
CLI = [sys.executable, "-m", "gaze4hri_acq.cli"]
TRIALS = ("illum010_P1", "illum010_P2", "illum010_P3")


def _session(out: Path, *extra: str) -> list[str]:
    return [
        *CLI,
        "session",
        "--subject",
        "S09",
        "--backend",
        "sim",
        "--out-dir",
        str(out),
        "--quiet",
        "--trials",
        *TRIALS,
        "--resolution",
        "160x90",
        "--trial-seconds",
        "1.5",
        "--real-time-factor",
        "3",
        *extra,
    ]


def _manifest(out: Path):
    from gaze4hri_core.session import load_manifest

    try:
        return load_manifest(out / "S09")
    except Exception:  # noqa: BLE001 - not written yet, or being replaced
        return None


def _moment_reached(name: str, out: Path, t0: float) -> bool:
    m = _manifest(out)
    if name == "bring-up":
        return time.monotonic() - t0 > 2.0
    if m is None:
        return False
    st = {k: r.status for k, r in m.trials.items()}
    if name == "first recording":
        return st[TRIALS[0]] == "recording"
    if name == "mid recording":
        from gaze4hri_core.session import bag_dir

        f = bag_dir(out / "S09", TRIALS[1]) / f"{TRIALS[1]}_0.mcap"
        return st[TRIALS[1]] == "recording" and f.exists() and f.stat().st_size > 150_000
    if name == "between trials":
        return st[TRIALS[0]] == "done" and st[TRIALS[1]] == "pending"
    if name == "last stop":
        return st[TRIALS[2]] == "recording" and time.monotonic() - t0 > 1.0
    raise ValueError(name)


MOMENTS = ("bring-up", "first recording", "between trials", "mid recording", "last stop")


def kill_resume() -> dict:
    """SIGKILL at each moment, then --resume; returns {"survived", "total", "by_moment"}."""
    from gaze4hri_acq.recorder.bag import check_bag
    from gaze4hri_core.session import bag_dir
    from rosbags.rosbag2 import Reader

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    by = {}
    for moment in MOMENTS:
        with tempfile.TemporaryDirectory() as d:
            out = Path(d)
            p = subprocess.Popen(_session(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
            t0 = time.monotonic()
            reached = False
            while time.monotonic() - t0 < 180 and p.poll() is None:
                if _moment_reached(moment, out, t0):
                    reached = True
                    break
                time.sleep(0.05)
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
            p.wait()
            q = subprocess.run(
                _session(out, "--resume") if (out / "S09" / "session.yaml").is_file() else _session(out),
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
            )
            m = _manifest(out)
            ok = reached and q.returncode == 0 and m is not None and all(r.status == "done" for r in m.trials.values())
            why = (
                ""
                if ok
                else (
                    "moment not reached"
                    if not reached
                    else (q.stderr.strip().splitlines() or [f"exit {q.returncode}"])[-1]
                )
            )
            if ok:
                for tid in TRIALS:
                    b = bag_dir(out / "S09", tid)
                    damage = check_bag(b)
                    with Reader(b) as r:
                        n = r.message_count
                    if damage or n == 0:
                        ok, why = False, f"{tid}: damage {damage} messages {n}"
            by[moment] = (ok, str(why))
    return {"survived": sum(ok for ok, _ in by.values()), "total": len(by), "by_moment": by}


def _optional(module: str, **kw) -> dict | None:
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        print(f"{module}: not available ({e})", file=sys.stderr)
        return None
    return mod.run(**kw)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--only", nargs="*", choices=("kill", "session", "fuzz", "natnet", "ur"), help="run only these parts"
    )
    ap.add_argument("--fuzz", type=int, default=2000, help="fuzzed moves (at least 2,000 for the issue's figure)")
    ap.add_argument("--no-write", action="store_true", help="print only; do not update docs/perf/reliability.md")
    a = ap.parse_args()
    want = set(a.only or ("kill", "session", "fuzz", "natnet", "ur"))
    t0 = time.monotonic()
    parts, details = [], []
    if "kill" in want:
        k = kill_resume()
        parts.append(f"kill/resume moments survived {k['survived']}/{k['total']}")
        details += [f"- kill at {m}: {'survived' if ok else 'LOST: ' + why}" for m, (ok, why) in k["by_moment"].items()]
    if "session" in want and (s := _optional("reliability_session")) is not None:
        parts.append(f"overlapping runs refused {s['overlapping_refused']}/{s['overlapping_tried']}")
        parts.append(f"disk-full cases handled {s['disk_full_handled']}/{s['disk_full_cases']}")
    if "fuzz" in want and (f := _optional("reliability_fuzz", n=a.fuzz)) is not None:
        parts.append(
            f"fuzzed moves {f['cases']} (joint {f['joint']}, Cartesian {f['cartesian']}, "
            f"non-finite {f['non_finite']}): "
            f"{f['unsafe_accepted']} unsafe accepted, {f['exceptions']} exceptions"
        )
    if "natnet" in want and (n := _optional("reliability_natnet")) is not None:
        parts.append(f"NatNet faults survived {n['survived']}/{n['total']}")
    if "ur" in want and (u := _optional("reliability_ur")) is not None:
        parts.append(f"real-backend robot completed a trial: {'yes' if u['completed'] else 'no'}")
        details += [f"- UR emulator: {u.get('line', '')}"]
    line = "reliability: " + "; ".join(parts)
    print(line)
    for d in details:
        print(d)
    if not a.no_write and a.only is None:
        from _machine import cpu_name  # benchmarks/_machine.py

        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        doc = REPO / "docs" / "perf" / "reliability.md"
        doc.write_text(
            "# Reliability (issue 20)\n\nMeasured by `.venv/bin/python benchmarks/reliability.py` "
            f"({time.monotonic() - t0:.0f} s; {os.cpu_count()} cores, {cpu_name()}; load average {load}):"
            f"\n\n```\n{line}\n```\n\n"
            + "\n".join(details)
            + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
