"""Output conventions checked against the data: a network's raw outputs on frames whose
gaze is known, decoded under the spec's declared rule and under each plausible
misreading of it (pitch/yaw swapped, a sign flipped, Frame A/B, degrees/radians, BGR/RGB),
each scored by its median angular error (issue 30, item 4; ``gaze4hri-bench methods check``).

Frames (gaze4hri_core.gaze): Frame A is GazeHub / ETH-XGaze (Zhang et al. ECCV 2020,
Sec. 3), g(p, y) = (-cos p sin y, -sin p, -cos p cos y); Frame B is Gaze360's eye frame
(Kellnhofer et al. ICCV 2019, Sec. 3.3), B -> A axes (-x, -y, z). Two angles read in
Frame B axes as if they were Frame A are therefore both signs flipped: g(-p, -y). Pure
numpy: the caller runs the network and hands over outputs, the maps to the camera frame
and the ground truth."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from gaze4hri_core.gaze import angular_error_deg, convert_frame, normalize, pitchyaw_to_vector

from .decoders import DECODERS, decode, l2cs_angles_deg

__all__ = ["Reading", "CheckResult", "readings", "score", "COLOUR_SWAP", "CLEAR_DEG", "CLEAR_RATIO"]

#: an alternative is "clearly better" when its median error is below the declared one by at
#: least CLEAR_DEG degrees AND by at least (1 - CLEAR_RATIO) of it (a real misreading of a
#: trained network moves the median by tens of degrees; sampling noise by a fraction of one)
CLEAR_DEG = 2.0
CLEAR_RATIO = 0.8
COLOUR_SWAP = "colour order swapped"
_NO_FIELD = "no spec field flips a sign: negate it in the network before export (or in its labels)"


@dataclass(frozen=True)
class Reading:
    """One way to read the outputs: its name, the spec change it stands for, and the
    unit vectors it gives in the network's Frame A axes, (N, 3)."""

    name: str
    fix: str
    vectors: np.ndarray


@dataclass(frozen=True)
class CheckResult:
    """Median error (deg) per reading over ``n`` frames, best first; ``verdict`` one line.
    An alternative counts only when it beats the declared reading AND the constant one
    (the output ignored): a misreading that shrinks the angles to nothing (degrees read
    as radians) is a constant prediction, which a poor network's declared reading can lose
    to without its convention being wrong."""

    rows: list[tuple[str, float, str]]  # (reading, median deg, fix), declared included
    n: int
    declared_median: float
    best_alternative: tuple[str, float, str] | None
    constant_median: float = float("nan")  # the output ignored: (0, 0), into the input's camera

    @property
    def alternative_better(self) -> bool:
        """An alternative beats the declared reading clearly (CLEAR_DEG, CLEAR_RATIO)."""
        b = self.best_alternative
        if b is None or not np.isfinite(b[1]):
            return False
        return self._clearly_below(b[1], self.declared_median) and self._clearly_below(b[1], self.constant_median)

    @staticmethod
    def _clearly_below(x: float, ref: float) -> bool:
        return not np.isfinite(ref) or (ref - x >= CLEAR_DEG and x <= CLEAR_RATIO * ref)

    @property
    def margin_deg(self) -> float:
        """How far the best alternative's median is above the declared one (negative: below)."""
        b = self.best_alternative
        return float("nan") if b is None else b[1] - self.declared_median

    def verdict(self) -> str:
        if self.alternative_better:
            name, med, fix = self.best_alternative
            return (f"WARNING: the outputs fit '{name}' far better than the spec's declared convention "
                    f"(median {med:.1f} deg vs {self.declared_median:.1f} deg over {self.n} frames); "
                    f"the spec is probably wrong: {fix}")
        if self.margin_deg >= 0 or not np.isfinite(self.margin_deg):
            return (f"declared convention fits best (median {self.declared_median:.1f} deg over {self.n} frames; "
                    f"the nearest alternative is {self.margin_deg:+.1f} deg)")
        return (f"no convention fits clearly better than the declared one (median {self.declared_median:.1f} deg "
                f"over {self.n} frames; '{self.best_alternative[0]}' {self.best_alternative[1]:.1f} deg, "
                f"output ignored {self.constant_median:.1f} deg): the network may not be trained for these inputs")


def _angle_parts(rule: str, outs: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray, str, str] | None:
    """(pitch, yaw) radians as the rule reads them, the order the rule declares, the
    unit ('rad', 'deg' or '' for bins); None for vector rules."""
    if rule in ("pitchyaw_rad", "yawpitch_rad", "pitchyaw_deg", "yawpitch_deg"):
        g = np.asarray(outs[0], dtype=np.float64)
        order, unit = rule.split("_")
        a, b = g[..., 0], g[..., 1]
        if unit == "deg":
            a, b = np.radians(a), np.radians(b)
        return ((a, b) if order == "pitchyaw" else (b, a)) + (order, unit)
    if rule == "l2cs_bins":
        return np.radians(l2cs_angles_deg(outs[1])), np.radians(l2cs_angles_deg(outs[0])), "yawpitch", ""
    if rule.startswith("bins_"):
        dec = DECODERS.get(rule)
        a, b = np.radians(dec.angle_deg(outs[0])), np.radians(dec.angle_deg(outs[1]))
        return ((a, b, "pitchyaw", "") if dec.first == "pitch" else (b, a, "yawpitch", ""))
    return None


