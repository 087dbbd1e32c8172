"""Typed driver configurations (pydantic, frozen, validated once). ROS nodes translate
their parameters into these; an invalid value fails at start-up with one line naming
the field and the allowed range (``config_error``)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from gaze4hri_core.errors import Gaze4HRIError

from .safety import SafetyLimits

__all__ = ["DEFAULT_ROBOT_IP", "DEFAULT_MOTIVE_IP", "RobotConfig", "CameraConfig", "CameraSettings", "MocapConfig",
           "SimConfig", "validate", "DEFAULT_CALIBRATION",
           "default_calibration", "share_dir"]



def share_dir(package: str = "gaze4hri_acq") -> Path | None:
    """``share/<package>`` of an installed ROS package, found through the ament resource
    index on $AMENT_PREFIX_PATH (what ament_index_python's get_package_share_directory
    reads; read directly so this ROS-free package imports no ROS), else under this
    Python's prefix (a pip install's data files); None when not installed."""
    marker = Path("share") / "ament_index" / "resource_index" / "packages" / package
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep)):
        if (Path(prefix) / marker).is_file():
            return Path(prefix) / "share" / package
    return None


def default_calibration() -> Path:
    """The calibration directory used when none is given: $GAZE4HRI_CALIBRATION; in a
    source checkout (or a colcon --symlink-install) the repository's calibration/;
    when installed, share/gaze4hri_acq/calibration found through the ament index."""
    env = os.environ.get("GAZE4HRI_CALIBRATION")
    if env:
        return Path(env)
    checkout = Path(__file__).resolve().parents[3] / "calibration"
    if (checkout / "registration.yaml").is_file():
        return checkout
    share = share_dir("gaze4hri_acq")
    if share is not None and (share / "calibration").is_dir():
        return share / "calibration"
    return checkout  # absent: the first load names this path and the fix


DEFAULT_CALIBRATION = default_calibration()


class _C(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


#: the lab's UR controller address (Sezer et al.'s rig; the one default of every entry
#: point: CLI, launch arguments, node parameters, RobotConfig)
DEFAULT_ROBOT_IP = "192.168.1.102"
#: the Motive PC's default address (loopback: Motive on this machine)
DEFAULT_MOTIVE_IP = "127.0.0.1"


class RobotConfig(_C):
    host: str = Field(default=DEFAULT_ROBOT_IP, description="robot controller IP (real backend)")
    model: Literal["ur5", "ur5e"] = Field(default="ur5",
                                          description="arm model: ur5 (CB3, 125 Hz RTDE) or ur5e (500 Hz)")
    rate_hz: float | None = Field(default=None, gt=0, le=500, description="state rate; default 125 (ur5) or 500 (ur5e)")
    connect_timeout_s: float = Field(default=2.0, gt=0, le=30,
                                     description="time allowed for the controller to answer (s)")
    calibration_dir: Path = Field(default=DEFAULT_CALIBRATION,
                                  description="calibration directory (registration, hand-eye)")
    subject: str | None = Field(default="default",
                                description="subject id for the eye-head offset used by the head distance check")
    limits: SafetyLimits = Field(default_factory=SafetyLimits)
    read_only: bool = Field(default=False,
                            description="stream state only (RTDE receive); refuse motions (hand-guided calibration, "
                                        "pendant-driven runs)")
    max_clock_drift_ms: float = Field(default=5.0, gt=0,
                                      description="controller/host clock drift that triggers a re-estimate (ms)")

    @property
    def state_rate_hz(self) -> float:
        return float(self.rate_hz or (500.0 if self.model == "ur5e" else 125.0))


class CameraSettings(_C):
    """Colour sensor settings fixed for the whole session, as the study's data collector
    sets them (GazeForHRI/Gaze4HRI@main:data_collector.py:110-123: exposure 250, gain
    90, white balance 3000 K, saturation 68; saved with every trial as
    rgb_camera_settings.json, data_collector.py:494-500). Fixed exposure keeps the
    illumination levels of experiment 1 in the images: auto exposure would partly
    cancel them. Ranges: the D435i RGB sensor's option ranges (librealsense)."""

    auto_exposure: bool = Field(default=False,
                                description="RealSense enable_auto_exposure; off so brightness follows the light level")
    auto_white_balance: bool = Field(default=False,
                                     description="RealSense enable_auto_white_balance; off, white balance fixed")
    exposure: float = Field(default=250.0, ge=1, le=10000,
                            description="manual exposure (RealSense units of 100 us; the study: 250)")
    gain: float = Field(default=90.0, ge=0, le=128, description="manual gain (the study: 90)")
    white_balance: float = Field(default=3000.0, ge=2800, le=6500, description="white balance (K; the study: 3000)")
    saturation: float = Field(default=68.0, ge=0, le=100, description="saturation (the study: 68)")

    def as_options(self) -> dict[str, float]:
        """RealSense option name -> value, in the order they must be set (auto modes off first)."""
        return {"enable_auto_exposure": float(self.auto_exposure),
                "enable_auto_white_balance": float(self.auto_white_balance),
                "exposure": self.exposure, "gain": self.gain, "white_balance": self.white_balance,
                "saturation": self.saturation}


