"""UR5 / UR5e forward and analytic inverse kinematics from the published DH tables.

DH parameters (Universal Robots, "DH parameters for calculations of kinematics and
dynamics"): a = (0, a2, a3, 0, 0, 0), d = (d1, 0, 0, d4, d5, d6),
alpha = (pi/2, 0, 0, pi/2, -pi/2, 0); A_i = Rz(q_i) Tz(d_i) Tx(a_i) Rx(alpha_i).
The chain gives the controller's *Base* frame -> tool flange (``tool0``): this is the
frame of ``getActualTCPPose()`` (zero TCP offset) and of the ROS ``base`` frame.
ROS ``base_link`` is ``base`` rotated by pi about z (ur_description), see
``T_BASE_LINK_BASE``. Inverse kinematics: K. P. Hawkins, "Analytic Inverse Kinematics
for the Universal Robots UR-5/UR-10 Arms", Georgia Tech, 2013.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .registry import Registry

__all__ = ["DH", "MODELS", "forward", "forward_many", "inverse", "inverse_many", "T_BASE_LINK_BASE", "joint_frames"]


@dataclass(frozen=True)
class DH:
    d: tuple[float, ...]
    a: tuple[float, ...]
    alpha: tuple[float, ...]


_HALF_PI = np.pi / 2
#: robot model -> DH table (RobotConfig.model, SimConfig.robot_model, the UR emulator's --model)
MODELS: Registry[DH] = Registry("robot model", where="model parameter")
for _name, _dh_table in {
    "ur5": DH(
        d=(0.089159, 0.0, 0.0, 0.10915, 0.09465, 0.0823),
        a=(0.0, -0.425, -0.39225, 0.0, 0.0, 0.0),
        alpha=(_HALF_PI, 0.0, 0.0, _HALF_PI, -_HALF_PI, 0.0),
    ),
    "ur5e": DH(
        d=(0.1625, 0.0, 0.0, 0.1333, 0.0997, 0.0996),
        a=(0.0, -0.425, -0.3922, 0.0, 0.0, 0.0),
        alpha=(_HALF_PI, 0.0, 0.0, _HALF_PI, -_HALF_PI, 0.0),
    ),
}.items():
    MODELS.add(_name, _dh_table)

# base_link -> base: rotation of pi about z (ur_description urdf, "base" joint).
T_BASE_LINK_BASE = np.array(
    [[-1.0, 0.0, 0.0, 0.0], [0.0, -1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
)


def _model(model: str) -> DH:
    return MODELS.get(model)


def _dh(theta: float, d: float, a: float, alpha: float) -> np.ndarray:
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array(
        [
            [ct, -st * ca, st * sa, a * ct],
            [st, ct * ca, -ct * sa, a * st],
            [0.0, sa, ca, d],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def joint_frames(q, model: str = "ur5") -> list[np.ndarray]:
    """Base -> frame i for i = 1..6 (for collision and workspace checks)."""
    p = _model(model)
    q = np.asarray(q, dtype=float).reshape(6)
    T = np.eye(4)
    out = []
    for i in range(6):
        T = T @ _dh(q[i], p.d[i], p.a[i], p.alpha[i])
        out.append(T.copy())
    return out


def _tool0(q, p: DH) -> np.ndarray:
    """Base -> tool0 (4x4): the product of the six A_i (``_dh``) written out in floats, for the
    simulated arm's 125 Hz state and the streams that place the camera (eight times the
    speed of the 4x4 array products; the same numbers to rounding)."""
    r00, r01, r02, r03 = 1.0, 0.0, 0.0, 0.0
    r10, r11, r12, r13 = 0.0, 1.0, 0.0, 0.0
    r20, r21, r22, r23 = 0.0, 0.0, 1.0, 0.0
    for th, d, a, alpha in zip(q.tolist(), p.d, p.a, p.alpha, strict=True):
        ct, st, ca, sa = math.cos(th), math.sin(th), math.cos(alpha), math.sin(alpha)
        # A_i = [[ct, -st ca, st sa, a ct], [st, ct ca, -ct sa, a st], [0, sa, ca, d], [0, 0, 0, 1]]
        b01, b02, b11, b12 = -st * ca, st * sa, ct * ca, -ct * sa
        act, ast = a * ct, a * st
        r00, r01, r02, r03 = (r00 * ct + r01 * st, r00 * b01 + r01 * b11 + r02 * sa, r00 * b02 + r01 * b12 + r02 * ca,
                              r00 * act + r01 * ast + r02 * d + r03)
        r10, r11, r12, r13 = (r10 * ct + r11 * st, r10 * b01 + r11 * b11 + r12 * sa, r10 * b02 + r11 * b12 + r12 * ca,
                              r10 * act + r11 * ast + r12 * d + r13)
        r20, r21, r22, r23 = (r20 * ct + r21 * st, r20 * b01 + r21 * b11 + r22 * sa, r20 * b02 + r21 * b12 + r22 * ca,
                              r20 * act + r21 * ast + r22 * d + r23)
    return np.array([[r00, r01, r02, r03], [r10, r11, r12, r13], [r20, r21, r22, r23], [0.0, 0.0, 0.0, 1.0]])


def forward(q, model: str = "ur5", frame: str = "base") -> np.ndarray:
    """Joint angles (6, rad) -> 4x4 pose of tool0 in ``base`` (controller Base,
    default) or ``base_link`` (ROS)."""
    q = np.asarray(q, dtype=float).reshape(6)
    try:
        T = _tool0(q, _model(model))
    except ValueError:  # math.cos(inf): numpy's product gives the NaN pose that callers refuse
        T = joint_frames(q, model)[-1]
    if frame == "base_link":
        return T_BASE_LINK_BASE @ T
    if frame != "base":
        raise ValueError(f"frame must be 'base' or 'base_link', got {frame!r}")
    return T


def _wrap(a):
    return (np.asarray(a) + np.pi) % (2 * np.pi) - np.pi


def _solve_3r(T: np.ndarray, p: DH, model: str, t1: float, t5: float, t6: float) -> list[np.ndarray]:
    """theta2..4 for fixed theta1, theta5, theta6 (the planar 3R part of Hawkins 2013,
    Sec. 2), each solution verified by forward kinematics."""
    d1, _, _, d4, d5, d6 = p.d
    a2, a3 = p.a[1], p.a[2]
    out = []
    T01 = _dh(t1, d1, 0.0, p.alpha[0])
    T45 = _dh(t5, d5, 0.0, p.alpha[4])
    T56 = _dh(t6, d6, 0.0, p.alpha[5])
    T14 = np.linalg.inv(T01) @ T @ np.linalg.inv(T45 @ T56)
    p13 = T14 @ np.array([0.0, -d4, 0.0, 1.0]) - np.array([0, 0, 0, 1.0])
    n13 = np.linalg.norm(p13[:3])
    c3 = (n13**2 - a2**2 - a3**2) / (2 * a2 * a3)
    if abs(c3) > 1 + 1e-9:
        return out
    a3ang = np.arccos(np.clip(c3, -1.0, 1.0))
    for s3 in (1.0, -1.0):
        t3 = s3 * a3ang
        t2 = -np.arctan2(p13[1], -p13[0]) + np.arcsin(np.clip(a3 * np.sin(t3) / n13, -1.0, 1.0))
        T12 = _dh(t2, 0.0, a2, p.alpha[1])
        T23 = _dh(t3, 0.0, a3, p.alpha[2])
        T34 = np.linalg.inv(T12 @ T23) @ T14
        t4 = np.arctan2(T34[1, 0], T34[0, 0])
        q = _wrap(np.array([t1, t2, t3, t4, t5, t6]))
        Tf = forward(q, model)
        if np.linalg.norm(Tf[:3, 3] - T[:3, 3]) < 1e-6 and np.allclose(Tf[:3, :3], T[:3, :3], atol=1e-6):
            out.append(q)
    return out


def inverse(T, model: str = "ur5", q_near=None, frame: str = "base", tol: float = 1e-6) -> list[np.ndarray]:
    """All analytic IK solutions (up to 8) for a 4x4 tool0 pose, angles in (-pi, pi].

    Sorted by distance to ``q_near`` (each joint moved to the 2*pi-equivalent nearest
    to q_near) when given. Solutions are verified by forward kinematics; an
    unreachable pose returns an empty list. Hawkins 2013, Sec. 2.
    """
    p = _model(model)
    T = np.asarray(T, dtype=float)
    if frame == "base_link":
        T = np.linalg.inv(T_BASE_LINK_BASE) @ T
    elif frame != "base":
        raise ValueError(f"frame must be 'base' or 'base_link', got {frame!r}")
    d4, d6 = p.d[3], p.d[5]
    sols: list[np.ndarray] = []
    # theta1 from the wrist-centre (frame 5 origin) position
    p05 = T @ np.array([0.0, 0.0, -d6, 1.0])
    r = np.hypot(p05[0], p05[1])
    if r < abs(d4) - 1e-12:
        return []
    psi = np.arctan2(p05[1], p05[0])
    phi = np.arccos(np.clip(d4 / r, -1.0, 1.0))
    for s1 in (1.0, -1.0):
        t1 = psi + s1 * phi + np.pi / 2
        c1, sn1 = np.cos(t1), np.sin(t1)
        # theta5 from the flange position along the joint-1 normal
        num = T[0, 3] * sn1 - T[1, 3] * c1 - d4
        if abs(num) > abs(d6) + 1e-9:
            continue
        a5 = np.arccos(np.clip(num / d6, -1.0, 1.0))
        for s5 in (1.0, -1.0):
            t5 = s5 * a5
            Ti = np.linalg.inv(T)  # T60
            if abs(np.sin(t5)) < 1e-6:
                # Wrist singularity (sin q5 = 0; Hawkins 2013): axes 2, 3, 4 and 6 are parallel,
                # so theta6 is not determined by the pose; snap theta5 and try theta6
                # candidates (the current joint first) until the planar 3R part solves.
                t5 = 0.0 if np.cos(t5) > 0 else np.pi
                t6_candidates = (([float(q_near[5])] if q_near is not None else [])
                                 + list(np.linspace(-np.pi, np.pi, 24, endpoint=False)))
            else:
                s5v = np.sin(t5)
                t6_candidates = [np.arctan2((-Ti[1, 0] * sn1 + Ti[1, 1] * c1) / s5v,
                                            (Ti[0, 0] * sn1 - Ti[0, 1] * c1) / s5v)]
            for t6 in t6_candidates:
                found = _solve_3r(T, p, model, t1, t5, t6)
                if found:
                    for q in found:
                        if not any(np.allclose(q, s, atol=tol) for s in sols):
                            sols.append(q)
                    break
    if q_near is not None:
        qn = np.asarray(q_near, float).reshape(6)
        sols = [qn + _wrap(s - qn) for s in sols]
        sols.sort(key=lambda s: float(np.linalg.norm(s - qn)))
    return sols


# ---------------------------------------------------------------------------- many poses at once
# A motion's preview solves the IK of every 20 ms sample (a 36 s raster: 1,800 poses); these
# are the same formulas as ``forward`` and ``inverse``, evaluated over arrays of poses.


def _dh_many(theta: np.ndarray, d: float, a: float, alpha: float) -> np.ndarray:
    """(N, 4, 4) DH transforms A_i = Rz(theta) Tz(d) Tx(a) Rx(alpha) (module doc)."""
    ct, st = np.cos(theta), np.sin(theta)
    ca, sa = np.cos(alpha), np.sin(alpha)
    A = np.zeros(theta.shape + (4, 4))
    A[..., 0, 0], A[..., 0, 1], A[..., 0, 2], A[..., 0, 3] = ct, -st * ca, st * sa, a * ct
    A[..., 1, 0], A[..., 1, 1], A[..., 1, 2], A[..., 1, 3] = st, ct * ca, -ct * sa, a * st
    A[..., 2, 1], A[..., 2, 2], A[..., 2, 3] = sa, ca, d
    A[..., 3, 3] = 1.0
    return A


def _rigid_inv(T: np.ndarray) -> np.ndarray:
    """Inverse of rigid transforms (..., 4, 4): [R^T, -R^T t]."""
    out = np.zeros_like(T)
    Rt = np.swapaxes(T[..., :3, :3], -1, -2)
    out[..., :3, :3] = Rt
    out[..., :3, 3] = -np.einsum("...ij,...j->...i", Rt, T[..., :3, 3])
    out[..., 3, 3] = 1.0
    return out


def forward_many(q: np.ndarray, model: str = "ur5") -> np.ndarray:
    """Joint angles (..., 6) -> tool0 poses in Base (..., 4, 4), as ``forward``."""
    p = _model(model)
    q = np.asarray(q, dtype=float)
    T = _dh_many(q[..., 0], p.d[0], p.a[0], p.alpha[0])
    for i in range(1, 6):
        T = T @ _dh_many(q[..., i], p.d[i], p.a[i], p.alpha[i])
    return T


def inverse_many(T: np.ndarray, model: str = "ur5") -> tuple[np.ndarray, np.ndarray]:
    """The eight analytic IK branches (shoulder, wrist, elbow) of tool0 poses (N, 4, 4) in
    Base: solutions (N, 8, 6) in (-pi, pi], NaN where a branch has none or fails the
    forward-kinematics check (``inverse``'s 1e-6), and a flag (N,) for poses at the wrist
    singularity (sin q5 ~ 0), where q6 is free: ``inverse`` solves those one by one.
    Hawkins 2013, Sec. 2, as ``inverse``."""
    p = _model(model)
    T = np.asarray(T, dtype=float).reshape(-1, 4, 4)
    n = len(T)
    d1, d4, d5, d6 = p.d[0], p.d[3], p.d[4], p.d[5]
    a2, a3 = p.a[1], p.a[2]
    out = np.full((n, 8, 6), np.nan)
    singular = np.zeros(n, bool)
    p05 = T[:, :3, 3] - d6 * T[:, :3, 2]  # the wrist centre (frame 5 origin)
    r = np.hypot(p05[:, 0], p05[:, 1])
    reach = r >= abs(d4) - 1e-12
    with np.errstate(invalid="ignore", divide="ignore"):
        psi = np.arctan2(p05[:, 1], p05[:, 0])
        phi = np.arccos(np.clip(d4 / r, -1.0, 1.0))
        Ti = _rigid_inv(T)  # T60
        for b1, s1 in enumerate((1.0, -1.0)):
            t1 = psi + s1 * phi + np.pi / 2
            c1, sn1 = np.cos(t1), np.sin(t1)
            num = T[:, 0, 3] * sn1 - T[:, 1, 3] * c1 - d4
            ok1 = reach & (np.abs(num) <= abs(d6) + 1e-9)
            a5 = np.arccos(np.clip(num / d6, -1.0, 1.0))
            T01_inv = _rigid_inv(_dh_many(t1, d1, 0.0, p.alpha[0]))
            for b5, s5 in enumerate((1.0, -1.0)):
                t5 = s5 * a5
                s5v = np.sin(t5)
                sing = ok1 & (np.abs(s5v) < 1e-6)
                singular |= sing
                ok5 = ok1 & ~sing
                t6 = np.arctan2((-Ti[:, 1, 0] * sn1 + Ti[:, 1, 1] * c1) / s5v,
                                (Ti[:, 0, 0] * sn1 - Ti[:, 0, 1] * c1) / s5v)
                T46_inv = _rigid_inv(_dh_many(t5, d5, 0.0, p.alpha[4]) @ _dh_many(t6, d6, 0.0, p.alpha[5]))
                T14 = T01_inv @ T @ T46_inv
                p13 = T14[:, :3, 3] - d4 * T14[:, :3, 1]  # T14 @ (0, -d4, 0, 1)
                n13 = np.linalg.norm(p13, axis=1)
                c3 = (n13**2 - a2**2 - a3**2) / (2 * a2 * a3)
                ok3 = ok5 & (np.abs(c3) <= 1 + 1e-9)
                a3ang = np.arccos(np.clip(c3, -1.0, 1.0))
                for b3, s3 in enumerate((1.0, -1.0)):
                    t3 = s3 * a3ang
                    t2 = -np.arctan2(p13[:, 1], -p13[:, 0]) + np.arcsin(np.clip(a3 * np.sin(t3) / n13, -1.0, 1.0))
                    T13 = _dh_many(t2, 0.0, a2, p.alpha[1]) @ _dh_many(t3, 0.0, a3, p.alpha[2])
                    T34 = _rigid_inv(T13) @ T14
                    t4 = np.arctan2(T34[:, 1, 0], T34[:, 0, 0])
                    q = _wrap(np.stack([t1, t2, t3, t4, t5, t6], axis=1))
                    Tf = forward_many(np.nan_to_num(q), model)
                    good = ok3 & (np.linalg.norm(Tf[:, :3, 3] - T[:, :3, 3], axis=1) < 1e-6) & np.all(
                        np.abs(Tf[:, :3, :3] - T[:, :3, :3]) <= 1e-6 + 1e-5 * np.abs(T[:, :3, :3]), axis=(1, 2))
                    out[good, 4 * b1 + 2 * b5 + b3] = q[good]
    return out, singular
