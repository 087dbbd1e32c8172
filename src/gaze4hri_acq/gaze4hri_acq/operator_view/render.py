"""The operator view's table from a plain state dict: the phase in words, the head-yaw
gauge, the trial timer and the device rows (alarms in red). Pure rendering, no I/O:
the session process and the renderer process draw the same table from it."""
from __future__ import annotations

import math

from rich.console import Group
from rich.table import Table
from rich.text import Text

__all__ = ["PHASES", "NOT_OPEN", "RECORDER_SILENT_S", "KEYS_HELP", "ALARM", "fmt_bytes", "fmt_s", "timer_text",
           "yaw_gauge", "phase_label", "render_status"]

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


def fmt_bytes(n: float) -> str:
    for unit in ("B", "kB", "MB", "GB", "TB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"


def fmt_s(s: float | None) -> str:
    if s is None or not math.isfinite(s):
        return "-"
    s = int(round(s))
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def timer_text(now: float, trial_t0: float | None, rec_t0: float | None) -> str:
    """The time row's trial timer: since the operator confirmed (or the trial began),
    and since the bag opened while it is open."""
    if trial_t0 is None:
        return "-"
    return fmt_s(now - trial_t0) + (f" (recording {fmt_s(now - rec_t0)})" if rec_t0 is not None else "")


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
        stop_style = "bold white on red" if state.get("stop_pending") else ALARM
        t.add_row("operator stop", Text(state["stop"], style=stop_style))
    if state.get("phase") == "head_check" and state.get("head"):
        h = state["head"]
        t.add_row("head yaw", yaw_gauge(h.get("measured"), h["target"], h["tol"]))
    t.add_row("time", f"trial {state.get('timer', '-')}   session left {state.get('eta', '-')}")
    if state.get("pace"):
        t.add_row("simulation", Text(state["pace"] + (": SLOWER than requested" if state.get("pace_slow") else ""),
                                     style=ALARM if state.get("pace_slow") else ""))
    t.add_row("camera", state.get("camera", "-"))
    t.add_row("motion capture", Text(state.get("mocap", "-"), style=ALARM if state.get("mocap_lost") else ""))
    t.add_row("robot", Text(state.get("robot", "-"), style=ALARM if state.get("robot_alarm") else ""))
    safety = state.get("safety", "-")
    if state.get("stop_pending"):  # the robot's last word predates the operator's stop
        t.add_row("safety", Text(f"{safety} (before the STOP; the robot has not answered yet)", style="bold yellow"))
    else:
        safety_style = ALARM if safety not in ("ok", "-", "?") else "green" if safety == "ok" else ""
        t.add_row("safety", Text(safety, style=safety_style))
    t.add_row("recorder", Text(state.get("recorder", "-"), style=ALARM if state.get("recorder_fault") else ""))
    t.add_row("disk left", state.get("disk", "-"))
    if state.get("last"):
        t.add_row("last trial", Text(state["last"], style=ALARM if state.get("last_failed") else "green"))
    if state.get("counts"):
        t.add_row("this run", state["counts"])
    return Group(t, Text(state.get("keys", KEYS_HELP), style="dim"))

