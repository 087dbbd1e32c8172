"""Live terminal view for the operator (rich) and the session's final summary.

What the operator sees, in one table redrawn at 4 Hz and at once when a key is read;
on a terminal by a process of its own fed state snapshots (RenderProcess), so it keeps
moving while the orchestrator blocks in bring-up, the eye-head calibration or a device
request and while the session's other threads keep this process's GIL busy
(docs/perf/operator_view.md); otherwise by a thread of this process:

- the phase in words: WAITING FOR OPERATOR (with the prompt and "press Enter"),
  bringing up devices, moving to the start pose, HEAD-POSE CHECK, RECORDING; RECORDING
  only while the recorder's own diagnostics say its bag is open (not while the
  orchestrator merely means to record: before the bag opens and after it closes the
  row says so);
- during the head-pose check a gauge with the measured head yaw next to the target
  band, and which way the subject should turn, so the operator can coach;
- the trial timer and the session's estimated time left (mean wall time of this run's
  finished trials x trials left);
- camera, motion capture, robot, safety, recorder and disk; a lost head band, a
  protective stop, a safety stop, a recorder fault and failed trials in red;
- the keys: Enter confirms a prompt, ``s`` stops the robot through the ``/robot/stop``
  service (the same path as ``ros2 service call /robot/stop std_srvs/srv/Trigger``;
  the running trial fails with the robot's fault reason and the session goes on to
  the next prompt), Ctrl-C ends the session (the running trial is marked incomplete).
  The stop key is acknowledged on screen when it is read ("STOP sent"); the service
  call runs in its own thread and the robot's answer replaces it when it comes.

Device state comes from the topics the orchestrator node receives (diagnostics,
head pose), so the view shows the same under ``ros2 launch``. The final summary lists
every trial with its status and reason and prints the ``--redo`` command for failed
or incomplete ones.
"""
from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gaze4hri_core.errors import Gaze4HRIError
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

# gaze4hri_core.session (calibration, scipy: ~1 s) and .nodes.common (rclpy) are imported
# where used: the renderer process (``python -m gaze4hri_acq.operator_view``) needs rich only

__all__ = ["OperatorView", "render_status", "summary_table", "redo_command", "yaw_gauge", "KeyReader", "PHASES", "timer_text"]

#: phase -> (label, style)
PHASES = {
    "idle": ("-", ""),
    "bringing_up": ("bringing up devices", "cyan"),
    "waiting": ("WAITING FOR OPERATOR", "bold black on yellow"),
    "moving": ("moving to the start pose", "cyan"),
    "head_check": ("HEAD-POSE CHECK", "bold magenta"),
    "recording": ("RECORDING", "bold white on red"),
    "stopping": ("stopping", "yellow"),
}
#: the orchestrator's "recording" phase while the recorder has no bag open
NOT_OPEN = {None: ("starting the recording (bag not open yet)", "yellow"),
            "closed": ("bag closed, finishing the trial", "cyan"),
            "silent": ("recording? (no recorder diagnostics)", "bold red")}
