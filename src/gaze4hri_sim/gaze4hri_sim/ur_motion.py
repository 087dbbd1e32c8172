"""The arm of the UR controller emulator: URScript moves parsed from program text and
executed on the core's UR5/UR5e kinematics at the controller rate.

Semantics (Universal Robots, "The URScript Programming Language", movej/movel/movep,
stopl/stopj): movel/movep run the tool in a straight line with a trapezoidal speed
profile at v (m/s) and a (m/s^2); consecutive Cartesian moves joined by a blend r > 0
run as one profile over the polyline (gaze4hri_core.trajectories.sample_path, the
same model the driver previews); movej interpolates the joints linearly with the
leading joint on a trapezoid at v (rad/s) and a (rad/s^2); stopl/stopj decelerate
along the current path at the given rate. Joint positions along a Cartesian path
follow the start configuration (gaze4hri_core.safety.ik_track).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
from gaze4hri_core.safety import ik_track, rotvec_of
from gaze4hri_core.trajectories import Profile, _seg_lengths, interpolate_path, trapezoid
from gaze4hri_core.transforms import SE3, se3_to_ur_pose, ur_pose_to_se3

from gaze4hri_core import kinematics

__all__ = ["MoveCmd", "parse_moves", "ArmModel"]

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
# movel(p[x,y,z,rx,ry,rz],a=..,v=..,r=..) as ur_rtde's PathEntry::toScriptCode writes it
# (rtde_control_interface.cpp, PathEntry::toScriptCode; Path::toScriptCode adds
# signal_async_progress(i) before entry i).
_MOVE = re.compile(rf"^\s*(movel|movep|movej)\(\s*(p?)\[((?:\s*{_NUM}\s*,){{5}}\s*{_NUM}\s*)\]"
                   rf"\s*((?:,\s*\w+\s*=\s*{_NUM}\s*)*)\)")
_PROGRESS = re.compile(r"^\s*signal_async_progress\(\s*(\d+)\s*\)")
_KW = re.compile(rf"(\w+)\s*=\s*({_NUM})")


@dataclass(frozen=True)
class MoveCmd:
    kind: str  # movel | movep | movej
    target: tuple[float, ...]  # pose (x, y, z, rx, ry, rz) or joints (rad)
    is_pose: bool
    a: float
    v: float
    r: float = 0.0
    index: int = 0  # the async progress value reported while this move runs


def parse_move(line: str, index: int = 0) -> MoveCmd | None:
    """One move with literal arguments, else None (defaults: movel a=1.2 v=0.25, movej a=1.4 v=1.05)."""
    m = _MOVE.match(line)
    if not m:
        return None
    kind, p, nums, kws = m.groups()
    kw = {k: float(v) for k, v in _KW.findall(kws)}
    a0, v0 = (1.4, 1.05) if kind == "movej" else (1.2, 0.25)
    target = tuple(float(x) for x in nums.split(","))
    return MoveCmd(kind, target, bool(p) or kind != "movej", kw.get("a", a0), kw.get("v", v0), kw.get("r", 0.0), index)


def parse_moves(script: str) -> list[MoveCmd]:
    """Every move with literal arguments in ``script``, in order, with its progress index."""
    out, index = [], 0
    for line in script.splitlines():
        pm = _PROGRESS.match(line)
        if pm:
            index = int(pm.group(1))
            continue
        mv = parse_move(line, index)
        if mv is not None:
            out.append(mv)
    return out


@dataclass
class _Segment:
    kind: str  # cart | joint
    length: float
    v: float
    a: float
    moves: list[MoveCmd]
    poses: list[SE3] = field(default_factory=list)  # cart: tool0 polyline, start first
    q0: np.ndarray | None = None
    q1: np.ndarray | None = None
    breaks: np.ndarray | None = None  # cumulative length at each waypoint (progress index lookup)
    t: float = 0.0
    s: float = 0.0
    speed: float = 0.0
    stop_decel: float | None = None
    profile: Profile | None = None  # the segment's trapezoid, built once (not at every controller tick)


class ArmModel:
    """Joint state plus the running motion; ``step(dt)`` advances it by dt seconds."""

    def __init__(self, model: str = "ur5", q0=None, tcp_offset=None):
        self.model = model
        self.q = np.asarray(q0, float).copy()
        self.qd = np.zeros(6)
        self.tcp = ur_pose_to_se3(tcp_offset) if tcp_offset is not None else SE3.identity()
        self._T = self.tcp_pose()
        self.tcp_speed = np.zeros(6)
        self._queue: list[MoveCmd] = []
        self._seg: _Segment | None = None
        self.fault: str | None = None

    # ---------------------------------------------------------------- state
    def tool0(self, q=None) -> np.ndarray:
        return kinematics.forward(self.q if q is None else q, self.model)

    def tcp_pose(self, q=None) -> SE3:
        T = self.tool0(q)
        return SE3(T[:3, :3], T[:3, 3]) @ self.tcp

    def set_tcp(self, pose) -> None:
        self.tcp = ur_pose_to_se3(pose)
        self._T = self.tcp_pose()

    @property
    def moving(self) -> bool:
        return self._seg is not None or bool(self._queue)

    @property
    def progress(self) -> int:
        """Index of the move being executed (ur_rtde's async progress)."""
        seg = self._seg
        if seg is None:
            return 0
        if seg.breaks is None:
            return seg.moves[0].index
        k = int(np.clip(np.searchsorted(seg.breaks, seg.s, side="right") - 1, 0, len(seg.moves) - 1))
        return seg.moves[k].index

    # ---------------------------------------------------------------- commands
    def start(self, moves: list[MoveCmd]) -> None:
        """Replace any motion by ``moves`` (run in order)."""
        self._queue = list(moves)
        self._seg = None
        self.fault = None

    def stop(self, decel: float) -> None:
        """stopl/stopj: decelerate along the current path at ``decel``; drop queued moves."""
        self._queue = []
        if self._seg is not None:
            self._seg.stop_decel = max(float(decel), 1e-3)

    def halt(self) -> None:
        """Stop at once (protective stop of the emulator: category 2, ramp not modelled)."""
        self._queue, self._seg = [], None

    def _next_segment(self) -> _Segment | None:
        if not self._queue:
            return None
        first = self._queue.pop(0)
        if first.kind == "movej":
            q0 = self.q.copy()
            q1 = np.asarray(first.target, float) if not first.is_pose else self._ik(first.target, q0)
            if q1 is None:
                self.fault = f"movej: no inverse kinematics for {first.target}"
                self._queue = []
                return None
            L = float(np.max(np.abs(q1 - q0)))
            return _Segment("joint", L, first.v, first.a, [first], q0=q0, q1=q1)
        group = [first]
        while self._queue and group[-1].r > 0 and self._queue[0].kind in ("movel", "movep"):
            group.append(self._queue.pop(0))
        start = SE3.from_matrix(self.tool0())
        poses = [start] + [self._tool0_target(m) for m in group]
        lens = _seg_lengths(poses)
        return _Segment("cart", float(lens.sum()), min(m.v for m in group), min(m.a for m in group), group,
                        poses=poses, breaks=np.concatenate([[0.0], np.cumsum(lens)]))

    def _tool0_target(self, m: MoveCmd) -> SE3:
        if not m.is_pose:
            return SE3.from_matrix(self.tool0(np.asarray(m.target, float)))
        return ur_pose_to_se3(list(m.target)) @ self.tcp.inv()

    def _ik(self, pose, q_near) -> np.ndarray | None:
        T = (ur_pose_to_se3(list(pose)) @ self.tcp.inv()).matrix
        sols = kinematics.inverse(T, self.model, q_near=q_near)
        return sols[0] if sols else None

    # ---------------------------------------------------------------- time
    def step(self, dt: float, scaling: float = 1.0) -> None:
        q_prev, T_prev = self.q.copy(), self._T
        if self._seg is None:
            self._seg = self._next_segment()
        seg = self._seg
        if seg is not None:
            self._advance(seg, dt * scaling)
            q = self._q_at(seg)
            if q is None:
                self.fault = "movel: the path leaves the reachable workspace"
                self.halt()
            else:
                self.q = q
            done = seg.s >= seg.length - 1e-12 or (seg.stop_decel is not None and seg.speed <= 0.0)
            if done and self._seg is seg:
                self._seg = None
        self._T = self.tcp_pose()
        self.qd = (self.q - q_prev) / dt if dt > 0 else np.zeros(6)
        if dt > 0:
            lin = (self._T.t - T_prev.t) / dt
            ang = rotvec_of(self._T.R @ T_prev.R.T) / dt
            self.tcp_speed = np.concatenate([lin, ang])

    def _advance(self, seg: _Segment, dt: float) -> None:
        if seg.length <= 0:
            seg.s = seg.length
            return
        if seg.stop_decel is not None:
            v = max(0.0, seg.speed - seg.stop_decel * dt)
            seg.s = min(seg.length, seg.s + 0.5 * (seg.speed + v) * dt)
            seg.speed = v
            return
        if seg.profile is None:
            seg.profile = trapezoid(seg.length, seg.v, seg.a)
        prof = seg.profile
        seg.t = min(seg.t + dt, prof.duration)
        seg.s = float(prof.s(seg.t))
        seg.speed = float(prof.speed(seg.t))

    def _q_at(self, seg: _Segment) -> np.ndarray | None:
        if seg.kind == "joint":
            w = 1.0 if seg.length <= 0 else seg.s / seg.length
            return seg.q0 + w * (seg.q1 - seg.q0)
        T = interpolate_path(seg.poses, np.array([seg.s]))[0]
        return ik_track(T.matrix, self.q, self.model)

    def pose_list(self) -> list[float]:
        return se3_to_ur_pose(self._T)
