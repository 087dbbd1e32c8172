"""What the orchestrator tells the operator: the instruction for each trial, and the
interface of the view that shows trials, status and results (no-op by default)."""
from __future__ import annotations

from gaze4hri_core.protocol import Trial

__all__ = ["NullView", "say", "prompt_text"]


class NullView:
    """What the orchestrator tells the operator view (no-op by default)."""

    def trial(self, i: int, n: int, trial: Trial, prompt: str) -> None: ...
    def status(self, text: str) -> None: ...
    def result(self, trial_id: str, status: str, reason: str | None) -> None: ...
    def message(self, text: str) -> None: ...


def say(view, text: str) -> None:
    """A session line the operator reads whether or not the live view runs, printed
    once: by the view when it shows messages itself (``shows_messages``: the operator
    view prints above its live panel), else on stdout (``--quiet``, the null view)."""
    view.message(text)
    if not getattr(view, "shows_messages", False):
        print(text, flush=True)


def prompt_text(t: Trial) -> str:
    """The operator's instruction for one trial (what the subject is told and the light)."""
    light = f"set the light to {t.illumination} %"
    if t.experiment == "conflict":
        side = {"left": "left (+25 deg yaw)", "center": "straight ahead (0 deg)",
                "right": "right (-25 deg yaw)"}[t.condition]
        return f"{light}, ask the subject to turn the head {side}, keep it still and look at {t.target}, press Enter"
    if t.experiment == "mutual":
        axis = "horizontally" if t.camera_motion.axis == "h" else "vertically"
        return (f"{light}, ask the subject to look into the camera while it moves {axis} "
                f"({t.camera_motion.speed_mps} m/s), press Enter")
    if t.experiment == "viewpoint":
        return f"{light}, ask the subject to look at {t.target} while the camera moves on the arc, press Enter"
    return f"{light}, ask the subject to look at {t.target}, press Enter"
