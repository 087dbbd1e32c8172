"""Ground-truth gaze of the Gaze4HRI study (Sezer et al., arXiv 2605.04770, Sec. III-B).

The gaze vector is the translation from the interpupillary midpoint to the target,
expressed in the camera frame (OpenCV optical axes: x right, y down, z forward).
The midpoint is the head band's pose composed with the static eye-head offset from
the per-subject calibration; the camera pose is robot forward kinematics x hand-eye.
Pure numpy: no I/O. Vectorised over leading axes where noted.
"""
from __future__ import annotations

import numpy as np

from .gaze import angular_error_deg, normalize
from .transforms import SE3

__all__ = [
    "eye_in_world",
    "camera_in_world",
    "gaze_in_camera",
    "mutual_gaze_in_camera",
    "head_forward_in_camera",
    "head_gaze_conflict_deg",
    "camera_yaw_deg",
]


def eye_in_world(T_world_head: SE3, eye_in_head) -> np.ndarray:
    """Interpupillary midpoint in the world from the head-band pose (m)."""
    return T_world_head.apply(np.asarray(eye_in_head, float))


def camera_in_world(T_world_base: SE3, T_base_tool0: SE3, T_tool0_camera: SE3) -> SE3:
    """Camera optical frame in the world: registration x forward kinematics x hand-eye."""
    return T_world_base @ T_base_tool0 @ T_tool0_camera


def gaze_in_camera(T_world_head: SE3, eye_in_head, target_world, T_world_camera: SE3) -> np.ndarray:
    """Unit gaze vector, eye midpoint -> target, in the OpenCV camera frame."""
    eye = eye_in_world(T_world_head, eye_in_head)
    g_world = np.asarray(target_world, float) - eye
    return normalize(T_world_camera.inv().rotate(g_world))


def mutual_gaze_in_camera(T_world_head: SE3, eye_in_head, T_world_camera: SE3) -> np.ndarray:
    """Gaze when the target is the camera's own optical centre (experiment 4.2)."""
    return gaze_in_camera(T_world_head, eye_in_head, T_world_camera.t, T_world_camera)


def head_forward_in_camera(T_world_head: SE3, T_head_eye: SE3, T_world_camera: SE3) -> np.ndarray:
    """Head-forward direction (x axis of the eye frame, REP-103 x forward) in the camera frame."""
    fwd_world = (T_world_head @ T_head_eye).R[:, 0]
    return normalize(T_world_camera.inv().rotate(fwd_world))


def head_gaze_conflict_deg(head_forward, gaze) -> np.ndarray:
    """Head-gaze conflict gamma: angle between head-forward and gaze (deg), Sec. III-D."""
    return angular_error_deg(head_forward, gaze)


def camera_yaw_deg(T_world_camera: SE3, eye_world, subject_forward=(1.0, 0.0, 0.0)) -> float:
    """Yaw of the camera position about the eye, relative to the seat's forward
    direction, positive towards the subject's left (+y in the default world)."""
    d = np.asarray(T_world_camera.t, float) - np.asarray(eye_world, float)
    f = np.asarray(subject_forward, float)
    left = np.cross([0.0, 0.0, 1.0], f)
    return float(np.degrees(np.arctan2(d @ left, d @ f)))
