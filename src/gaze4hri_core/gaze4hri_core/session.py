"""The session layout: the contract between the recorder and the benchmark.

One directory per subject::

    <root>/<subject>/
      session.yaml                 manifest (SessionManifest below), written atomically
      calibration/                 copy of the calibration used (hashes in the manifest)
      bags/<trial_id>/             one rosbag2 bag per trial (MCAP storage):
        metadata.yaml
        <trial_id>_0.mcap

Topic names and message types are constants here (documented in
docs/session_layout.md) so the nodes that write and the reader that reads cannot
drift apart.
"""
from __future__ import annotations

import datetime as _dt
import shutil
import subprocess
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from . import __version__
from .calibration import CALIBRATION_FILES, calibration_hashes
from .errors import SessionError
from .fileio import read_yaml, write_yaml_atomic
from .protocol import PROTOCOL_VERSION, trials

__all__ = [
    "SESSION_FORMAT",
    "Topics",
    "MSG_TYPES",
    "FRAMES",
    "TrialRecord",
    "SessionManifest",
    "session_dir",
    "bag_dir",
    "manifest_path",
    "new_manifest",
    "load_manifest",
    "save_manifest",
    "copy_calibration",
    "software_info",
    "TRIAL_STATUSES",
    "mark",
]

SESSION_FORMAT = "gaze4hri/session@1"
TRIAL_STATUSES = ("pending", "recording", "done", "incomplete", "failed")


class Topics:
    """Topic names recorded in every trial bag (REP-103 frames; standard messages)."""

    IMAGE = "/camera/color/image_raw"  # sensor_msgs/msg/Image, rgb8, stamp = capture time (host clock)
    CAMERA_INFO = "/camera/color/camera_info"  # sensor_msgs/msg/CameraInfo, once per trial and on change
    # diagnostic_msgs/msg/DiagnosticStatus: frame_number, stamp_ns, timestamp_domain, device_timestamp_ms
    FRAME_META = "/camera/color/frame_meta"
    # + <name>/pose: geometry_msgs/msg/PoseStamped, frame "world", only while tracked
    MOCAP_PREFIX = "/mocap/rigid_bodies/"
    HEAD_POSE = "/mocap/rigid_bodies/head_band/pose"
    TOOL_POSE = "/mocap/rigid_bodies/calib_tool/pose"
    PROBE_POSE = "/mocap/rigid_bodies/probe/pose"
    TABLE_POSE = "/mocap/rigid_bodies/table/pose"  # optional tracked table (targets follow it)
    # optional rigid body on the camera (camera pose source 'mocap')
    CAMERA_BODY_POSE = "/mocap/rigid_bodies/camera/pose"
    MOCAP_STATUS = "/mocap/status"  # diagnostic_msgs/msg/DiagnosticArray: tracking validity, marker error, latency
    TCP_POSE = "/robot/tcp_pose"  # geometry_msgs/msg/PoseStamped, frame "base" (controller Base), tool0
    JOINT_STATES = "/joint_states"  # sensor_msgs/msg/JointState
    ROBOT_STATUS = "/robot/status"  # diagnostic_msgs/msg/DiagnosticArray: speed scaling, protective stop, mode
    COMMANDED_SPEED = "/robot/commanded_tcp_speed"  # geometry_msgs/msg/TwistStamped, frame "base"
    EVENTS = "/gaze4hri/events"  # std_msgs/msg/String, JSON: {"event": start|stop|note|fault, "trial", "target", ...}
    SAFETY = "/gaze4hri/safety"  # diagnostic_msgs/msg/DiagnosticArray
    DIAGNOSTICS = "/diagnostics"  # diagnostic_msgs/msg/DiagnosticArray
    # geometry_msgs/msg/Vector3Stamped, unit gaze in camera frame at each frame stamp (sim only)
    SIM_GAZE_TRUTH = "/sim/truth/gaze_camera"
    # diagnostic_msgs/msg/DiagnosticStatus per frame: keys stamp_ns, blink ("true"/"false") (sim only)
    SIM_BLINK_TRUTH = "/sim/truth/blink"
    TF = "/tf"  # tf2_msgs/msg/TFMessage: base->tool0 and world-><body> with every pose (written by the recorder)
    TF_STATIC = "/tf_static"  # tf2_msgs/msg/TFMessage at trial start: world->base, tool0->camera, world->target_<id>

    @staticmethod
    def rigid_body(name: str) -> str:
        return f"{Topics.MOCAP_PREFIX}{name}/pose"


