"""The one session configuration: ``gaze4hri-acq session`` options, session.launch.py
arguments and the orchestrator node's ROS parameters are all this frozen, validated
model, so the three entry points cannot drift apart.

Every field carries its description (the launch argument's description) and, where
the values are finite, its choices (Literal types). Fields marked ``cli_only`` are
process concerns of the command line (prompts, live view, test hooks) and are not
launch arguments; every other field is exactly one launch argument of the same name.
Values arrive as Python values (CLI, tests) or as strings (launch arguments, ROS
parameters): the ``before`` validators accept both.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from gaze4hri_core.device_config import DEFAULT_MOTIVE_IP, DEFAULT_ROBOT_IP
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.protocol import EXPERIMENTS, FIXED_TRIAL_S
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = ["SessionConfig", "RESOLUTIONS", "BACKENDS", "COMPRESSIONS", "DEFAULT_RESOLUTION", "launch_arguments", "from_strings", "session_config"]

BACKENDS = ("sim", "real")
COMPRESSIONS = ("none", "zstd", "lz4")
#: colour resolutions of the D435i (documented; any WxH within the sensor's range is accepted)
RESOLUTIONS = ("1920x1080", "1280x720", "960x540", "848x480", "640x360", "424x240")

#: each backend's colour resolution unless one is given: the lab's D435i records 1080p
#: (about 99 GB for 63 trials); the simulated lab 640x360 (about 11 GB,
#: estimate_session_bytes), so the first command fits a laptop, from the CLI and from
#: session.launch.py alike
DEFAULT_RESOLUTION = {"real": (1920, 1080), "sim": (640, 360)}

_CLI = {"cli_only": True}


def _split(v: Any) -> tuple[str, ...] | None:
    if v is None:
        return None
    if isinstance(v, str):
        parts = [p for p in v.replace(",", " ").split() if p and p != "all"]
        return tuple(parts) or None
    return tuple(str(x) for x in v) or None


class SessionConfig(BaseModel):
    """One subject's session request, validated once; saved into session.yaml's settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = Field(description="subject id, e.g. S12 (session directory name and eye-head file)")
    backend: Literal["sim", "real"] = Field("sim", description="device backend: the simulated lab or the lab's UR5, RealSense and OptiTrack")
    out_dir: Path = Field(Path("sessions"), description="sessions root directory; the session is <out_dir>/<subject>")
    experiments: tuple[str, ...] | None = Field(None, description=f"record only these experiments (space or comma separated: {', '.join(EXPERIMENTS)}); empty: all")
    trial_ids: tuple[str, ...] | None = Field(None, description="record only these trial ids (space or comma separated, e.g. illum025_P3 arc_P5); empty: all")
    resume: bool = Field(False, description="continue the session at the first trial not done")
    redo: tuple[str, ...] = Field((), description="record these trial ids again (previous bags kept under bags/.attempts)")
    resolution: tuple[int, int] | None = Field(None, description=f"colour resolution WxH (64x36 .. 1920x1080), e.g. {', '.join(RESOLUTIONS)}; "
                                                             "empty: 640x360 with backend sim, 1920x1080 with real")
    fps: float = Field(30.0, gt=0, le=90, description="colour frame rate (Hz)")
    # the study's fixed trials record 5 s (GazeForHRI/Gaze4HRI@main:config.py:59-69)
    trial_seconds: float = Field(FIXED_TRIAL_S, gt=0, description="recording length of a fixed-camera trial (s; the study: 5); moving trials last their motion")
    compression: Literal["none", "zstd", "lz4"] = Field("none", description="MCAP chunk compression (lossless either way)")
    calibration_dir: Path | None = Field(None, description="calibration directory; empty: the installed package's (or the checkout's) calibration/")
    seed: int = Field(0, ge=0, description="simulation seed (sim backend)")
    real_time_factor: float = Field(6.0, gt=0, le=100, description="at most this many simulated seconds per wall second (sim backend)")
    robot_ip: str = Field(DEFAULT_ROBOT_IP, description="IP address of the UR controller (RTDE, real backend)")
    robot_model: Literal["ur5", "ur5e"] = Field("ur5", description="arm model (DH parameters and RTDE rate)")
    motive_ip: str = Field(DEFAULT_MOTIVE_IP, description="IP address of the Motive PC streaming NatNet (real backend)")
    local_ip: str = Field("127.0.0.1", description="IP address of this machine's interface facing Motive")
    camera_serial: str = Field("", description="RealSense serial number (real backend); empty: the only connected camera")
    skip_calibration: bool = Field(False, description="do not start with the subject's eye-head calibration: use the subject's existing file")
    # the camera pose the ground truth uses: "fk" (registration x forward kinematics x hand-eye; the study's
    # choice, GazeForHRI/Gaze4HRI@main:config.py:162-167) or "mocap" (the rigid body 'camera' x camera_body.yaml)
    camera_pose_source: Literal["fk", "mocap"] = Field("fk", description="ground-truth camera pose: robot forward kinematics x hand-eye, or the camera's rigid body")
    # orchestrator tuning (config/orchestrator.yaml holds the same values)
    head_yaw_tolerance_deg: float = Field(7.0, gt=0, le=45, description="head-pose check: allowed yaw error (deg)")
    head_hold_s: float = Field(0.3, ge=0, le=10, description="head-pose check: the yaw must hold this long (s)")
    head_check_timeout_s: float = Field(15.0, gt=0, description="head-pose check: give up after this long (s)")
    calibration_max_age_days: float = Field(30.0, gt=0, description="refuse a real session with a calibration older than this (days)")
    # the head band is put on anew for each session: the subject's eye-head offset is
    # calibrated at the start of a session (Sezer et al. Sec. III-B) unless a file younger than this exists
    eye_head_max_age_hours: float = Field(12.0, ge=0, description="reuse the subject's eye-head calibration when younger than this (h)")
    disk_margin: float = Field(1.2, ge=1.0, le=10.0, description="free disk space needed: estimated session size times this")
    motion_timeout_s: float = Field(60.0, gt=0, description="fail a trial whose robot motion does not finish within this (s)")
    # command-line process concerns and test hooks (not launch arguments)
    yes: bool = Field(False, description="do not wait for Enter at the prompts (the sim backend's default unless --interactive)", json_schema_extra=_CLI)
    interactive: bool = Field(False, description="sim backend: wait for Enter at every prompt as in the lab (rehearse a session)", json_schema_extra=_CLI)
    quiet: bool = Field(False, description="no live status view", json_schema_extra=_CLI)
    # the Foxglove live view (live_view.py): camera image, 3D scene, session state; the CLI
    # and session.launch.py (the operator's machine) turn it on at 127.0.0.1:8765
    # (nodes/launching.LAUNCH_DEFAULTS), the Python API leaves it off
    live_view: str = Field("off", description="Foxglove WebSocket live view at HOST:PORT (or PORT) for the operator (Foxglove: open connection); off: none")
    external_devices: bool = Field(False, description="device nodes run in other processes (ros2 launch): start only the orchestrator", json_schema_extra=_CLI)
    fail_after_bytes: int = Field(-1, description="test hook: simulated full disk after this many bytes", json_schema_extra=_CLI)
    mocap_dropout: tuple[str, float, float] | None = Field(None, description="sim fault injection: (trial, at_s, duration_s)", json_schema_extra=_CLI)
    protective_stop: tuple[str, float] | None = Field(None, description="sim fault injection: (trial, at_s)", json_schema_extra=_CLI)
    table_nudge: tuple[str, float, float, float, float] | None = Field(None, description="sim: (trial, at_s, dx_m, dy_m, dyaw_deg) the table is bumped at_s into the trial's recording",
                                                                json_schema_extra=_CLI)

    # ------------------------------------------------------------ validators
    @field_validator("subject")
    @classmethod
    def _plain_id(cls, v: str) -> str:
        if not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9_.-]*", v or ""):
            raise ValueError(f"invalid subject id {v!r}: use a plain id such as S12 (letters, digits, '_', '-', '.')")
        return v

    @field_validator("experiments", "trial_ids", mode="before")
    @classmethod
    def _opt_list(cls, v):
        return _split(v)

    @field_validator("redo", mode="before")
    @classmethod
    def _list(cls, v):
        return _split(v) or ()

    @field_validator("experiments")
    @classmethod
    def _known_experiments(cls, v):
        bad = [e for e in v or () if e not in EXPERIMENTS]
        if bad:
            raise ValueError(f"unknown experiment {bad[0]!r}: use some of {', '.join(EXPERIMENTS)}")
        return v

    @model_validator(mode="before")
    @classmethod
    def _backend_resolution(cls, data):
        """No resolution given: the backend's (DEFAULT_RESOLUTION)."""
        if isinstance(data, dict) and data.get("resolution") in (None, ""):
            data = {**data, "resolution": DEFAULT_RESOLUTION.get(str(data.get("backend", "sim")), DEFAULT_RESOLUTION["real"])}
        return data

    @field_validator("resolution", mode="before")
    @classmethod
    def _wxh(cls, v):
        if isinstance(v, str):
            try:
                w, h = (int(x) for x in v.lower().split("x"))
            except ValueError:
                raise ValueError(f"resolution must be WxH such as 1920x1080, got {v!r}") from None
            return (w, h)
        return v

    @field_validator("resolution")
    @classmethod
    def _in_sensor_range(cls, v):
        if v is None:
            raise ValueError("resolution must be WxH such as 1920x1080")
        w, h = v
        if not (64 <= w <= 1920 and 36 <= h <= 1080):
            raise ValueError(f"resolution {w}x{h} outside 64x36 .. 1920x1080 (the D435i colour sensor)")
        return v

    @field_validator("live_view", mode="before")
    @classmethod
    def _address(cls, v):
        v = "off" if v in (None, "", False) else str(v).strip()
        if v.lower() in ("off", "false", "no", "none"):
            return "off"
        m = re.fullmatch(r"(?:(.+):)?(\d{1,5})", v)
        if not m or int(m.group(2)) > 65535:
            raise ValueError(f"live view address must be HOST:PORT, PORT or off, got {v!r}")
        return f"{m.group(1) or '127.0.0.1'}:{int(m.group(2))}"

    @field_validator("calibration_dir", mode="before")
    @classmethod
    def _empty_is_none(cls, v):
        return None if v in ("", None) else v

    # ------------------------------------------------------------ derived
    @property
    def auto_confirm(self) -> bool:
        """No Enter at the prompts: asked for, or the simulator (no operator needed)
        unless ``interactive`` rehearses the prompts."""
        return self.yes or (self.backend == "sim" and not self.interactive)

    @property
    def addresses(self) -> dict[str, str]:
        """Where each device is, for the operator's error lines."""
        if self.backend != "real":
            return {"camera": "sim", "mocap": "sim", "robot": "sim"}
        return {"camera": f"RealSense serial {self.camera_serial or 'any'}", "mocap": f"Motive at {self.motive_ip}",
                "robot": f"UR controller at {self.robot_ip}"}

    def settings(self) -> dict:
        """What session.yaml records about how the session is recorded."""
        keys = ("backend", "resolution", "fps", "trial_seconds", "compression", "camera_pose_source", "head_yaw_tolerance_deg", "head_hold_s",
                "head_check_timeout_s", "calibration_max_age_days", "eye_head_max_age_hours", "disk_margin", "motion_timeout_s")
        d = {k: getattr(self, k) for k in keys}
        d["resolution"] = list(self.resolution)
        d["addresses"] = self.addresses
        return d

    def node_parameters(self) -> dict[str, dict]:
        """Each node's parameters from this session: the one per-node map that the CLI's
        one-process runner (session_assembly) and session.launch.py's parameter files
        both use. The robot gets the subject, so its safety monitor measures the
        camera-to-head limit from the subject's eye midpoint (issue 20)."""
        w, h = self.resolution
        return {
            "camera": {"backend": self.backend, "serial": self.camera_serial, "width": int(w), "height": int(h), "fps": float(self.fps)},
            "mocap": {"backend": self.backend, "motive_ip": self.motive_ip, "local_ip": self.local_ip},
            "robot": {"backend": self.backend, "robot_ip": self.robot_ip, "robot_model": self.robot_model, "subject": self.subject,
                      "calibration_dir": str(self.calibration_dir or "")},
            "recorder": {"compression": self.compression, "backpressure": self.backend == "sim"},
            "orchestrator": self.as_strings(),
        }

    def as_strings(self) -> dict[str, str]:
        """Every launch field as the string a launch argument / ROS parameter carries."""
        return {name: _to_string(getattr(self, name)) for name in launch_field_names()}


