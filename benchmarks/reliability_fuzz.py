"""Reliability fuzz of the motion preview (issue 20, item 7): random joint and Cartesian
moves, with NaN/inf, huge, zero and negative speeds, accelerations, blends, poses and
joint goals, through gaze4hri_core.trajectories.preview_move (what the robot node runs
before every motion). A case ends accepted, refused, unsafe_accepted (accepted although
a sampled pose leaves the workspace box, the planned speed or acceleration exceeds the
limits, or the camera comes closer to the head than allowed) or in an exception.

    .venv/bin/python benchmarks/reliability_fuzz.py [N]     # prints the counts dict

``run(n)`` is imported by the reliability benchmark; tests/core/test_trajectory_fuzz.py
feeds hypothesis-drawn cases to ``run_case``.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
SPECIALS = (float("nan"), float("inf"), float("-inf"), 0.0, -1.0, 1e300, -1e300, 1e-300)


@dataclass(frozen=True)
class Case:
    """One move: ``joint`` (goal = start joints + dq, previewed through FK) or Cartesian
    (goal = start tool0 moved by dp and rotated by dr, base frame)."""

    joint: bool
    delta: tuple[float, ...]  # dq (6) or dp (3) + dr (3)
    speed: float
    accel: float
    blend: float = 0.0
    q_start_bad: float | None = None  # a value put into the start joints (NaN, inf, ...)


_CTX: dict = {}


def _context():
    """Calibration, monitor with a tracked head, the front start pose and its joints (cached)."""
    if not _CTX:
        from gaze4hri_core.calibration import load_calibration
        from gaze4hri_core.safety import monitor_for
        from gaze4hri_core.trajectories import front_camera_pose, tool0_for_camera
        from gaze4hri_core.transforms import SE3

        from gaze4hri_core import kinematics

        cal = load_calibration(REPO / "calibration", "default")
        mon = monitor_for(cal)
        # the head band placed so that the subject's eye midpoint (what the monitor measures
        # the distance from) is where the independent check below measures it: eye_nominal
        mon.update_head(0, SE3(np.eye(3), np.asarray(cal.eye_nominal_world, float)) @ cal.T_head_eye.inv())
        assert np.allclose(mon.head_world, cal.eye_nominal_world)
        start = tool0_for_camera(cal, front_camera_pose(cal))
        q0 = kinematics.inverse(start.matrix, mon.robot_model)[0]
        _CTX.update(cal=cal, mon=mon, start=start, q0=np.asarray(q0, float))
    return _CTX


def run_case(c: Case) -> str:
    """'accepted' | 'refused' | 'unsafe_accepted' | 'exception' for one case."""
    from gaze4hri_core.trajectories import Move, preview_move

    from gaze4hri_core import kinematics

    ctx = _context()
    mon, start, q0 = ctx["mon"], ctx["start"], ctx["q0"].copy()
    try:
        with np.errstate(all="ignore"):
            d = np.asarray(c.delta, float)
            if c.joint:
                goal = kinematics.forward(q0 + d, mon.robot_model)
                goal = _se3(goal)  # kinematics.forward gives a 4x4 array
            else:
                goal = _se3_moved(start, d[:3], d[3:])
            if c.q_start_bad is not None:
                q0[2] = c.q_start_bad
            pv = preview_move(Move("fuzz", (goal,), c.speed, c.accel, blend=c.blend), start, q0, mon, check_mocap=False)
    except Exception:
        return "exception"
    if not pv.ok:
        return "refused"
    return "accepted" if _safe(pv, c, ctx) else "unsafe_accepted"


def _se3(M) -> object:
    from gaze4hri_core.safety import se3_unchecked

    M = np.asarray(M, float)
    return se3_unchecked(M[:3, :3], M[:3, 3])


def _se3_moved(T, dp, dr):
    """T translated by dp and rotated by the rotation vector dr (any numbers, unchecked)."""
    from gaze4hri_core.safety import exp_so3, se3_unchecked

    return se3_unchecked(T.R @ exp_so3(np.asarray(dr, float)), T.t + np.asarray(dp, float))


def _safe(pv, c: Case, ctx) -> bool:
    """Independent check of an accepted preview against the limits."""
    mon = ctx["mon"]
    lim = mon.limits
    if not (0 < c.speed <= lim.max_tcp_speed + 1e-12 and 0 < c.accel <= lim.max_tcp_accel + 1e-12):
        return False
    lo, hi = np.array(lim.workspace_min), np.array(lim.workspace_max)
    head = np.asarray(ctx["cal"].eye_nominal_world, float)
    pos = []
    for T in pv.poses_base:
        W = mon.T_world_base @ T
        cam = W.R @ mon.T_tool0_camera.t + W.t
        if not (
            np.all(np.isfinite(cam))
            and np.all(W.t >= lo)
            and np.all(W.t <= hi)
            and np.all(cam >= lo)
            and np.all(cam <= hi)
        ):
            return False
        if np.linalg.norm(cam - head) < lim.min_camera_head_m:
            return False
        pos.append(T.t)
    if len(pos) >= 3:
        dt = np.diff(pv.t)
        v = np.linalg.norm(np.diff(np.array(pos), axis=0), axis=1) / np.where(dt > 0, dt, np.inf)
        a = np.abs(np.diff(v)) / np.where(dt[1:] > 0, dt[1:], np.inf)
        if v.max() > lim.max_tcp_speed * (1 + 1e-6) or a.max(initial=0) > lim.max_tcp_accel * (1 + 1e-6):
            return False
    return True


def random_case(rng: np.random.Generator) -> Case:
    """A case drawn like the hypothesis test: one quantity in three special."""

    def num(scale: float, positive: bool = False) -> float:
        if rng.random() < 0.25:
            return float(rng.choice(SPECIALS))
        x = float(rng.uniform(0, scale) if positive else rng.normal(0, scale))
        return x

    joint = bool(rng.random() < 0.5)
    scale = float(rng.choice([0.01, 0.1, 0.5, 3.0]))
    delta = tuple(num(scale) for _ in range(6))
    return Case(
        joint,
        delta,
        num(0.3, True),
        num(1.5, True),
        num(0.01, True) if rng.random() < 0.3 else 0.0,
        float(rng.choice(SPECIALS)) if rng.random() < 0.05 else None,
    )


def run(n: int = 2000, seed: int = 0) -> dict:
    """Counts over ``n`` random cases: cases, joint, cartesian, non_finite, accepted,
    refused, unsafe_accepted, exceptions."""
    rng = np.random.default_rng(seed)
    out = dict(cases=0, joint=0, cartesian=0, non_finite=0, accepted=0, refused=0, unsafe_accepted=0, exceptions=0)
    for _ in range(n):
        c = random_case(rng)
        r = run_case(c)
        out["cases"] += 1
        out["joint" if c.joint else "cartesian"] += 1
        vals = np.array([*c.delta, c.speed, c.accel, c.blend, 0.0 if c.q_start_bad is None else c.q_start_bad])
        out["non_finite"] += int(not np.all(np.isfinite(vals)))
        out["exceptions" if r == "exception" else r] += 1
    return out


if __name__ == "__main__":
    print(run(int(sys.argv[1]) if len(sys.argv) > 1 else 2000))