MSG_TYPES: dict[str, str] = {
    Topics.IMAGE: "sensor_msgs/msg/Image",
    Topics.CAMERA_INFO: "sensor_msgs/msg/CameraInfo",
    Topics.FRAME_META: "diagnostic_msgs/msg/DiagnosticStatus",
    Topics.HEAD_POSE: "geometry_msgs/msg/PoseStamped",
    Topics.TOOL_POSE: "geometry_msgs/msg/PoseStamped",
    Topics.PROBE_POSE: "geometry_msgs/msg/PoseStamped",
    Topics.TABLE_POSE: "geometry_msgs/msg/PoseStamped",
    Topics.CAMERA_BODY_POSE: "geometry_msgs/msg/PoseStamped",
    Topics.MOCAP_STATUS: "diagnostic_msgs/msg/DiagnosticArray",
    Topics.TCP_POSE: "geometry_msgs/msg/PoseStamped",
    Topics.JOINT_STATES: "sensor_msgs/msg/JointState",
    Topics.ROBOT_STATUS: "diagnostic_msgs/msg/DiagnosticArray",
    Topics.COMMANDED_SPEED: "geometry_msgs/msg/TwistStamped",
    Topics.EVENTS: "std_msgs/msg/String",
    Topics.SAFETY: "diagnostic_msgs/msg/DiagnosticArray",
    Topics.DIAGNOSTICS: "diagnostic_msgs/msg/DiagnosticArray",
    Topics.SIM_GAZE_TRUTH: "geometry_msgs/msg/Vector3Stamped",
    Topics.SIM_BLINK_TRUTH: "diagnostic_msgs/msg/DiagnosticStatus",
    Topics.TF: "tf2_msgs/msg/TFMessage",
    Topics.TF_STATIC: "tf2_msgs/msg/TFMessage",
}

# REP-103 / REP-105 frame ids used in headers.
FRAMES = {
    "world": "world",  # motion-capture world, Z-up (Motive Y-up converted once)
    "base": "base",  # UR controller Base (= ROS base_link rotated pi about z)
    "tool0": "tool0",
    "camera": "camera_color_optical_frame",  # OpenCV optical axes
}


class _M(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TrialRecord(_M):
    status: Literal["pending", "recording", "done", "incomplete", "failed"] = "pending"
    attempts: int = 0
    started: str | None = None
    ended: str | None = None
    reason: str | None = None
    bag: str | None = None  # relative to the session directory
    frames: int | None = None
    dropped_frames: int | None = None
    # device seconds per wall second over the recording: how fast a simulated session's clock ran
    # (its requested factor is settings.real_time_factor); 1 on real devices (host time)
    real_time_factor: float | None = None
    notes: list[str] = Field(default_factory=list)


class SessionManifest(_M):
    format: Literal["gaze4hri/session@1"] = SESSION_FORMAT
    subject: str
    protocol_version: str = PROTOCOL_VERSION
    backend: str
    software: dict[str, str]
    created: str
    calibration: dict = Field(default_factory=dict)  # {"dir": "calibration", "hashes": {file: sha256}}
    settings: dict = Field(default_factory=dict)  # resolution, fps, compression, ...
    trials: dict[str, TrialRecord] = Field(default_factory=dict)

    def pending(self) -> list[str]:
        """Trial ids not done yet, in protocol order (what --resume records)."""
        return [tid for tid, r in self.trials.items() if r.status != "done"]


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


def software_info() -> dict[str, str]:
    """Package version and git commit of the checkout (or 'unknown')."""
    git = "unknown"
    try:
        here = Path(__file__).resolve().parent
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
        if out.returncode == 0:
            git = out.stdout.strip()
            dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5)
            if dirty.returncode == 0 and dirty.stdout.strip():
                git += "-dirty"
    except (OSError, subprocess.SubprocessError):
        pass
    return {"version": __version__, "git": git}


