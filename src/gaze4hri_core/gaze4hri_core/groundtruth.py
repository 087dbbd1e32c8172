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
    "tracked_targets_world",
    "camera_from_body",
    "tool0_from_camera",
    "pose_disagreement",
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


def _quat_to_R(q: np.ndarray) -> np.ndarray:
    """(N, 4) xyzw -> (N, 3, 3); non-finite rows stay NaN."""
    q = np.asarray(q, float).reshape(-1, 4)
    n = np.linalg.norm(q, axis=1, keepdims=True)
    x, y, z, w = (q / np.where(n > 0, n, np.nan)).T
    return np.stack([
        np.stack([1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)], -1),
        np.stack([2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)], -1),
        np.stack([2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)], -1),
    ], 1)


def _moving_average(t_ns: np.ndarray, x: np.ndarray, window_s: float) -> np.ndarray:
    """Centred moving average of rows of ``x`` over samples within +-window_s/2 (sorted t)."""
    if window_s <= 0 or len(t_ns) < 2:
        return x
    c = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(x, axis=0)])
    h = int(window_s * 5e8)
    lo = np.searchsorted(t_ns, t_ns - h, side="left")
    hi = np.searchsorted(t_ns, t_ns + h, side="right")
    return (c[hi] - c[lo]) / (hi - lo)[:, None]


def tracked_targets_world(table_t_ns, table_p, table_q, target_in_table, query_t_ns, max_gap_s: float = 0.05,
                          smooth_s: float = 0.5):
    """A table target's world position at each query stamp when the table is tracked:
    table pose (interpolated: linear position, SLERP orientation) x the target's offset
    in the table frame, as the study's collector does (target = table pose x calibrated
    target-in-table offset, GazeForHRI/Gaze4HRI@main:data_collector.py:355-366), so a
    nudged table moves its targets. The table stands still almost always, so its pose is
    first averaged over ``smooth_s`` (a centred moving average: motion-capture jitter on
    a 1 m lever would otherwise add ~0.1 deg of noise; a bump is smeared over that
    window). Returns ((N, 3) world points, (N,) ok); rows the table stream cannot bridge
    within ``max_gap_s`` are NaN and not ok."""
    from .transforms import interpolate_poses

    t = np.asarray(table_t_ns, np.int64)
    qt = np.asarray(query_t_ns, np.int64)
    n = len(qt)
    if len(t) == 0 or n == 0:
        return np.full((n, 3), np.nan), np.zeros(n, bool)
    o = np.argsort(t, kind="stable")
    t, P, Q = t[o], np.asarray(table_p, float)[o], np.asarray(table_q, float)[o]
    keep = np.concatenate([[True], np.diff(t) > 0])
    t, P, Q = t[keep], P[keep], Q[keep]
    Q = Q * np.where((Q @ Q[0]) < 0, -1.0, 1.0)[:, None]  # one hemisphere before averaging
    P, Q = _moving_average(t, P, smooth_s), _moving_average(t, Q, smooth_s)
    Q = Q / np.linalg.norm(Q, axis=1, keepdims=True)
    t0 = int(qt[0])
    if len(t) == 1:  # one sample (a static table published once): use it for every frame
        p, q, ok = np.repeat(P, n, 0), np.repeat(Q, n, 0), np.ones(n, bool)
    else:
        p, q, ok = interpolate_poses((t - t0) / 1e9, P, Q, (qt - t0) / 1e9, max_gap_s)
    R = _quat_to_R(q)
    out = np.einsum("nij,j->ni", R, np.asarray(target_in_table, float)) + p
    out[~ok] = np.nan
    return out, np.asarray(ok, bool)


def camera_from_body(R_world_body, p_world_body, T_body_camera: SE3):
    """Camera optical frame in the world from a motion-capture rigid body on the camera
    (the camera pose source ``mocap``): T_world_camera = T_world_body x T_body_camera.
    Vectorised: (N, 3, 3), (N, 3) -> (N, 3, 3), (N, 3)."""
    R = np.asarray(R_world_body, float)
    return R @ T_body_camera.R, np.einsum("nij,j->ni", R, T_body_camera.t) + np.asarray(p_world_body, float)


def tool0_from_camera(R_world_camera, p_world_camera, T_world_base: SE3, T_tool0_camera: SE3):
    """tool0 in the robot Base that puts the camera at the given world poses (inverse of
    ``camera_in_world``): lets a mocap-measured camera feed the same ground-truth code."""
    Rbw = T_world_base.R.T
    Rtc_inv = T_tool0_camera.R.T
    R_bt = Rbw @ np.asarray(R_world_camera, float) @ Rtc_inv
    p_bc = (np.asarray(p_world_camera, float) - T_world_base.t) @ Rbw.T
    p_bt = p_bc - np.einsum("nij,j->ni", R_bt, T_tool0_camera.t)
    return R_bt, p_bt


def pose_disagreement(R_a, p_a, R_b, p_b) -> tuple[np.ndarray, np.ndarray]:
    """Distance (m) and rotation angle (deg) between two camera pose estimates per row
    (forward kinematics vs the camera rigid body)."""
    d = np.linalg.norm(np.asarray(p_a, float) - np.asarray(p_b, float), axis=-1)
    Rrel = np.einsum("nji,njk->nik", np.asarray(R_a, float), np.asarray(R_b, float))
    c = np.clip((np.trace(Rrel, axis1=1, axis2=2) - 1) / 2, -1.0, 1.0)
    return d, np.degrees(np.arccos(c))
