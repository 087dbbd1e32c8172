"""Live terminal status for the operator (rich): trial i/N and its prompt, camera fps
and drops, motion-capture tracking, robot state, safety state, disk left; and the
final summary. Everything shown comes from topics the orchestrator node receives
(diagnostics, events), so it shows the same under ros2 launch."""
from __future__ import annotations

import threading
from pathlib import Path

from gaze4hri_core.session import load_manifest
from rich.console import Console
from rich.live import Live
from rich.table import Table

from .nodes.common import disk_free_bytes

__all__ = ["OperatorView", "render_status", "summary_table"]


def _fmt_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def render_status(state: dict) -> Table:
    """One table from a plain state dict (tested without a terminal)."""
    t = Table(title="Gaze4HRI acquisition", show_header=False, expand=False)
    t.add_column("what", style="bold")
    t.add_column("value")
    t.add_row("trial", state.get("trial", "-"))
    t.add_row("prompt", state.get("prompt", "-"))
    t.add_row("status", state.get("status", "-"))
    t.add_row("camera", state.get("camera", "-"))
    t.add_row("motion capture", state.get("mocap", "-"))
    t.add_row("robot", state.get("robot", "-"))
    t.add_row("safety", state.get("safety", "-"))
    t.add_row("recorder", state.get("recorder", "-"))
    t.add_row("disk left", state.get("disk", "-"))
    if state.get("last"):
        t.add_row("last trial", state["last"])
    return t


class OperatorView:
    """Refreshes a rich Live table from the orchestrator node's state (4 Hz)."""

    def __init__(self, client, out_dir: Path, console: Console | None = None):
        self.client = client
        self.out_dir = Path(out_dir)
        self.console = console or Console(stderr=True)
        self.state: dict = {}
        self._live: Live | None = None
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None
        self.results: list[tuple[str, str, str | None]] = []

    # hooks called by the orchestrator; the live table appears with the first one, so
    # an error before the session starts stays a single line
    def trial(self, i: int, n: int, trial, prompt: str) -> None:
        self._ensure_live()
        self.state["trial"] = f"{i}/{n}  {trial.trial_id}  ({trial.experiment}, {trial.condition}, target {trial.target})"
        self.state["prompt"] = prompt

    def status(self, text: str) -> None:
        self._ensure_live()
        self.state["status"] = text

    def result(self, trial_id: str, status: str, reason: str | None) -> None:
        self.results.append((trial_id, status, reason))
        self.state["last"] = f"{trial_id}: {status}" + (f" ({reason})" if reason else "")

    def message(self, text: str) -> None:
        self.console.print(text)

    # refresh
    def _collect(self) -> None:
        d = self.client.diag
        cam = d.get("gaze4hri/camera", {})
        self.state["camera"] = f"{cam.get('fps_wall', '?')} fps (wall), {cam.get('frames', 0)} frames, {cam.get('dropped_frames', 0)} dropped" if cam else "no diagnostics"
        mc = d.get("gaze4hri/mocap", {})
        tracked = {k.split(".", 1)[1]: v for k, v in mc.items() if k.startswith("tracked.")}
        self.state["mocap"] = ", ".join(f"{k} {'tracked' if v == 'True' else 'LOST'}" for k, v in tracked.items()) or "no diagnostics"
        rb = d.get("gaze4hri/robot", {})
        self.state["robot"] = (f"{'moving' if rb.get('moving') == 'True' else 'still'}"
                               f"{', PROTECTIVE STOP' if rb.get('protective_stop') == 'True' else ''}") if rb else "no diagnostics"
        self.state["safety"] = rb.get("safety", "?") if rb else "?"
        rec = d.get("gaze4hri/recorder", {})
        self.state["recorder"] = (f"{'recording ' + str(rec.get('trial')) if rec.get('recording') == 'True' else 'idle'}, "
                                  f"{_fmt_bytes(float(rec.get('bytes', 0)))}, queue {_fmt_bytes(float(rec.get('queue_bytes', 0)))}"
                                  + (f", FAULT: {rec.get('fault')}" if rec.get("fault") not in (None, "None") else "")) if rec else "no diagnostics"
        try:
            self.state["disk"] = _fmt_bytes(disk_free_bytes(self.out_dir))
        except OSError:
            self.state["disk"] = "?"

    def _loop(self) -> None:
        while not self._halt.wait(0.25):
            self._collect()
            if self._live is not None:
                self._live.update(render_status(self.state))

    def start(self) -> None:
        """Arm the view; the table appears with the orchestrator's first status."""
        self._armed = True

    def _ensure_live(self) -> None:
        if self._live is not None or not getattr(self, "_armed", False) or self._halt.is_set():
            return
        self._live = Live(render_status(self.state), console=self.console, refresh_per_second=4, transient=False)
        self._live.start()
        self._thread = threading.Thread(target=self._loop, name="operator-view", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        if self._live is not None:
            self._live.stop()
            self._live = None

    def summary(self, session: Path) -> None:
        self.console.print(summary_table(session))


def summary_table(session: Path) -> Table:
    """Final summary from session.yaml: counts per status, frames, failures with reasons."""
    m = load_manifest(session)
    t = Table(title=f"Session {m.subject}: {session}")
    t.add_column("status")
    t.add_column("trials", justify="right")
    t.add_column("frames", justify="right")
    t.add_column("dropped", justify="right")
    by: dict[str, list] = {}
    for tid, r in m.trials.items():
        by.setdefault(r.status, []).append((tid, r))
    for status in ("done", "failed", "incomplete", "recording", "pending"):
        rs = by.get(status, [])
        if rs:
            t.add_row(status, str(len(rs)), str(sum(r.frames or 0 for _, r in rs)), str(sum(r.dropped_frames or 0 for _, r in rs)))
    for tid, r in by.get("failed", []) + by.get("incomplete", []):
        t.add_row(f"  {tid}", r.status, "", r.reason or "")
    return t