def session_dir(root: Path | str, subject: str) -> Path:
    if not subject or "/" in subject or subject.startswith("."):
        raise SessionError(f"invalid subject id {subject!r}", str(root), "use a plain id such as S12")
    return Path(root) / subject


def manifest_path(session: Path | str) -> Path:
    return Path(session) / "session.yaml"


def bag_dir(session: Path | str, trial_id: str) -> Path:
    return Path(session) / "bags" / trial_id


def new_manifest(subject: str, backend: str, trial_ids: list[str] | None = None,
                 settings: dict | None = None) -> SessionManifest:
    ids = trial_ids if trial_ids is not None else [t.trial_id for t in trials()]
    return SessionManifest(
        subject=subject,
        backend=backend,
        software=software_info(),
        created=_now(),
        settings=settings or {},
        trials={tid: TrialRecord() for tid in ids},
    )


def load_manifest(session: Path | str) -> SessionManifest:
    p = manifest_path(session)
    raw = read_yaml(p, "session manifest", SessionError,
                    "pass a session directory written by 'gaze4hri-acq session' (docs/session_layout.md)")
    if not isinstance(raw, dict):
        raise SessionError("session manifest must be a YAML mapping", str(p),
                           "restore session.yaml or re-run the session with --resume")
    try:
        return SessionManifest.model_validate(raw)
    except ValidationError as err:
        e = err.errors()[0]
        loc = ".".join(str(x) for x in e.get("loc", ()))
        raise SessionError(f"invalid session manifest field '{loc}': {e.get('msg')}", str(p),
                           "restore session.yaml from the recorder's output") from None


def save_manifest(session: Path | str, manifest: SessionManifest) -> None:
    """Atomic write: a crash leaves the previous manifest intact."""
    write_yaml_atomic(manifest_path(session), manifest.model_dump(mode="json"),
                      header="Gaze4HRI session manifest (docs/session_layout.md)")


def copy_calibration(src_dir: Path | str, session: Path | str, subject: str | None) -> dict:
    """Snapshot the calibration into the session; returns {"dir", "hashes"}."""
    src = Path(src_dir)
    dst = Path(session) / "calibration"
    dst.mkdir(parents=True, exist_ok=True)
    for name in CALIBRATION_FILES:
        if (src / name).is_file():
            shutil.copy2(src / name, dst / name)
    if subject is not None and (src / "subjects" / f"{subject}.yaml").is_file():
        (dst / "subjects").mkdir(exist_ok=True)
        shutil.copy2(src / "subjects" / f"{subject}.yaml", dst / "subjects" / f"{subject}.yaml")
    return {"dir": "calibration", "source": str(src.resolve()), "hashes": calibration_hashes(dst, subject)}


def mark(manifest: SessionManifest, trial_id: str, status: str, reason: str | None = None, **fields) -> TrialRecord:
    """Update one trial's record (caller saves the manifest)."""
    if status not in TRIAL_STATUSES:
        raise ValueError(f"status must be one of {TRIAL_STATUSES}")
    rec = manifest.trials.setdefault(trial_id, TrialRecord())
    rec.status = status  # type: ignore[assignment]
    if status == "recording":
        rec.attempts += 1
        rec.started = _now()
        rec.ended = None
        rec.reason = None
    elif status in ("done", "incomplete", "failed"):
        rec.ended = _now()
    if reason is not None:
        rec.reason = reason
    for k, v in fields.items():
        setattr(rec, k, v)
    return rec
