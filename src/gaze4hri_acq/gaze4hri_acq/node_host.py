"""``gaze4hri-acq node NAME... --backend B --ros-args ...``: what the launch files start.

Device nodes of the node table run in this process until SIGINT/SIGTERM; the
orchestrator, elsewhere, configures and activates them through their lifecycle
services. Parameters come from launch's --params-file arguments, each under its
node's own name. ``node orchestrator`` runs the session from the orchestrator's ROS
parameters (the one SessionConfig, gaze4hri_acq.session_config) and exits with the
session's exit code, so the launch ends with it."""
from __future__ import annotations

import signal
import threading

from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.session import Topics

from .nodes.common import CONTROL
from .nodes.table import NODES, session_nodes

__all__ = ["run_nodes"]


def run_nodes(names: list[str], backend: str, ros_args: list[str], sim: dict | None = None) -> int:
    """Host the named nodes until SIGINT/SIGTERM (or the orchestrator's session, alone);
    the highest exit code a node failed with, else 0."""
    from .runner import Stack, StackConfig

    if names == ["orchestrator"]:
        from .session_assembly import run_orchestrator

        return run_orchestrator(ros_args)
    for n in names:
        NODES.get(n)  # an unknown name: the node table's one-line error
    if "orchestrator" in names:
        raise Gaze4HRIError("node 'orchestrator' runs alone", "gaze4hri-acq node",
                            "start it in its own process: gaze4hri-acq node orchestrator")
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    # Nodes of this process talk over the in-process bus, as in the one-process CLI, and
    # take only the orchestrator's control and events from DDS. Over DDS alone the
    # co-located nodes' streams (frames to the recorder, motion capture to the robot's
    # safety monitor) were delivered late by the busy executor while the simulation
    # clock ran on at up to real_time_factor: the robot saw motion capture "silent"
    # for > 0.5 simulated s and stopped every moving trial (issue 14).
    # That needs every device node here (the sim process); device nodes split over
    # several processes (real backend) talk over DDS only, at real time.
    every_device = {s.name for s in session_nodes() if s.name != "orchestrator"} <= set(names)
    cfg = StackConfig(backend=backend, nodes=tuple(names), share_graph=True, intra_process=every_device,
                      dds_topics=(CONTROL, Topics.EVENTS), ros_args=tuple(ros_args),
                      load_config=not any(a == "--params-file" for a in ros_args), sim=dict(sim or {}))
    codes: list[int] = []

    def fatal(code: int) -> None:  # a node that cannot do its job ends the process non-zero
        codes.append(int(code))
        done.set()

    with Stack(cfg) as stack:
        for node in stack.nodes.values():
            if hasattr(node, "on_fatal"):
                node.on_fatal = fatal
        done.wait()
    return max(codes, default=0)
