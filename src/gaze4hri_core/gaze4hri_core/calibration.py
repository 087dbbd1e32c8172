"""Calibration files: typed, validated YAML (pydantic), and the calibration bundle
that both halves load. Camera intrinsics use the ROS camera_info YAML layout
(camera_calibration_parsers), so a file from ``cameracalibrator`` drops in.

A calibration directory holds::

    camera_info.yaml      intrinsics of the colour stream (ROS camera_info layout)
    hand_eye.yaml         camera_color_optical_frame in tool0 (hand-eye)
    registration.yaml     robot controller Base in the motion-capture world
    targets.yaml          P1..P9 and H1..H6 in the world (m)
    scene.yaml            seating: nominal eye midpoint, subject forward, front camera
    subjects/<ID>.yaml    per-subject eye-head transform (eye midpoint in head band)

Invalid files raise CalibrationError with one line naming the file, the field and
the expected form. The pure procedures that produce these numbers live in
``procedures.py``; this module only reads and writes them.
"""
from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import CalibrationError
from .fileio import read_yaml, sha256_file, write_yaml_atomic
from .kinematics import MODELS
from .protocol import H_TARGETS, P_TARGETS
from .transforms import SE3

__all__ = [
    "CameraIntrinsics",
    "Calibration",
    "load_camera_info",
    "load_transform",
    "load_targets",
    "load_scene",
    "load_eye_head",
    "load_calibration",
    "calibration_hashes",
    "save_camera_info",
    "save_transform",
    "save_targets",
    "save_eye_head",
    "CALIBRATION_FILES",
    "TABLE_FILE",
    "CAMERA_BODY_FILE",
]

CALIBRATION_FILES = ("camera_info.yaml", "hand_eye.yaml", "registration.yaml", "targets.yaml", "scene.yaml",
                     "table.yaml", "camera_body.yaml")  # the last two are optional (tracked table; camera rigid body)
TABLE_FILE = "table.yaml"  # world -> table: the table rigid body's pose when targets.yaml was surveyed
CAMERA_BODY_FILE = "camera_body.yaml"  # camera_body -> camera_color_optical_frame: mocap rigid body on the camera


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class _Matrix(_Strict):
    rows: int
    cols: int
    data: list[float]

    @model_validator(mode="after")
    def _size(self):
        if len(self.data) != self.rows * self.cols:
            raise ValueError(f"data has {len(self.data)} numbers, rows x cols = {self.rows * self.cols}")
        if not np.all(np.isfinite(self.data)):
            raise ValueError("data must be finite numbers")
        return self