def _to_string(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, tuple) and len(v) == 2 and all(isinstance(x, int) for x in v):
        return f"{v[0]}x{v[1]}"
    if isinstance(v, tuple):
        return " ".join(str(x) for x in v)
    return str(v)


def launch_field_names() -> list[str]:
    """The fields that are launch arguments (and orchestrator parameters), in order."""
    return [n for n, f in SessionConfig.model_fields.items() if not (f.json_schema_extra or {}).get("cli_only")]


def launch_arguments() -> list[dict]:
    """Launch argument declarations, 1:1 with the fields: name, default (string),
    description (the field's), choices (Literal and bool fields)."""
    from typing import get_args, get_origin

    out = []
    for name in launch_field_names():
        f = SessionConfig.model_fields[name]
        d = {"name": name, "default": "" if f.is_required() else _to_string(f.default), "description": f.description}
        ann = f.annotation
        if get_origin(ann) is Literal:
            d["choices"] = [str(c) for c in get_args(ann)]
        elif ann is bool:
            d["choices"] = ["true", "false"]
        out.append(d)
    return out


def _one_line(e: ValidationError, where: str) -> Gaze4HRIError:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ())) or "session"
    msg = err.get("msg", "invalid").removeprefix("Value error, ")
    fld = SessionConfig.model_fields.get(str(err.get("loc", ("",))[0]))
    fix = f"{loc}: {fld.description}" if fld is not None and fld.description else "see 'gaze4hri-acq session --help'"
    return Gaze4HRIError(f"invalid session setting '{loc}': {msg}", where, fix)


