"""The table drawn by a process of its own (``python -m gaze4hri_acq.operator_view
--render``), fed one JSON line per state snapshot or line to print, so the screen keeps
moving while the session process's threads hold its GIL (docs/perf/operator_view.md)."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable

from rich.console import Console
from rich.live import Live
from rich.text import Text

from .render import render_status, timer_text

__all__ = ["RenderProcess", "StreamToRenderer", "printable", "render_main"]


class RenderProcess:
    """The table drawn by a process of its own (``python -m gaze4hri_acq.operator_view``):
    the session process only sends snapshots of the state (one JSON line each) and the
    lines to print above the table; the renderer redraws at ``refresh_hz`` from the
    newest snapshot and ticks the trial timer itself, so the screen keeps moving while
    the session process's threads (simulated devices, recorder, executor) hold its GIL
    or the machine is loaded (benchmarks/operator_view.py, docs/perf/operator_view.md:
    drawn in the session process, redraws stalled up to 0.9 s at load ~15 on 2 cores).
    Writes are serialized by a lock; a dead renderer makes ``send`` return False."""

    def __init__(self, out_fd: int, refresh_hz: float = 4.0):
        self._lock = threading.Lock()
        self.proc = subprocess.Popen([sys.executable, "-m", "gaze4hri_acq.operator_view", "--render",
                                      f"{refresh_hz:g}"], stdin=subprocess.PIPE, stdout=out_fd,
                                     stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def send(self, obj: dict) -> bool:
        line = json.dumps(obj, default=str) + "\n"
        with self._lock:
            try:
                self.proc.stdin.write(line)
                self.proc.stdin.flush()
                return True
            except (OSError, ValueError):  # the renderer ended (BrokenPipe) or was closed
                return False

    def close(self, timeout_s: float = 5.0) -> int | None:
        """End of input: the renderer draws the last snapshot, leaves the table and exits."""
        with self._lock:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            return self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


def printable(obj, soft: bool = False) -> dict:
    """A line for the renderer to print, as rich markup: a Text keeps its styles, a
    string is taken literally (a path with brackets is not markup). ``soft``: printed
    without line breaks at the terminal's width (a command to copy, a line printed as is)."""
    return {"print": (obj if isinstance(obj, Text) else Text(str(obj))).markup, **({"soft": True} if soft else {})}


class StreamToRenderer:
    """sys.stdout/sys.stderr of the session process while the renderer owns the
    terminal: whole lines go above the table (as rich's Live redirects them in one process),
    each as printed (soft-wrapped: a command in it copies as one line). ``print_line(text,
    soft)``: the view's way to the renderer."""

    def __init__(self, print_line: Callable[[Text, bool], None], stream):
        self._print_line, self._stream, self._buf = print_line, stream, ""
        self._lock = threading.Lock()  # several threads may print

    def write(self, text: str) -> int:
        with self._lock:
            self._buf += text
            lines = []
            if "\n" in self._buf:
                *lines, self._buf = self._buf.split("\n")
        for line in lines:
            self._print_line(Text(line), True)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._stream.fileno()

    def __getattr__(self, name):
        return getattr(self._stream, name)


def render_main(refresh_hz: float = 4.0, stream_in=None, console: Console | None = None) -> int:
    """The renderer process: JSON lines on stdin (``{"state": ...}`` a snapshot,
    ``{"print": markup, "soft": bool}`` a line above the table), the table redrawn on stdout every
    ``1/refresh_hz`` s and at once on a new snapshot; exits at the end of input (the
    session's ``stop``, or its death). SIGINT and SIGTERM are the session process's to
    handle (Ctrl-C and a group's SIGTERM reach this process too): the table stays until
    the session has said its last word, and the cursor is restored at the end."""
    import signal

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    stream_in = stream_in or sys.stdin
    console = console or Console()
    state: dict = {"phase": "idle"}
    wake, done = threading.Event(), threading.Event()
    live = Live(render_status(state), console=console, auto_refresh=False, transient=False, redirect_stdout=False,
                redirect_stderr=False)

    def reader() -> None:
        try:
            for line in stream_in:
                try:
                    msg = json.loads(line)
                except ValueError:
                    continue
                if "state" in msg:
                    state.clear()
                    state.update(msg["state"])
                    wake.set()
                elif "print" in msg:
                    console.print(Text.from_markup(msg["print"]), soft_wrap=bool(msg.get("soft")))
        finally:
            done.set()
            wake.set()

    def draw() -> None:
        snap = dict(state)
        clk = snap.get("clock")
        if clk and clk.get("trial_t0") is not None:  # the timer ticks here between snapshots
            snap["timer"] = timer_text(time.monotonic(), clk["trial_t0"], clk.get("rec_t0"))
        live.update(render_status(snap), refresh=True)

    live.start()
    threading.Thread(target=reader, name="operator-view-input", daemon=True).start()
    try:
        while not done.is_set():
            if wake.wait(1.0 / refresh_hz):
                wake.clear()
            draw()
        draw()
    finally:
        live.stop()
    return 0

