"""Rigid transforms (SE(3)), quaternions in ROS (x, y, z, w) order, UR rotation
vectors, pose-stream interpolation and the Motive Y-up -> REP-103 Z-up conversion.

Pure numpy/scipy: no I/O. Lengths in metres. Naming: ``T_a_b`` maps points from
frame b into frame a (p_a = T_a_b @ p_b), so ``T_a_b @ T_b_c == T_a_c``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.transform import Rotation

__all__ = [
    "SE3",
    "quat_xyzw_to_matrix",
    "matrix_to_quat_xyzw",
    "rotation_to_quat_xyzw",
    "ur_pose_to_se3",
    "se3_to_ur_pose",
    "interpolate_poses",
    "motive_yup_to_zup",
    "look_at",
]


@dataclass(frozen=True)
class SE3:
    """A rigid transform with rotation ``R`` (3x3, proper) and translation ``t`` (m)."""

    R: np.ndarray
    t: np.ndarray

    def __post_init__(self) -> None:
        R = np.asarray(self.R, dtype=float).reshape(3, 3)
        t = np.asarray(self.t, dtype=float).reshape(3)
        if not np.all(np.isfinite(R)) or not np.all(np.isfinite(t)):
            raise ValueError("SE3: rotation and translation must be finite")
        if abs(np.linalg.det(R) - 1.0) > 1e-6 or not np.allclose(R @ R.T, np.eye(3), atol=1e-6):
            raise ValueError("SE3: R must be a proper rotation matrix (orthonormal, det +1)")
        object.__setattr__(self, "R", R)
        object.__setattr__(self, "t", t)

    # construction -------------------------------------------------------------
    @classmethod
    def identity(cls) -> SE3:
        return cls(np.eye(3), np.zeros(3))

    @classmethod
    def from_matrix(cls, T: np.ndarray) -> SE3:
        T = np.asarray(T, dtype=float)
        if T.shape != (4, 4) or not np.allclose(T[3], [0, 0, 0, 1]):
            raise ValueError("SE3.from_matrix: expected a 4x4 homogeneous matrix")
        return cls(T[:3, :3], T[:3, 3])

    @classmethod
    def from_quat(cls, translation, quat_xyzw) -> SE3:
        """From a translation and a ROS-order quaternion (x, y, z, w); normalised."""
        return cls(quat_xyzw_to_matrix(quat_xyzw), translation)

    @classmethod
    def from_rotvec(cls, translation, rotvec) -> SE3:
        return cls(Rotation.from_rotvec(np.asarray(rotvec, float)).as_matrix(), translation)

    # conversion ---------------------------------------------------------------
    @property
    def matrix(self) -> np.ndarray:
        T = np.eye(4)
        T[:3, :3] = self.R
        T[:3, 3] = self.t
        return T

    @property
    def quat_xyzw(self) -> np.ndarray:
        return rotation_to_quat_xyzw(self.R)  # R is proper here: the closed form is exact

    @property
    def rotvec(self) -> np.ndarray:
        return Rotation.from_matrix(self.R).as_rotvec()

    @classmethod
    def _of_proper(cls, R: np.ndarray, t: np.ndarray) -> SE3:
        """Without the constructor's checks (~0.2 ms): for a product or transpose of
        validated rotations, which is proper by construction."""
        o = object.__new__(cls)
        object.__setattr__(o, "R", R)
        object.__setattr__(o, "t", t)
        return o

    # algebra ------------------------------------------------------------------
    def __matmul__(self, other):
        if isinstance(other, SE3):
            return SE3._of_proper(self.R @ other.R, self.R @ other.t + self.t)
        return self.apply(other)

    def inv(self) -> SE3:
        return SE3._of_proper(self.R.T.copy(), -self.R.T @ self.t)

    def apply(self, points) -> np.ndarray:
        """Transform points of shape (3,) or (N, 3)."""
        p = np.asarray(points, dtype=float)
        return p @ self.R.T + self.t

    def rotate(self, vectors) -> np.ndarray:
        """Rotate direction vectors of shape (3,) or (N, 3) (no translation)."""
        return np.asarray(vectors, dtype=float) @ self.R.T

    def almost_equal(self, other: SE3, tol_m: float = 1e-9, tol_rad: float = 1e-9) -> bool:
        dR = Rotation.from_matrix(self.R.T @ other.R).magnitude()
        return bool(np.linalg.norm(self.t - other.t) <= tol_m and dR <= tol_rad)

    def to_dict(self) -> dict:
        """YAML form used by the calibration files: translation (m), rotation_xyzw."""
        return {
            "translation": [float(x) for x in self.t],
            "rotation_xyzw": [float(x) for x in self.quat_xyzw],
        }


def quat_xyzw_to_matrix(q) -> np.ndarray:
    """ROS-order quaternion (x, y, z, w) to a rotation matrix; rejects a zero quaternion.
    Closed form for any non-zero q, which it normalises (Shoemake, "Animating rotation with
    quaternion curves", SIGGRAPH 1985): the pose streams call it at 100 Hz, where scipy's
    per-call cost was most of the work (tests/core/test_transforms.py checks it against scipy)."""
    x, y, z, w = (float(v) for v in np.asarray(q, dtype=float).reshape(4))
    n2 = x * x + y * y + z * z + w * w
    if not math.isfinite(n2) or n2 < 1e-18:
        raise ValueError("quaternion must be finite and non-zero (x, y, z, w order)")
    s = 2.0 / n2
    return np.array([[1 - s * (y * y + z * z), s * (x * y - z * w), s * (x * z + y * w)],
                     [s * (x * y + z * w), 1 - s * (x * x + z * z), s * (y * z - x * w)],
                     [s * (x * z - y * w), s * (y * z + x * w), 1 - s * (x * x + y * y)]])


def quats_xyzw_to_matrices(q) -> np.ndarray:
    """(N, 4) ROS-order quaternions -> (N, 3, 3) rotation matrices in one call, NaN where a
    row is not finite (a pose stream's gap); a finite zero row is rejected as in
    :func:`quat_xyzw_to_matrix`."""
    q = np.asarray(q, dtype=float).reshape(-1, 4)
    out = np.full((len(q), 3, 3), np.nan)
    ok = np.isfinite(q).all(axis=1)
    if ok.any():
        n = np.linalg.norm(q[ok], axis=1)
        if (n < 1e-9).any():
            raise ValueError("quaternion must be finite and non-zero (x, y, z, w order)")
        out[ok] = Rotation.from_quat(q[ok] / n[:, None]).as_matrix()
    return out


def rotation_to_quat_xyzw(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w), w >= 0, of a proper rotation matrix in closed form
    (Shepperd's method, J. Guidance and Control 1(3), 1978), without scipy's per-call cost
    (the robot and motion-capture streams call it 100-125 times a second). For a matrix
    that may be off a rotation, :func:`matrix_to_quat_xyzw` finds the nearest one."""
    (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = np.asarray(R, dtype=float)[:3, :3].tolist()
    tr = r00 + r11 + r22
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        x, y, z, w = (r21 - r12) / s, (r02 - r20) / s, (r10 - r01) / s, 0.25 * s
    elif r00 >= r11 and r00 >= r22:  # the largest diagonal element (the first of equals, as argmax)
        s = 2.0 * math.sqrt(1.0 + r00 - r11 - r22)
        x, y, z, w = 0.25 * s, (r10 + r01) / s, (r20 + r02) / s, (r21 - r12) / s
    elif r11 >= r22:
        s = 2.0 * math.sqrt(1.0 + r11 - r22 - r00)
        x, y, z, w = (r01 + r10) / s, 0.25 * s, (r21 + r12) / s, (r02 - r20) / s
    else:
        s = 2.0 * math.sqrt(1.0 + r22 - r00 - r11)
        x, y, z, w = (r02 + r20) / s, (r12 + r21) / s, 0.25 * s, (r10 - r01) / s
    n = math.sqrt(x * x + y * y + z * z + w * w)
    if w < 0:
        n = -n
    return np.array([x / n, y / n, z / n, w / n])


def matrix_to_quat_xyzw(R) -> np.ndarray:
    """Rotation matrix to a ROS-order quaternion with w >= 0 (canonical sign)."""
    q = Rotation.from_matrix(np.asarray(R, float)).as_quat()
    return -q if q[3] < 0 else q


def ur_pose_to_se3(pose) -> SE3:
    """UR controller pose [x, y, z, rx, ry, rz] (m, rotation vector) to SE3."""
    pose = np.asarray(pose, dtype=float).reshape(6)
    return SE3.from_rotvec(pose[:3], pose[3:])


def se3_to_ur_pose(T: SE3) -> list[float]:
    """SE3 to the UR controller pose [x, y, z, rx, ry, rz]."""
    return [float(x) for x in np.concatenate([T.t, T.rotvec])]


def interpolate_poses(
    t_src: np.ndarray,
    positions: np.ndarray,
    quats_xyzw: np.ndarray,
    t_query: np.ndarray,
    max_gap: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Interpolate a pose stream at query times: linear position, SLERP orientation.

    A query is valid only if it lies within [t_src[0], t_src[-1]] and the two samples
    around it are at most ``max_gap`` apart (same time unit as the stamps), so
    tracking losses are never bridged. Returns (positions (M,3), quats (M,4),
    valid (M,)); invalid rows are NaN.
    """
    t_src = np.asarray(t_src, dtype=float)
    P = np.asarray(positions, dtype=float).reshape(-1, 3)
    Q = np.asarray(quats_xyzw, dtype=float).reshape(-1, 4)
    tq = np.atleast_1d(np.asarray(t_query, dtype=float))
    if not (len(t_src) == len(P) == len(Q)):
        raise ValueError("interpolate_poses: stamps, positions and quaternions differ in length")
    out_p = np.full((len(tq), 3), np.nan)
    out_q = np.full((len(tq), 4), np.nan)
    valid = np.zeros(len(tq), dtype=bool)
    if len(t_src) == 0:
        return out_p, out_q, valid
    if np.any(np.diff(t_src) <= 0):
        raise ValueError("interpolate_poses: stamps must be strictly increasing")
    # right index of the bracketing pair; exact hits on samples are valid
    idx = np.searchsorted(t_src, tq, side="left")
    exact = (idx < len(t_src)) & (t_src[np.minimum(idx, len(t_src) - 1)] == tq)
    inside = (idx > 0) & (idx < len(t_src))
    i1 = np.clip(idx, 1, max(len(t_src) - 1, 1))
    i0 = i1 - 1
    if len(t_src) >= 2:
        gap_ok = (t_src[i1] - t_src[i0]) <= max_gap
    else:
        gap_ok = np.zeros(len(tq), bool)
    interp = inside & gap_ok & ~exact
    valid = interp | exact
    if np.any(exact):
        j = idx[exact]
        out_p[exact] = P[j]
        out_q[exact] = Q[j] / np.linalg.norm(Q[j], axis=1, keepdims=True)
    if np.any(interp):
        a, b = i0[interp], i1[interp]
        w = (tq[interp] - t_src[a]) / (t_src[b] - t_src[a])
        out_p[interp] = P[a] + (P[b] - P[a]) * w[:, None]
        ra = Rotation.from_quat(Q[a])
        rb = Rotation.from_quat(Q[b])
        # per-pair SLERP: relative rotation scaled by w (shortest arc)
        rel = (ra.inv() * rb).as_rotvec()
        q = (ra * Rotation.from_rotvec(rel * w[:, None])).as_quat()
        q[q[:, 3] < 0] *= -1
        out_q[interp] = q
    return out_p, out_q, valid


# Motive streams Y-up by default (right handed: x_m, y_m up, z_m). REP-103 world is
# Z-up, right handed. We rotate +90 deg about x: (x, y, z)_zup = (x_m, -z_m, y_m).
# It keeps Motive's x axis, is a proper rotation (det +1), and so applies to positions
# and orientations alike. The heading of the world is then fixed by Motive's ground
# plane calibration; the robot-to-mocap registration absorbs it.
_YUP_TO_ZUP = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]])


def motive_yup_to_zup(position, quat_xyzw) -> tuple[np.ndarray, np.ndarray]:
    """Convert a Motive Y-up rigid-body pose to the REP-103 Z-up world, in one place.

    Position and orientation are both mapped by the fixed rotation C with
    p_zup = C p_yup and R_zup = C R_yup C^T, so the body's own axes are re-expressed
    in the Z-up world and the body frame is relabelled the same way (Motive defines
    rigid-body axes in its Y-up convention). Returns (position (3,), quat_xyzw (4,)).
    """
    p = _YUP_TO_ZUP @ np.asarray(position, dtype=float).reshape(3)
    R = _YUP_TO_ZUP @ quat_xyzw_to_matrix(quat_xyzw) @ _YUP_TO_ZUP.T
    return p, matrix_to_quat_xyzw(R)


def look_at(eye, target, up=(0.0, 0.0, 1.0)) -> SE3:
    """Pose of an OpenCV optical frame (x right, y down, z forward) at ``eye`` whose
    optical axis points at ``target`` with image-up as close to ``up`` as possible."""
    eye = np.asarray(eye, float)
    z = np.asarray(target, float) - eye
    nz = np.linalg.norm(z)
    if nz < 1e-9:
        raise ValueError("look_at: eye and target coincide")
    z /= nz
    x = np.cross(z, np.asarray(up, float))  # right = forward x up
    if np.linalg.norm(x) < 1e-9:
        raise ValueError("look_at: viewing direction parallel to up")
    x /= np.linalg.norm(x)
    y = np.cross(z, x)  # down
    return SE3(np.column_stack([x, y, z]), eye)
