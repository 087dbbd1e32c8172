"""How a trial ends early, besides the operator's interrupt (client.Interrupted)."""
from __future__ import annotations

from gaze4hri_core.errors import SessionError

__all__ = ["TrialFailed", "DiskFullBeforeTrial"]


class TrialFailed(Exception):
    """A trial failed (device fault, head-pose check, motion or stream timeout): it is
    marked failed with this reason and the session goes on."""


class DiskFullBeforeTrial(SessionError):
    """Too little room to start a trial: the session ends, the trial stays pending."""
