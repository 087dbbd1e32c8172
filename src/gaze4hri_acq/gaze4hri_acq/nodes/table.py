"""The one node table that both entry points read: ``gaze4hri-acq session`` builds
these nodes in one process, launch/session.launch.py starts one process per
``process`` group. tests/acq/test_launch.py checks that the two agree.

A :class:`gaze4hri_core.registry.Registry` like every named table of the project:
an unknown node name is the registry's one-line did-you-mean error."""
from __future__ import annotations

from dataclasses import dataclass

from gaze4hri_core.registry import Registry

__all__ = ["NodeSpec", "NODES", "node_names", "node_class", "session_nodes"]


@dataclass(frozen=True)
class NodeSpec:
    name: str  # node name (and its parameter YAML config/<name>.yaml)
    target: str  # "module:Class"
    lifecycle: bool
    process: str  # launch process group; nodes of one group share a process and the in-process bus
    session: bool = True  # started by session.launch.py (the live gaze node has its own live_gaze.launch.py)


#: node name -> NodeSpec, in start-up order
NODES: Registry[NodeSpec] = Registry("node", where="gaze4hri-acq node",
                                     listing="(orchestrator runs alone: the session from its ROS parameters)")
for _spec in (
    NodeSpec("camera", "gaze4hri_acq.nodes.camera_node:CameraNode", True, "camera_recorder"),
    NodeSpec("recorder", "gaze4hri_acq.recorder.node:RecorderNode", False, "camera_recorder"),
    NodeSpec("mocap", "gaze4hri_acq.nodes.mocap_node:MocapNode", True, "mocap"),
    NodeSpec("robot", "gaze4hri_acq.nodes.robot_node:RobotNode", True, "robot"),
    # live gaze (issue 15): hosted unconfigured unless started
    NodeSpec("gaze", "gaze4hri_acq.nodes.gaze_node:GazeNode", True, "gaze", session=False),
    NodeSpec("orchestrator", "gaze4hri_acq.orchestrator.client:DeviceClient", False, "orchestrator"),
):
    NODES.add(_spec.name, _spec)


def node_names() -> list[str]:
    return NODES.names()


def session_nodes() -> list[NodeSpec]:
    """The nodes session.launch.py starts (every node but the live gaze node)."""
    return [s for s in NODES.values() if s.session]


def node_class(name: str):
    """The node's class, imported on demand (an unknown name: the registry's one-line error)."""
    import importlib

    mod, cls = NODES.get(name).target.split(":")
    return getattr(importlib.import_module(mod), cls)