def _angle_readings(pitch: np.ndarray, yaw: np.ndarray, order: str, unit: str) -> list[Reading]:
    v = lambda p, y: pitchyaw_to_vector(p, y, "A")  # noqa: E731
    other = "yaw_pitch" if order == "pitchyaw" else "pitch_yaw"
    out = [Reading("pitch/yaw swapped", f"output.order: {other}", v(yaw, pitch)),
           Reading("pitch sign flipped", _NO_FIELD, v(-pitch, yaw)),
           Reading("yaw sign flipped", _NO_FIELD, v(pitch, -yaw)),
           Reading("Frame B axes read as Frame A (both signs flipped)",
                   "both angles negated: the network's x and y axes point left and up (Frame B)", v(-pitch, -yaw))]
    if unit == "rad":
        out.append(Reading("degrees read as radians", "output.unit: deg", v(np.radians(pitch), np.radians(yaw))))
    elif unit == "deg":
        out.append(Reading("radians read as degrees", "output.unit: rad", v(np.degrees(pitch), np.degrees(yaw))))
    return out


def _vector_readings(rule: str, outs: Sequence[np.ndarray]) -> list[Reading]:
    frame = "B" if rule == "vector_b" else "A"
    other = "A" if frame == "B" else "B"
    raw = normalize(np.asarray(outs[0], dtype=np.float64))
    a = lambda u: normalize(convert_frame(u, frame, "A"))  # noqa: E731
    return [Reading(f"Frame {other} instead of {frame}", f"output.frame: {other}",
                    normalize(convert_frame(raw, other, "A"))),
            Reading("x sign flipped", _NO_FIELD, a(raw * [-1, 1, 1])),
            Reading("y sign flipped", _NO_FIELD, a(raw * [1, -1, 1])),
            Reading("x and y swapped", "swap the first two components in the network", a(raw[..., [1, 0, 2]])),
            Reading("vector reversed (face <- target)", "negate the vector in the network", a(-raw))]


def readings(rule: str, outs: Sequence[np.ndarray], swapped_colour_outs: Sequence[np.ndarray] | None = None,
             colour: str = "") -> list[Reading]:
    """Every reading of ``outs`` (spec order) under output ``rule``: the declared one
    first (exactly the pipeline's decoding), then each alternative; with
    ``swapped_colour_outs`` (the same frames fed with the channels reversed) also the
    colour order the spec does not declare (``colour``: the declared one)."""
    first = [Reading("declared", "", decode(rule, outs))]
    parts = _angle_parts(rule, outs)
    alts = _angle_readings(*parts) if parts is not None else (
        _vector_readings(rule, outs) if rule.startswith("vector_") else [])
    if swapped_colour_outs is not None:
        other = {"rgb": "bgr", "bgr": "rgb"}.get(colour, "the other order")
        alts.append(Reading(COLOUR_SWAP, f"input.colour: {other}", decode(rule, swapped_colour_outs)))
    return first + alts


def score(reads: list[Reading], to_cam: np.ndarray, gt_cam: np.ndarray) -> CheckResult:
    """Median angular error (deg) of each reading against the camera-frame truth
    ``gt_cam`` (N, 3), each mapped to the camera by the per-frame ``to_cam`` (N, 3, 3)
    exactly as the pipeline maps a prediction (R_norm^T, or the crop's ray basis)."""
    to_cam = np.asarray(to_cam, float)
    gt_cam = np.asarray(gt_cam, float)
    rows = []
    for r in reads:
        cam = normalize(np.einsum("nij,nj->ni", to_cam, np.asarray(r.vectors, float).reshape(-1, 3)))
        err = angular_error_deg(cam, gt_cam)
        med = float(np.nanmedian(err)) if np.isfinite(err).any() else float("nan")
        rows.append((r.name, med, r.fix))
    declared = rows[0]
    alts = sorted(rows[1:], key=lambda x: (not np.isfinite(x[1]), x[1]))
    ordered = sorted(rows, key=lambda x: (not np.isfinite(x[1]), x[1]))
    const = np.broadcast_to([0.0, 0.0, -1.0], gt_cam.shape)
    const_err = angular_error_deg(np.einsum("nij,nj->ni", to_cam, const), gt_cam)
    const_med = float(np.nanmedian(const_err)) if np.isfinite(const_err).any() else float("nan")
    return CheckResult(ordered, int(len(gt_cam)), declared[1], alts[0] if alts else None, const_med)
