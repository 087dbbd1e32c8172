"""ros2 launch gaze4hri_acq session.launch.py subject:=S12 [backend:=sim] ...: record a
subject's session. The arguments are gaze4hri_acq.session_config.SessionConfig's
launch fields, 1:1 (``ros2 launch gaze4hri_acq session.launch.py --show-args``);
the device nodes run in their processes (one for every device with backend:=sim,
around one simulated world) and the orchestrator, configured by the same arguments
as parameters, runs the protocol. The launch ends when the orchestrator ends and
fails (non-zero) when the session did (gaze4hri_acq.launching). SIGINT to the launch
process alone reaches every process, as a terminal's Ctrl-C (gaze4hri_acq.launch_signals)."""
from __future__ import annotations


def generate_launch_description():
    from gaze4hri_acq.launch_signals import forward_sigint
    from gaze4hri_acq.launching import declare, session_actions, session_arguments
    from launch.actions import OpaqueFunction

    from launch import LaunchDescription

    return LaunchDescription([*declare(session_arguments()), *forward_sigint(),
                              OpaqueFunction(function=session_actions)])
