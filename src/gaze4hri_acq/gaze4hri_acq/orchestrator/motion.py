"""The robot's motions in a trial: sending one (the approach to the start pose, the
camera's motion while recording) and waiting for it to finish.

``wait_motion`` is the one place a trial waits for a motion. Its deadlines are counted in
device time, the stamps of the robot's state stream (the simulated clock in sim, the
controller's clock on the robot), so a simulated lab that runs slower than real time under
load is given the time its motions take (issue 31: a 36 s raster failed a fixed 60 s of wall
time). A motion fails its trial when
- it has not reported done ``MOTION_MARGIN_S + MOTION_MARGIN_FRACTION x`` its previewed
  duration after it started, or
- the tool has not moved ``STALL_TOLERANCE_M`` for ``STALL_S`` while the motion is still
  planned to run (an arm held at speed scaling 0, a program that does not run), or
- the device time has not advanced for ``motion_timeout_s`` of wall time (no robot state:
  the one wall-clock bound, for a stream that stopped).
"""
from __future__ import annotations

import time
from typing import NamedTuple

import numpy as np

from ..nodes.robot_node import move_to_json
from .client import DeviceClient
from .errors import TrialFailed

__all__ = ["move", "wait_motion", "MotionRun", "MOTION_MARGIN_S", "MOTION_MARGIN_FRACTION", "STALL_S",
           "STALL_TOLERANCE_M"]

#: device time a motion may take beyond its previewed duration, fixed part: the controller's
#: start latency (an RTDE cycle), the robot node's done (at rest for two state samples) and the
#: orchestrator's view of both over DDS are ms; 2 s leaves room for a loaded machine's delivery
MOTION_MARGIN_S = 2.0
#: and proportional part: a real controller runs the planned trapezoid slower when its speed
#: scaling is below 100 % (the pendant's slider, reduced mode); 25 % allows a slider at 80 %
MOTION_MARGIN_FRACTION = 0.25
#: device time the tool may stay put while its motion is planned to be running: the protocol's
#: motions stop only for an instant at a raster's corners, so 2 s without progress is a stall
STALL_S = 2.0
#: how far the tool must move to count as progress (m): above the encoders' and the simulated
#: arm's noise at rest (um), well below the distance of one 125 Hz sample at 1 cm/s (80 um x 12)
STALL_TOLERANCE_M = 0.001
#: how long a move's acknowledgement may take: the robot node answers once it has previewed
#: the whole motion with the safety monitor (every 20 ms sample through the inverse kinematics:
#: 11 s for mutual_h_slow's 36 s raster at a load of 8 on 2 cores), so this bounds only a node
#: that stopped answering (15 s was reached under ros2 launch, issue 31)
MOVE_ACK_PATIENCE_S = 120.0


class MotionRun(NamedTuple):
    """A motion sent to the robot: its name, when it started (device time, ns) and its previewed duration (s)."""

    name: str
    start_ns: int
    duration_s: float


def move(cfg, client: DeviceClient, motion, check, wait: bool = True) -> MotionRun:
    """Send ``motion`` to the robot node; with ``wait``, return when it has finished.
    Returns what :func:`wait_motion` needs to wait for it later."""
    client.motion_done.pop(motion.name, None)
    client.motion_start.pop(motion.name, None)
    sent_ns = client.device_ns  # the start, until the robot node's motion_start stamp arrives (never earlier)
    ack = client.request("robot", "move", move=move_to_json(motion), timeout_s=MOVE_ACK_PATIENCE_S)
    run = MotionRun(motion.name, sent_ns, float(ack["duration_s"]))
    if wait:
        wait_motion(cfg, client, run, check)
    return run


def wait_motion(cfg, client: DeviceClient, run: MotionRun, check) -> None:
    """Until the robot reports ``run`` done (``client.motion_done``), calling ``check``
    (faults, interrupts) meanwhile; a trial failure at a deadline of the module's doc."""
    name = run.name
    stall = _Progress(client.tcp_xyz)
    seen_ns, seen_wall = client.device_ns, time.monotonic()
    while name not in client.motion_done:
        check()
        now = client.device_ns
        if now != seen_ns:
            seen_ns, seen_wall = now, time.monotonic()
        elif time.monotonic() - seen_wall > cfg.motion_timeout_s:
            raise TrialFailed(f"robot motion '{name}': no robot state for {cfg.motion_timeout_s:g} s "
                              "(device time stopped advancing)")
        t0 = client.motion_start.get(name, run.start_ns)
        elapsed = (now - t0) / 1e9
        allowed = run.duration_s + MOTION_MARGIN_S + MOTION_MARGIN_FRACTION * run.duration_s
        if elapsed > allowed:
            raise TrialFailed(f"robot motion '{name}' did not finish within {allowed:.1f} s of device time "
                              f"(previewed {run.duration_s:.1f} s)")
        still = stall.update(client.tcp_xyz, now)
        if still > STALL_S and elapsed < run.duration_s:
            raise TrialFailed(f"robot motion '{name}' stalled: the tool has not moved for {still:.1f} s of device "
                              f"time, {elapsed:.1f} s into its previewed {run.duration_s:.1f} s")
        client.wait_state(0.02)


class _Progress:
    """How long (device time, s) the tool has stayed within ``STALL_TOLERANCE_M`` of where it last moved to."""

    def __init__(self, xyz):
        self._at = None if xyz is None else np.array(xyz, float)
        self._since: int | None = None

    def update(self, xyz, now_ns: int) -> float:
        if xyz is None:
            return 0.0
        xyz = np.asarray(xyz, float)
        if self._at is None or float(np.linalg.norm(xyz - self._at)) > STALL_TOLERANCE_M:
            self._at, self._since = xyz.copy(), now_ns
            return 0.0
        if self._since is None:
            self._since = now_ns
        return (now_ns - self._since) / 1e9