class CameraConfig(_C):
    serial: str | None = Field(default=None,
                               description="RealSense serial number (real backend); None = the only camera")
    width: int = Field(default=1920, ge=64, le=1920, description="colour width (px)")
    height: int = Field(default=1080, ge=36, le=1080, description="colour height (px)")
    fps: int = Field(default=30, ge=1, le=90, description="frame rate (Hz)")
    replay_file: Path | None = Field(default=None, description="RealSense recording (.db3) for the replay backend")
    replay_realtime: bool = Field(default=True,
                                  description="replay paced at the recorded rate (True, like a live camera) or "
                                              "as fast as possible (False: the pipeline's one-frame queue may skip "
                                              "frames a slow reader misses)")
    calibration_dir: Path = Field(default=DEFAULT_CALIBRATION,
                                  description="intrinsics for the sim backend (camera_info.yaml)")
    hw_clock_wrap_ms: float = Field(default=2.0**32 / 1000.0, gt=0,
                                    description="period of the device's 32-bit microsecond hardware clock (ms)")
    color: CameraSettings = Field(default_factory=CameraSettings,
                                  description="colour sensor settings (fixed exposure; the study's values)")

    @field_validator("replay_file")
    @classmethod
    def _db3(cls, v):
        if v is not None and Path(v).suffix == ".bag":
            raise ValueError("pyrealsense2 2.59 records and plays rosbag2 '.db3' files, not ROS 1 '.bag'")
        return v


class MocapConfig(_C):
    server_ip: str = Field(default="127.0.0.1", description="Motive PC address")
    local_ip: str = Field(default="127.0.0.1", description="this PC's address on the Motive network")
    use_multicast: bool = Field(default=False, description="multicast (Motive default) or unicast")
    multicast_address: str = Field(default="239.255.42.99", description="Motive multicast group")
    command_port: int = Field(default=1510, ge=1, le=65535, description="Motive command port")
    data_port: int = Field(default=1511, ge=1, le=65535, description="Motive data port (multicast)")
    up_axis: Literal["y", "z"] = Field(default="y", description="Motive's streaming up axis (Y-up is Motive's default)")
    bodies: dict[str, str] = Field(default_factory=dict,
                                   description="Motive rigid-body name -> our name (head_band, calib_tool, probe, "
                                               "robot_marker)")
    rate_hz: float = Field(default=100.0, gt=0, le=1000, description="nominal frame rate (Hz)")
    clock_frequency_hz: float | None = Field(default=None, gt=0,
                                             description="Motive high-resolution clock ticks per second; None = "
                                                         "estimate from frame timestamps")
    connect_timeout_s: float = Field(default=2.0, gt=0, le=30, description="time allowed for NAT_SERVERINFO (s)")
    units_m: float = Field(default=1.0, gt=0, description="metres per Motive length unit")


class SimConfig(_C):
    """The simulated world: clock speed, subject behaviour, noise and faults."""

    real_time_factor: float = Field(default=1.0, gt=0, le=1000, description="simulated seconds per wall second")
    seed: int = Field(default=0, description="random seed (subject variation, blinks, noise)")
    calibration_dir: Path = Field(default=DEFAULT_CALIBRATION, description="calibration the world is built from")
    subject: str = Field(default="default", description="subject whose eye-head offset the world uses")
    head_follow_yaw: float = Field(default=0.45, ge=0, le=1, description="fraction of the gaze yaw the head turns")
    head_follow_pitch: float = Field(default=0.35, ge=0, le=1, description="fraction of the gaze pitch the head turns")
    head_turn_s: float = Field(default=0.4, gt=0, le=3, description="time to turn the head to a new target (s)")
    head_sway_m: float = Field(default=0.004, ge=0, le=0.05, description="amplitude of head sway (m)")
    blink_rate_per_min: float = Field(default=17.0, ge=0, le=60,
                                      description="spontaneous blink rate (Bentivoglio et al. 1997: ~17/min)")
    blink_duration_s: float = Field(default=0.15, gt=0, le=1, description="eye closure per blink (s)")
    # rigid-body jitter of a tuned OptiTrack volume (sub-0.1 mm, a few hundredths of a
    # degree); the study validated +/-0.5 mm accuracy (gaze4hri.md, Rig)
    marker_noise_m: float = Field(default=0.0001, ge=0, le=0.01, description="rigid-body position jitter (m, 1 sigma)")
    marker_noise_deg: float = Field(default=0.03, ge=0, le=5,
                                    description="rigid-body orientation jitter (deg, 1 sigma)")
    mocap_rate_hz: float = Field(default=100.0, gt=0, le=1000, description="simulated motion-capture rate (Hz)")
    robot_model: Literal["ur5", "ur5e"] = "ur5"
    table_tracked: bool = Field(default=True,
                                description="stream the table's rigid body ('table'; needs table.yaml in the "
                                            "calibration)")
    camera_body: bool = Field(default=True,
                              description="stream a rigid body on the camera ('camera'; needs camera_body.yaml)")
    table_nudge: tuple[float, float, float, float] | None = Field(
        default=None,
        description="nudge the table once: (at_s after the world starts, dx_m, dy_m, dyaw_deg); its targets move "
                    "with it")


def validate(model: type[BaseModel], values: dict, where: str = "parameters"):
    """Validate ``values`` into ``model``; one Gaze4HRIError line naming the field on failure."""
    try:
        return model.model_validate(values)
    except ValidationError as err:
        e = err.errors()[0]
        loc = ".".join(str(x) for x in e.get("loc", ())) or "(top level)"
        msg = e.get("msg", "invalid").removeprefix("Value error, ")
        field = model.model_fields.get(str(e.get("loc", ("",))[0]))
        desc = f" ({field.description})" if field is not None and field.description else ""
        raise Gaze4HRIError(f"invalid parameter '{loc}': {msg}{desc}", where,
                            "fix the value (docs/acquisition_devices.md)") from None
