"""Weight-free reference methods: what any learned method must beat.

``head_pose``: the head-forward direction from motion capture used as the gaze
estimate (the "head-gaze conflict" of Sezer et al., Sec. III-D, as an error).
``straight``: always looking into the camera, (0, 0, -1) in Frame A.
"""
from __future__ import annotations

import numpy as np
from gaze4hri_core.gaze import normalize

from .base import FrameContext, GazeMethod

__all__ = ["Baseline", "HeadPose", "Straight"]


class Baseline(GazeMethod):
    kind = "baseline"
    input_types = ("none",)

    def predict(self, ctx: FrameContext) -> np.ndarray:
        """Unit gaze vector in the camera frame (NaN when the method cannot tell)."""
        raise NotImplementedError


class HeadPose(Baseline):
    """Gaze := head-forward vector (camera frame) from motion capture."""

    def predict(self, ctx: FrameContext) -> np.ndarray:
        return normalize(np.asarray(ctx.head_forward, dtype=float))

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "rule": "head-forward vector from motion capture (camera frame)"}


class Straight(Baseline):
    """Gaze := (0, 0, -1): the subject always looks into the camera."""

    def predict(self, ctx: FrameContext) -> np.ndarray:
        return np.array([0.0, 0.0, -1.0])

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "rule": "constant (0, 0, -1): looking into the camera"}
