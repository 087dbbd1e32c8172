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

Every one of these choices is read from the method's pipeline-profile record
(gaze4hri_bench.profiles: ``reference`` by default, ``study`` = the study's code).
One frame for a live caller (a ROS node): ``OnnxMethod(name, profile=...)`` then
:meth:`OnnxMethod.predict_frame` (frame + head pose + profile -> camera-frame gaze).
"""
from __future__ import annotations

import numpy as np
from gaze4hri_core.gaze import normalize, ray_frame_to_camera

from ..decoders import decode
from ..profiles import DEFAULT_CROP_RULE, MethodProfile, Profile, get_profile
from ..specs import FRAME_HW, MethodSpec, get_spec
from .base import FrameContext, GazeMethod, Prepared
from .clips import policy_for

__all__ = ["OnnxMethod", "DEFAULT_CROP_RULE", "ray_basis", "box_ray"]



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

    def __init__(self, name: str, spec: MethodSpec | None = None, profile: str | Profile | None = None,
                 record: MethodProfile | None = None):
        """``record``: the method's profile record as a run planned it (pipeline.jobs.plan_job);
        None: looked up in ``profile`` here (a caller with no plan, e.g. a benchmark script)."""
        super().__init__(name, spec or get_spec(name))
        prof = profile if isinstance(profile, Profile) else get_profile(profile)
        self.profile_name = prof.name
        self.record: MethodProfile = record if record is not None else prof.record(name, self.spec)
        self.clip_policy = policy_for(self.spec, self.record)
        self.input_names = list(self.spec.onnx_inputs)
        self.takes_hw = FRAME_HW in self.spec.onnx_inputs
        # named image axes (MCGaze's H, W): a clip is cut to its official padded size
        self.dynamic_image = any(isinstance(d, str) for d in next(iter(self.spec.onnx_inputs.values()))[1:])
        self.output_names = list(self.spec.onnx_outputs)
        from ..faces.crops import KEEP_RATIO

        if self.record.crop_rule in KEEP_RATIO and not self.takes_hw:
            from gaze4hri_core.errors import Gaze4HRIError

            raise Gaze4HRIError(f"{name}: crop rule {self.record.crop_rule} keeps the aspect ratio, "
                                "but the network has no "
                                f"{FRAME_HW} input to tell it the image size", f"profile {self.profile_name}",
                                "use a square crop rule for this method")

    # -- pre-processing -------------------------------------------------------------
    def needs_face(self, input_type: str) -> bool:
        return input_type == "crop"

    @property
    def crop_rule(self) -> str:
        return self.record.crop_rule

    def to_tensor(self, patch: np.ndarray) -> np.ndarray:
        """RGB uint8 (S, S, 3) -> float32 (3, S, S) per the profile record's colour order
        and mean/std (faces.crops.to_tensor)."""
        from ..faces.crops import to_tensor

        return np.asarray(to_tensor(patch, self.record), dtype=np.float32)

    def _prepared(self, patch: np.ndarray, to_cam, frame_rot) -> Prepared:
        """The network input of a patch: a keep-ratio patch (faces.crops.KEEP_RATIO) is
        padded after normalisation; networks with a FRAME_HW input get its size."""
        from ..faces.crops import pad_tensor

        h, w = patch.shape[:2]
        x = pad_tensor(self.to_tensor(patch), self.spec.size)
        return Prepared(x, to_cam, frame_rot, np.array([h, w], np.float32) if self.takes_hw else None)

    def prepare(self, ctx: FrameContext, input_type: str) -> Prepared | None:
        """The network input of one frame, or None when it cannot be built (no face
        box for a crop; no head pose for rectification)."""
        size = self.spec.size
        if input_type == "crop":
            if ctx.box is None or ctx.image is None:
                return None
            from ..faces.crops import crop

            st = self.record
            box = np.asarray(ctx.box, float)  # the profile's box (study: margin applied by the face pass)
            patch = crop(ctx.image, box, st.crop_rule, size)
            basis = ray_basis(box_ray(box, ctx.K))
            to_cam = basis if st.ray_correction else np.eye(3)
            return self._prepared(patch, to_cam, basis.T)
        if input_type == "rectified":
            st = self.record
            c = np.asarray(ctx.face_center_cam if st.rect_centre == "face_centre" else
                           (ctx.eye_center_cam if ctx.eye_center_cam is not None else np.full(3, np.nan)), float)
            R = np.asarray(ctx.R_head_cam, float)
            if ctx.image is None or not (np.isfinite(c).all() and np.isfinite(R).all()):
                return None
            from ..faces.normalization import denormalization_map, study_head_rotation
            from ..faces.normalization import normalize as rectify

            if st.head_axes == "study_chain":
                R = study_head_rotation(R)
            norm = self.spec.normalization or {"focal_px": 960.0, "distance_mm": 600.0}
            d = float(norm["distance_mm"])
            patch, R_norm = rectify(ctx.image, ctx.K, c, R, float(norm["focal_px"]), d, size)
            return self._prepared(patch, denormalization_map(R_norm, c, d, st.denorm), np.asarray(R_norm, float))
        raise ValueError(f"{self.name}: unknown input type {input_type!r}")

    def black(self, like: Prepared) -> Prepared:
        """A black frame (clip padding) cropped with the same box (GaT's rule)."""
        z = np.zeros((self.spec.size, self.spec.size, 3), np.uint8)
        return self._prepared(z, like.to_cam, None)

    def fit_clip(self, clip: np.ndarray, hw: np.ndarray | None) -> np.ndarray:
        """A clip (T, 3, S, S) of frames padded to S, cut to the padded size the official
        pipeline gives it (faces.crops.clip_pad_size) when the network's image axes are
        dynamic; unchanged otherwise."""
        if not self.dynamic_image or hw is None:
            return clip
        from ..faces.crops import clip_pad_size

        ph, pw = clip_pad_size(hw, self.spec.size)
        return np.ascontiguousarray(clip[..., :ph, :pw])

    def absent(self, like: Prepared) -> Prepared:
        """A frame the network ignores (FRAME_HW (0, 0)): what a shorter clip leaves out."""
        return Prepared(np.zeros_like(like.tensor), like.to_cam, None, np.zeros(2, np.float32))

    # -- decoding -------------------------------------------------------------------
    def decode(self, outputs: list[np.ndarray]) -> np.ndarray:
        """Raw outputs (spec order) -> unit vectors in the network's Frame A axes,
        (B, 3) for images, (B, T, 3) for clips."""
        return decode(self.record.output, outputs)

    @staticmethod
    def to_camera(g: np.ndarray, to_cam: np.ndarray) -> np.ndarray:
        """Network-frame unit vectors (N, 3) and per-sample 3x3 maps -> camera frame."""
        return normalize(np.einsum("nij,nj->ni", np.asarray(to_cam, float), np.asarray(g, float)))

    def predict_frame(self, ctx: FrameContext, input_type: str, run) -> np.ndarray | None:
        """One image-method frame end to end: prepare, ``run(x) -> outputs`` (e.g.
        pipeline.runtime.Runner.run), decode, camera frame. Returns a unit vector in
        the OpenCV camera frame, or None when the input cannot be built. Clip methods
        need a window of frames: use the run loop (pipeline.frames.assemble)."""
        if self.clip_policy is not None:
            raise ValueError(f"{self.name} takes clips of {self.spec.clip_len} frames; "
                             "predict_frame is for image methods")
        p = self.prepare(ctx, input_type)
        if p is None:
            return None
        g = self.decode(run(p.tensor[None]))
        return self.to_camera(g, p.to_cam[None])[0]

    def describe(self) -> dict:
        s = self.spec
        return {"name": self.name, "kind": self.kind, "family": s.family, "train_set": s.train_set,
                "input_type": s.input_type, "output": self.record.output, "gaze_frame": s.gaze_frame,
                "clip": None if self.clip_policy is None else type(self.clip_policy).__name__,
                "profile": self.profile_name}
