"""Simulated UR robot backend: the RobotDriver seam on ``sim.arm.SimArm`` (core UR
kinematics, trapezoidal profiles, speed scaling, safety monitor, injectable faults)
inside a shared ``SimWorld``."""
from __future__ import annotations

import numpy as np
from gaze4hri_core.device_config import RobotConfig
from gaze4hri_core.devices import DeviceError, RobotState
from gaze4hri_core.safety import SafetyMonitor
from gaze4hri_core.transforms import SE3

from .arm import HOME_Q, SimArm

__all__ = ["SimRobot"]


class SimRobot:
    """RobotDriver for backend:=sim. ``world.arm`` is this robot's arm."""

    def __init__(self, config: RobotConfig, world, safety: SafetyMonitor, q0=None):
        self.config = config
        self.model = config.model
        self.rate_hz = config.state_rate_hz
        self.world = world
        if world.calib.robot_model != config.model:
            raise DeviceError("UR robot (sim)", "sim",
                              f"model {config.model} but the calibration is for {world.calib.robot_model}",
                              "set model to match registration.yaml's robot_model")
        # the owner's monitor (the robot node's): the simulated controller checks it at
        # every tick, fed also by the world with the samples its motion capture publishes
        self.safety = safety
        self.arm = SimArm(world.clock, self.safety, config.model, self.rate_hz, HOME_Q if q0 is None else q0,
                          head_feed=world.feed_robot_monitor)
        world.arm = self.arm
        self._connected = False

    # faults, forwarded for tests and the sim node
    def inject_protective_stop(self, at_ns: int | None = None) -> None:
        self.arm.inject_protective_stop(at_ns)

    def inject_connection_loss(self, at_ns: int | None = None) -> None:
        self.arm.inject_connection_loss(at_ns)

    def set_speed_scaling(self, s: float) -> None:
        if not 0.0 < s <= 1.0:
            raise ValueError("speed scaling must be in (0, 1]")
        self.arm.speed_scaling = float(s)

    def connect(self, timeout_s: float = 2.0) -> None:
        if not self.arm.connected:
            raise DeviceError("UR robot (sim)", "sim", "connection refused (simulated connection loss)",
                              "call arm.reconnect()")
        self._connected = True

    def close(self) -> None:
        if self._connected and self.arm.connected:
            self.arm.stop()
        self._connected = False

    def state(self) -> RobotState:
        return self.arm.state()

    def state_at(self, t_ns: int) -> RobotState:
        """State sampled at simulated time ``t_ns`` (the node's 125/500 Hz schedule)."""
        return self.arm.state_at(t_ns)

    def move_linear(self, waypoints: list[SE3], speed: float, accel: float, blend: float = 0.0,
                    constant_speed: bool = False) -> None:
        self._check_open()
        self.arm.move_linear(list(waypoints), speed, accel, blend, constant_speed)

    def move_joints(self, q: np.ndarray, speed: float, accel: float) -> None:
        self._check_open()
        self.arm.move_joints(q, speed, accel)

    def stop(self, decel: float = 2.0) -> None:
        self.arm.stop()

    def is_moving(self) -> bool:
        return self.arm.is_moving()

    @property
    def stop_code(self) -> str | None:
        """The last stop's fault code (mocap_loss, head_distance, protective_stop, ...), as the real driver's."""
        return self.arm.stop_code

    def _check_open(self) -> None:
        if not self._connected:
            raise DeviceError("UR robot (sim)", "sim", "not connected", "call connect() first (lifecycle configure)")
