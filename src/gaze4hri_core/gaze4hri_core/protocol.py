"""The study's protocol as data: 63 trials per subject (Sezer et al., arXiv
2605.04770, Sec. III-C and Table I).

Trial ids are stable and readable: ``illum025_P3``, ``arc_P5``,
``conflict_left_H2``, ``mutual_h_fast``. Pure data: no I/O.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from .registry import Registry

__all__ = [
    "PROTOCOL_VERSION",
    "EXPERIMENTS",
    "CameraMotion",
    "Trial",
    "trials",
    "select",
    "trial_by_id",
    "TRIALS",
    "P_TARGETS",
    "H_TARGETS",
    "ILLUMINATION_LEVELS",
    "ARC_RADIUS_M",
    "ARC_YAW_DEG",
    "CONFLICT_HEAD_YAW_DEG",
    "CONFLICT_TARGETS",
    "MUTUAL_SPEEDS_MPS",
    "LINE_HALF_LENGTH_M",
    "LINE_PASSES",
    "line_path_length_m",
    "FIXED_TRIAL_S",
    "ARC_DURATION_S",
    "P_GRID",
]

PROTOCOL_VERSION = "gaze4hri-2026.1"
EXPERIMENTS = ("illumination", "viewpoint", "conflict", "mutual")
P_TARGETS = tuple(f"P{i}" for i in range(1, 10))
H_TARGETS = tuple(f"H{i}" for i in range(1, 7))
ILLUMINATION_LEVELS = (10, 25, 50, 100)
ARC_RADIUS_M = 0.5
ARC_YAW_DEG = (-30.0, 30.0)
CONFLICT_HEAD_YAW_DEG = {"left": 25.0, "center": 0.0, "right": -25.0}
CONFLICT_TARGETS = {
    "left": ("H1", "H2", "H4", "H5"),
    "center": ("H1", "H2", "H3", "H4", "H5", "H6"),
    "right": ("H2", "H3", "H5", "H6"),
}
# Study parameters restated from the authors' data collector (GazeForHRI/Gaze4HRI@main):
# mutual-gaze line scans: fast 0.1 m/s, slow half of it (config.py:346-347)
MUTUAL_SPEEDS_MPS = {"slow": 0.05, "fast": 0.1}
# line scans reach +-0.25 m from the centre horizontally, +-0.10 m vertically (config.py:344-345)
LINE_HALF_LENGTH_M = {"h": 0.25, "v": 0.10}
# each scan is a raster of three passes along its axis joined by two steps across it, the
# camera stopping at the four corners (line_movement_analysis.py:58-59, 65-76: at 100 Hz
# the corners of the fast h scan fall at rows 500, 600, 1100, 1200 = passes of 0.5 m and
# steps of 0.1 m at 0.1 m/s; of the fast v scan at 200, 450, 650, 900 = 0.2 m and 0.25 m)
LINE_PASSES = 3
# recording time: 5 s for fixed-camera trials, 10 s for the arc (config.py:59-69);
# the arc's duration is the recording time (config.py:305-306)
FIXED_TRIAL_S = 5.0
ARC_DURATION_S = 10.0
# Layout of P1..P9 (rows from the subject, columns from the camera), gaze4hri.md.
P_GRID = {
    "closest": {"left": "P9", "middle": "P8", "right": "P7"},
    "middle": {"left": "P6", "middle": "P5", "right": "P4"},
    "farthest": {"left": "P3", "middle": "P2", "right": "P1"},
}


def line_path_length_m(axis: str, half_h_m: float | None = None, half_v_m: float | None = None) -> float:
    """Camera path length (m) of a mutual-gaze raster along ``axis``: three passes of twice
    the half length along it, two steps of the half length across it (h 1.7 m, v 1.1 m
    with the study's values; gaze4hri_core.rig.raster_scan_points)."""
    h = LINE_HALF_LENGTH_M["h"] if half_h_m is None else float(half_h_m)
    v = LINE_HALF_LENGTH_M["v"] if half_v_m is None else float(half_v_m)
    if axis not in ("h", "v"):
        raise ValueError(f"scan axis must be 'h' or 'v', got {axis!r}")
    along, across = (h, v) if axis == "h" else (v, h)
    return LINE_PASSES * 2 * along + (LINE_PASSES - 1) * across


@dataclass(frozen=True)
class CameraMotion:
    """How the camera moves during a trial.

    kind: ``fixed`` (front, 0 deg yaw), ``arc`` (radius ``radius_m`` about the eye
    midpoint from ``yaw_deg[0]`` to ``yaw_deg[1]``) or ``line`` (raster of passes along
    ``axis`` ``h``/``v`` at ``speed_mps``, stopping at its corners).
    """

    kind: str
    radius_m: float | None = None
    yaw_deg: tuple[float, float] | None = None
    axis: str | None = None
    speed_mps: float | None = None


@dataclass(frozen=True)
class Trial:
    trial_id: str
    experiment: str
    condition: str
    target: str
    camera_motion: CameraMotion
    illumination: int = 100
    head_yaw_deg: float | None = None  # required head yaw (conflict only), +left
    index: int = field(default=0, compare=False)

    def to_dict(self) -> dict:
        return {
            "trial_id": self.trial_id,
            "experiment": self.experiment,
            "condition": self.condition,
            "target": self.target,
            "illumination": self.illumination,
            "head_yaw_deg": self.head_yaw_deg,
            "camera_motion": {k: v for k, v in vars(self.camera_motion).items() if v is not None},
        }


def _build() -> tuple[Trial, ...]:
    fixed = CameraMotion("fixed")
    out: list[Trial] = []
    for level in ILLUMINATION_LEVELS:
        for p in P_TARGETS:
            out.append(Trial(f"illum{level:03d}_{p}", "illumination", str(level), p, fixed, level))
    arc = CameraMotion("arc", radius_m=ARC_RADIUS_M, yaw_deg=ARC_YAW_DEG)
    for p in P_TARGETS:
        out.append(Trial(f"arc_{p}", "viewpoint", "arc", p, arc))
    for side, targets in CONFLICT_TARGETS.items():
        for h in targets:
            out.append(
                Trial(f"conflict_{side}_{h}", "conflict", side, h, fixed, head_yaw_deg=CONFLICT_HEAD_YAW_DEG[side])
            )
    for axis in ("h", "v"):
        for speed, v in MUTUAL_SPEEDS_MPS.items():
            out.append(
                Trial(f"mutual_{axis}_{speed}", "mutual", f"{axis}_{speed}", "camera",
                      CameraMotion("line", axis=axis, speed_mps=v))
            )
    return tuple(Trial(**{**t.__dict__, "index": i}) for i, t in enumerate(out))


_TRIALS = _build()
#: trial id -> Trial, in recording order; ids are case-sensitive (their case is part of the id)
TRIALS: Registry[Trial] = Registry("trial id", where="--trials", case_sensitive=True)
for _t in _TRIALS:
    TRIALS.add(_t.trial_id, _t)


def trials() -> tuple[Trial, ...]:
    """The 63 trials of one subject, in recording order."""
    return _TRIALS


def trial_by_id(trial_id: str, where: str | None = None) -> Trial:
    """The trial of an id; an unknown id raises the registry's one-line UnknownName
    placed at ``where`` (the option or file it came from; default ``--trials``)."""
    return TRIALS.get(trial_id, where)


def select(
    experiments: Iterable[str] | None = None,
    conditions: Iterable[str] | None = None,
    trial_ids: Iterable[str] | None = None,
    targets: Iterable[str] | None = None,
    where: str | None = None,
) -> tuple[Trial, ...]:
    """Subset of the protocol; each filter is optional and they combine with AND.
    ``where``: the place an unknown trial id is reported at (trial_by_id)."""
    exps = set(experiments) if experiments else None
    if exps:
        unknown = exps - set(EXPERIMENTS)
        if unknown:
            raise ValueError(f"unknown experiment(s) {sorted(unknown)}; expected {EXPERIMENTS}")
    conds = {str(c) for c in conditions} if conditions else None
    ids = set(trial_ids) if trial_ids else None
    if ids:
        for i in ids:
            trial_by_id(i, where)
    tg = set(targets) if targets else None
    return tuple(
        t
        for t in _TRIALS
        if (exps is None or t.experiment in exps)
        and (conds is None or t.condition in conds)
        and (ids is None or t.trial_id in ids)
        and (tg is None or t.target in tg)
    )