#: no recorder diagnostics for this long: its last word is not trusted (it publishes at 2 Hz)
RECORDER_SILENT_S = 3.0
KEYS_HELP = "Enter: confirm prompt   s: stop robot (/robot/stop)   Ctrl-C: end session (resume later)"
ALARM = "bold red"


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def _fmt_s(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "-"
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def timer_text(now: float, trial_t0: float | None, rec_t0: float | None) -> str:
    """The time row's trial timer: since the operator confirmed (or the trial began),
    and since the bag opened while it is open."""
    if trial_t0 is None:
        return "-"
    return _fmt_s(now - trial_t0) + (f" (recording {_fmt_s(now - rec_t0)})" if rec_t0 is not None else "")


def yaw_gauge(measured: float | None, target: float, tol: float, span: float = 45.0, width: int = 31) -> Text:
    """A one-line gauge of head yaw (+left): the target band ``target +/- tol`` as ``=``,
    the measured yaw as ``|``, left at the left; then the numbers and what to say."""
    def col(v: float) -> int:
        return int(round((max(-span, min(span, -v)) + span) / (2 * span) * (width - 1)))  # +yaw (left) drawn left

    cells = ["-"] * width
    lo, hi = sorted((col(target - tol), col(target + tol)))
    for c in range(lo, hi + 1):
        cells[c] = "="
    ok = measured is not None and math.isfinite(measured) and abs(measured - target) <= tol
    t = Text("L [")
    if measured is not None and math.isfinite(measured):
        m = col(measured)
        t.append("".join(cells[:m]))
        t.append("|", style="bold green" if ok else ALARM)
        t.append("".join(cells[m + 1:]))
    else:
        t.append("".join(cells))
    t.append("] R  ")
    if measured is None or not math.isfinite(measured):
        t.append(f"measured -, target {target:+.0f} +/- {tol:.0f} deg (no head pose)", style=ALARM)
        return t
    t.append(f"measured {measured:+.1f} deg, target {target:+.0f} +/- {tol:.0f}  ")
    if ok:
        t.append("OK, hold still", style="bold green")
    else:
        side = "left" if measured < target else "right"
        t.append(f"turn {abs(measured - target):.0f} deg more to the {side}", style="bold yellow")
    return t


def phase_label(state: dict) -> tuple[str, str]:
    """(label, style) of the state row. RECORDING exactly when the recorder's own
    diagnostics say its bag is open (``state["bag"] == "open"``); the orchestrator's
    "recording" phase without an open bag says whether the bag is yet to open, has
    closed, or the recorder went silent."""
    bag = state.get("bag")
    if bag == "open":
        return PHASES["recording"]
    phase = state.get("phase", "idle")
    if phase == "recording":
        return NOT_OPEN[bag if bag in ("closed", "silent") else None]
    return PHASES.get(phase, (phase or "-", ""))


def render_status(state: dict):
    """The live view from a plain state dict (tested without a terminal)."""
    phase, style = phase_label(state)
    t = Table(title="Gaze4HRI acquisition" + (f" - subject {state['subject']}" if state.get("subject") else ""),
              show_header=False, expand=False)
    t.add_column("what", style="bold", no_wrap=True)
    t.add_column("value")
    t.add_row("trial", state.get("trial", "-"))
    t.add_row("state", Text(phase, style=style) + (Text(f"  {state['status']}") if state.get("status") else Text("")))
    waiting = state.get("phase") == "waiting"
    prompt = Text(state.get("prompt", "-"), style="bold" if waiting else "")
    if waiting:
        prompt.append("  -> press Enter when ready", style="bold yellow")
    t.add_row("prompt", prompt)
    if state.get("stop"):
        t.add_row("operator stop", Text(state["stop"], style="bold white on red" if state.get("stop_pending") else ALARM))
    if state.get("phase") == "head_check" and state.get("head"):
        h = state["head"]
        t.add_row("head yaw", yaw_gauge(h.get("measured"), h["target"], h["tol"]))
    t.add_row("time", f"trial {state.get('timer', '-')}   session left {state.get('eta', '-')}")
    t.add_row("camera", state.get("camera", "-"))
    t.add_row("motion capture", Text(state.get("mocap", "-"), style=ALARM if state.get("mocap_lost") else ""))
    t.add_row("robot", Text(state.get("robot", "-"), style=ALARM if state.get("robot_alarm") else ""))
    safety = state.get("safety", "-")
    if state.get("stop_pending"):  # the robot's last word predates the operator's stop
        t.add_row("safety", Text(f"{safety} (before the STOP; the robot has not answered yet)", style="bold yellow"))
    else:
        t.add_row("safety", Text(safety, style=ALARM if safety not in ("ok", "-", "?") else "green" if safety == "ok" else ""))
    t.add_row("recorder", Text(state.get("recorder", "-"), style=ALARM if state.get("recorder_fault") else ""))
    t.add_row("disk left", state.get("disk", "-"))
    if state.get("last"):
        t.add_row("last trial", Text(state["last"], style=ALARM if state.get("last_failed") else "green"))
    if state.get("counts"):
        t.add_row("this run", state["counts"])
    return Group(t, Text(state.get("keys", KEYS_HELP), style="dim"))


class KeyReader(threading.Thread):
    """Operator keys from ``stream``: on a terminal one key at a time (cbreak mode, no
    echo; Ctrl-C still signals), otherwise one line at a time (an empty line is Enter,
    else its first character), so tests and scripts drive it through a pipe.
    ``on_key("\\n" | "s" | ...)``; ``on_eof()`` when the stream ends."""

    def __init__(self, stream, on_key: Callable[[str], None], on_eof: Callable[[], None]):
        super().__init__(name="operator-keys", daemon=True)
        self.stream, self.on_key, self.on_eof = stream, on_key, on_eof
        self._halt = threading.Event()
        self._saved = None

    def run(self) -> None:
        try:
            if self._tty():
                self._run_tty()
            else:
                self._run_lines()
        except (OSError, ValueError):
            if not self._halt.is_set():
                self.on_eof()

    def _tty(self) -> bool:
        try:
            return os.isatty(self.stream.fileno())
        except (AttributeError, OSError, ValueError):
            return False

    def _run_tty(self) -> None:
        import select
        import termios
        import tty

        fd = self.stream.fileno()
        self._saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)
        try:
            while not self._halt.is_set():
                r, _, _ = select.select([fd], [], [], 0.1)
                if not r:
                    continue
                ch = os.read(fd, 1).decode(errors="ignore")
                if not ch:
                    self.on_eof()
                    return
                self.on_key("\n" if ch in "\r\n" else ch.lower())
        finally:
            self.restore()

    def _run_lines(self) -> None:
        while not self._halt.is_set():
            line = self.stream.readline()
            if not line:
                self.on_eof()
                return
            s = line.strip()
            self.on_key("\n" if not s else s[0].lower())

    def restore(self) -> None:
        if self._saved is not None:
            import termios

            try:
                termios.tcsetattr(self.stream.fileno(), termios.TCSADRAIN, self._saved)
            except (OSError, ValueError):
                pass
            self._saved = None

    def stop(self) -> None:
        self._halt.set()
        if self._tty():
            self.join(timeout=1.0)
        self.restore()


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
        self.proc = subprocess.Popen([sys.executable, "-m", "gaze4hri_acq.operator_view", "--render", f"{refresh_hz:g}"],
                                     stdin=subprocess.PIPE, stdout=out_fd, stderr=subprocess.DEVNULL, text=True, bufsize=1)

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


