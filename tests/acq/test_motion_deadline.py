"""Motion deadlines from the motion (issue 31): the orchestrator waits for each motion until
its previewed duration plus a stated margin of device time, catches a stalled tool within
STALL_S of device time, and bounds only a silent robot state stream by wall time.

The unit tests drive ``wait_motion`` with a client whose device clock and tool position are
scripted; the node test holds the simulated arm at speed scaling 0 mid-raster."""
from __future__ import annotations

import time
from types import SimpleNamespace

import pytest

pytest.importorskip("rclpy")
from gaze4hri_acq.orchestrator.errors import TrialFailed  # noqa: E402
from gaze4hri_acq.orchestrator.motion import (  # noqa: E402
    MOTION_MARGIN_FRACTION,
    MOTION_MARGIN_S,
    STALL_S,
    MotionRun,
    wait_motion,
)


class ScriptedRobot:
    """A DeviceClient's motion view: each ``wait_state`` advances the device clock ``step_s``
    (``wall_per_step_s`` of wall time) and moves the tool by ``speed(t)`` m/s along x; the
    motion is reported done at ``done_at_s`` of device time (None: never)."""

    def __init__(self, speed, done_at_s: float | None, step_s: float = 0.05, wall_per_step_s: float = 0.0,
                 frozen_after_s: float | None = None):
        self.device_ns, self.tcp_xyz = 1_000_000_000, (0.4, 0.0, 0.3)
        self.motion_done, self.motion_start = {}, {"line_h": 1_000_000_000}
        self._speed, self._done_at, self._step, self._wall, self._frozen = (speed, done_at_s, step_s,
                                                                            wall_per_step_s, frozen_after_s)

    def t(self) -> float:
        return (self.device_ns - 1_000_000_000) / 1e9

    def wait_state(self, timeout_s: float) -> None:
        if self._wall:
            time.sleep(self._wall)
        if self._frozen is not None and self.t() >= self._frozen:
            time.sleep(timeout_s)  # no state arrives: the device clock stands still
            return
        x = self.tcp_xyz[0] + self._speed(self.t()) * self._step
        self.device_ns += int(self._step * 1e9)
        self.tcp_xyz = (x, 0.0, 0.3)
        if self._done_at is not None and self.t() >= self._done_at:
            self.motion_done["line_h"] = self.device_ns


CFG = SimpleNamespace(motion_timeout_s=60.0)
RUN = MotionRun("line_h", 1_000_000_000, 36.0)  # mutual_h_slow's raster: 36 s of motion


def moving(_t: float) -> float:
    return 0.05


@pytest.mark.unit
def test_a_motion_slower_than_real_time_is_waited_for_in_device_time():
    """The simulated lab under load: 36 s of device time take longer in wall time than
    they would at real time; the motion ends at its previewed time plus a second, and passes."""
    robot = ScriptedRobot(moving, done_at_s=37.0, step_s=0.5, wall_per_step_s=0.005)
    wait_motion(CFG, robot, RUN, check=lambda: None)
    assert robot.motion_done and robot.t() == pytest.approx(37.0)


@pytest.mark.unit
def test_a_motion_that_does_not_finish_fails_at_its_duration_plus_margin():
    robot = ScriptedRobot(moving, done_at_s=None)
    with pytest.raises(TrialFailed, match=r"'line_h' did not finish within 47\.0 s of device time \(previewed 36\.0"):
        wait_motion(CFG, robot, RUN, check=lambda: None)
    allowed = RUN.duration_s * (1 + MOTION_MARGIN_FRACTION) + MOTION_MARGIN_S
    assert allowed == 47.0 and allowed < robot.t() <= allowed + 0.1


@pytest.mark.unit
def test_a_tool_that_stops_moving_fails_within_the_stall_time():
    """Held at 10 s into its 36 s (speed scaling 0: moving, no fault): failed STALL_S later."""
    robot = ScriptedRobot(lambda t: 0.05 if t < 10.0 else 0.0, done_at_s=None)
    with pytest.raises(TrialFailed, match=r"'line_h' stalled: the tool has not moved for 2\.\d s of device time"):
        wait_motion(CFG, robot, RUN, check=lambda: None)
    assert 10.0 + STALL_S < robot.t() <= 10.0 + STALL_S + 0.2


