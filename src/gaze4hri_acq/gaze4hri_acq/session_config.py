"""The one session configuration: ``gaze4hri-acq session`` options, session.launch.py
arguments and the orchestrator node's ROS parameters are all this frozen, validated
model, so the three entry points cannot drift apart.

Every field carries its description (the option's help and the launch argument's
description) and, where the values are finite, its choices (Literal types). Fields
marked ``cli_only`` are process concerns of the command line (prompts, live view, test
hooks) and are not launch arguments; fields marked ``tuning`` are the orchestrator's
tuning, set in config/orchestrator.yaml and not command-line options; every other field
is exactly one option (:func:`cli_options`) and one launch argument
(:func:`launch_arguments`) of the same name. Values arrive as Python values (tests), as
strings (the command line, launch arguments, ROS parameters) or typed by YAML: the
field's validators accept each, and are the only check of its value.
"""
from __future__ import annotations

import math
import re
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from gaze4hri_core.device_config import DEFAULT_MOTIVE_IP, DEFAULT_ROBOT_IP, CameraConfig
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.protocol import EXPERIMENTS, FIXED_TRIAL_S
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

__all__ = ["SessionConfig", "RESOLUTIONS", "BACKENDS", "COMPRESSIONS", "DEFAULT_RESOLUTION", "OPERATOR_LIVE_VIEW",
           "sensor_range", "check_resolution", "launch_arguments", "cli_options", "from_strings", "session_config"]

BACKENDS = ("sim", "real")
COMPRESSIONS = ("none", "zstd", "lz4")
#: colour resolutions of the D435i (documented; any WxH within the sensor's range is accepted)
RESOLUTIONS = ("1920x1080", "1280x720", "960x540", "848x480", "640x360", "424x240")

#: each backend's colour resolution unless one is given: the lab's D435i records 1080p
#: (about 99 GB for 63 trials); the simulated lab 640x360 (about 11 GB,
#: estimate_session_bytes), so the first command fits a laptop, from the CLI and from
#: session.launch.py alike
DEFAULT_RESOLUTION = {"real": (1920, 1080), "sim": (640, 360)}

#: the operator's entry points (the CLI, session.launch.py) turn the Foxglove live view
#: on at this loopback address; the Python API leaves it off
OPERATOR_LIVE_VIEW = "127.0.0.1:8765"


def sensor_range(name: str) -> tuple[int, int]:
    """The colour sensor's range of ``width``, ``height`` or ``fps``: the bounds of
    gaze4hri_core.device_config.CameraConfig (the D435i's), declared there once."""
    lo = hi = None
    for m in CameraConfig.model_fields[name].metadata:
        lo, hi = getattr(m, "ge", lo), getattr(m, "le", hi)
    return int(lo), int(hi)


def check_resolution(w: int, h: int) -> tuple[int, int]:
    """The one check of a colour resolution (session options, launch arguments, ROS parameters)."""
    (w0, w1), (h0, h1) = sensor_range("width"), sensor_range("height")
    if not (w0 <= w <= w1 and h0 <= h <= h1):
        raise ValueError(f"resolution {w}x{h} outside {w0}x{h0} .. {w1}x{h1} (the D435i colour sensor)")
    return int(w), int(h)


def _split(v: Any) -> tuple[str, ...] | None:
    if v is None:
        return None
    if isinstance(v, str):
        parts = [p for p in v.replace(",", " ").split() if p and p != "all"]
        return tuple(parts) or None
    return tuple(str(x) for x in v) or None


def _cli(cli_only: bool = False, tuning: bool = False, **option) -> dict:
    """A field's ``json_schema_extra``: ``cli_only`` (not a launch argument), ``tuning``
    (config/orchestrator.yaml's, not a command-line option) and its option's particulars
    for :func:`cli_options`: ``flag`` (default ``--<name>``), ``metavar``, ``nargs``,
    ``choices`` (beyond a Literal's), ``default`` (the command line's, where it differs),
    ``hidden`` (test hooks) and ``rerun`` (False: left out of the printed redo command)."""
    return {**({"cli_only": True} if cli_only else {}), **({"tuning": True} if tuning else {}), "cli": option}


_TUNING = _cli(tuning=True)
_HOOK = {"hidden": True, "rerun": False}
_W, _H = sensor_range("width"), sensor_range("height")