def session_config(where: str = "gaze4hri-acq session", **values) -> SessionConfig:
    """Build and validate; a bad value becomes one line (Gaze4HRIError), not a traceback."""
    try:
        return SessionConfig(**values)
    except ValidationError as e:
        raise _one_line(e, where) from None


def from_strings(values: dict[str, Any], where: str = "session.launch.py") -> SessionConfig:
    """From launch arguments or ROS parameters (strings, or values YAML already typed);
    empty strings of optional fields mean their default."""
    clean = {}
    for k, v in values.items():
        if k not in SessionConfig.model_fields:
            raise Gaze4HRIError(f"unknown session setting '{k}'", where, f"use some of {', '.join(launch_field_names())}")
        f = SessionConfig.model_fields[k]
        if isinstance(v, str) and v == "" and not f.is_required() and f.annotation is not str:
            continue
        if f.annotation is bool and isinstance(v, str):
            if v.lower() not in ("true", "false"):
                raise Gaze4HRIError(f"invalid session setting '{k}': {v!r} is not true or false", where, f"{k}: {f.description}")
            v = v.lower() == "true"
        elif f.annotation is str and not isinstance(v, str):
            v = str(v)  # a subject id such as 012 that YAML read as a number
        clean[k] = v
    return session_config(where, **clean)
