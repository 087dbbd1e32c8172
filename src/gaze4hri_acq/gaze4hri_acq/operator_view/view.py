"""The orchestrator's operator view: the hooks it calls (trial, status, result,
message), the prompts (confirm, ask), the stop key and the final summary; device state
collected from the orchestrator node's topics and drawn by a RenderProcess on a
terminal, else by a thread of this process (rich's Live)."""
from __future__ import annotations

import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from gaze4hri_core.commands import print_command
from gaze4hri_core.errors import Gaze4HRIError
from rich.console import Console
from rich.live import Live
from rich.text import Text

from ..orchestrator.record import KEPT_UP
from .keys import KeyReader
from .render import ALARM, RECORDER_SILENT_S, fmt_bytes, fmt_s, render_status, timer_text
from .renderer import RenderProcess, StreamToRenderer, printable
from .summary import redo_command, summary_table

__all__ = ["OperatorView", "PACE_WINDOW_S"]

PACE_WINDOW_S = 5.0  # the simulation's pace is measured over this much wall time


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
                 clock: Callable[[], float] = time.monotonic, render_process: bool | None = None,
                 sim_rate: float | None = None):
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
        # a simulated session's requested pace, and (wall s, device ns) samples of the last PACE_WINDOW_S
        self._sim_rate = sim_rate
        self._pace: deque[tuple[float, int]] = deque()
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
            self.state["trial"] = (f"{i}/{n}  {trial.trial_id}  "
                                   f"({trial.experiment}, {trial.condition}, target {trial.target})")
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

    def _print(self, obj, soft: bool = False) -> None:
        """A line above the table: through the renderer process when it draws, else here;
        ``soft``: without line breaks at the terminal's width."""
        r = self._renderer
        if r is not None:
            if r.send(printable(obj, soft)):
                return
            self._renderer_gone()
        self.console.print(obj, soft_wrap=soft)

    def confirm(self, prompt: str) -> None:
        """Show WAITING FOR OPERATOR with ``prompt`` and block until Enter (the key
        reader), the session's stop flag (raises Interrupted) or the end of input."""
        from ..orchestrator.client import Interrupted

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

        if getattr(self.client, "lifecycle_over_bus", False):  # the devices' process is bridged, not on DDS (split.py)
            self.client.request("robot", "stop", timeout_s=5.0, reason="stop service")  # as /robot/stop says it
            return "robot stopped"
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
            from ..orchestrator.session import _eye_head, head_yaw_deg  # the check's own measurement

            return head_yaw_deg(head[1], self._calib.subject_forward_world, _eye_head(self._calib))
        except Gaze4HRIError:
            return None

    def _collect(self) -> None:
        d = self.client.diag
        cam = d.get("gaze4hri/camera", {})
        s = self.state
        s["camera"] = (f"{cam.get('fps_wall', '?')} fps (wall), {cam.get('frames', 0)} frames, "
                       f"{cam.get('dropped_frames', 0)} dropped" if cam else "no diagnostics")
        mc = d.get("gaze4hri/mocap", {})
        tracked = {k.split(".", 1)[1]: v for k, v in mc.items() if k.startswith("tracked.")}
        s["mocap"] = (", ".join(f"{k} {'tracked' if v == 'True' else 'LOST'}" for k, v in tracked.items())
                      or "no diagnostics")
        s["mocap_lost"] = any(v != "True" for v in tracked.values())
        rb = d.get("gaze4hri/robot", {})
        pstop = rb.get("protective_stop") == "True"
        s["robot"] = (f"{'moving' if rb.get('moving') == 'True' else 'still'}{', PROTECTIVE STOP' if pstop else ''}"
                      + (f", head distance by {rb['eye_source']}" if rb.get("eye_source", "-") != "-" else "")
                      if rb else "no diagnostics")
        s["robot_alarm"] = pstop
        s["safety"] = rb.get("safety", "?") if rb else "?"
        rec = d.get("gaze4hri/recorder", {})
        self._note_bag(rec or None)
        fault = rec.get("fault") not in (None, "None", "")
        s["recorder"] = (f"{'recording ' + str(rec.get('trial')) if rec.get('recording') == 'True' else 'idle'}, "
                         f"{fmt_bytes(float(rec.get('bytes', 0)))}, queue {fmt_bytes(float(rec.get('queue_bytes', 0)))}"
                         + (f", FAULT: {rec.get('fault')}" if fault else "")) if rec else "no diagnostics"
        s["recorder_fault"] = fault
        from ..nodes.common import disk_free_bytes

        try:
            s["disk"] = fmt_bytes(disk_free_bytes(self.out_dir))
        except OSError:
            s["disk"] = "?"
        now = self._clock()
        self._note_pace(now)
        # the measurement may load files: not under the lock
        measured = self._measured_yaw() if s.get("phase") == "head_check" and s.get("head") else None
        with self._lock:
            rec_t0 = self._rec_t0 if s.get("bag") == "open" else None
            s["timer"] = timer_text(now, self._trial_t0, rec_t0)
            # the renderer process ticks the timer itself between snapshots (same clock)
            s["clock"] = ({"trial_t0": self._trial_t0, "rec_t0": rec_t0, "sent": now}
                          if self._clock is time.monotonic and self._trial_t0 is not None else None)
            if self._todo is not None:
                left = max(0, self._todo - len(self.results))
                s["eta"] = (fmt_s(left * sum(self._durations) / len(self._durations)) if self._durations
                            else "after the first trial") + f" ({left} trial{'s' if left != 1 else ''})"
            if s.get("phase") == "head_check" and s.get("head"):
                s["head"]["measured"] = measured

    def _note_pace(self, now: float) -> None:
        """``state["pace"]``: how fast the simulated clock ran over the last PACE_WINDOW_S of wall time
        (device time from the robot's state), against the requested factor; alarm below KEPT_UP of it."""
        if not self._sim_rate:
            return
        self._pace.append((now, int(getattr(self.client, "device_ns", 0) or 0)))
        while len(self._pace) > 2 and now - self._pace[1][0] >= PACE_WINDOW_S:
            self._pace.popleft()
        (w0, d0), (w1, d1) = self._pace[0], self._pace[-1]
        if w1 - w0 < 1.0 or not d0:
            return
        factor = (d1 - d0) / 1e9 / (w1 - w0)
        with self._lock:
            self.state["pace"] = f"{factor:.1f}x real time (requested {self._sim_rate:g}x)"
            self.state["pace_slow"] = factor < KEPT_UP * self._sim_rate

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
                sys.stdout = StreamToRenderer(self._print, sys.stdout)
                sys.stderr = StreamToRenderer(self._print, sys.stderr)
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
                    self.state["status"] = (f"view: its renderer process ended (exit {code}); "
                                            "drawn by the session process")

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
        """The final summary (summary_table) and, when some trial failed, the command that records it again."""
        self.console.line()
        self.console.print(summary_table(session))
        redo = redo_command(session, command)
        if redo:  # on a line of its own, never broken at the terminal's width: it is copied to run
            print_command(redo, "record the failed trials again:", console=self.console, style="bold yellow")


