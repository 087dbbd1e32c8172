"""ros2 launch gaze4hri_acq calibrate.launch.py procedure:=eye-head subject:=S12 [backend:=sim out:=DIR]:
one calibration run (registration, eye-head, targets) as ``gaze4hri-acq calibrate``;
the launch ends with it and fails when it fails (gaze4hri_acq.launching)."""
from __future__ import annotations


def generate_launch_description():
    from gaze4hri_acq.launch_signals import forward_sigint
    from gaze4hri_acq.launching import CALIBRATE_ARGUMENTS, calibrate_actions, declare
    from launch.actions import OpaqueFunction

    from launch import LaunchDescription

    return LaunchDescription([*declare(CALIBRATE_ARGUMENTS), *forward_sigint(),
                              OpaqueFunction(function=calibrate_actions)])
