"""Base launch description of Gaze4HRI acquisition; session.launch.py,
calibrate.launch.py and replay.launch.py are thin wrappers that set ``mode``.

The processes come from the node table (gaze4hri_acq.nodes.table.NODES) that
``gaze4hri-acq session`` also builds, so both entry points start the same nodes:
one process per ``process`` group (the camera and the recorder share one, so frames
reach the recorder in-process), except with backend:=sim, where every device node
runs in one process around one simulated world. Parameters come from
config/<node>.yaml with the launch arguments on top.

``ARGUMENTS`` and ``processes()`` are plain data and functions so that tests read
them without the launch packages (tests/acq/test_launch.py).
"""
from __future__ import annotations

ARGUMENTS = [
    {"name": "mode", "default": "session", "description": "what to run: record a session, run a calibration, or replay a session", "choices": ["session", "calibrate", "replay"]},
    {"name": "subject", "default": "S01", "description": "subject id, e.g. S12 (session directory name and eye-head file)"},
    {"name": "backend", "default": "real", "description": "device backend: the lab's UR5, RealSense and OptiTrack, or the simulated lab", "choices": ["real", "sim"]},
    {"name": "experiments", "default": "all", "description": "record all experiments or one of them", "choices": ["all", "illumination", "viewpoint", "conflict", "mutual"]},
    {"name": "out_dir", "default": "sessions", "description": "sessions root directory; the session is <out_dir>/<subject>"},
    {"name": "resume", "default": "false", "description": "continue the session at the first trial not done", "choices": ["true", "false"]},
    {"name": "robot_ip", "default": "192.168.1.102", "description": "IP address of the UR controller (RTDE)"},
    {"name": "robot_model", "default": "ur5", "description": "arm model (DH parameters and RTDE rate)", "choices": ["ur5", "ur5e"]},
    {"name": "motive_ip", "default": "127.0.0.1", "description": "IP address of the Motive PC streaming NatNet"},
    {"name": "local_ip", "default": "127.0.0.1", "description": "IP address of this machine's interface facing Motive"},
    {"name": "camera_serial", "default": "", "description": "RealSense serial number; empty takes the only connected camera"},
    {"name": "resolution", "default": "1920x1080", "description": "colour stream resolution", "choices": ["1920x1080", "1280x720", "960x540", "848x480", "640x360", "424x240"]},
    {"name": "fps", "default": "30", "description": "colour stream rate (Hz)", "choices": ["6", "15", "30", "60"]},
    {"name": "trial_seconds", "default": "5.0", "description": "recording length of a fixed-camera trial (s); moving trials last their motion"},
    {"name": "compression", "default": "none", "description": "MCAP chunk compression (lossless either way)", "choices": ["none", "zstd", "lz4"]},
    {"name": "calibration_dir", "default": "", "description": "calibration directory; empty: the package's calibration"},
    {"name": "procedure", "default": "registration", "description": "calibration run (mode calibrate)", "choices": ["registration", "eye-head", "targets"]},
    {"name": "session", "default": "", "description": "session directory to replay (mode replay)"},
    {"name": "trial", "default": "", "description": "replay only this trial id (mode replay); empty: all"},
    {"name": "rate", "default": "1.0", "description": "replay speed factor, 1 = original timing (mode replay)"},
]

# The arguments each thin wrapper exposes (mode is fixed by the wrapper).
MODE_ARGUMENTS = {
    "session": ["subject", "backend", "experiments", "out_dir", "resume", "robot_ip", "robot_model", "motive_ip", "local_ip",
                "camera_serial", "resolution", "fps", "trial_seconds", "compression", "calibration_dir"],
    "calibrate": ["procedure", "subject", "backend", "robot_ip", "robot_model", "motive_ip", "local_ip", "calibration_dir"],
    "replay": ["session", "trial", "rate"],
}


def forwarded(mode: str) -> list[dict]:
    """The argument declarations of the wrapper for ``mode``."""
    by_name = {d["name"]: d for d in ARGUMENTS}
    return [by_name[n] for n in MODE_ARGUMENTS[mode]]


def _table():
    from gaze4hri_acq.nodes.table import NODES

    return NODES


