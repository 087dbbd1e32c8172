"""Camera placement about the subject's eyes (pure geometry, no I/O).

The study places the camera on a circle of radius 0.5 m centred on the eye midpoint
(Sezer et al., arXiv 2605.04770, Sec. III-C, experiment 2), 0 deg yaw being the
front position facing the subject; the optical axis is kept on the eyes. Yaw is
positive towards the subject's left; elevation positive above eye height.
"""
from __future__ import annotations

import numpy as np

from .transforms import SE3, look_at

__all__ = ["camera_on_arc", "subject_left", "line_scan_points"]

_UP = np.array([0.0, 0.0, 1.0])


def subject_left(forward) -> np.ndarray:
    f = np.asarray(forward, float)
    f = f / np.linalg.norm(f)
    return np.cross(_UP, f)


def camera_on_arc(eye_world, forward, radius_m: float, yaw_deg: float = 0.0, elevation_deg: float = 0.0) -> SE3:
    """Camera optical frame (OpenCV axes) in the world, on the arc about ``eye_world``,
    looking at the eyes with image-up towards world +z."""
    eye = np.asarray(eye_world, float)
    f = np.asarray(forward, float) / np.linalg.norm(forward)
    left = subject_left(f)
    yaw, el = np.radians(yaw_deg), np.radians(elevation_deg)
    d = np.cos(el) * (np.cos(yaw) * f + np.sin(yaw) * left) + np.sin(el) * _UP
    return look_at(eye + radius_m * d, eye, up=_UP)


def line_scan_points(T_world_camera_centre: SE3, axis: str, half_length_m: float) -> tuple[np.ndarray, np.ndarray]:
    """End points of a mutual-gaze line scan through the camera's centre position:
    ``h`` along the camera's image x axis (horizontal), ``v`` along image y (vertical)."""
    if axis not in ("h", "v"):
        raise ValueError("axis must be 'h' or 'v'")
    direction = T_world_camera_centre.R[:, 0 if axis == "h" else 1]
    c = T_world_camera_centre.t
    return c - half_length_m * direction, c + half_length_m * direction
