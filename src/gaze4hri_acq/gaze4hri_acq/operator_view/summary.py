"""The session's final summary from session.yaml: every trial not done with its status
and reason, and the command that records the failed and incomplete ones again."""
from __future__ import annotations

from pathlib import Path

from gaze4hri_core.commands import command_line
from rich.table import Table
from rich.text import Text

from .render import ALARM

__all__ = ["summary_table", "redo_command"]


def summary_table(session: Path) -> Table:
    """Final summary from session.yaml: counts per status, then every trial not done
    with its status, frames and the reason."""
    from gaze4hri_core.session import load_manifest

    m = load_manifest(session)
    by: dict[str, list] = {}
    for tid, r in m.trials.items():
        by.setdefault(r.status, []).append((tid, r))
    order = ("done", "failed", "incomplete", "recording", "pending")
    counts = ", ".join(f"{len(by[s])} {s}" for s in order if by.get(s))
    t = Table(title=f"Session {m.subject}: {counts}", caption=str(session))
    t.add_column("trial")
    t.add_column("status")
    t.add_column("frames", justify="right")
    t.add_column("dropped", justify="right")
    t.add_column("reason")
    style = {"done": "green", "failed": ALARM, "incomplete": "yellow", "recording": "yellow", "pending": "dim"}
    for tid, r in m.trials.items():
        t.add_row(tid, Text(r.status, style=style.get(r.status, "")), "" if r.frames is None else str(r.frames),
                  "" if r.dropped_frames is None else str(r.dropped_frames),
                  Text(r.reason or "", style=ALARM if r.status == "failed" else ""))
    return t


def redo_command(session: Path, command: str | None = None) -> str | None:
    """The command that records the failed and incomplete trials again, or None; quoted
    so that it runs as printed. ``command``: the session command as run, already a shell
    line (default ``gaze4hri-acq session --subject S --backend B --out-dir ROOT``)."""
    from gaze4hri_core.session import load_manifest

    m = load_manifest(session)
    bad = [tid for tid, r in m.trials.items() if r.status in ("failed", "incomplete")]
    if not bad:
        return None
    base = command or command_line(["gaze4hri-acq", "session", "--subject", m.subject, "--backend", m.backend,
                                    "--out-dir", Path(session).parent])
    return f"{base} {command_line(['--redo', *bad])}"
