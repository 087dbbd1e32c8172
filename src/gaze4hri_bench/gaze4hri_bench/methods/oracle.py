"""The oracle: a perfect network for any method under any pipeline profile.

A perfect network returns the true gaze in the camera its input was made in (the
normalized camera of a rectified patch, Zhang et al. 2018 Sec. 3; the camera->face ray
frame of a crop, Kellnhofer et al. 2019 Sec. 3.3), written in the network's OWN raw
output convention (its ``reference`` decoder: [pitch, yaw] or [yaw, pitch] radians,
L2CS's two 90-bin heads, Gaze360 Frame B vectors). The profile under test then decodes
and maps it back. ``reference`` must return the truth; ``study`` returns the value of
its documented differences (tests/bench/test_profiles.py, ``gaze4hri-bench
deviations``). Pure numpy; the image is only used for its shape.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gaze4hri_core.gaze import convert_frame, normalize, vector_to_pitchyaw

from ..decoders import L2CS_BIN_DEG, L2CS_BINS, L2CS_OFFSET_DEG
from .base import FrameContext

__all__ = ["FrameGeometry", "encode_raw", "oracle_vector", "oracle_context", "face_box_from_geometry"]


@dataclass(frozen=True)
class FrameGeometry:
    """One frame's truth: intrinsics K, image size (w, h), eye midpoint and ETH face
    centre (m, camera frame), head rotation (OpenCV head axes), unit gaze (camera),
    and the face box [x1, y1, x2, y2] the crop input uses."""

    K: np.ndarray
    size: tuple[int, int]
    eye_center: np.ndarray
    face_center: np.ndarray
    R_head: np.ndarray
    gaze: np.ndarray
    box: np.ndarray


def face_box_from_geometry(K, face_center, size_m: float = 0.16, shape=None) -> np.ndarray:
    """A square face box of ``size_m`` metres about the projected face centre (the
    oracle's stand-in for a detector box), clipped to the image when ``shape`` is given."""
    c = np.asarray(face_center, float)
    u, v, w = np.asarray(K, float) @ c
    half = 0.5 * size_m * float(K[0, 0]) / c[2]
    b = np.array([u / w - half, v / w - half, u / w + half, v / w + half])
    if shape is not None:
        H, W = shape[:2]
        b = np.clip(b, 0, [W, H, W, H])
    return b


def _l2cs_logits(angle_deg: np.ndarray, sigma_deg: float = 4.0) -> np.ndarray:
    """90-bin logits whose softmax expectation is ``angle_deg`` (a Gaussian over the bin
    centres; at sigma = one bin the expectation is exact to ~1e-8 deg away from the ends)."""
    centres = np.arange(L2CS_BINS) * L2CS_BIN_DEG - L2CS_OFFSET_DEG
    return -0.5 * ((centres[None, :] - np.asarray(angle_deg, float).reshape(-1, 1)) / sigma_deg) ** 2


def encode_raw(spec, g_net: np.ndarray) -> list[np.ndarray]:
    """Network-frame Frame A unit vectors (N, 3) -> the raw ONNX outputs of ``spec``'s
    true convention (spec.output; clips: the vector at every clip position)."""
    g = normalize(np.asarray(g_net, float).reshape(-1, 3))
    py = vector_to_pitchyaw(g)  # (N, 2) [pitch, yaw] radians
    rule = spec.output
    if rule == "pitchyaw_rad":
        return [py.astype(np.float32)]
    if rule == "yawpitch_rad":
        return [py[:, ::-1].astype(np.float32)]
    if rule == "l2cs_bins":  # first head yaw, second pitch (methods.md, L2CS-Net)
        deg = np.degrees(py)
        return [_l2cs_logits(deg[:, 1]), _l2cs_logits(deg[:, 0])]
    if rule == "vector_b":
        v = convert_frame(g, "A", "B")
        return [np.repeat(v[:, None], max(spec.clip_len, 1), axis=1)] if spec.clip_len > 1 else [v]
    raise ValueError(f"oracle: no encoder for output rule {rule!r}")


def oracle_context(geo: FrameGeometry, index: int = 0) -> FrameContext:
    """The FrameContext a method sees for this geometry (a black image of the right size)."""
    w, h = geo.size
    return FrameContext(index=index, t_ns=0, image=np.zeros((h, w, 3), np.uint8), box=np.asarray(geo.box, float),
                        K=np.asarray(geo.K, float), face_center_cam=np.asarray(geo.face_center, float),
                        R_head_cam=np.asarray(geo.R_head, float), head_forward=np.full(3, np.nan),
                        eye_center_cam=np.asarray(geo.eye_center, float))


def oracle_vector(method, geo: FrameGeometry, input_type: str) -> np.ndarray | None:
    """What ``method`` (an OnnxMethod under its profile) returns in the camera frame
    for a perfect network on this frame; None when the input cannot be built."""
    p = method.prepare(oracle_context(geo), input_type)
    if p is None:
        return None
    g_net = np.asarray(p.frame_rot, float) @ normalize(np.asarray(geo.gaze, float))
    raw = encode_raw(method.spec, g_net[None])
    g = method.decode(raw)
    if g.ndim == 3:
        g = g[:, -1]
    return method.to_camera(g, np.asarray(p.to_cam, float)[None])[0]
