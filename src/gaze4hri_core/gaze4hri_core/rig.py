"""Camera placement about the subject's eyes (pure geometry, no I/O).

The study places the camera on a circle of radius 0.5 m centred on the eye midpoint
(Sezer et al., arXiv 2605.04770, Sec. III-C, experiment 2), 0 deg yaw being the
front position facing the subject; the optical axis is kept on the eyes. Yaw is
positive towards the subject's left; elevation positive above eye height.
"""
from __future__ import annotations

import numpy as np

from .transforms import SE3, look_at

__all__ = ["camera_on_arc", "subject_left", "raster_scan_points"]

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


def raster_scan_points(T_world_camera_centre: SE3, axis: str, half_h_m: float, half_v_m: float) -> np.ndarray:
    """The six points (start, four corners, end; (6, 3) world) of a mutual-gaze scan in the
    image plane of the camera's centre pose: three passes along the scan axis joined by two
    steps across it, the camera stopping at each corner (GazeForHRI/Gaze4HRI@main:
    line_movement_analysis.py:58-59, 65-76; config.py:344-345).

    ``h``: rows at image y = -half_v, 0, +half_v, each pass from x = -half_h to +half_h or
    back (passes 0.5 m, steps 0.1 m with the study's values); ``v``: columns at image
    x = -half_h, 0, +half_h, each pass from y = -half_v to +half_v or back (passes 0.2 m,
    steps 0.25 m). Both cover the same rectangle about the centre (the study's "neutral
    camera", neutral_cam_position_calculation.py:6-31), and the middle pass goes through it.
    Assumption (the study's code does not say where its robot program starts nor which way
    it turns): both start at the image's top-left corner (image x = -half_h, y = -half_v:
    above the centre, towards the subject's right) and run the first pass along +x (h) or
    down (+y, v), turning as a boustrophedon.
    """
    if axis not in ("h", "v"):
        raise ValueError(f"scan axis must be 'h' or 'v', got {axis!r}")
    if not (np.isfinite(half_h_m) and np.isfinite(half_v_m) and half_h_m > 0 and half_v_m > 0):
        raise ValueError(f"scan half lengths must be finite and > 0, got {half_h_m}, {half_v_m}")
    h, v = float(half_h_m), float(half_v_m)
    if axis == "h":  # (image x, image y) of each point; image y points down
        xy = [(-h, -v), (h, -v), (h, 0.0), (-h, 0.0), (-h, v), (h, v)]
    else:
        xy = [(-h, -v), (-h, v), (0.0, v), (0.0, -v), (h, -v), (h, v)]
    R, c = T_world_camera_centre.R, T_world_camera_centre.t
    return np.array([c + x * R[:, 0] + y * R[:, 1] for x, y in xy])