class CameraInfoFile(_Strict):
    """ROS camera_info YAML (camera_calibration_parsers)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    image_width: int = Field(gt=0)
    image_height: int = Field(gt=0)
    camera_name: str = "camera"
    camera_matrix: _Matrix
    distortion_model: Literal["plumb_bob", "rational_polynomial", "equidistant", "inverse_brown_conrady",
                              "brown_conrady"] = "plumb_bob"
    distortion_coefficients: _Matrix
    rectification_matrix: _Matrix | None = None
    projection_matrix: _Matrix | None = None

    @field_validator("camera_matrix")
    @classmethod
    def _k(cls, v: _Matrix):
        if (v.rows, v.cols) != (3, 3):
            raise ValueError("must be 3x3 (rows: 3, cols: 3)")
        K = np.array(v.data).reshape(3, 3)
        if K[0, 0] <= 0 or K[1, 1] <= 0 or not np.allclose(K[2], [0, 0, 1]):
            raise ValueError("must be [fx, 0, cx, 0, fy, cy, 0, 0, 1] with fx, fy > 0")
        return v


def _vec(n: int):
    def check(v):
        if len(v) != n or not np.all(np.isfinite(v)):
            raise ValueError(f"expected {n} finite numbers, got {v!r}")
        return v

    return check


class TransformFile(_Strict):
    """A static transform parent -> child: p_parent = R p_child + t (m)."""

    model_config = ConfigDict(extra="allow", frozen=True)
    format: str
    parent: str
    child: str
    translation: list[float]
    rotation_xyzw: list[float]

    _t = field_validator("translation")(classmethod(lambda cls, v: _vec(3)(v)))

    @field_validator("rotation_xyzw")
    @classmethod
    def _q(cls, v):
        _vec(4)(v)
        if abs(np.linalg.norm(v) - 1.0) > 1e-3:
            raise ValueError(f"quaternion (x, y, z, w) must have unit norm, got norm {np.linalg.norm(v):.4f}")
        return v

    def se3(self) -> SE3:
        return SE3.from_quat(self.translation, self.rotation_xyzw)


class TargetsFile(_Strict):
    format: Literal["gaze4hri/targets@1"]
    frame: Literal["world"] = "world"
    targets: dict[str, list[float]]

    @field_validator("targets")
    @classmethod
    def _all(cls, v):
        missing = [n for n in P_TARGETS + H_TARGETS if n not in v]
        if missing:
            raise ValueError(f"missing targets {missing}; need P1..P9 and H1..H6")
        for p in v.values():
            _vec(3)(p)
        return v


class FrontCamera(_Strict):
    distance_m: float = Field(gt=0.2, lt=2.0)
    elevation_deg: float = Field(ge=-45, le=45)


class SceneFile(_Strict):
    """Seating geometry: where the subject's eyes nominally are and which way is front."""

    format: Literal["gaze4hri/scene@1"]
    eye_nominal_world: list[float]
    subject_forward_world: list[float]
    head_band_above_eye_m: float = Field(default=0.09, ge=0.0, le=0.3)
    front_camera: FrontCamera
    table_size_m: list[float] = [1.6, 0.7]

    _e = field_validator("eye_nominal_world")(classmethod(lambda cls, v: _vec(3)(v)))

    @field_validator("subject_forward_world")
    @classmethod
    def _f(cls, v):
        _vec(3)(v)
        if abs(v[2]) > 1e-6 or np.linalg.norm(v) < 1e-6:
            raise ValueError("must be a horizontal direction [x, y, 0]")
        return v


@dataclass(frozen=True)
class CameraIntrinsics:
    """Pinhole intrinsics and distortion of one stream (OpenCV conventions)."""

    width: int
    height: int
    K: np.ndarray
    D: np.ndarray
    distortion_model: str = "plumb_bob"
    name: str = "camera"

    @property
    def fx(self) -> float:
        return float(self.K[0, 0])

    @property
    def fy(self) -> float:
        return float(self.K[1, 1])

    @property
    def cx(self) -> float:
        return float(self.K[0, 2])

    @property
    def cy(self) -> float:
        return float(self.K[1, 2])

    def scaled(self, width: int, height: int) -> CameraIntrinsics:
        """The same lens at another resolution of the same aspect (the RealSense
        scales its colour intrinsics this way across 16:9 modes)."""
        sx, sy = width / self.width, height / self.height
        K = self.K.copy()
        K[0] *= sx
        K[1] *= sy
        # pixel-centre convention: (c + 0.5) * s - 0.5
        K[0, 2] = (self.K[0, 2] + 0.5) * sx - 0.5
        K[1, 2] = (self.K[1, 2] + 0.5) * sy - 0.5
        return CameraIntrinsics(width, height, K, self.D.copy(), self.distortion_model, self.name)

    def project(self, points_cam) -> np.ndarray:
        """Project camera-frame points (N, 3) to pixels (N, 2), ignoring distortion."""
        P = np.asarray(points_cam, float).reshape(-1, 3)
        uv = P[:, :2] / P[:, 2:3]
        return uv @ self.K[:2, :2].T + self.K[:2, 2]

    def to_camera_info_dict(self) -> dict:
        P = np.zeros((3, 4))
        P[:, :3] = self.K
        return {
            "image_width": int(self.width),
            "image_height": int(self.height),
            "camera_name": self.name,
            "camera_matrix": {"rows": 3, "cols": 3, "data": [float(x) for x in self.K.ravel()]},
            "distortion_model": self.distortion_model,
            "distortion_coefficients": {"rows": 1, "cols": len(self.D), "data": [float(x) for x in self.D]},
            "rectification_matrix": {"rows": 3, "cols": 3, "data": [float(x) for x in np.eye(3).ravel()]},
            "projection_matrix": {"rows": 3, "cols": 4, "data": [float(x) for x in P.ravel()]},
        }


