"""What the launch files (launch/*.launch.py) build, as plain functions: their
argument declarations and the processes to start, from the node table and the one
session configuration (gaze4hri_acq.session_config.SessionConfig).

Conventions (issue 14), shared by every launch file of this package:
- each launch file declares only its own arguments, each with a description and,
  where finite, its choices; session.launch.py's arguments are SessionConfig's
  launch fields 1:1 (names, defaults, descriptions, choices);
- processes run ``gaze4hri-acq`` from the package (launch_ros ``Node`` without
  ``name=``: a process-wide ``__node`` remap would rename every node it hosts);
  node names come from the node table (nodes/table.py) and are unique;
- parameters: ``<share>/config/<node>.yaml`` then one generated YAML holding the
  launch values under each node's own name (never ``/**``);
- the launch ends when the orchestrator (session) or the single process
  (calibrate, replay) ends: Shutdown on exit, and a failed exit (non-zero) makes
  LaunchService, hence ``ros2 launch``, return non-zero.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml
from gaze4hri_core.device_config import DEFAULT_MOTIVE_IP, DEFAULT_ROBOT_IP

from .nodes.table import session_nodes
from .session_config import OPERATOR_LIVE_VIEW

__all__ = ["CALIBRATE_ARGUMENTS", "REPLAY_ARGUMENTS", "session_arguments", "session_processes", "declare",
           "exit_handler", "param_file"]

EXECUTABLE = "gaze4hri-acq"
PACKAGE = "gaze4hri_acq"

CALIBRATE_ARGUMENTS = [
    {"name": "procedure", "default": "registration",
     "description": "calibration run: registration (world-base), eye-head (a subject), targets (survey)",
     "choices": ["registration", "eye-head", "targets"]},
    {"name": "backend", "default": "sim",
     "description": "device backend: the simulated lab or the lab's UR5 and OptiTrack", "choices": ["sim", "real"]},
    {"name": "subject", "default": "", "description": "subject id (needed by eye-head), e.g. S12"},
    {"name": "calibration_dir", "default": "",
     "description": "calibration directory to start from (and update); empty: the package's calibration/"},
    {"name": "out", "default": "",
     "description": "write the result here instead of the calibration directory (required with backend sim)"},
    {"name": "robot_ip", "default": DEFAULT_ROBOT_IP,
     "description": "IP address of the UR controller (RTDE, real backend)"},
    {"name": "motive_ip", "default": DEFAULT_MOTIVE_IP,
     "description": "IP address of the Motive PC streaming NatNet (real backend)"},
    {"name": "seed", "default": "0", "description": "simulation seed (sim backend)"},
]

REPLAY_ARGUMENTS = [
    {"name": "session", "default": "",
     "description": "session directory to republish (holds session.yaml), e.g. sessions/S12"},
    {"name": "trial", "default": "", "description": "republish only this trial id; empty: every done trial"},
    {"name": "rate", "default": "1.0", "description": "playback speed factor (1 = the original timing)"},
    {"name": "loop", "default": "false", "description": "start over at the end", "choices": ["true", "false"]},
    {"name": "clock", "default": "true",
     "description": "publish /clock from the bag's time, so that use_sim_time nodes follow the replay",
     "choices": ["true", "false"]},
    {"name": "wait_for_subscribers", "default": "false",
     "description": "hold each bag's first message until every topic of the bag has a subscriber",
     "choices": ["true", "false"]},
]


def session_arguments() -> list[dict]:
    """session.launch.py's arguments: SessionConfig's launch fields, 1:1; the defaults
    of the orchestrator's tuning come from config/orchestrator.yaml, as for the CLI
    (gaze4hri_acq.cli._session_args), and the launch passes every value in one
    parameter file (rcl keeps a parameter's first type across files)."""
    from .runner import node_parameters
    from .session_config import _to_string, launch_arguments, tuning_field_names

    tuning = {k: _to_string(v) for k, v in node_parameters("orchestrator").items() if k in tuning_field_names()}
    tuning.update(LAUNCH_DEFAULTS)
    return [{**a, "default": tuning.get(a["name"], a["default"])} for a in launch_arguments()]


#: session.launch.py runs on the operator's machine: the live view is on, on loopback,
#: as with ``gaze4hri-acq session`` (the Python API's default stays off)
LAUNCH_DEFAULTS = {"live_view": OPERATOR_LIVE_VIEW}


def declare(arguments: list[dict]) -> list:
    """DeclareLaunchArgument actions for argument dicts."""
    from launch.actions import DeclareLaunchArgument

    return [DeclareLaunchArgument(d["name"], default_value=d["default"], description=d["description"],
                                  **({"choices": d["choices"]} if "choices" in d else {})) for d in arguments]


def performed(context, arguments: list[dict]) -> dict[str, str]:
    from launch.substitutions import LaunchConfiguration

    return {d["name"]: LaunchConfiguration(d["name"]).perform(context) for d in arguments}


def session_processes(backend: str) -> list[dict]:
    """Processes of a session: {"name", "nodes"}; one per node-table ``process`` group
    (the camera and the recorder share one so frames stay in-process), and with the
    simulated backend one process for every device node around one simulated world;
    the orchestrator last."""
    groups: dict[str, list[str]] = {}
    for spec in session_nodes():
        if spec.name == "orchestrator":
            continue
        groups.setdefault("devices_sim" if backend == "sim" else spec.process, []).append(spec.name)
    return [*({"name": g, "nodes": n} for g, n in groups.items()), {"name": "orchestrator", "nodes": ["orchestrator"]}]


def param_file(per_node: dict[str, dict], tag: str) -> str:
    """A ROS parameter YAML with each node's values under its own name."""
    fd, path = tempfile.mkstemp(prefix=f"gaze4hri_{tag}_", suffix=".yaml")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        yaml.safe_dump({n: {"ros__parameters": v} for n, v in per_node.items()}, f, sort_keys=False)
    return path


def exit_handler(target, what: str):
    """When ``target`` exits: shut the launch down; a non-zero exit also fails the
    launch (LaunchService returns 1: an exception in a handler is its error path)."""
    from launch.actions import EmitEvent, RegisterEventHandler
    from launch.event_handlers import OnProcessExit
    from launch.events import Shutdown

    def on_exit(event, _context):
        if event.returncode:
            raise RuntimeError(f"{what} exited with status {event.returncode} (its error line is above)")
        return [EmitEvent(event=Shutdown(reason=f"{what} finished"))]

    return RegisterEventHandler(OnProcessExit(target_action=target, on_exit=on_exit))


def share_config(name: str) -> str | None:
    from ament_index_python.packages import get_package_share_directory

    p = Path(get_package_share_directory(PACKAGE)) / "config" / f"{name}.yaml"
    return str(p) if p.is_file() else None


def session_actions(context) -> list:
    """The session's processes with their parameters (OpaqueFunction of session.launch.py)."""
    from launch_ros.actions import Node

    from .session_config import from_strings

    # bad input: one line, the launch exits 1
    cfg = from_strings(performed(context, session_arguments()), "session.launch.py")
    over = cfg.node_parameters()
    actions = []
    for proc in session_processes(cfg.backend):
        params = [p for p in (share_config(n) for n in proc["nodes"] if n != "orchestrator") if p]
        params.append(param_file({n: over[n] for n in proc["nodes"]}, proc["name"]))
        args = ["node", *proc["nodes"], "--backend", cfg.backend]
        if proc["name"] == "devices_sim":
            args += ["--sim-seed", str(cfg.seed), "--sim-subject", cfg.subject,
                     "--sim-real-time-factor", str(cfg.real_time_factor)]
            if cfg.calibration_dir:
                args += ["--sim-calibration", str(cfg.calibration_dir)]
        node = Node(package=PACKAGE, executable=EXECUTABLE, arguments=args, parameters=params, output="screen")
        actions.append(node)
        if proc["name"] == "orchestrator":
            actions.append(exit_handler(node, "the session orchestrator"))
    return actions


def single_process(command: list[str], what: str) -> list:
    from launch_ros.actions import Node

    node = Node(package=PACKAGE, executable=EXECUTABLE, arguments=command, output="screen")
    return [node, exit_handler(node, what)]


def calibrate_actions(context) -> list:
    a = performed(context, CALIBRATE_ARGUMENTS)
    cmd = ["calibrate", a["procedure"], "--backend", a["backend"], "--robot-ip", a["robot_ip"],
           "--motive-ip", a["motive_ip"], "--seed", a["seed"]]
    for key, opt in (("subject", "--subject"), ("calibration_dir", "--calibration"), ("out", "--out")):
        if a[key]:
            cmd += [opt, a[key]]
    return single_process(cmd, f"the {a['procedure']} calibration")


def replay_actions(context) -> list:
    a = performed(context, REPLAY_ARGUMENTS)
    cmd = ["replay", a["session"], "--rate", a["rate"], "--quiet"]
    if a["trial"]:
        cmd += ["--trial", a["trial"]]
    if a["loop"] == "true":
        cmd.append("--loop")
    from launch_ros.actions import Node

    # the replay node's ROS parameter ``clock`` (gaze4hri_acq.replay: /clock from the bag's time)
    params = [param_file({"replay": {"clock": a["clock"] == "true",
                                     "wait_for_subscribers": a["wait_for_subscribers"] == "true"}}, "replay")]
    node = Node(package=PACKAGE, executable=EXECUTABLE, arguments=cmd, parameters=params, output="screen")
    return [node, exit_handler(node, "the replay")]
