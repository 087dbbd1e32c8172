"""``gaze4hri-acq node NAME... --backend B --ros-args ...``: host device nodes of the
node table in this process until SIGINT/SIGTERM (what the launch files start). The
orchestrator, elsewhere, configures and activates them through their lifecycle
services. Parameters come from launch's --params-file arguments."""
from __future__ import annotations

import signal
import threading

from gaze4hri_core.errors import Gaze4HRIError

from .table import node_names

__all__ = ["run_nodes"]


def run_nodes(names: list[str], backend: str, ros_args: list[str]) -> int:
    from ..runner import Stack, StackConfig

    unknown = [n for n in names if n not in node_names() or n == "orchestrator"]
    if unknown:
        raise Gaze4HRIError(f"unknown node {unknown[0]!r}", "gaze4hri-acq node", f"use some of {', '.join(n for n in node_names() if n != 'orchestrator')}")
    done = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: done.set())
    cfg = StackConfig(backend=backend, nodes=tuple(names), share_graph=True, intra_process=False, ros_args=tuple(ros_args),
                      load_config=not any(a == "--params-file" for a in ros_args))
    with Stack(cfg):
        done.wait()
    return 0
