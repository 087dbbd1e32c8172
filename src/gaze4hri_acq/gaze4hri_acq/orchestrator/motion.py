"""The robot's motions in a trial: sending one (the approach to the start pose, the
camera's motion while recording) and waiting for it to finish.

``wait_motion`` is the one place a trial waits for a motion; its deadline is
``motion_timeout_s`` of wall time from the wait's start.
"""
from __future__ import annotations

import time

from ..nodes.robot_node import move_to_json
from .client import DeviceClient
from .errors import TrialFailed

__all__ = ["move", "wait_motion"]


def move(cfg, client: DeviceClient, motion, check, wait: bool = True) -> None:
    """Send ``motion`` to the robot node; with ``wait``, return when it has finished."""
    client.motion_done.pop(motion.name, None)
    ack = client.request("robot", "move", move=move_to_json(motion), timeout_s=15.0)
    if wait:
        wait_motion(cfg, client, motion.name, check, float(ack.get("duration_s", 10.0)))


def wait_motion(cfg, client: DeviceClient, name: str, check, duration_s: float | None = None) -> None:
    """Until the robot reports motion ``name`` done (``client.motion_done``), calling
    ``check`` (faults, interrupts) meanwhile; a trial failure past the deadline.
    ``duration_s``: the robot's previewed duration of the motion (not used yet)."""
    deadline = time.monotonic() + cfg.motion_timeout_s
    while name not in client.motion_done:
        check()
        if time.monotonic() > deadline:
            raise TrialFailed(f"robot motion '{name}' did not finish within {cfg.motion_timeout_s:.0f} s")
        time.sleep(0.01)
