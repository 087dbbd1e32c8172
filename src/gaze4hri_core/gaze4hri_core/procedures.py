"""Calibration procedures as pure functions: each returns the result and a residual
report, and never touches files or devices (the acquisition half drives them).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.spatial.transform import Rotation

from .transforms import SE3

__all__ = [
    "register_points",
    "RegistrationReport",
    "register_points_report",
    "EyeHeadReport",
    "eye_head_calibration",
    "SurveyReport",
    "target_survey",
]


def register_points(src, dst) -> tuple[np.ndarray, float]:
    """Rigid transform T (4x4) with dst ~= T src by least squares, and its RMS (m).

    Kabsch / Umeyama without scale (S. Umeyama, "Least-squares estimation of
    transformation parameters between two point patterns", IEEE PAMI 13(4), 1991,
    Eqs. 39-42 with c = 1). Needs >= 3 non-collinear point pairs.
    """
    P = np.asarray(src, dtype=float).reshape(-1, 3)
    Q = np.asarray(dst, dtype=float).reshape(-1, 3)
    if len(P) != len(Q):
        raise ValueError(f"register_points: {len(P)} source vs {len(Q)} destination points")
    if len(P) < 3:
        raise ValueError("register_points: need at least 3 point pairs")
    if not (np.isfinite(P).all() and np.isfinite(Q).all()):
        raise ValueError("register_points: points must be finite")
    mp, mq = P.mean(0), Q.mean(0)
    H = (P - mp).T @ (Q - mq) / len(P)
    if np.linalg.matrix_rank(P - mp, tol=1e-6) < 2:
        raise ValueError("register_points: source points are collinear; spread them in 3D")
    U, _, Vt = np.linalg.svd(H)
    S = np.diag([1.0, 1.0, np.sign(np.linalg.det(Vt.T @ U.T)) or 1.0])
    R = Vt.T @ S @ U.T
    t = mq - R @ mp
    T = np.eye(4)
    T[:3, :3], T[:3, 3] = R, t
    res = Q - (P @ R.T + t)
    return T, float(np.sqrt(np.mean(np.sum(res**2, axis=1))))


@dataclass
class RegistrationReport:
    T: SE3
    rms_m: float
    max_m: float
    residuals_m: np.ndarray
    n_points: int


def register_points_report(src, dst) -> RegistrationReport:
    """``register_points`` with per-point residuals (robot TCP vs motion capture)."""
    T, rms = register_points(src, dst)
    P = np.asarray(src, float).reshape(-1, 3)
    Q = np.asarray(dst, float).reshape(-1, 3)
    r = np.linalg.norm(Q - (P @ T[:3, :3].T + T[:3, 3]), axis=1)
    return RegistrationReport(SE3.from_matrix(T), rms, float(r.max()), r, len(P))


@dataclass
class EyeHeadReport:
    """Result of the eye-head calibration: T_head_eye and its spread."""

    T_head_eye: SE3
    n_samples: int
    n_used: int
    position_rms_m: float
    rotation_rms_deg: float
    rejected: list[int] = field(default_factory=list)

    def ok(self, max_position_rms_m: float = 0.002, max_rotation_rms_deg: float = 1.0) -> bool:
        return self.position_rms_m <= max_position_rms_m and self.rotation_rms_deg <= max_rotation_rms_deg


def eye_head_calibration(T_world_head: list[SE3], T_world_tool: list[SE3], outlier_k: float = 3.0) -> EyeHeadReport:
    """Static tool-in-head transform from N simultaneous head-band / tool poses.

    Each sample gives T_head_tool = T_world_head^-1 T_world_tool (Sezer et al. Sec.
    III-B: the tool sits above the interpupillary midpoint). Translation: mean;
    rotation: chordal L2 mean (Hartley et al., "Rotation Averaging", IJCV 2013,
    Sec. 5.3; scipy Rotation.mean). Samples whose position deviates by more than
    ``outlier_k`` robust standard deviations (1.4826 MAD, at least 0.5 mm) are rejected
    once and the mean recomputed.
    """
    if len(T_world_head) != len(T_world_tool):
        raise ValueError("eye_head_calibration: head and tool sample counts differ")
    if len(T_world_head) < 3:
        raise ValueError("eye_head_calibration: need at least 3 samples")
    rel = [h.inv() @ t for h, t in zip(T_world_head, T_world_tool, strict=True)]
    pos = np.array([r.t for r in rel])
    rots = Rotation.from_matrix(np.array([r.R for r in rel]))
    dev = np.linalg.norm(pos - np.median(pos, axis=0), axis=1)
    scale = max(1.4826 * np.median(dev), 0.0005)
    keep = dev <= outlier_k * scale
    if keep.sum() < 3:
        keep[:] = True
    mean_p = pos[keep].mean(0)
    mean_r = rots[keep].mean()
    p_rms = float(np.sqrt(np.mean(np.sum((pos[keep] - mean_p) ** 2, axis=1))))
    r_rms = float(np.degrees(np.sqrt(np.mean((mean_r.inv() * rots[keep]).magnitude() ** 2))))
    return EyeHeadReport(
        SE3(mean_r.as_matrix(), mean_p), len(rel), int(keep.sum()), p_rms, r_rms, [int(i) for i in np.where(~keep)[0]]
    )


@dataclass
class SurveyReport:
    targets: dict[str, np.ndarray]
    spread_m: dict[str, float]
    n_samples: dict[str, int]


def target_survey(samples: dict[str, np.ndarray], probe_tip_in_probe=None,
                  probe_poses: dict[str, list[SE3]] | None = None) -> SurveyReport:
    """Target positions in the world from probe samples held on each marker.

    ``samples`` maps a target name to an (N, 3) array of probe-tip positions; or give
    ``probe_poses`` (name -> list of probe rigid-body poses) with the tip offset
    ``probe_tip_in_probe``. Result per target: mean position and RMS spread (m).
    """
    pts: dict[str, np.ndarray] = {}
    if probe_poses is not None:
        if probe_tip_in_probe is None:
            raise ValueError("target_survey: probe_poses needs probe_tip_in_probe")
        tip = np.asarray(probe_tip_in_probe, float)
        for name, poses in probe_poses.items():
            pts[name] = np.array([P.apply(tip) for P in poses])
    for name, arr in (samples or {}).items():
        pts[name] = np.asarray(arr, float).reshape(-1, 3)
    targets, spread, n = {}, {}, {}
    for name, arr in pts.items():
        if len(arr) == 0:
            raise ValueError(f"target_survey: no samples for {name}")
        m = arr.mean(0)
        targets[name] = m
        spread[name] = float(np.sqrt(np.mean(np.sum((arr - m) ** 2, axis=1))))
        n[name] = len(arr)
    return SurveyReport(targets, spread, n)
