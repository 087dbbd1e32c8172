"""Live terminal view for the operator (rich) and the session's final summary.

What the operator sees, in one table redrawn at 4 Hz and at once when a key is read;
on a terminal by a process of its own fed state snapshots (RenderProcess), so it keeps
moving while the orchestrator blocks in bring-up, the eye-head calibration or a device
request and while the session's other threads keep this process's GIL busy
(docs/perf/operator_view.md); otherwise by a thread of this process:

- the phase in words: WAITING FOR OPERATOR (with the prompt and "press Enter"),
  bringing up devices, moving to the start pose, HEAD-POSE CHECK, RECORDING; RECORDING
  only while the recorder's own diagnostics say its bag is open (not while the
  orchestrator merely means to record: before the bag opens and after it closes the
  row says so);
- during the head-pose check a gauge with the measured head yaw next to the target
  band, and which way the subject should turn, so the operator can coach;
- the trial timer and the session's estimated time left (mean wall time of this run's
  finished trials x trials left);
- camera, motion capture, robot, safety, recorder and disk; a lost head band, a
  protective stop, a safety stop, a recorder fault and failed trials in red;
- the keys: Enter confirms a prompt, ``s`` stops the robot through the ``/robot/stop``
  service (the same path as ``ros2 service call /robot/stop std_srvs/srv/Trigger``;
  the running trial fails with the robot's fault reason and the session goes on to
  the next prompt), Ctrl-C ends the session (the running trial is marked incomplete).
  The stop key is acknowledged on screen when it is read ("STOP sent"); the service
  call runs in its own thread and the robot's answer replaces it when it comes.

Device state comes from the topics the orchestrator node receives (diagnostics,
head pose), so the view shows the same under ``ros2 launch``. The final summary lists
every trial with its status and reason and prints the ``--redo`` command for failed
or incomplete ones, unwrapped on a line of its own (gaze4hri_core.commands).

Modules: render (the table from a state dict), keys (the key reader), renderer (the
renderer process), view (OperatorView), summary (the final summary and the redo command).
"""
from __future__ import annotations

# gaze4hri_core.session (calibration, scipy: ~1 s) and ..nodes.common (rclpy) are imported
# where used: the renderer process (``python -m gaze4hri_acq.operator_view``) needs rich only
from .keys import KeyReader
from .render import PHASES, phase_label, render_status, timer_text, yaw_gauge
from .renderer import RenderProcess, render_main
from .summary import redo_command, summary_table
from .view import OperatorView

__all__ = ["OperatorView", "render_status", "summary_table", "redo_command", "yaw_gauge", "KeyReader", "PHASES",
           "timer_text", "phase_label", "RenderProcess", "render_main"]
