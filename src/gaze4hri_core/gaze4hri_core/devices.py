"""The driver seam: what a ROS node needs from a robot, a camera or a motion-capture
system, independent of the backend (real SDK, simulation, replay).

Nodes own ROS; drivers own the vendor SDK (CONVENTIONS.md, "Hardware behind a seam").
Drivers never import rclpy. All stamps are nanoseconds on the host clock (or the
simulation clock for simulated backends); device clocks are mapped by the driver and
kept alongside for provenance. Lengths in metres, angles in radians.

Compatible extensions (drivers helper, issue 3; every new field has a default):
- ``MotionRefused``: raised by ``move_*`` when the safety preview refuses a motion
  (the robot has not moved); ``.reason`` is one line.
- ``RobotState.stop_reason``: why the robot stopped on its own (safety monitor STOP,
  protective stop, connection loss), else None. ``RobotState.commanded_speed``: the
  commanded TCP speed (m/s) of the active motion at ``stamp_ns`` (0 when idle), for the
  commanded-vs-measured log.
- ``RobotDriver.safety``: the driver's own ``SafetyMonitor`` (gaze4hri_core.safety);
  nodes feed it live head-band poses with ``safety.update_head(stamp_ns, T_world_head)``
  and operator stops with ``safety.request_stop(reason)``.
- ``CameraFrame.truth``: the simulator's ground truth at the frame stamp
  (``gaze4hri_sim.world.SimTruth``; None for real/replay): publish it on
  ``Topics.SIM_GAZE_TRUTH`` / ``Topics.SIM_BLINK_TRUTH``.
- ``CameraDriver.finished`` (end of a replay) and ``CameraDriver.frames_read``.
- ``MocapFrame.latency_ns``: exposure-to-host latency removed from the stamp.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np

from gaze4hri_core.calibration import CameraIntrinsics
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.transforms import SE3

__all__ = [
    "DeviceError",
    "RobotState",
    "RobotDriver",
    "CameraFrame",
    "CameraDriver",
    "RigidBodySample",
    "MocapFrame",
    "MocapDriver",
    "Clock",
    "MotionRefused",
    "HostClock",
]


class DeviceError(Gaze4HRIError):
    """A device is absent, refuses, or failed: names the device, its address and the fix."""

    def __init__(self, device: str, address: str, what: str, fix: str):
        self.device, self.address = device, address
        super().__init__(f"{device}: {what}", address, fix)


class MotionRefused(Gaze4HRIError):
    """A motion was refused before the robot moved (safety preview); ``reason`` says why."""

    exit_code = 3

    def __init__(self, reason: str, where: str = "trajectory preview"):
        self.reason = reason
        super().__init__(f"motion refused: {reason}", where,
                         "change the trajectory or the limits (docs/acquisition_devices.md)")


class Clock(Protocol):
    """Host clock or simulation clock (ns)."""

    def now_ns(self) -> int: ...


class HostClock:
    """The host's wall clock (ns since the epoch), the stamp domain of real backends."""

    def now_ns(self) -> int:
        import time

        return time.time_ns()

    def sleep(self, seconds: float) -> None:
        import time

        time.sleep(max(0.0, seconds))


# --------------------------------------------------------------------------- robot
@dataclass(frozen=True)
class RobotState:
    stamp_ns: int
    q: np.ndarray  # (6,) rad
    qd: np.ndarray  # (6,) rad/s
    T_base_tool0: SE3  # tool0 in the controller Base frame
    tcp_speed: np.ndarray  # (6,) [vx, vy, vz, wx, wy, wz] in Base, m/s and rad/s
    speed_scaling: float = 1.0
    protective_stop: bool = False
    connected: bool = True
    moving: bool = False
    controller_time_s: float | None = None  # RTDE getTimestamp(): controller uptime
    stop_reason: str | None = None  # why the robot stopped by itself (safety, protective stop, link)
    commanded_speed: float = 0.0  # commanded TCP speed of the active motion (m/s)


@runtime_checkable
class RobotDriver(Protocol):
    """A UR arm. Motions are asynchronous; ``state()`` is polled at the RTDE rate.

    Every backend refuses motions whose commanded TCP speed or acceleration exceed
    the limits given at construction (SafetyLimits), independently of the node.
    """

    model: str  # "ur5" | "ur5e"
    rate_hz: float  # 125 (CB3) or 500 (e-Series)

    def connect(self, timeout_s: float = 2.0) -> None: ...
    def close(self) -> None: ...
    def state(self) -> RobotState: ...
    def move_linear(self, waypoints: list[SE3], speed: float, accel: float, blend: float = 0.0,
                    constant_speed: bool = False) -> None:
        """Tool0 through Base-frame waypoints (movel, or movep when constant_speed)."""
        ...
    def move_joints(self, q: np.ndarray, speed: float, accel: float) -> None: ...
    def stop(self, decel: float = 2.0) -> None: ...
    def is_moving(self) -> bool: ...


# -------------------------------------------------------------------------- camera
@dataclass(frozen=True)
class CameraFrame:
    stamp_ns: int  # capture time on the host clock (global-time domain preferred)
    frame_number: int  # device frame counter; gaps count as drops
    image: np.ndarray  # (H, W, 3) uint8, RGB
    device_timestamp_ms: float = float("nan")
    timestamp_domain: str = "unknown"  # "global_time" | "hardware_clock" | "system_time" | "sim"
    truth: object | None = None  # sim only: gaze4hri_sim.world.SimTruth at stamp_ns


@runtime_checkable
class CameraDriver(Protocol):
    intrinsics: CameraIntrinsics
    fps: float
    finished: bool  # a replay reached its end (live and sim: always False)

    def start(self) -> None: ...
    def read(self, timeout_s: float = 1.0) -> CameraFrame | None:
        """Next frame, or None on timeout (end of a replay returns None and sets ``finished``)."""
        ...
    def stop(self) -> None: ...
    @property
    def dropped_frames(self) -> int: ...


# ---------------------------------------------------------------- motion capture
@dataclass(frozen=True)
class RigidBodySample:
    name: str  # "head_band" | "calib_tool" | "probe" | "robot_marker" | ...
    id: int
    position: np.ndarray  # (3,) world, REP-103 Z-up (converted once, transforms.motive_yup_to_zup)
    quat_xyzw: np.ndarray  # (4,) world
    tracking_valid: bool
    marker_error_m: float = float("nan")


@dataclass(frozen=True)
class MocapFrame:
    stamp_ns: int  # exposure time mapped to the host clock
    frame_number: int
    bodies: dict[str, RigidBodySample] = field(default_factory=dict)
    latency_ns: int = 0  # exposure -> host arrival latency removed from stamp_ns


@runtime_checkable
class MocapDriver(Protocol):
    rate_hz: float

    def connect(self, timeout_s: float = 2.0) -> None: ...
    def read(self, timeout_s: float = 0.1) -> MocapFrame | None: ...
    def close(self) -> None: ...
