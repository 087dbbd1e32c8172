"""What a gaze method is to the pipeline: the per-frame context it may read, and the
two kinds of methods (ONNX networks fed prepared inputs; baselines that read the
frame context directly). Every prediction leaves a method as a unit vector in the
OpenCV camera frame (x right, y down, z forward), Frame A convention (looking into the
camera is (0, 0, -1); gaze4hri_core.gaze)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..specs import MethodSpec

__all__ = ["FrameContext", "Prepared", "GazeMethod", "INPUT_TYPES"]

#: input types of the results schema; "none" for methods that read no pixels
INPUT_TYPES = ("crop", "rectified", "none")


@dataclass
class FrameContext:
    """One frame as the pipeline hands it to a method.

    image: RGB uint8 (H, W, 3); box: tracked face box [x1, y1, x2, y2] pixels or None;
    K: 3x3 intrinsics at the image's resolution; face_center_cam (m) and R_head_cam
    (head rotation in the camera frame) from motion capture (NaN when unknown);
    head_forward: unit head-forward vector in the camera frame (NaN when unknown);
    eye_center_cam (m): the eye midpoint (the study's rectification centre; NaN when
    unknown).
    """

    index: int
    t_ns: int
    image: np.ndarray | None
    box: np.ndarray | None
    K: np.ndarray
    face_center_cam: np.ndarray
    R_head_cam: np.ndarray
    head_forward: np.ndarray
    eye_center_cam: np.ndarray | None = None


@dataclass
class Prepared:
    """A network input for one frame: ``tensor`` (C, H, W) float32 exactly as the ONNX
    model eats it, and ``to_cam`` (3x3) mapping the network's Frame A output to the
    camera frame (R_norm^T for rectified inputs, the ray basis for crops); ``frame_rot``
    (3x3, rows: the axes of the camera the network's input was made in, in the camera
    frame: R_norm for rectified inputs, the ray frame for crops), what a perfect
    network's output is relative to (methods.oracle); ``hw`` (2,) the image's (height,
    width) inside ``tensor`` for networks that take it (specs.FRAME_HW; (0, 0): an
    absent clip frame), else None."""

    tensor: np.ndarray
    to_cam: np.ndarray
    frame_rot: np.ndarray | None = None
    hw: np.ndarray | None = None


class GazeMethod:
    """Base of every registered method.

    kind: ``onnx`` (a network; needs weights) or ``baseline`` (weight-free).
    input_types: the inputs it accepts; default_input: the study's best one (Table II).
    """

    kind = "baseline"
    input_types: tuple[str, ...] = ("none",)

    def __init__(self, name: str, spec: MethodSpec | None = None, profile=None, record=None):
        """Every method is built as ``(name, spec, profile, record)`` (pipeline.jobs.plan_job);
        a method that prepares no input (a baseline) has no profile record and ignores both."""
        self.name = name
        self.spec = spec

    @property
    def default_input(self) -> str:
        return self.spec.input_type if self.spec is not None else self.input_types[0]

    def resolve_input(self, requested: str) -> str:
        """``best`` -> the study's input for this method; baselines always read ``none``."""
        if self.input_types == ("none",):
            return "none"
        if requested == "best":
            return self.default_input
        if requested not in self.input_types:
            from gaze4hri_core.errors import Gaze4HRIError

            raise Gaze4HRIError(f"method {self.name} does not take input {requested!r}", "--input",
                                f"use one of: {', '.join(self.input_types)}, best")
        return requested

    def needs_face(self, input_type: str) -> bool:
        """Whether the pipeline must detect and track the face for this input."""
        return False

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind}
