"""ros2 launch gaze4hri_acq replay.launch.py session:=sessions/S12 [trial:=ID rate:=0.5 loop:=true clock:=false
wait_for_subscribers:=true]: republish a recorded session on its original topics (RViz, Foxglove) as
``gaze4hri-acq replay``, with /clock from the bag's time (``clock``, default true: nodes
launched with use_sim_time:=true follow the replay); ``wait_for_subscribers`` holds each
bag's first message until every topic has a subscriber (a listener started before the
launch then gets every message, the first ones included). The launch ends with the replay,
after its subscribers have acknowledged its last messages (gaze4hri_acq.launching, .replay)."""
from __future__ import annotations


def generate_launch_description():
    from gaze4hri_acq.launch_signals import forward_sigint
    from gaze4hri_acq.launching import REPLAY_ARGUMENTS, declare, replay_actions
    from launch.actions import OpaqueFunction

    from launch import LaunchDescription

    return LaunchDescription([*declare(REPLAY_ARGUMENTS), *forward_sigint(), OpaqueFunction(function=replay_actions)])