@pytest.mark.unit
def test_a_stop_at_a_corner_is_not_a_stall():
    """The raster stops for an instant at each corner (trapezoid per side): shorter than STALL_S, no failure."""
    robot = ScriptedRobot(lambda t: 0.0 if 10.0 <= t < 10.0 + STALL_S - 0.5 else 0.05, done_at_s=36.2)
    wait_motion(CFG, robot, RUN, check=lambda: None)
    assert robot.motion_done


@pytest.mark.unit
def test_at_rest_after_the_planned_end_only_the_deadline_applies():
    """Past its previewed duration the tool is at its goal: waiting for the robot's done is not a stall."""
    robot = ScriptedRobot(lambda t: 0.05 if t < 36.0 else 0.0, done_at_s=39.5)
    wait_motion(CFG, robot, RUN, check=lambda: None)
    assert robot.motion_done


@pytest.mark.unit
def test_a_silent_robot_fails_after_motion_timeout_s_of_wall_time():
    robot = ScriptedRobot(moving, done_at_s=None, frozen_after_s=1.0)
    t0 = time.monotonic()
    with pytest.raises(TrialFailed, match=r"no robot state for 0\.3 s \(device time stopped advancing\)"):
        wait_motion(SimpleNamespace(motion_timeout_s=0.3), robot, RUN, check=lambda: None)
    assert 0.3 <= time.monotonic() - t0 < 3.0


@pytest.mark.unit
def test_faults_and_interrupts_end_the_wait():
    robot = ScriptedRobot(moving, done_at_s=None)

    def check():
        if robot.t() > 3.0:
            raise TrialFailed("robot: protective stop")

    with pytest.raises(TrialFailed, match="protective stop"):
        wait_motion(CFG, robot, RUN, check=check)


@pytest.mark.node
def test_a_held_arm_fails_its_trial_within_the_stall_time(tmp_path, monkeypatch):
    """The simulated arm held at speed scaling 0 one second into mutual_v_fast's raster (the
    controller reports moving, no fault: the pendant's slider at 0): the trial fails as
    stalled STALL_S of device time later, not after a wall-clock timeout."""
    from gaze4hri_acq.simulate import run_sim_session
    from gaze4hri_core.session import load_manifest
    from gaze4hri_sim.arm import SimArm

    move_linear, tick = SimArm.move_linear, SimArm._tick

    def move_and_plan_hold(self, waypoints, *a, **k):
        duration = move_linear(self, waypoints, *a, **k)
        if len(waypoints) > 1:  # the raster (the approach is one waypoint)
            self.hold_at_ns = self._t + 1_000_000_000
        return duration

    def held_tick(self, t):
        if getattr(self, "hold_at_ns", None) is not None and t >= self.hold_at_ns:
            self.speed_scaling = 0.0
        tick(self, t)

    monkeypatch.setattr(SimArm, "move_linear", move_and_plan_hold)
    monkeypatch.setattr(SimArm, "_tick", held_tick)
    sdir = run_sim_session(tmp_path, subject="S05", trial_ids=["mutual_v_fast"], resolution=(160, 90),
                           trial_seconds=0.5, real_time_factor=50, device_process="no")  # the patched arm is here
    rec = load_manifest(sdir).trials["mutual_v_fast"]
    assert rec.status == "failed", rec
    import re

    m = re.search(r"robot motion '(\w+)' stalled: the tool has not moved for ([\d.]+) s of device time, "
                  r"([\d.]+) s into its previewed ([\d.]+) s", rec.reason or "")
    assert m, rec.reason
    still, into, planned = (float(x) for x in m.groups()[1:])
    assert STALL_S <= still <= STALL_S + 0.1 and 1.0 + STALL_S <= into <= 1.0 + STALL_S + 0.3 < planned