def processes(mode: str, backend: str) -> list[dict]:
    """The processes to start: {"name", "nodes", "lifecycle"}; the orchestrator's
    command line is built in generate_launch_description from the arguments."""
    if mode == "replay":
        return [{"name": "replay", "nodes": [], "lifecycle": False}]
    if mode == "calibrate":
        return [{"name": "calibrate", "nodes": [], "lifecycle": False}]
    groups: dict[str, list[str]] = {}
    lifecycle = set()
    for spec in _table():
        if spec.name == "orchestrator":
            continue
        g = "devices_sim" if backend == "sim" else spec.process
        groups.setdefault(g, []).append(spec.name)
        if spec.lifecycle:
            lifecycle.add(spec.name)
    out = [{"name": g, "nodes": names, "lifecycle": any(n in lifecycle for n in names)} for g, names in groups.items()]
    out.append({"name": "orchestrator", "nodes": ["orchestrator"], "lifecycle": False})
    return out


def generate_launch_description():
    from ament_index_python.packages import get_package_share_directory
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node

    from launch import LaunchDescription

    share = get_package_share_directory("gaze4hri_acq")

    def launch_setup(context):
        a = {d["name"]: LaunchConfiguration(d["name"]).perform(context) for d in ARGUMENTS}
        mode, backend = a["mode"], a["backend"]
        w, h = a["resolution"].split("x")
        overrides = {
            "camera": {"backend": backend, "serial": a["camera_serial"], "width": int(w), "height": int(h), "fps": float(a["fps"])},
            "mocap": {"backend": backend, "motive_ip": a["motive_ip"], "local_ip": a["local_ip"]},
            "robot": {"backend": backend, "robot_ip": a["robot_ip"], "robot_model": a["robot_model"], "calibration_dir": a["calibration_dir"],
                      "subject": a["subject"]},
            "recorder": {"compression": a["compression"], "backpressure": backend == "sim"},
        }
        actions = []
        for proc in processes(mode, backend):
            if proc["name"] == "orchestrator":
                args = ["session", "--subject", a["subject"], "--backend", backend, "--out-dir", a["out_dir"], "--resolution", a["resolution"],
                        "--fps", a["fps"], "--trial-seconds", a["trial_seconds"], "--compression", a["compression"], "--external-devices", "--quiet"]
                if a["experiments"] != "all":
                    args += ["--experiments", a["experiments"]]
                if a["resume"] == "true":
                    args.append("--resume")
                if a["calibration_dir"]:
                    args += ["--calibration", a["calibration_dir"]]
                actions.append(Node(package="gaze4hri_acq", executable="gaze4hri-acq", name="orchestrator", arguments=args, output="screen"))
            elif proc["name"] == "replay":
                args = ["replay", a["session"], "--rate", a["rate"]] + (["--trial", a["trial"]] if a["trial"] else [])
                actions.append(Node(package="gaze4hri_acq", executable="gaze4hri-acq", name="replay", arguments=args, output="screen"))
            elif proc["name"] == "calibrate":
                args = ["calibrate", a["procedure"], "--backend", backend, "--robot-ip", a["robot_ip"], "--motive-ip", a["motive_ip"]]
                if a["subject"]:
                    args += ["--subject", a["subject"]]
                if a["calibration_dir"]:
                    args += ["--calibration", a["calibration_dir"]]
                actions.append(Node(package="gaze4hri_acq", executable="gaze4hri-acq", name="calibrate", arguments=args, output="screen"))
            else:
                params = []
                for n in proc["nodes"]:
                    params.append(f"{share}/config/{n}.yaml")
                    params.append({k: v for k, v in overrides.get(n, {}).items()})
                actions.append(Node(package="gaze4hri_acq", executable="gaze4hri-acq", name=proc["name"],
                                    arguments=["node", *proc["nodes"], "--backend", backend], parameters=params, output="screen"))
        return actions

    decl = [DeclareLaunchArgument(d["name"], default_value=d["default"], description=d["description"], **({"choices": d["choices"]} if "choices" in d else {}))
            for d in ARGUMENTS]
    return LaunchDescription([*decl, OpaqueFunction(function=launch_setup)])