def _printable(obj) -> dict:
    """A line for the renderer to print, as rich markup: a Text keeps its styles, a
    string is taken literally (a path with brackets is not markup)."""
    return {"print": (obj if isinstance(obj, Text) else Text(str(obj))).markup}


class _StreamToRenderer:
    """sys.stdout/sys.stderr of the session process while the renderer owns the
    terminal: whole lines go above the table (as rich's Live redirects them in one process)."""

    def __init__(self, view: OperatorView, stream):
        self._view, self._stream, self._buf = view, stream, ""
        self._lock = threading.Lock()  # several threads may print

    def write(self, text: str) -> int:
        with self._lock:
            self._buf += text
            lines = []
            if "\n" in self._buf:
                *lines, self._buf = self._buf.split("\n")
        for line in lines:
            self._view._print(Text(line))
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
    ``{"print": markup}`` a line above the table), the table redrawn on stdout every
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
    live = Live(render_status(state), console=console, auto_refresh=False, transient=False, redirect_stdout=False, redirect_stderr=False)

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
                    console.print(Text.from_markup(msg["print"]))
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


class OperatorView:
    """The orchestrator's view (hooks ``trial``, ``status``, ``result``, ``message``)
    plus ``confirm(prompt)`` for interactive prompts and the stop key.

    ``keys``: the operator's input stream (default stdin) or None for no keys;
    ``should_stop``: the session's stop flag (SIGINT/SIGTERM), checked while waiting;
    ``stop_robot``: what the ``s`` key calls (default: the ``/robot/stop`` service);
    ``clock``: monotonic seconds (a test's fake clock);
    ``render_process``: draw in a RenderProcess (True), in this process (False), or
    the first when the console writes to a terminal (None, the default).

    Threads: the orchestrator calls the hooks (short, under ``_lock``); the render
    thread (``operator-view``) collects device state every ``1/refresh_hz`` s and at
    once when woken (a key, a prompt), and sends the snapshot to the renderer process or
    redraws itself; the key reader only updates the state and wakes the render thread;
    the ``/robot/stop`` call runs in a thread of its own."""

    def __init__(self, client, out_dir: Path, console: Console | None = None, *, subject: str = "",
                 yaw_tolerance_deg: float = 7.0, keys=sys.stdin, should_stop: Callable[[], str | None] = lambda: None,
                 stop_robot: Callable[[], str] | None = None, refresh_hz: float = 4.0,
                 clock: Callable[[], float] = time.monotonic, render_process: bool | None = None):
        self.client = client
        self.out_dir = Path(out_dir)
        self.subject = subject
        self.console = console or Console(stderr=True)
        self.state: dict = {"subject": subject, "phase": "idle"}
        self.yaw_tolerance_deg = yaw_tolerance_deg
        self.should_stop = should_stop
        self._stop_robot = stop_robot or self._stop_service
        self._keys_stream = keys
        self._keys: KeyReader | None = None
        self._live: Live | None = None
        # None: draw in a RenderProcess when the console is a terminal, else here
        self._render_process = render_process
        self._renderer: RenderProcess | None = None
        self._saved_streams: tuple | None = None
        self._out_lock = threading.RLock()
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self._period = 1.0 / refresh_hz
        self._armed = False
        self._confirmed = threading.Event()
        self._eof = False
        self._lock = threading.RLock()
        self._trial = None
        self._trial_t0: float | None = None
        self._rec_t0: float | None = None
        self._durations: list[float] = []
        self._todo: int | None = None
        self._calib = None
        self.results: list[tuple[str, str, str | None]] = []
        self.stops: list[str] = []
        self._asking = False
        self._answer = True
        self._clock = clock
        self._wake = threading.Event()
        self._stop_busy = False
        self._rec_diag = None  # the recorder's last diagnostics (a new dict per message) and when it came
        self._rec_diag_t: float | None = None
        self._bag_was_open = False
        #: monotonic time of each redraw, or of each snapshot sent to the renderer process (the cadence tests read it)
        self.render_times: list[float] = []

    # ------------------------------------------------------------------ hooks
    def trial(self, i: int, n: int, trial, prompt: str) -> None:
        self._ensure_live()
        todo = self._count_todo() if self._todo is None else self._todo  # reads session.yaml: not under the lock
        with self._lock:
            self._todo = todo
            self._trial = trial
            self._trial_t0 = self._clock()
            self._rec_t0 = None
            self._bag_was_open = False
            if not self.state.get("stop_pending"):
                self.state.pop("stop", None)
            self.state["trial"] = f"{i}/{n}  {trial.trial_id}  ({trial.experiment}, {trial.condition}, target {trial.target})"
            self.state["prompt"] = prompt
            self.state["phase"], self.state["status"] = "moving", ""
            self.state.pop("head", None)

    def status(self, text: str) -> None:
        self._ensure_live()
        with self._lock:
            if text.startswith("head-pose check"):
                self.state["phase"], self.state["status"] = "head_check", ""
                target = getattr(self._trial, "head_yaw_deg", None)
                if target is not None:
                    self.state["head"] = {"measured": None, "target": float(target), "tol": self.yaw_tolerance_deg}
            elif text == "recording":  # the orchestrator's intention; RECORDING itself waits for the recorder's bag
                self.state["phase"], self.state["status"] = "recording", ""
                self.state.pop("head", None)
            elif text.startswith("moving"):
                self.state["phase"], self.state["status"] = "moving", ""
            elif text.startswith("bringing up"):
                self.state["phase"], self.state["status"] = "bringing_up", ""
            else:
                self.state["status"] = text

    def result(self, trial_id: str, status: str, reason: str | None) -> None:
        with self._lock:
            self.results.append((trial_id, status, reason))
            if self._trial_t0 is not None and status in ("done", "failed"):
                self._durations.append(self._clock() - self._trial_t0)
            self._trial_t0 = self._rec_t0 = None
            self.state["last"] = f"{trial_id}: {status}" + (f" ({reason})" if reason else "")
            self.state["last_failed"] = status != "done"
            self.state["phase"], self.state["status"] = "idle", ""
            self.state.pop("head", None)
            c: dict[str, int] = {}
            for _, s, _ in self.results:
                c[s] = c.get(s, 0) + 1
            self.state["counts"] = ", ".join(f"{v} {k}" for k, v in c.items())

    #: session lines (orchestrator.session._say) are printed here, not also on stdout
    shows_messages = True

    def message(self, text: str) -> None:
        self._print(text)

    def _print(self, obj) -> None:
        """A line above the table: through the renderer process when it draws, else here."""
        r = self._renderer
        if r is not None:
            if r.send(_printable(obj)):
                return
            self._renderer_gone()
        self.console.print(obj)

    def confirm(self, prompt: str) -> None:
        """Show WAITING FOR OPERATOR with ``prompt`` and block until Enter (the key
        reader), the session's stop flag (raises Interrupted) or the end of input."""
        from .orchestrator.client import Interrupted

        self._ensure_live()
        self._start_keys()
        with self._lock:
            self.state["phase"], self.state["status"], self.state["prompt"] = "waiting", "", prompt
            self._confirmed.clear()
        self._wake.set()
        try:
            while not self._confirmed.wait(0.05):
                reason = self.should_stop()
                if reason:
                    raise Interrupted(reason)
                if self._eof or self._keys is None:
                    raise Gaze4HRIError("no operator input (stdin closed) at a prompt", self.state.get("trial"),
                                        "run with --yes to confirm prompts automatically")
        finally:
            with self._lock:
                if self.state.get("phase") == "waiting":
                    self.state["phase"] = "moving"
            if self._trial_t0 is not None:  # the trial's clock starts when the operator confirms
                self._trial_t0 = self._clock()
            self._wake.set()

    def ask(self, question: str) -> bool:
        """A yes/no question in the same WAITING FOR OPERATOR state (the eye-head
        calibration's "retry?"): Enter or y is yes, n is no."""
        self._answer = True
        self._asking = True
        try:
            self.confirm(f"{question}: Enter or y = retry, n = no")
        finally:
            self._asking = False
        return self._answer

    # ------------------------------------------------------------------ keys
    def _start_keys(self) -> None:
        if self._keys is None and self._keys_stream is not None and not self._eof:
            self._keys = KeyReader(self._keys_stream, self._on_key, self._on_eof)
            self._keys.start()

    def _on_key(self, key: str) -> None:
        if key == "\n" or (key == "y" and self._asking):
            self._confirmed.set()
        elif key == "n" and self._asking:
            self._answer = False
            self._confirmed.set()
        elif key == "s":
            self.request_stop()

    def _on_eof(self) -> None:
        self._eof = True

    def request_stop(self) -> None:
        """The stop key: "STOP sent" on screen now (the state, then the render thread
        woken), the ``/robot/stop`` call in its own thread, its answer when it comes.
        Never blocks the key reader; a second press while the call is out is noted."""
        with self._lock:
            busy, self._stop_busy = self._stop_busy, True
            stamp = time.strftime("%H:%M:%S")
            if busy:
                self.state["stop"] = f"STOP sent again at {stamp}: still waiting for the robot's answer"
            else:
                self.state["stop"] = f"STOP sent at {stamp} (/robot/stop): waiting for the robot"
                self.state["stop_pending"] = True
                self.state["status"] = "operator stop: STOP sent"
        self._wake.set()
        if not busy:
            threading.Thread(target=self._stop_worker, name="operator-stop", daemon=True).start()

    def _stop_worker(self) -> None:
        msg = self.stop_robot()  # never raises: a failed call is its message
        with self._lock:
            self._stop_busy = False
            self.state["stop_pending"] = False
            self.state["stop"] = f"STOP sent; robot: {msg}"
        self._wake.set()

    def stop_robot(self) -> str:
        """The operator's stop: call ``/robot/stop`` and say what happened (blocks
        until the robot answers or 5 s pass; the key uses ``request_stop``)."""
        try:
            msg = self._stop_robot()
        except Exception as e:  # a stop must never take the view down; say why it failed
            msg = f"STOP FAILED: {e}"
        self.stops.append(msg)
        with self._lock:
            self.state["status"] = f"operator stop: {msg}"
        self._print(Text(f"operator stop key: {msg}", style=ALARM))
        return msg

    def _stop_service(self) -> str:
        from std_srvs.srv import Trigger

        cli = getattr(self, "_stop_cli", None)
        if cli is None:
            cli = self._stop_cli = self.client.create_client(Trigger, "/robot/stop")
        if not cli.wait_for_service(timeout_sec=2.0):
            raise RuntimeError("/robot/stop service not available")
        fut = cli.call_async(Trigger.Request())
        t0 = time.monotonic()
        while not fut.done():
            if time.monotonic() - t0 > 5.0:  # the request is out: the robot node acts on it even if its answer is late
                return "stop requested (/robot/stop has not answered within 5 s; watch the safety row)"
            time.sleep(0.01)
        r = fut.result()
        return r.message if r.success else f"refused: {r.message}"

    # ------------------------------------------------------------------ refresh
    def _count_todo(self) -> int | None:
        from gaze4hri_core.session import load_manifest

        try:
            return len(load_manifest(self.out_dir / self.subject).pending()) if self.subject else None
        except Gaze4HRIError:
            return None

    def _measured_yaw(self) -> float | None:
        head = getattr(self.client, "head", None)
        if head is None:
            return None
        try:
            if self._calib is None:
                from gaze4hri_core.calibration import load_calibration

                cal = self.out_dir / self.subject / "calibration"
                subj = self.subject if (cal / "subjects" / f"{self.subject}.yaml").is_file() else None
                self._calib = load_calibration(cal, subj)
            from .orchestrator.session import _eye_head, head_yaw_deg  # the check's own measurement

            return head_yaw_deg(head[1], self._calib.subject_forward_world, _eye_head(self._calib))
        except Gaze4HRIError:
            return None

    def _collect(self) -> None:
        d = self.client.diag
        cam = d.get("gaze4hri/camera", {})
        s = self.state
        s["camera"] = (f"{cam.get('fps_wall', '?')} fps (wall), {cam.get('frames', 0)} frames, {cam.get('dropped_frames', 0)} dropped"
                       if cam else "no diagnostics")
        mc = d.get("gaze4hri/mocap", {})
        tracked = {k.split(".", 1)[1]: v for k, v in mc.items() if k.startswith("tracked.")}
        s["mocap"] = ", ".join(f"{k} {'tracked' if v == 'True' else 'LOST'}" for k, v in tracked.items()) or "no diagnostics"
        s["mocap_lost"] = any(v != "True" for v in tracked.values())
        rb = d.get("gaze4hri/robot", {})
        pstop = rb.get("protective_stop") == "True"
        s["robot"] = (f"{'moving' if rb.get('moving') == 'True' else 'still'}{', PROTECTIVE STOP' if pstop else ''}"
                      if rb else "no diagnostics")
        s["robot_alarm"] = pstop
        s["safety"] = rb.get("safety", "?") if rb else "?"
        rec = d.get("gaze4hri/recorder", {})
        self._note_bag(rec or None)
        fault = rec.get("fault") not in (None, "None", "")
        s["recorder"] = (f"{'recording ' + str(rec.get('trial')) if rec.get('recording') == 'True' else 'idle'}, "
                         f"{_fmt_bytes(float(rec.get('bytes', 0)))}, queue {_fmt_bytes(float(rec.get('queue_bytes', 0)))}"
                         + (f", FAULT: {rec.get('fault')}" if fault else "")) if rec else "no diagnostics"
        s["recorder_fault"] = fault
        from .nodes.common import disk_free_bytes

        try:
            s["disk"] = _fmt_bytes(disk_free_bytes(self.out_dir))
        except OSError:
            s["disk"] = "?"
        now = self._clock()
        measured = self._measured_yaw() if s.get("phase") == "head_check" and s.get("head") else None  # may load files: not under the lock
        with self._lock:
            rec_t0 = self._rec_t0 if s.get("bag") == "open" else None
            s["timer"] = timer_text(now, self._trial_t0, rec_t0)
            # the renderer process ticks the timer itself between snapshots (same clock)
            s["clock"] = ({"trial_t0": self._trial_t0, "rec_t0": rec_t0, "sent": now}
                          if self._clock is time.monotonic and self._trial_t0 is not None else None)
            if self._todo is not None:
                left = max(0, self._todo - len(self.results))
                s["eta"] = (_fmt_s(left * sum(self._durations) / len(self._durations)) if self._durations
                            else "after the first trial") + f" ({left} trial{'s' if left != 1 else ''})"
            if s.get("phase") == "head_check" and s.get("head"):
                s["head"]["measured"] = measured

    def _note_bag(self, rec: dict | None) -> None:
        """``state["bag"]`` from the recorder's own diagnostics: "open" while its last
        word (no older than RECORDER_SILENT_S) says a bag is open, "closed" once the bag
        opened in this trial has closed, "silent" when the recorder said open and then
        went quiet, else None. The recording timer starts when the bag opens."""
        now = self._clock()
        if rec is not self._rec_diag:  # the client stores a new dict per message
            self._rec_diag, self._rec_diag_t = rec, now
        with self._lock:
            if rec is None:
                bag = None
            elif rec.get("recording") == "True":
                bag = "silent" if now - (self._rec_diag_t or now) > RECORDER_SILENT_S else "open"
            else:
                bag = "closed" if self._bag_was_open else None
            if bag == "open" and not self._bag_was_open:
                self._bag_was_open, self._rec_t0 = True, now
            self.state["bag"] = bag

    def _refresh(self) -> None:
        if self._live is None and self._renderer is None:
            return
        self._collect()
        with self._lock:  # a copy under the lock; rendering and the terminal write outside it
            snap = dict(self.state)
        r = self._renderer
        if r is not None:
            if r.send({"state": snap}):
                self.render_times.append(self._clock())
                return
            self._renderer_gone()
        if self._live is not None:
            self._live.update(render_status(snap), refresh=True)
            self.render_times.append(self._clock())

    def _loop(self) -> None:
        # ticks on a fixed schedule (a late tick does not push the next one a whole
        # period further); a wake-up (key, prompt) redraws at once, between ticks
        tick = time.monotonic()
        while not self._halt.is_set():
            now = time.monotonic()
            if now >= tick:
                tick = max(tick + self._period, now)
            if self._wake.wait(tick - now):
                self._wake.clear()  # a wake-up after this point is a redraw after this one
            if self._halt.is_set():
                break
            try:
                self._refresh()
            except Exception as e:  # a display error must not end the session; show it once
                self.state["status"] = f"view error: {type(e).__name__}: {e}"

    def start(self) -> None:
        """Arm the view; the table appears with the orchestrator's first hook, so an
        error before the session starts stays a single line."""
        self._armed = True
        self._start_keys_if_tty()

    def _start_keys_if_tty(self) -> None:
        # on a terminal the stop key works from the start; a pipe is read only once a
        # prompt waits (a script's input is meant for the prompts)
        try:
            tty = self._keys_stream is not None and os.isatty(self._keys_stream.fileno())
        except (AttributeError, OSError, ValueError):
            tty = False
        if tty:
            self._start_keys()

    def _terminal_fd(self) -> int | None:
        """The console's file descriptor when the table may go to a renderer process."""
        if self._render_process is False or (self._render_process is None and not self.console.is_terminal):
            return None
        try:
            fd = self.console.file.fileno()
        except (AttributeError, OSError, ValueError):
            return None
        return fd if self._render_process or os.isatty(fd) else None

    def _ensure_live(self) -> None:
        with self._out_lock:
            if self._live is not None or self._renderer is not None or not self._armed or self._halt.is_set():
                return
            fd = self._terminal_fd()
            if fd is not None:
                try:
                    self._renderer = RenderProcess(fd, 1.0 / self._period)
                except OSError:
                    self._renderer = None
            if self._renderer is not None:
                # the session process's own prints go above the table too (rich's Live does this in one process)
                self._saved_streams = (sys.stdout, sys.stderr)
                sys.stdout, sys.stderr = _StreamToRenderer(self, sys.stdout), _StreamToRenderer(self, sys.stderr)
                self._renderer.send({"state": dict(self.state)})
            else:
                self._start_live()
            self._thread = threading.Thread(target=self._loop, name="operator-view", daemon=True)
            self._thread.start()

    def _start_live(self) -> None:
        self._live = Live(render_status(self.state), console=self.console, refresh_per_second=4, transient=False,
                          auto_refresh=False)
        self._live.start()

    def _restore_streams(self) -> None:
        if self._saved_streams is not None:
            sys.stdout, sys.stderr = self._saved_streams
            self._saved_streams = None

    def _renderer_gone(self) -> None:
        """The renderer process ended early: the table is drawn in this process from now on."""
        with self._out_lock:
            if self._renderer is None:
                return
            r, self._renderer = self._renderer, None
            self._restore_streams()
            code = r.close(timeout_s=1.0)
            if not self._halt.is_set():
                self._start_live()
                with self._lock:
                    self.state["status"] = f"view: its renderer process ended (exit {code}); drawn by the session process"

    def stop(self) -> None:
        self._halt.set()
        self._wake.set()
        if self._keys is not None:
            self._keys.stop()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        with self._out_lock:
            r, self._renderer = self._renderer, None
        if r is not None:
            with self._lock:
                self.state["phase"], self.state["status"] = "idle", "session ended"
            try:
                self._collect()
                with self._lock:
                    snap = dict(self.state)
                r.send({"state": snap})
            except Exception:
                pass
            r.close()  # the renderer draws the last state, leaves the table and exits
            self._restore_streams()
        if self._live is not None:
            with self._lock:
                self.state["phase"], self.state["status"] = "idle", "session ended"
            try:
                self._collect()
                self._live.update(render_status(dict(self.state)), refresh=True)
            except Exception:
                pass
            self._live.stop()
            self._live = None

    def summary(self, session: Path, command: str | None = None) -> None:
        self.console.line()
        self.console.print(summary_table(session))
        redo = redo_command(session, command)
        if redo:
            self.console.print(Text("record the failed trials again:  ", style="bold") + Text(redo, style="bold yellow"))