@dataclass(frozen=True)
class Calibration:
    """Everything needed to turn poses into ground truth, loaded from one directory."""

    directory: Path
    intrinsics: CameraIntrinsics
    T_tool0_camera: SE3
    T_world_base: SE3
    robot_model: str
    targets: dict[str, np.ndarray]
    eye_nominal_world: np.ndarray
    subject_forward_world: np.ndarray
    front_camera_distance_m: float
    front_camera_elevation_deg: float
    head_band_above_eye_m: float
    T_head_eye: SE3 | None = None
    subject: str | None = None
    hashes: dict[str, str] = field(default_factory=dict)
    # tracked table (optional, table.yaml): the table body's pose at the target survey;
    # a target's offset in the table frame is T_world_table_survey^-1 x its surveyed position
    T_world_table_survey: SE3 | None = None
    # camera rigid body (optional, camera_body.yaml): optical frame in the body's frame
    T_cambody_camera: SE3 | None = None

    def targets_in_table(self) -> dict[str, np.ndarray]:
        """Surveyed targets in the table frame (needs table.yaml)."""
        if self.T_world_table_survey is None:
            raise CalibrationError("no table pose for the target survey", str(self.directory / TABLE_FILE),
                                   "run 'gaze4hri-acq calibrate targets' with the table rigid body tracked")
        inv = self.T_world_table_survey.inv()
        return {k: inv.apply(v) for k, v in self.targets.items()}

    @property
    def eye_in_head(self) -> np.ndarray:
        if self.T_head_eye is None:
            raise CalibrationError("no eye-head calibration loaded", str(self.directory / "subjects"),
                                   "run 'gaze4hri-acq calibrate eye-head --subject ID' or pass subject=")
        return self.T_head_eye.t


def _fail(path: Path, err: ValidationError) -> CalibrationError:
    e = err.errors()[0]
    loc = ".".join(str(x) for x in e.get("loc", ())) or "(top level)"
    msg = e.get("msg", "invalid").removeprefix("Value error, ")
    return CalibrationError(f"invalid calibration field '{loc}': {msg}", str(path),
                            "fix the field (see docs/calibration.md)")


def _parse(model, path: Path, kind: str):
    raw = read_yaml(path, kind, CalibrationError,
                    "check the path, or copy calibration/ from the repository (docs/calibration.md)")
    if not isinstance(raw, dict):
        raise CalibrationError(f"{kind} must be a YAML mapping", str(path), "see docs/calibration.md for the layout")
    try:
        return model.model_validate(raw)
    except ValidationError as err:
        raise _fail(path, err) from None


def load_camera_info(path: Path | str) -> CameraIntrinsics:
    path = Path(path)
    f = _parse(CameraInfoFile, path, "camera_info")
    return CameraIntrinsics(
        f.image_width,
        f.image_height,
        np.array(f.camera_matrix.data, float).reshape(3, 3),
        np.array(f.distortion_coefficients.data, float),
        f.distortion_model,
        f.camera_name,
    )


def load_transform(path: Path | str, parent: str, child: str) -> tuple[SE3, dict]:
    """A transform file; checks its parent/child names so files cannot be swapped."""
    path = Path(path)
    f = _parse(TransformFile, path, "transform file")
    if (f.parent, f.child) != (parent, child):
        raise CalibrationError(
            f"transform is {f.parent} -> {f.child}, expected {parent} -> {child}", str(path),
            "use the file written by the matching calibration run"
        )
    return f.se3(), dict(f.model_extra or {})


def load_targets(path: Path | str) -> dict[str, np.ndarray]:
    f = _parse(TargetsFile, Path(path), "targets file")
    return {k: np.array(v, float) for k, v in f.targets.items()}


def load_scene(path: Path | str) -> SceneFile:
    return _parse(SceneFile, Path(path), "scene file")


