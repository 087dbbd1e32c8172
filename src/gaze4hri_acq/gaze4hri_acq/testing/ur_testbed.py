"""Test helpers around the UR controller emulator (gaze4hri_sim.ur_controller): one
emulator process per test on its own loopback address 127.0.0.N (ur_rtde's ports are
fixed), started and awaited on its "ready" line, killed at the end."""
from __future__ import annotations

import os
import random
import socket
import subprocess
import sys
import time

import numpy as np
from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.safety import SafetyLimits, SafetyMonitor, monitor_for

from .wait import wait_for  # noqa: F401 - the testbed's users import it from here

PORTS = (30004, 29999, 30001, 30002, 30003, 30010)


def _free(host: str) -> bool:
    for port in PORTS:
        s = socket.socket()
        try:
            s.bind((host, port))
        except OSError:
            return False
        finally:
            s.close()
    return True


def free_host() -> str:
    """A loopback address on which every emulator port is free."""
    rng = random.Random(os.getpid() ^ time.monotonic_ns())
    for _ in range(50):
        host = f"127.0.{rng.randint(1, 250)}.{rng.randint(2, 250)}"
        if _free(host):
            return host
    raise RuntimeError("no free loopback address for the UR controller emulator")


class Controller:
    """A running emulator: ``host``, ``control(request)`` on its control port."""

    def __init__(self, *args: str, timeout_s: float = 30.0):
        self.host = free_host()
        self.proc = subprocess.Popen([sys.executable, "-m", "gaze4hri_sim.ur_controller", "--host", self.host,
                                      "--lifetime", "300", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()  # blocks until the ports listen (or the process died)
        if line != "ready":
            self.proc.kill()
            raise RuntimeError(f"emulator did not start: {line!r} {self.proc.stderr.read()}")

    def control(self, request: str) -> str:
        with socket.create_connection((self.host, 30010), timeout=10) as s:
            s.sendall((request + "\n").encode())
            return s.makefile().readline().strip()

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


def monitor(calibration_dir, limits: SafetyLimits | None = None) -> SafetyMonitor:
    """The robot's SafetyMonitor from the repository's calibration (safety.monitor_for)."""
    return monitor_for(load_calibration(calibration_dir), limits)


def head_in_front(mon: SafetyMonitor, T_base_tool0) -> object:
    """A head-band pose 0.55 m in front of the tool (world x), clear of the camera."""
    from gaze4hri_core.transforms import SE3

    eye = mon.T_world_base.apply(T_base_tool0.t) + np.array([-0.55, 0.0, 0.05])
    return SE3(np.eye(3), eye)



