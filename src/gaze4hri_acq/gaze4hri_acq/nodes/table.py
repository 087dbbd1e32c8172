"""The one node table that both entry points read: ``gaze4hri-acq session`` builds
these nodes in one process, launch/session.launch.py starts one process per
``process`` group. tests/acq/test_launch.py checks that the two agree."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["NodeSpec", "NODES", "node_names", "node_class"]


@dataclass(frozen=True)
class NodeSpec:
    name: str  # node name (and its parameter YAML config/<name>.yaml)
    target: str  # "module:Class"
    lifecycle: bool
    process: str  # launch process group; nodes of one group share a process and the in-process bus
    session: bool = True  # started by session.launch.py (the live gaze node has its own live_gaze.launch.py)


NODES: tuple[NodeSpec, ...] = (
    NodeSpec("camera", "gaze4hri_acq.nodes.camera_node:CameraNode", True, "camera_recorder"),
    NodeSpec("recorder", "gaze4hri_acq.recorder.node:RecorderNode", False, "camera_recorder"),
    NodeSpec("mocap", "gaze4hri_acq.nodes.mocap_node:MocapNode", True, "mocap"),
    NodeSpec("robot", "gaze4hri_acq.nodes.robot_node:RobotNode", True, "robot"),
    NodeSpec("gaze", "gaze4hri_acq.nodes.gaze_node:GazeNode", True, "gaze", session=False),  # live gaze (issue 15): hosted unconfigured unless started
    NodeSpec("orchestrator", "gaze4hri_acq.orchestrator.client:DeviceClient", False, "orchestrator"),
)


def node_names() -> list[str]:
    return [n.name for n in NODES]


def node_class(name: str):
    import importlib

    spec = next(n for n in NODES if n.name == name)
    mod, cls = spec.target.split(":")
    return getattr(importlib.import_module(mod), cls)