def load_eye_head(path: Path | str) -> SE3:
    T, _ = load_transform(path, "head_band", "eye_midpoint")
    return T


def load_calibration(directory: Path | str, subject: str | None = None) -> Calibration:
    """Load and validate a calibration directory (and a subject's eye-head file)."""
    d = Path(directory)
    if not d.is_dir():
        raise CalibrationError("calibration directory not found", str(d),
                               "pass --calibration DIR or copy calibration/ from the repository")
    intr = load_camera_info(d / "camera_info.yaml")
    T_tc, _ = load_transform(d / "hand_eye.yaml", "tool0", "camera_color_optical_frame")
    T_wb, extra = load_transform(d / "registration.yaml", "world", "base")
    model = str(extra.get("robot_model", "ur5"))
    if model not in MODELS:  # the registry's line, as the calibration's error type
        e = MODELS.unknown(model, f"{d / 'registration.yaml'}: robot_model")
        raise CalibrationError(e.what, e.where, e.fix)
    model = model.lower()  # the registry's case rule
    targets = load_targets(d / "targets.yaml")
    scene = load_scene(d / "scene.yaml")
    T_he = None
    if subject is not None:
        sp = d / "subjects" / f"{subject}.yaml"
        if not sp.is_file() and (d / "subjects" / "default.yaml").is_file() and subject == "default":
            sp = d / "subjects" / "default.yaml"
        T_he = load_eye_head(sp)
    T_wt = load_transform(d / TABLE_FILE, "world", "table")[0] if (d / TABLE_FILE).is_file() else None
    T_bc = (load_transform(d / CAMERA_BODY_FILE, "camera_body", "camera_color_optical_frame")[0]
            if (d / CAMERA_BODY_FILE).is_file() else None)
    return Calibration(
        T_world_table_survey=T_wt,
        T_cambody_camera=T_bc,
        directory=d,
        intrinsics=intr,
        T_tool0_camera=T_tc,
        T_world_base=T_wb,
        robot_model=model,
        targets=targets,
        eye_nominal_world=np.array(scene.eye_nominal_world, float),
        subject_forward_world=(np.array(scene.subject_forward_world, float)
                               / np.linalg.norm(scene.subject_forward_world)),
        front_camera_distance_m=scene.front_camera.distance_m,
        front_camera_elevation_deg=scene.front_camera.elevation_deg,
        head_band_above_eye_m=scene.head_band_above_eye_m,
        T_head_eye=T_he,
        subject=subject,
        hashes=calibration_hashes(d, subject),
    )


def calibration_hashes(directory: Path | str, subject: str | None = None) -> dict[str, str]:
    """sha256 of each calibration file (relative path -> hex), for provenance."""
    d = Path(directory)
    names = list(CALIBRATION_FILES)
    if subject is not None:
        names.append(f"subjects/{subject}.yaml")
    return {n: sha256_file(d / n) for n in names if (d / n).is_file()}


def _stamp() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def save_camera_info(path: Path | str, intr: CameraIntrinsics) -> None:
    write_yaml_atomic(path, intr.to_camera_info_dict(), header="Camera intrinsics, ROS camera_info layout (gaze4hri)")


def save_transform(path: Path | str, T: SE3, parent: str, child: str, fmt: str, **extra) -> None:
    data = {"format": fmt, "parent": parent, "child": child, **T.to_dict(), "date": _stamp(), **extra}
    write_yaml_atomic(path, data)


def save_targets(path: Path | str, targets: dict[str, np.ndarray]) -> None:
    data = {"format": "gaze4hri/targets@1", "frame": "world",
            "targets": {k: [round(float(x), 6) for x in v] for k, v in targets.items()}}
    write_yaml_atomic(path, data, header=f"Gaze targets in the world frame (m), surveyed {_stamp()}")


def save_eye_head(path: Path | str, T_head_eye: SE3, subject: str, **extra) -> None:
    save_transform(path, T_head_eye, "head_band", "eye_midpoint", "gaze4hri/eye_head@1", subject=subject, **extra)