class SessionConfig(BaseModel):
    """One subject's session request, validated once; saved into session.yaml's settings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    subject: str = Field(description="subject id, e.g. S12 (session directory name and eye-head file)")
    backend: Literal["sim", "real"] = Field(
        "sim", description="device backend: the simulated lab or the lab's UR5, RealSense and OptiTrack")
    out_dir: Path = Field(Path("sessions"), description="sessions root directory; the session is <out_dir>/<subject>")
    experiments: tuple[str, ...] | None = Field(
        None, description=f"record only these experiments (space or comma separated: {', '.join(EXPERIMENTS)}); "
                          "empty: all", json_schema_extra=_cli(metavar="EXPERIMENT", rerun=False))
    trial_ids: tuple[str, ...] | None = Field(
        None, description="record only these trial ids (space or comma separated, e.g. illum025_P3 arc_P5; "
                          "gaze4hri-acq trials lists them); empty: all",
        json_schema_extra=_cli(flag="--trials", metavar="ID", rerun=False))
    resume: bool = Field(False, description="continue the session at the first trial not done",
                         json_schema_extra=_cli(rerun=False))
    redo: tuple[str, ...] = Field(
        (), description="record these trial ids again (previous bags kept under bags/.attempts)",
        json_schema_extra=_cli(metavar="ID", rerun=False))
    resolution: tuple[int, int] | None = Field(
        None, description=f"colour resolution WxH ({_W[0]}x{_H[0]} .. {_W[1]}x{_H[1]}), e.g. {', '.join(RESOLUTIONS)}; "
                          "empty: 640x360 with backend sim, 1920x1080 with real",
        json_schema_extra=_cli(metavar="WxH", nargs=None))
    # an integer: the RealSense streams at whole rates (6, 15, 30, 60 Hz); what the camera
    # runs at is what session.yaml records
    fps: int = Field(30, ge=sensor_range("fps")[0], le=sensor_range("fps")[1],
                     description="colour frame rate (Hz, a whole number: the RealSense's rates such as 15, 30, 60)")
    # the study's fixed trials record 5 s (GazeForHRI/Gaze4HRI@main:config.py:59-69)
    trial_seconds: float = Field(
        FIXED_TRIAL_S, gt=0,
        description="recording length of a fixed-camera trial (s; the study: 5); moving trials last their motion")
    compression: Literal["none", "zstd", "lz4"] = Field("none",
                                                        description="MCAP chunk compression (lossless either way)")
    calibration_dir: Path | None = Field(
        None, description="calibration directory; empty: the installed package's (or the checkout's) calibration/",
        json_schema_extra=_cli(flag="--calibration"))
    seed: int = Field(0, ge=0, description="simulation seed (sim backend)")
    real_time_factor: float = Field(6.0, gt=0, le=100,
                                    description="at most this many simulated seconds per wall second (sim backend)")
    robot_ip: str = Field(DEFAULT_ROBOT_IP, description="IP address of the UR controller (RTDE, real backend)")
    robot_model: Literal["ur5", "ur5e"] = Field("ur5", description="arm model (DH parameters and RTDE rate)")
    motive_ip: str = Field(DEFAULT_MOTIVE_IP, description="IP address of the Motive PC streaming NatNet (real backend)")
    local_ip: str = Field("127.0.0.1", description="IP address of this machine's interface facing Motive")
    camera_serial: str = Field("",
                               description="RealSense serial number (real backend); empty: the only connected camera")
    skip_calibration: bool = Field(
        False, description="do not start with the subject's eye-head calibration: use the subject's existing file "
                           "(re-runs; the file used is printed)")
    # the camera pose the ground truth uses: "fk" (registration x forward kinematics x hand-eye; the study's
    # choice, GazeForHRI/Gaze4HRI@main:config.py:162-167) or "mocap" (the rigid body 'camera' x camera_body.yaml)
    camera_pose_source: Literal["fk", "mocap"] = Field(
        "fk", description="ground-truth camera pose: robot forward kinematics x hand-eye (the study's choice), or the "
                          "camera's rigid body x calibration/camera_body.yaml; both are recorded when both exist")
    # orchestrator tuning (config/orchestrator.yaml holds the same values)
    head_yaw_tolerance_deg: float = Field(7.0, gt=0, le=45, description="head-pose check: allowed yaw error (deg)",
                                          json_schema_extra=_TUNING)
    head_hold_s: float = Field(0.3, ge=0, le=10, description="head-pose check: the yaw must hold this long (s)",
                               json_schema_extra=_TUNING)
    head_check_timeout_s: float = Field(15.0, gt=0, description="head-pose check: give up after this long (s)",
                                        json_schema_extra=_TUNING)
    calibration_max_age_days: float = Field(
        30.0, gt=0, description="refuse a real session with a calibration older than this (days)",
        json_schema_extra=_TUNING)
    # the head band is put on anew for each session: the subject's eye-head offset is
    # calibrated at the start of a session (Sezer et al. Sec. III-B) unless a file younger than this exists
    eye_head_max_age_hours: float = Field(
        12.0, ge=0, description="reuse the subject's eye-head calibration when younger than this (h)",
        json_schema_extra=_TUNING)
    disk_margin: float = Field(1.2, ge=1.0, le=10.0,
                               description="free disk space needed: estimated session size times this",
                               json_schema_extra=_TUNING)
    motion_timeout_s: float = Field(
        60.0, gt=0, description="fail a trial whose robot sends no state for this long during a motion (wall s; "
                                "motions are timed by their previewed duration in device time)",
        json_schema_extra=_TUNING)
    # command-line process concerns and test hooks (not launch arguments)
    yes: bool = Field(False, description="do not wait for Enter at the prompts (the sim backend's default unless "
                                         "--interactive)", json_schema_extra=_cli(cli_only=True))
    interactive: bool = Field(
        False, description="sim backend: wait for Enter at every prompt as in the lab (rehearse a session)",
        json_schema_extra=_cli(cli_only=True))
    quiet: bool = Field(False, description="no live status view", json_schema_extra=_cli(cli_only=True))
    # the doctor's checks (gaze4hri_acq.doctor) run before every session; a fail refuses it
    skip_checks: bool = Field(
        False, description="start without the start-up checks (those of gaze4hri-acq doctor): rehearsals only",
        json_schema_extra=_cli(cli_only=True))
    # the Foxglove live view (live_view.py): camera image, 3D scene, session state; the CLI
    # and session.launch.py (the operator's machine) turn it on (OPERATOR_LIVE_VIEW), the
    # Python API leaves it off
    live_view: str = Field(
        "off", description="Foxglove WebSocket live view at HOST:PORT (or PORT) for the operator: camera image, "
                           "3D scene, session state (Foxglove: open connection; layout config/foxglove_layout.json); "
                           "off: none", json_schema_extra=_cli(metavar="HOST:PORT|off", default=OPERATOR_LIVE_VIEW))
    # the one-process command's simulated devices in a second process (split.py): Python
    # threads share one core per process; split, the devices and the recorder run side by side
    sim_device_process: Literal["auto", "yes", "no"] = Field(
        "auto", description="sim backend: run the simulated devices in a second process (yes), in this one (no), or "
                            "auto: a second process where the machine has two cores or more and the session "
                            "records a minute or more",
        json_schema_extra=_cli(cli_only=True))
    external_devices: bool = Field(
        False, description="device nodes run in other processes (ros2 launch): start only the orchestrator",
        json_schema_extra=_cli(cli_only=True))
    fail_after_bytes: int = Field(-1, description="test hook: simulated full disk after this many bytes",
                                  json_schema_extra=_cli(cli_only=True, **_HOOK))
    mocap_dropout: tuple[str, float, float] | None = Field(
        None, description="sim fault injection: (trial, at_s, duration_s)",
        json_schema_extra=_cli(cli_only=True, flag="--sim-mocap-dropout", metavar=("TRIAL", "AT_S", "DURATION_S"),
                               **_HOOK))
    protective_stop: tuple[str, float] | None = Field(
        None, description="sim fault injection: (trial, at_s)",
        json_schema_extra=_cli(cli_only=True, flag="--sim-protective-stop", metavar=("TRIAL", "AT_S"), **_HOOK))
    table_nudge: tuple[str, float, float, float, float] | None = Field(
        None, description="sim: bump the table once, AT_S seconds into TRIAL's recording (its targets move with it; "
                          "tests the tracked table)",
        json_schema_extra=_cli(cli_only=True, flag="--sim-table-nudge",
                               metavar=("TRIAL", "AT_S", "DX_M", "DY_M", "DYAW_DEG"), rerun=False))

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
            backend = str(data.get("backend", "sim"))
            data = {**data, "resolution": DEFAULT_RESOLUTION.get(backend, DEFAULT_RESOLUTION["real"])}
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
        return check_resolution(*v)

    @field_validator("fps", mode="before")
    @classmethod
    def _whole_fps(cls, v):
        """A whole number of frames per second, given as 30, 30.0 or "30": the rate the
        camera runs at and session.yaml records (a 29.97 would have run at 30)."""
        if isinstance(v, bool):
            return v
        try:
            f = float(v)
        except (TypeError, ValueError):
            return v  # not a number: pydantic's own message
        if not math.isfinite(f) or f != round(f):
            raise ValueError(f"fps must be a whole number (the RealSense streams at whole rates such as 15, 30, 60), "
                             f"got {v}")
        return int(f)

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
        keys = ("backend", "resolution", "fps", "trial_seconds", "compression", "camera_pose_source",
                "head_yaw_tolerance_deg", "head_hold_s", "head_check_timeout_s", "calibration_max_age_days",
                "eye_head_max_age_hours", "disk_margin", "motion_timeout_s")
        d = {k: getattr(self, k) for k in keys}
        d["resolution"] = list(self.resolution)
        d["addresses"] = self.addresses
        # the simulation's requested pace; each trial records the pace it reached (TrialRecord.real_time_factor)
        d["real_time_factor"] = self.real_time_factor if self.backend == "sim" else None
        return d

    def node_parameters(self) -> dict[str, dict]:
        """Each node's parameters from this session: the one per-node map that the CLI's
        one-process runner (session_assembly) and session.launch.py's parameter files
        both use. The robot gets the subject, so its safety monitor measures the
        camera-to-head limit from the subject's eye midpoint (issue 20)."""
        w, h = self.resolution
        return {
            "camera": {"backend": self.backend, "serial": self.camera_serial, "width": int(w), "height": int(h),
                       "fps": self.fps},
            "mocap": {"backend": self.backend, "motive_ip": self.motive_ip, "local_ip": self.local_ip},
            "robot": {"backend": self.backend, "robot_ip": self.robot_ip, "robot_model": self.robot_model,
                      "subject": self.subject, "calibration_dir": str(self.calibration_dir or "")},
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


def _extra(name: str) -> dict:
    return SessionConfig.model_fields[name].json_schema_extra or {}


def launch_field_names() -> list[str]:
    """The fields that are launch arguments (and orchestrator parameters), in order."""
    return [n for n in SessionConfig.model_fields if not _extra(n).get("cli_only")]


def tuning_field_names() -> list[str]:
    """The orchestrator's tuning: config/orchestrator.yaml's, launch arguments but no options."""
    return [n for n in SessionConfig.model_fields if _extra(n).get("tuning")]


def launch_arguments() -> list[dict]:
    """Launch argument declarations, 1:1 with the fields: name, default (string),
    description (the field's), choices (Literal and bool fields)."""
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


def _optional(ann):
    """``X | None`` -> X."""
    if get_origin(ann) in (Union, UnionType):
        args = [a for a in get_args(ann) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return ann


def cli_options() -> list[dict]:
    """``gaze4hri-acq session`` options, 1:1 with the fields that are not tuning, as
    plain data (gaze4hri_acq.cli turns them into argparse arguments): ``flag``, ``dest``
    (the field's name), ``help`` (its description), ``default`` (its default), ``required``,
    ``choices`` (a Literal's values), ``nargs`` (tuples), ``metavar``, ``flag_only`` (bool
    fields), ``hidden`` and ``rerun``. Values stay the strings typed: the model checks
    them (:func:`session_config`), once, as it checks launch arguments."""
    out = []
    for name, f in SessionConfig.model_fields.items():
        extra = _extra(name)
        if extra.get("tuning"):
            continue
        opt = dict(extra.get("cli", {}))
        ann = _optional(f.annotation)
        d = {"flag": opt.pop("flag", "--" + name.replace("_", "-")), "dest": name, "help": f.description,
             "required": f.is_required(), "default": None if f.is_required() else opt.pop("default", f.default),
             "flag_only": ann is bool, "hidden": opt.pop("hidden", False), "rerun": opt.pop("rerun", True)}
        if get_origin(ann) is Literal:
            d["choices"] = list(get_args(ann))
        if get_origin(ann) is tuple:
            items = get_args(ann)
            d["nargs"] = "+" if items[-1:] == (Ellipsis,) else len(items)
        d.update(opt)  # the field's own particulars (metavar, choices, nargs) win
        out.append(d)
    return out


def _one_line(e: ValidationError, where: str) -> Gaze4HRIError:
    err = e.errors()[0]
    loc = ".".join(str(x) for x in err.get("loc", ())) or "session"
    msg = err.get("msg", "invalid").removeprefix("Value error, ")
    if err.get("type") not in ("value_error", "missing") and "input" in err:
        msg += f", got {err['input']!r}"  # a bound or type refused: what was given
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
            raise Gaze4HRIError(f"unknown session setting '{k}'", where,
                                f"use some of {', '.join(launch_field_names())}")
        f = SessionConfig.model_fields[k]
        if isinstance(v, str) and v == "" and not f.is_required() and f.annotation is not str:
            continue
        if f.annotation is bool and isinstance(v, str):
            if v.lower() not in ("true", "false"):
                raise Gaze4HRIError(f"invalid session setting '{k}': {v!r} is not true or false", where,
                                    f"{k}: {f.description}")
            v = v.lower() == "true"
        elif f.annotation is str and not isinstance(v, str):
            v = str(v)  # a subject id such as 012 that YAML read as a number
        clean[k] = v
    return session_config(where, **clean)
