#!/usr/bin/env python3
"""Overlapping runs and full disks, measured with real ``gaze4hri-acq session``
processes (simulated lab, 160x90, short trials) for the reliability line of issue 20
(benchmarks/reliability.py imports ``run()``).

- overlapping runs: while a first run records a session, a second process tries to
  write it: ``--resume``, ``--redo`` of a recorded trial, and a plain start on the same
  ``--out-dir``. Refused when the second exits 2 with one error line naming the
  holder's pid, and the first run still finishes every trial (exit 0). Then the first
  run is SIGKILLed mid-trial and a ``--resume`` takes its stale lock over and finishes.
- disk-full cases, each on its own small tmpfs (needs root to mount; none run without):
  a new session on a disk too small for it; ``--resume`` onto a full disk; a disk
  that fills right after a trial ends (between trials); a disk that fills mid-trial.
  Handled when the run exits non-zero with exactly one ``error:`` line that says
  "disk" and gives the fix (``--resume``), the trials after the fault are still
  pending, the trial at the fault is pending (before it started) or failed with the
  disk-full reason (mid-trial), and every finished trial's bag reads with rosbags.

    .venv/bin/python benchmarks/reliability_session.py [--pythonpath OLD_CHECKOUT_SRC_PATHS]

``pythonpath`` runs the CLI processes on another checkout (the before numbers).
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

CLI = [sys.executable, "-m", "gaze4hri_acq.cli"]
SUBJECT = "S09"
TRIALS = ("illum010_P1", "illum010_P2", "illum010_P3")


def _env(pythonpath: str | None) -> dict:
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF", "PYTHONUNBUFFERED": "1"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _cmd(out: Path, *extra: str, trials=TRIALS, seconds: float = 0.5, rtf: float = 50.0) -> list[str]:
    return [
        *CLI,
        "session",
        "--subject",
        SUBJECT,
        "--backend",
        "sim",
        "--out-dir",
        str(out),
        "--quiet",
        "--trials",
        *trials,
        "--resolution",
        "160x90",
        "--trial-seconds",
        f"{seconds:g}",
        "--real-time-factor",
        f"{rtf:g}",
        *extra,
    ]


def _statuses(out: Path) -> dict[str, str]:
    from gaze4hri_core.session import load_manifest

    try:
        return {t: r.status for t, r in load_manifest(out / SUBJECT).trials.items()}
    except Exception:
        return {}


def _reasons(out: Path) -> dict[str, str | None]:
    from gaze4hri_core.session import load_manifest

    try:
        return {t: r.reason for t, r in load_manifest(out / SUBJECT).trials.items()}
    except Exception:
        return {}


def _wait(cond: Callable[[], bool], timeout_s: float, poll_s: float = 0.02) -> bool:
    t_end = time.monotonic() + timeout_s
    while time.monotonic() < t_end:
        if cond():
            return True
        time.sleep(poll_s)
    return False


def _bags_read(out: Path, trials) -> bool:
    from gaze4hri_core.session import bag_dir
    from rosbags.rosbag2 import Reader

    try:
        for t in trials:
            with Reader(bag_dir(out / SUBJECT, t)) as r:
                if r.message_count <= 0:
                    return False
    except Exception:
        return False
    return True


def _error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith("error: ")]


# ------------------------------------------------------------------ overlapping runs
def overlapping(env: dict, root: Path) -> dict:
    """Three second writers against one live run, then a stale lock after a SIGKILL."""
    out = root / "overlap"
    first = subprocess.Popen(
        _cmd(out, seconds=3.0, rtf=1.0), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
    )
    tries = {"--resume": ["--resume"], "--redo": ["--redo", TRIALS[0]], "plain start": []}
    by: dict[str, tuple[bool, str]] = {}
    try:
        # the first trial recorded, the second recording: every kind of second writer has a target
        if not _wait(lambda: _statuses(out).get(TRIALS[1]) == "recording", 180):
            raise RuntimeError(f"the first run never reached {TRIALS[1]} ({_statuses(out)})")
        for name, extra in tries.items():
            q = subprocess.run(_cmd(out, *extra), capture_output=True, text=True, timeout=300, env=env)
            lines = _error_lines(q.stderr)
            ok = q.returncode == 2 and len(lines) == 1 and f"pid {first.pid}" in lines[0] and first.poll() is None
            by[name] = (ok, f"exit {q.returncode}: {(lines or q.stderr.strip().splitlines()[-1:] or [''])[0][:160]}")
        _, err = first.communicate(timeout=300)
        done = first.returncode == 0 and set(_statuses(out).values()) == {"done"} and _bags_read(out, TRIALS)
        if not done:
            by = {
                k: (False, f"{why}; but the first run: exit {first.returncode}, {_statuses(out)}")
                for k, (_ok, why) in by.items()
            }
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    # a stale lock: SIGKILL a run mid-trial, then --resume must take the lock over and finish
    out2 = root / "stale"
    p = subprocess.Popen(
        _cmd(out2, seconds=3.0, rtf=1.0), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
    )
    stale = (False, "")
    try:
        if _wait(lambda: _statuses(out2).get(TRIALS[1]) == "recording", 180):
            p.send_signal(signal.SIGKILL)
            p.wait(30)
            left = (out2 / SUBJECT / "session.lock").is_file()
            q = subprocess.run(_cmd(out2, "--resume"), capture_output=True, text=True, timeout=300, env=env)
            ok = q.returncode == 0 and set(_statuses(out2).values()) == {"done"}
            stale = (
                ok,
                f"lock file left by the killed run: {left}; resume exit {q.returncode}; "
                f"notice: {next((ln for ln in q.stdout.splitlines() if 'stale' in ln), 'none')[:160]}",
            )
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return {"refused": sum(ok for ok, _ in by.values()), "tried": len(by), "by_case": by, "stale_taken_over": stale}


# ------------------------------------------------------------------ full disks
class _Tmpfs:
    def __init__(self, root: Path, name: str, size_mb: int):
        self.path = root / name
        self.size_mb = size_mb

    def __enter__(self) -> Path:
        self.path.mkdir(parents=True)
        r = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={self.size_mb}m", "tmpfs", str(self.path)],
            capture_output=True,
            text=True,
        )
        if r.returncode != 0:
            raise PermissionError(r.stderr.strip() or "mount failed")
        return self.path

    def __exit__(self, *exc):
        subprocess.run(["umount", str(self.path)], capture_output=True)


def _fill(mnt: Path, leave: int) -> None:
    """Another writer takes the disk, leaving ``leave`` bytes."""
    st = os.statvfs(mnt)
    n = st.f_bavail * st.f_frsize - leave
    with open(mnt / f"filler{time.monotonic_ns()}", "wb") as f:
        try:
            f.write(b"\0" * max(0, n))
        except OSError:
            pass


def _judge(q, out: Path, at: str | None, mid_trial: bool = False) -> tuple[bool, str]:
    """The disk-full contract for a run that stopped at trial ``at`` (None: before any)."""
    lines = _error_lines(q.stderr if isinstance(q.stderr, str) else "")
    st, rs = _statuses(out), _reasons(out)
    why = f"exit {q.returncode}; {len(lines)} error line(s): {(lines or [''])[0][:200]}; statuses {st}"
    if (
        q.returncode == 0
        or len(lines) != 1
        or "disk" not in lines[0]
        or ("--resume" not in lines[0] and "--out-dir" not in lines[0])
    ):
        return False, why
    if at is None:
        return (not (out / SUBJECT / "session.yaml").exists()), why
    order = list(st)
    i = order.index(at)
    done = order[:i]
    if any(st[t] != "done" for t in done) or not _bags_read(out, done):
        return False, why
    if mid_trial:
        at_ok = st[at] == "failed" and "disk full" in (rs.get(at) or "")
    else:
        at_ok = st[at] == "pending"
    return at_ok and all(st[t] == "pending" for t in order[i + 1 :]), why


def _run_filling(cmd: list[str], env: dict, when, fill, poll_s: float = 0.05) -> subprocess.CompletedProcess:
    """Run a session command; fill its disk the moment ``when()`` holds; its result."""
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    try:
        if _wait(when, 180, poll_s=poll_s):
            fill()
        _, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return subprocess.CompletedProcess(p.args, p.returncode, "", err)


def disk_full(env: dict, root: Path) -> dict:
    by: dict[str, tuple[bool, str]] = {}
    try:
        # a new session on a disk too small for it: refused before anything is written
        with _Tmpfs(root, "new", 8) as mnt:
            _fill(mnt, 500_000)
            q = subprocess.run(_cmd(mnt), capture_output=True, text=True, timeout=300, env=env)
            by["new session, disk too small"] = _judge(q, mnt, None)
        # --resume onto a full disk: the next trial cannot start
        with _Tmpfs(root, "resume", 24) as mnt:
            q = subprocess.run(_cmd(mnt, trials=TRIALS[:1]), capture_output=True, text=True, timeout=300, env=env)
            _fill(mnt, 300_000)
            q = subprocess.run(_cmd(mnt, "--resume"), capture_output=True, text=True, timeout=300, env=env)
            by["--resume onto a full disk"] = _judge(q, mnt, TRIALS[1])
        # the disk fills the moment a trial ends (another writer): the next one cannot start
        with _Tmpfs(root, "between", 24) as mnt:
            q = _run_filling(
                _cmd(mnt, seconds=1.0, rtf=1.0),
                env,
                lambda: _statuses(mnt).get(TRIALS[0]) == "done",
                lambda: _fill(mnt, 300_000),
                poll_s=0.005,
            )
            st = _statuses(mnt)
            mid = st.get(TRIALS[1]) == "failed"  # the filler lost the race to the trial's start: the mid-trial path
            by["disk fills between trials"] = _judge(q, mnt, TRIALS[1], mid_trial=mid)
        # the disk fills while a trial records: that trial fails, the rest stay pending
        with _Tmpfs(root, "mid", 40) as mnt:
            from gaze4hri_core.session import bag_dir

            f = bag_dir(mnt / SUBJECT, TRIALS[1]) / f"{TRIALS[1]}_0.mcap"
            q = _run_filling(
                _cmd(mnt, seconds=4.0, rtf=1.0),
                env,
                lambda f=f: f.exists() and f.stat().st_size > 300_000,
                lambda: _fill(mnt, 64 * 1024),
            )
            by["disk fills mid-trial"] = _judge(q, mnt, TRIALS[1], mid_trial=True)
    except PermissionError as e:
        print(f"disk-full cases: cannot mount a tmpfs ({e}); run as root", file=sys.stderr)
    return {"handled": sum(ok for ok, _ in by.values()), "cases": len(by), "by_case": by}


def run(pythonpath: str | None = None) -> dict:
    """The figures for the reliability line (and the per-case reasons)."""
    env = _env(pythonpath)
    with tempfile.TemporaryDirectory(prefix="g4h_rel_session_") as d:
        root = Path(d)
        ov = overlapping(env, root)
        df = disk_full(env, root)
    return {
        "overlapping_refused": ov["refused"],
        "overlapping_tried": ov["tried"],
        "overlapping_by_case": ov["by_case"],
        "stale_lock_taken_over": ov["stale_taken_over"],
        "disk_full_handled": df["handled"],
        "disk_full_cases": df["cases"],
        "disk_full_by_case": df["by_case"],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pythonpath", help="PYTHONPATH for the CLI processes (another checkout's src/* folders)")
    a = ap.parse_args()
    t0 = time.monotonic()
    r = run(a.pythonpath)
    print(json.dumps(r, indent=1, default=str))
    print(
        f"overlapping runs refused {r['overlapping_refused']}/{r['overlapping_tried']}; "
        f"disk-full cases handled {r['disk_full_handled']}/{r['disk_full_cases']} ({time.monotonic() - t0:.0f} s)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
