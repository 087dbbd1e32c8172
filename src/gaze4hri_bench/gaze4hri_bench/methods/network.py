"""The ONNX method adapter: one :class:`MethodSpec` -> prepared inputs, decoded outputs,
unit gaze vectors in the camera frame.

Pre-processing follows the spec (crop rule or Zhang et al. 2018 data normalization,
colour order, scale, mean/std). Decoding follows ``spec.output`` (decoders.py). The
network's Frame A output is then mapped to the camera frame:

* rectified input: g_cam = R_norm^T g_n (Zhang, Sugano, Bulling, ETRA 2018, Sec. 3;
  methods.md "Data normalization", step 6);
* crop input: a crop carries no information about where the face was in the image, so
  the output is relative to the camera->face ray (the ray frame of Gaze360,
  Kellnhofer et al. ICCV 2019, Sec. 3.3); it is rotated into the camera frame with the
  ray through the face box centre, K^-1 [u, v, 1] (gaze4hri_core.gaze.ray_frame_to_camera).
"""
from __future__ import annotations

import numpy as np
from gaze4hri_core.gaze import normalize, ray_frame_to_camera

from ..specs import MethodSpec, get_spec
from .base import FrameContext, GazeMethod, Prepared
from .clips import policy_for
from .decoders import decode

__all__ = ["OnnxMethod", "DEFAULT_CROP_RULE", "ray_basis", "box_ray"]

#: crop rule for methods whose spec names none (rectified methods run on crops, Table S9)
DEFAULT_CROP_RULE = "l2cs_face_box"


def box_ray(box, K) -> np.ndarray:
    """Unit camera-frame ray through the centre of a pixel box [x1, y1, x2, y2]."""
    u = 0.5 * (box[0] + box[2])
    v = 0.5 * (box[1] + box[3])
    return normalize(np.linalg.solve(np.asarray(K, float), np.array([u, v, 1.0])))


def ray_basis(ray) -> np.ndarray:
    """3x3 matrix M with M @ g_ray = g_cam (columns: ray-frame axes in the camera frame)."""
    return ray_frame_to_camera(np.eye(3), ray).T


class OnnxMethod(GazeMethod):
    """Adapter of one ONNX network that follows ``spec`` (see specs.py)."""

    kind = "onnx"
    input_types = ("crop", "rectified")

    def __init__(self, name: str, spec: MethodSpec | None = None):
        super().__init__(name, spec or get_spec(name))
        self.clip_policy = policy_for(self.spec)
        (self.input_name, self.input_shape), = self.spec.onnx_inputs.items()
        self.output_names = list(self.spec.onnx_outputs)

    # -- pre-processing -------------------------------------------------------------
    def needs_face(self, input_type: str) -> bool:
        return input_type == "crop"

    @property
    def crop_rule(self) -> str:
        return self.spec.crop_rule or DEFAULT_CROP_RULE

    def to_tensor(self, patch: np.ndarray) -> np.ndarray:
        """RGB uint8 (S, S, 3) -> float32 (3, S, S) as the spec says (faces.crops.to_tensor)."""
        from ..faces.crops import to_tensor

        return np.asarray(to_tensor(patch, self.spec), dtype=np.float32)

    def prepare(self, ctx: FrameContext, input_type: str) -> Prepared | None:
        """The network input of one frame, or None when it cannot be built (no face
        box for a crop; no head pose for rectification)."""
        size = self.spec.size
        if input_type == "crop":
            if ctx.box is None or ctx.image is None:
                return None
            from ..faces.crops import crop

            patch = crop(ctx.image, ctx.box, self.crop_rule, size)
            return Prepared(self.to_tensor(patch), ray_basis(box_ray(ctx.box, ctx.K)))
        if input_type == "rectified":
            c = np.asarray(ctx.face_center_cam, float)
            R = np.asarray(ctx.R_head_cam, float)
            if ctx.image is None or not (np.isfinite(c).all() and np.isfinite(R).all()):
                return None
            from ..faces.normalization import normalize as rectify

            norm = self.spec.normalization or {"focal_px": 960.0, "distance_mm": 600.0}
            patch, R_norm = rectify(ctx.image, ctx.K, c, R, float(norm["focal_px"]), float(norm["distance_mm"]), size)
            return Prepared(self.to_tensor(patch), np.asarray(R_norm, float).T)
        raise ValueError(f"{self.name}: unknown input type {input_type!r}")

    def black(self, like: Prepared) -> Prepared:
        """A black frame (clip padding) cropped with the same box (GaT's rule)."""
        z = np.zeros((self.spec.size, self.spec.size, 3), np.uint8)
        return Prepared(self.to_tensor(z), like.to_cam)

    # -- decoding -------------------------------------------------------------------
    def decode(self, outputs: list[np.ndarray]) -> np.ndarray:
        """Raw outputs (spec order) -> unit vectors in the network's Frame A axes,
        (B, 3) for images, (B, T, 3) for clips."""
        return decode(self.spec.output, outputs)

    @staticmethod
    def to_camera(g: np.ndarray, to_cam: np.ndarray) -> np.ndarray:
        """Network-frame unit vectors (N, 3) and per-sample 3x3 maps -> camera frame."""
        return normalize(np.einsum("nij,nj->ni", np.asarray(to_cam, float), np.asarray(g, float)))

    def describe(self) -> dict:
        s = self.spec
        return {"name": self.name, "kind": self.kind, "family": s.family, "train_set": s.train_set,
                "input_type": s.input_type, "output": s.output, "gaze_frame": s.gaze_frame,
                "clip": None if self.clip_policy is None else type(self.clip_policy).__name__}
