"""One table from (device, backend) to a driver class, imported lazily so that
``backend:=sim`` never imports a vendor SDK and ``backend:=real`` never imports the
simulator. Unknown names fail with "did you mean" and the list of choices.

    robot  = make_robot("sim", RobotConfig(), world=world, safety=robot_monitor(RobotConfig()))
    camera = make_camera("replay", CameraConfig(replay_file="take.db3"))
    mocap  = make_mocap("real", MocapConfig(server_ip="10.0.0.2", local_ip="10.0.0.5"))
"""
from __future__ import annotations

import importlib

from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.device_config import CameraConfig, MocapConfig, RobotConfig, SimConfig
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.registry import Registry

__all__ = ["DRIVERS", "BACKENDS", "driver_class", "make_robot", "robot_monitor", "make_camera", "make_mocap",
           "make_world", "backends_for"]

DRIVERS: dict[tuple[str, str], str] = {
    ("robot", "real"): "gaze4hri_acq.drivers.robot_rtde:RtdeRobot",
    ("robot", "sim"): "gaze4hri_sim.robot:SimRobot",
    ("camera", "real"): "gaze4hri_acq.drivers.camera_realsense:RealSenseCamera",
    ("camera", "replay"): "gaze4hri_acq.drivers.camera_realsense:RealSenseCamera",
    ("camera", "sim"): "gaze4hri_sim.camera:SimCamera",
    ("mocap", "real"): "gaze4hri_acq.drivers.mocap_natnet:NatNetMocap",
    ("mocap", "sim"): "gaze4hri_sim.mocap:SimMocap",
}
BACKENDS = ("real", "sim", "replay")


#: DRIVERS as registries (gaze4hri_core.registry: the project's one type for named
#: tables): device -> its backends -> "module:Class"
_BY_DEVICE: Registry[Registry[str]] = Registry("device", where="drivers registry")
for (_device, _backend), _target in DRIVERS.items():
    if _device not in _BY_DEVICE:
        _BY_DEVICE.add(_device, Registry(f"{_device} backend", where="backend parameter"))
    _BY_DEVICE.get(_device).add(_backend, _target)


def backends_for(device: str) -> list[str]:
    return sorted(_BY_DEVICE.get(device).names())


def driver_class(device: str, backend: str):
    """The class registered for (device, backend), imported on first use; unknown names
    fail in one line with did-you-mean."""
    module, cls = _BY_DEVICE.get(device).get(backend).split(":")
    return getattr(importlib.import_module(module), cls)


def _need_world(device: str, world):
    if world is None:
        raise Gaze4HRIError(f"the simulated {device} needs the shared SimWorld", "drivers registry",
                            "create one with make_world(SimConfig(...)) and pass world=")
    return world


def make_world(config: SimConfig | None = None, **kw):
    """The shared simulated lab (sim.world.SimWorld)."""
    from gaze4hri_sim.world import SimWorld

    return SimWorld(config or SimConfig(), **kw)


def make_robot(backend: str, config: RobotConfig | None = None, world=None, *, safety):
    """A RobotDriver checking every motion against ``safety``: the caller's one
    SafetyMonitor (``gaze4hri_core.safety.monitor_for``), which the caller feeds with the
    head-band stream. No driver builds a monitor of its own: one nobody fed refused
    every move of the real UR5 (issue 20)."""
    if safety is None:
        raise Gaze4HRIError("a robot driver needs the robot's safety monitor", "drivers registry",
                            "build it with gaze4hri_core.safety.monitor_for(calibration, limits) and pass safety=")
    config = config or RobotConfig()
    cls = driver_class("robot", backend)
    if backend == "sim":
        return cls(config, _need_world("robot", world), safety=safety)
    return cls(config, safety=safety)


def robot_monitor(config: RobotConfig):
    """The SafetyMonitor for ``config``: its calibration directory, its subject's eye-head
    file when there is one (else the head-band origin until the session's eye-head run
    sets the offset), its limits."""
    from gaze4hri_core.safety import monitor_for

    try:
        cal = load_calibration(config.calibration_dir, config.subject)
    except Gaze4HRIError:
        if not config.subject:
            raise
        cal = load_calibration(config.calibration_dir, None)  # no eye-head file yet
    return monitor_for(cal, config.limits)


def make_camera(backend: str, config: CameraConfig | None = None, world=None):
    config = config or CameraConfig()
    cls = driver_class("camera", backend)
    if backend == "sim":
        return cls(config, _need_world("camera", world))
    if backend == "replay" and config.replay_file is None:
        raise Gaze4HRIError("the replay backend needs a recording", "camera replay_file",
                            "pass replay_file:=/path/to/recording.db3")
    return cls(config, replay=(backend == "replay"))


def make_mocap(backend: str, config: MocapConfig | None = None, world=None, max_lag_s: float | None = None):
    """``max_lag_s`` (sim): the reader skips frames further behind the clock (SimMocap)."""
    config = config or MocapConfig()
    cls = driver_class("mocap", backend)
    if backend == "sim":
        return cls(config, _need_world("mocap", world), max_lag_s=max_lag_s)
    return cls(config)
