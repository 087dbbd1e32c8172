"""``gaze4hri-acq doctor``: one table of pass / warn / fail checks of the robot, camera,
motion capture, calibration and host, each with the value measured and the fix; the
session runs the same checks at start-up (docs/acquisition.md, "Lab day").

One module per device group (robot, camera, mocap, calibration, host; sim for the
simulated lab's reports): each gathers what the client library reports into a frozen
report, and pure functions turn a report into checks (record.Check); render.py draws the
table or the JSON; run.py ties them to a SessionConfig; cli.py is the command."""
from __future__ import annotations

from .record import Check, exit_code, failures
from .render import render_json, render_table
from .run import DoctorTargets, run_doctor, startup_checks

__all__ = ["Check", "exit_code", "failures", "render_json", "render_table", "DoctorTargets", "run_doctor",
           "startup_checks"]
