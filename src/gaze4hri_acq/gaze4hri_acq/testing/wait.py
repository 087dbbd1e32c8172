"""Readiness waits for the acquisition tests: poll until a condition holds, with a
generous deadline (a loaded machine is not a fault), failing with what was awaited."""
from __future__ import annotations

import time

__all__ = ["wait_for"]


def wait_for(predicate, timeout_s: float, what: str, period_s: float = 0.005):
    """Poll ``predicate`` until true (returns its value) or fail after ``timeout_s``."""
    t_end = time.monotonic() + timeout_s
    while time.monotonic() < t_end:
        v = predicate()
        if v:
            return v
        time.sleep(period_s)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")
