"""The one-process command's simulated devices in a second process.

``gaze4hri-acq session --backend sim`` runs the recorder and the orchestrator in this
process and the simulated lab (camera, motion capture and robot nodes on one SimWorld,
with its pacer) in a child process, the two in-process buses joined by a socket
(nodes/_bridge.py): the streams, the control commands with their acknowledgements and
the events cross it as the same CDR bytes, and the orchestrator drives the device nodes'
lifecycle through their control commands (no DDS graph joins the two). Python threads
share one core per process (the GIL): on one process the session ran at about one core
whatever the machine had; split, the devices' sampling and the recorder's writing run
side by side (docs/perf/acq.md, "Two processes").

The child ignores Ctrl-C (the parent ends the session, then the stream); it ends, its
devices stopped, when the stream ends: the parent closed it, exited or was killed.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, replace
from types import SimpleNamespace

from gaze4hri_core.errors import Gaze4HRIError

from .nodes._bridge import ERROR, READY, BusBridge, send_frame
from .runner import Stack, StackConfig

__all__ = ["SplitStack", "DEVICE_NODES", "use_split"]

DEVICE_NODES = ("camera", "mocap", "robot")
#: how long the child may take to import rclpy and build its nodes (a patience bound for
#: a child that hangs; a failing child answers at once with its error line)
READY_PATIENCE_S = 120.0


#: "auto" splits a session that records at least this long (simulated s): the child's
#: start (its own rclpy, nodes and world, ~2 s of a core) pays back on longer sessions
SPLIT_FROM_S = 60.0


def use_split(choice: str, backend: str, external_devices: bool, recording_s: float) -> bool:
    """Whether a session's simulated devices run in their own process: ``choice`` "yes",
    "no" or "auto" (yes on a machine with two cores or more for a session recording at
    least SPLIT_FROM_S); only the sim backend of the one-process command."""
    if backend != "sim" or external_devices or choice == "no":
        return False
    return choice == "yes" or ((os.cpu_count() or 1) >= 2 and recording_s >= SPLIT_FROM_S)


class SplitStack:
    """``Stack``'s interface (nodes, bus, world, start, close, context manager) over two
    processes: this one's recorder and orchestrator, the child's device nodes."""

    def __init__(self, cfg: StackConfig, faults: dict | None = None, on_lost: Callable[[str], None] | None = None):
        os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF")  # as Stack: the child inherits it
        mine, theirs = socket.socketpair()
        child = replace(cfg, nodes=tuple(n for n in cfg.nodes if n in DEVICE_NODES), wrap_drivers={})
        spec = json.dumps({"stack": asdict(child), "faults": faults or {}}, default=str)
        self.proc = subprocess.Popen([sys.executable, "-m", "gaze4hri_acq.split", str(theirs.fileno()), spec],
                                     pass_fds=(theirs.fileno(),))
        theirs.close()
        self._ready = threading.Event()
        self._error: str | None = None
        self._closing = False
        self._on_lost = on_lost  # the child ended on its own: the session cannot go on (the reason)
        self.world = None  # in the child
        self.stack = None
        try:
            self.stack = Stack(replace(cfg, nodes=tuple(n for n in cfg.nodes if n not in DEVICE_NODES)))
        except BaseException:
            mine.close()
            self._reap()
            raise
        self.nodes, self.bus = self.stack.nodes, self.stack.bus
        if "orchestrator" in self.nodes:
            self.nodes["orchestrator"].lifecycle_over_bus = True
        self.bridge = BusBridge(self.bus, mine, "devices", on_control=self._on_control, on_close=self._ended)

    def _on_control(self, topic: str, data: bytes) -> None:
        if topic == ERROR:
            self._error = data.decode(errors="replace")
        self._ready.set()

    def _ended(self) -> None:
        """The stream ended: at our close, or because the child died (then the session ends)."""
        self._ready.set()
        if self._closing or self._on_lost is None:
            return
        try:
            code = self.proc.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            code = None
        why = f"the simulated devices' process ended (exit code {code})"
        self._on_lost(why)
        client = self.nodes.get("orchestrator")
        if client is not None:  # a request waiting for a device's answer ends now, not at its timeout
            client.mark_lost(DEVICE_NODES, why)

    def start(self) -> SplitStack:
        self.stack.start()
        self.bridge.start()
        if not self._ready.wait(READY_PATIENCE_S) or self._error or self.proc.poll() is not None:
            why = self._error or (f"exited with code {self.proc.poll()}" if self.proc.poll() is not None
                                  else f"not ready within {READY_PATIENCE_S:.0f} s")
            self.close()
            raise Gaze4HRIError(f"simulated devices' process: {why}", None,
                                "run again with --sim-device-process no to see the devices in this process")
        return self

    def __enter__(self) -> SplitStack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """This process' nodes first (the recorder closes its bag), then the stream: the
        child stops its devices and exits."""
        self._closing = True
        try:
            if self.stack is not None:
                self.stack.close()
        finally:
            self.bridge.close()
            self._reap()

    def _reap(self) -> None:
        try:
            self.proc.wait(timeout=15.0)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _child(fd: int, spec: dict) -> int:
    """The child: the device nodes on one simulated world, joined to the parent's bus."""
    import signal

    from .sim_faults import inject_sim_faults

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent owns Ctrl-C: it ends the session, then the stream
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    sock = socket.socket(fileno=fd)
    try:
        st = spec["stack"]
        stack = Stack(StackConfig(**{**st, "nodes": tuple(st["nodes"]), "dds_topics": tuple(st["dds_topics"]),
                                     "ros_args": tuple(st["ros_args"])}))
    except Exception as e:  # noqa: BLE001 - any failure is the parent's one error line
        line = e.line() if isinstance(e, Gaze4HRIError) else f"{type(e).__name__}: {e}"
        send_frame(sock, ERROR, line.encode())
        sock.close()
        return 2
    with stack:
        bridge = BusBridge(stack.bus, sock, "session", on_close=done.set).start()
        if spec.get("faults"):
            inject_sim_faults(stack, SimpleNamespace(**spec["faults"]))
        bridge.send(READY, b"")
        done.wait()
        bridge.close()
    return 0


if __name__ == "__main__":
    sys.exit(_child(int(sys.argv[1]), json.loads(sys.argv[2])))
