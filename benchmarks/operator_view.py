#!/usr/bin/env python3
"""The terminal operator view's redraw gaps at trial ends under CPU load (issue 24):
a simulated ``gaze4hri-acq session`` (the CLI's own assembly, session_assembly.
run_session_args, with the operator view on) runs in this process while ``--load``
busy-loop processes compete for the cores; the view draws on a pseudo-terminal read by
a process of its own, which times every redraw of the table as the operator would see
it. Each mode is one session: the table drawn by the session process (``session``:
rich's Live in a thread, as before the fix) or by the renderer process
(``process``: operator_view.RenderProcess, the default on a terminal); for the latter
also the gaps between the state snapshots the session process sends (how fresh the
rows are). Reported per mode: the longest gap between redraws over the session and
within +/- ``--window`` s of each trial end (the orchestrator's ``result`` hook), gaps
over 0.5 s, the 1-minute load average, the CPU. Goal: every gap under 0.5 s.

``--trace S`` arms faulthandler's watchdog (a C thread: it fires even while the GIL is
held) after each redraw: a gap longer than S seconds dumps every thread's stack to
``--trace-file`` (how the cause was found: docs/perf/operator_view.md).

    .venv/bin/python benchmarks/operator_view.py [--trials 6] [--load 8] [--modes session process] [--trace 0.45]
"""
from __future__ import annotations

import argparse
import faulthandler
import json
import multiprocessing as mp
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import cpu_name  # noqa: E402

TRIALS = ("illum010_P1", "illum010_P2", "illum010_P3", "illum100_P1", "illum100_P2", "illum100_P3",
          "illum010_P4", "illum100_P4")


def _busy(stop) -> None:
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


def _terminal_reader(master: int, conn, stop) -> None:
    """The operator's terminal, in a process of its own (so its clock is not the
    session process's GIL): the time of every chunk that redraws the table."""
    import select

    times = []
    while not stop.is_set():
        if select.select([master], [], [], 0.05)[0]:
            try:
                b = os.read(master, 65536)
            except OSError:
                break
            if b"Gaze4HRI acquisition" in b:
                times.append(time.monotonic())
    conn.send(times)


def _gaps(times: list[float]) -> list[tuple[float, float, float]]:
    return [(b - a, a, b) for a, b in zip(times, times[1:], strict=False)]


def _summary(times: list[float], ends: list[float], t0: float, window: float) -> dict:
    g = _gaps(times)
    if not g:
        return {"redraws": len(times)}
    at_end = [max((x for x in g if x[2] >= e - window and x[1] <= e + window), default=(0.0, e, e))[0] for e in ends]
    worst = max(g)
    return {
        "redraws": len(times),
        "max_gap_s": round(worst[0], 3),
        "max_gap_at_s": round(worst[1] - t0, 1),
        "max_gap_at_trial_end_s": round(max(at_end, default=0.0), 3),
        "gap_at_each_trial_end_s": [round(x, 3) for x in at_end],
        "gaps_over_0_5_s": sum(1 for x in g if x[0] > 0.5),
    }


def run_once(
    render_process: bool,
    trials: int = 6,
    trial_seconds: float = 2.0,
    rtf: float = 2.0,
    resolution=(320, 180),
    window: float = 1.5,
    trace: float | None = None,
    trace_file: Path | None = None,
) -> dict:
    """One simulated session with the view on a pseudo-terminal; redraws timed at the terminal."""
    import fcntl
    import pty
    import struct
    import termios

    from gaze4hri_acq.session_assembly import SessionArgs, run_session_args
    from rich.console import Console

    from gaze4hri_acq import operator_view

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 140, 0, 0))
    ctx = mp.get_context("fork")
    rx, tx = ctx.Pipe(duplex=False)
    stop = ctx.Event()
    reader = ctx.Process(target=_terminal_reader, args=(master, tx, stop), daemon=True)
    reader.start()
    ends: list[float] = []
    views: list = []
    base = operator_view.OperatorView
    tf = open(trace_file, "w") if trace else None  # noqa: SIM115 - closed below

    class TimedView(base):
        """The CLI's view on the pseudo-terminal; notes each trial's end."""

        def __init__(self, *a, **kw):
            kw["console"] = Console(
                file=os.fdopen(slave, "w", closefd=False),
                force_terminal=True,
                width=140,
                height=50,
                color_system="standard",
            )
            kw["keys"] = None
            kw["render_process"] = render_process
            super().__init__(*a, **kw)
            views.append(self)

        def result(self, *a, **kw):
            ends.append(time.monotonic())
            super().result(*a, **kw)

        def _refresh(self):
            super()._refresh()
            if tf is not None:
                faulthandler.dump_traceback_later(trace, repeat=False, file=tf)

    operator_view.OperatorView = TimedView
    t0 = time.monotonic()
    try:
        with tempfile.TemporaryDirectory() as d:
            run_session_args(
                SessionArgs(
                    subject="default",
                    backend="sim",
                    out_dir=Path(d),
                    trial_ids=TRIALS[:trials],
                    resolution=tuple(resolution),
                    trial_seconds=trial_seconds,
                    real_time_factor=rtf,
                    yes=True,
                    skip_calibration=True,
                )
            )
    finally:
        operator_view.OperatorView = base
        if tf is not None:
            faulthandler.cancel_dump_traceback_later()
            tf.close()
        time.sleep(0.5)
        stop.set()
        times = rx.recv() if rx.poll(10) else []
        reader.join(timeout=5)
        os.close(slave)
        os.close(master)
    out = {
        "drawn_by": "renderer process" if render_process else "session process",
        "wall_s": round(time.monotonic() - t0, 1),
        "trials": len(ends),
        "terminal": _summary(times, ends, t0, window),
    }
    if render_process:  # how fresh the content is: the session process's snapshots
        out["snapshots"] = _summary(views[0].render_times, ends, t0, window)
    return out


def run(trials: int = 6, load: int = 8, modes=("session", "process"), **kw) -> dict:
    stop = mp.Event()
    procs = [mp.Process(target=_busy, args=(stop,), daemon=True) for _ in range(load)]
    for p in procs:
        p.start()
    time.sleep(3.0 if load else 0.0)  # let the load average see the busy loops
    res = {
        "load_procs": load,
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "loadavg_1min_before": round(os.getloadavg()[0], 1),
        "runs": [],
    }
    try:
        for m in modes:
            res["runs"].append(run_once(m == "process", trials, **kw))
            res["runs"][-1]["loadavg_1min_after"] = round(os.getloadavg()[0], 1)
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=5)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=6)
    ap.add_argument("--load", type=int, default=8, help="busy-loop processes (8 on 2 cores: load average ~10)")
    ap.add_argument("--trial-seconds", type=float, default=2.0)
    ap.add_argument("--rtf", type=float, default=2.0, help="simulated real-time factor")
    ap.add_argument("--window", type=float, default=1.5, help="+/- s around each trial end")
    ap.add_argument("--trace", type=float, default=None, help="dump every thread's stack when a gap exceeds this (s)")
    ap.add_argument("--trace-file", type=Path, default=Path("/tmp/operator_view_trace.txt"))
    ap.add_argument(
        "--modes",
        nargs="+",
        default=["session", "process"],
        choices=["session", "process"],
        help="who draws: the session process (before issue 24's fix) and/or the renderer process",
    )
    a = ap.parse_args()
    r = run(
        a.trials,
        a.load,
        tuple(a.modes),
        trial_seconds=a.trial_seconds,
        rtf=a.rtf,
        window=a.window,
        trace=a.trace,
        trace_file=a.trace_file,
    )
    print(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
