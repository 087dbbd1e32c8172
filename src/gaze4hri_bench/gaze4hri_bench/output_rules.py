"""Output rules a method spec may name beyond the built-in networks' own (decoders.py):
angles in degrees, a unit vector in Frame A, and classification bins over any range
(L2CS-Net's expectation over bins, Abdelrahman et al. 2022, Sec. 3.2, generalised).
Each is registered in :data:`gaze4hri_bench.decoders.DECODERS` under a name, so that a
profile record and the pipeline decode it like every other rule. Pure numpy."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from gaze4hri_core.gaze import normalize, pitchyaw_to_vector

from .decoders import DECODERS, softmax

__all__ = ["angles_rule", "vector_rule", "bins_rule"]


def _pitchyaw_deg(outs: Sequence[np.ndarray]) -> np.ndarray:
    """[pitch, yaw] degrees, Frame A."""
    g = np.radians(np.asarray(outs[0], dtype=np.float64))
    return pitchyaw_to_vector(g[..., 0], g[..., 1], "A")


def _yawpitch_deg(outs: Sequence[np.ndarray]) -> np.ndarray:
    """[yaw, pitch] degrees, Frame A."""
    g = np.radians(np.asarray(outs[0], dtype=np.float64))
    return pitchyaw_to_vector(g[..., 1], g[..., 0], "A")


def _vector_a(outs: Sequence[np.ndarray]) -> np.ndarray:
    """3D vectors already in Frame A axes, re-normalized."""
    return normalize(np.asarray(outs[0], dtype=np.float64))


_FIXED = {"pitchyaw_deg": _pitchyaw_deg, "yawpitch_deg": _yawpitch_deg, "vector_a": _vector_a}
for _name, _fn in _FIXED.items():
    if _name not in DECODERS:
        DECODERS.add(_name, _fn)


def angles_rule(order: str, unit: str) -> str:
    """The decoder of a two-angle output: ``pitchyaw_rad``, ``yawpitch_deg``, ..."""
    return f"{order.replace('_', '')}_{unit}"


def vector_rule(frame: str) -> str:
    """The decoder of a unit-vector output in Frame A or B."""
    return f"vector_{frame.lower()}"


class _Bins:
    """Two classification heads of ``count`` bins each over [lo, hi) degrees; the angle
    is lo + width x E[bin index] (width = (hi - lo) / count), as L2CS-Net's
    sum(softmax x idx) x 4 - 180. ``first``: which angle the first head is."""

    def __init__(self, first: str, count: int, lo: float, hi: float):
        self.first, self.count, self.lo = first, count, lo
        self.width = (hi - lo) / count

    def angle_deg(self, logits) -> np.ndarray:
        logits = np.asarray(logits)
        if logits.shape[-1] != self.count:
            raise ValueError(f"bins head has {logits.shape[-1]} bins, expected {self.count}")
        return softmax(logits, -1) @ np.arange(self.count, dtype=np.float64) * self.width + self.lo

    def __call__(self, outs: Sequence[np.ndarray]) -> np.ndarray:
        a, b = np.radians(self.angle_deg(outs[0])), np.radians(self.angle_deg(outs[1]))
        pitch, yaw = (a, b) if self.first == "pitch" else (b, a)
        return pitchyaw_to_vector(pitch, yaw, "A")


def bins_rule(order: str, count: int, lo: float, hi: float) -> str:
    """The decoder of two bin heads (``order`` yaw_pitch: the first head is yaw).
    L2CS-Net's own setting (yaw first, 90 bins over [-180, 180)) is ``l2cs_bins``; any
    other is registered here on first use under a name that spells it out."""
    if (order, count, float(lo), float(hi)) == ("yaw_pitch", 90, -180.0, 180.0):
        return "l2cs_bins"
    name = f"bins_{order}_{count}_{lo:g}_{hi:g}"
    if name not in DECODERS:
        DECODERS.add(name, _Bins(order.split("_")[0], count, float(lo), float(hi)))
    return name
