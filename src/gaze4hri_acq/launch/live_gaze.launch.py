"""ros2 launch gaze4hri_acq live_gaze.launch.py method:=puregaze_eth: the live gaze
node (gaze4hri_acq.nodes.gaze_node) in its own process, configured and activated at
start-up, next to whatever publishes the camera: the lab or simulated session
(session.launch.py), or a replay (replay.launch.py / ``gaze4hri-acq replay``).

Parameters come from config/gaze.yaml with the arguments below on top. ``ARGUMENTS``
is plain data so tests read it without the launch packages (tests/acq/test_live_gaze_launch.py).
"""
from __future__ import annotations

ARGUMENTS = [
    {"name": "method", "default": "puregaze_eth",
     "description": "registered method name or alias (`gaze4hri-bench methods` lists them and their weights)"},
    {"name": "profile", "default": "reference",
     "description": "pipeline profile (gaze4hri_bench.profiles): each method's official code, or the study's",
     "choices": ["reference", "study"]},
    {"name": "input", "default": "best",
     "description": "network input: the study's best one per method, a face crop, or data normalization",
     "choices": ["best", "crop", "rectified"]},
    {"name": "device", "default": "cpu",
     "description": "ONNX Runtime device (a missing device is an error, never a silent fallback)",
     "choices": ["auto", "cpu", "cuda", "tensorrt"]},
    {"name": "models_dir", "default": "",
     "description": "folder of imported ONNX models; empty: $GAZE4HRI_MODELS or the repository's models/"},
    {"name": "detector", "default": "auto",
     "description": "face detector name (gaze4hri_bench.faces.detectors registry)"},
    {"name": "head_pose", "default": "auto",
     "description": "head pose source: motion capture when its poses arrive, else face landmarks; or force one",
     "choices": ["auto", "mocap", "landmarks"]},
    {"name": "calibration_dir", "default": "",
     "description": "calibration directory for the motion-capture head pose; empty: the package's calibration"},
    {"name": "subject", "default": "default",
     "description": "subject id of the eye-head calibration (subjects/<id>.yaml)"},
]

# The node keeps its own name "gaze" (no name= remap: its parameters are keyed by it in config/gaze.yaml).
NODE = "gaze"


def overrides(args: dict) -> dict:
    """Node parameters from the launch arguments (autostart: configure and activate)."""
    return {**{k: args[k] for k in ("method", "profile", "input", "device", "models_dir", "detector", "head_pose",
                                    "calibration_dir", "subject")},
            "autostart": True}


def generate_launch_description():
    from ament_index_python.packages import get_package_share_directory
    from gaze4hri_acq.launch_signals import forward_sigint
    from gaze4hri_acq.launching import declare, exit_handler, performed
    from launch.actions import OpaqueFunction
    from launch_ros.actions import Node

    from launch import LaunchDescription

    share = get_package_share_directory("gaze4hri_acq")

    def launch_setup(context):
        a = performed(context, ARGUMENTS)
        node = Node(package="gaze4hri_acq", executable="gaze4hri-acq", arguments=["node", NODE, "--backend", "real"],
                    parameters=[f"{share}/config/{NODE}.yaml", overrides(a)], output="screen")
        # the node's process ends non-zero when it cannot start (its error line is in the
        # log): the launch ends with it and fails (issue 21: it idled silently)
        return [node, exit_handler(node, "the live gaze node")]

    return LaunchDescription([*declare(ARGUMENTS), *forward_sigint(), OpaqueFunction(function=launch_setup)])
