"""Gaze-vector conventions, (pitch, yaw) conversion, frame changes and angular error.

Frame A (GazeHub / ETH-XGaze / MPIIGaze; OpenCV camera axes x right, y down,
z forward): the gaze points from the face to the target, so looking into the camera
is (0, 0, -1) and
    g(pitch, yaw) = (-cos p sin y, -sin p, -cos p cos y),
    yaw = atan2(-x, -z), pitch = asin(-y)
(Zhang et al., "ETH-XGaze", ECCV 2020, Sec. 3 / GazeHub "gazeto3d").
Frame B (Gaze360, Kellnhofer et al., ICCV 2019, Sec. 3.3): x left, y up, z away from
the camera, so B -> A axes is (-x, -y, z); its z follows the camera-to-eye ray.
Angles in radians unless the name says degrees. Pure numpy: no I/O.
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "FRAMES",
    "pitchyaw_to_vector",
    "vector_to_pitchyaw",
    "convert_frame",
    "ray_frame_to_camera",
    "angular_error_deg",
    "normalize",
]

FRAMES = ("A", "B")
# Frame B axes expressed in Frame A axes: x_B = -x_A, y_B = -y_A, z_B = z_A.
_B_TO_A = np.array([-1.0, -1.0, 1.0])


def _check_frame(frame: str) -> None:
    if frame not in FRAMES:
        raise ValueError(f"unknown gaze frame {frame!r}; expected one of {FRAMES}")


def normalize(v) -> np.ndarray:
    """Unit vectors along the last axis; zero or non-finite rows become NaN."""
    v = np.asarray(v, dtype=float)
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = v / n
    out[~np.isfinite(out).all(axis=-1) | (n[..., 0] == 0)] = np.nan
    return out


def pitchyaw_to_vector(pitch, yaw, frame: str = "A") -> np.ndarray:
    """(pitch, yaw) in radians -> unit gaze vector(s), shape (..., 3)."""
    _check_frame(frame)
    p = np.asarray(pitch, dtype=float)
    y = np.asarray(yaw, dtype=float)
    v = np.stack([-np.cos(p) * np.sin(y), -np.sin(p), -np.cos(p) * np.cos(y)], axis=-1)
    return v * _B_TO_A if frame == "B" else v


def vector_to_pitchyaw(v, frame: str = "A") -> np.ndarray:
    """Gaze vector(s) (any length) -> (..., 2) array of [pitch, yaw] in radians.

    In Frame B the same (pitch, yaw) describe the same physical direction as in
    Frame A (looking up is positive pitch, looking to the camera's left positive yaw).
    """
    _check_frame(frame)
    u = normalize(v)
    if frame == "B":
        u = u * _B_TO_A
    pitch = np.arcsin(np.clip(-u[..., 1], -1.0, 1.0))
    yaw = np.arctan2(-u[..., 0], -u[..., 2])
    return np.stack([pitch, yaw], axis=-1)


def convert_frame(v, src: str, dst: str) -> np.ndarray:
    """Re-express vectors between Frame A and Frame B axes (a fixed axis flip)."""
    _check_frame(src)
    _check_frame(dst)
    v = np.asarray(v, dtype=float)
    return v if src == dst else v * _B_TO_A


def ray_frame_to_camera(v_ray, ray) -> np.ndarray:
    """Rotate Frame-A-axes vectors whose z is the camera-to-head ray into the true
    camera frame (Gaze360's eye frame, Kellnhofer et al. 2019 Sec. 3.3).

    The ray frame has z along ``ray`` (camera -> head, camera frame) and x as close
    to the camera's x as possible; for a face on the optical axis this is identity.
    """
    r = normalize(np.asarray(ray, float))
    y_cam = np.broadcast_to(np.array([0.0, 1.0, 0.0]), r.shape)
    x = normalize(np.cross(y_cam, r))
    y = np.cross(r, x)
    basis = np.stack([x, y, r], axis=-1)  # columns: ray-frame axes in camera frame
    return np.einsum("...ij,...j->...i", basis, np.asarray(v_ray, float))


def angular_error_deg(a, b) -> np.ndarray:
    """Angle between vectors in degrees, vectorised over leading axes.

    Uses atan2(|a x b|, a . b), which stays accurate for near-parallel vectors where
    arccos(a . b / |a||b|) (the study's formula, mathematically equal) loses
    precision. Zero-length or non-finite inputs give NaN, never an exception.
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    with np.errstate(invalid="ignore", over="ignore"):
        cross = np.linalg.norm(np.cross(a, b), axis=-1)
        dot = np.sum(a * b, axis=-1)
        ang = np.degrees(np.arctan2(cross, dot))
    bad = (
        ~np.isfinite(a).all(axis=-1)
        | ~np.isfinite(b).all(axis=-1)
        | (np.linalg.norm(a, axis=-1) == 0)
        | (np.linalg.norm(b, axis=-1) == 0)
    )
    ang = np.where(bad, np.nan, ang)
    return ang if np.ndim(ang) else float(ang)