def summary_table(session: Path) -> Table:
    """Final summary from session.yaml: counts per status, then every trial not done
    with its status, frames and the reason."""
    from gaze4hri_core.session import load_manifest

    m = load_manifest(session)
    by: dict[str, list] = {}
    for tid, r in m.trials.items():
        by.setdefault(r.status, []).append((tid, r))
    counts = ", ".join(f"{len(by[s])} {s}" for s in ("done", "failed", "incomplete", "recording", "pending") if by.get(s))
    t = Table(title=f"Session {m.subject}: {counts}", caption=str(session))
    t.add_column("trial")
    t.add_column("status")
    t.add_column("frames", justify="right")
    t.add_column("dropped", justify="right")
    t.add_column("reason")
    style = {"done": "green", "failed": ALARM, "incomplete": "yellow", "recording": "yellow", "pending": "dim"}
    for tid, r in m.trials.items():
        t.add_row(tid, Text(r.status, style=style.get(r.status, "")), "" if r.frames is None else str(r.frames),
                  "" if r.dropped_frames is None else str(r.dropped_frames), Text(r.reason or "", style=ALARM if r.status == "failed" else ""))
    return t


def redo_command(session: Path, command: str | None = None) -> str | None:
    """The command that records the failed and incomplete trials again, or None.
    ``command``: the session command as run (default ``gaze4hri-acq session --subject
    S --backend B --out-dir ROOT``)."""
    from gaze4hri_core.session import load_manifest

    m = load_manifest(session)
    bad = [tid for tid, r in m.trials.items() if r.status in ("failed", "incomplete")]
    if not bad:
        return None
    base = command or (f"gaze4hri-acq session --subject {shlex.quote(m.subject)} --backend {m.backend} "
                       f"--out-dir {shlex.quote(str(Path(session).parent))}")
    return f"{base} --redo {' '.join(bad)}"


if __name__ == "__main__" and sys.argv[1:2] == ["--render"]:
    sys.exit(render_main(float(sys.argv[2]) if len(sys.argv) > 2 else 4.0))
