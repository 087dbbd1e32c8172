"""ros2 launch gaze4hri_acq calibrate.launch.py ...: the base acquisition launch with mode:=calibrate
(every argument, its description and choices: acquisition.launch.py ARGUMENTS)."""
from __future__ import annotations

import importlib.util
import os

MODE = "calibrate"


def load_base():
    """The base launch file next to this one, as a module (its ARGUMENTS and forwarded())."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "acquisition.launch.py")
    spec = importlib.util.spec_from_file_location("gaze4hri_acquisition_launch", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return path, mod


def generate_launch_description():
    from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    from launch.substitutions import LaunchConfiguration

    from launch import LaunchDescription

    base, mod = load_base()
    args = mod.forwarded(MODE)
    decl = [DeclareLaunchArgument(d["name"], default_value=d["default"], description=d["description"], **({"choices": d["choices"]} if "choices" in d else {}))
            for d in args]
    include = IncludeLaunchDescription(PythonLaunchDescriptionSource(base),
                                       launch_arguments={"mode": MODE, **{d["name"]: LaunchConfiguration(d["name"]) for d in args}}.items())
    return LaunchDescription([*decl, include])
