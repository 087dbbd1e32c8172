"""Output decoders, one per ``MethodSpec.output`` rule: raw ONNX outputs -> unit gaze
vectors in Frame A axes of the network's own (normalized or ray) camera.

Frame conventions: ``gaze4hri_core.gaze`` (Frame A: GazeHub / ETH-XGaze, Zhang et al.
ECCV 2020 Sec. 3; Frame B: Gaze360, Kellnhofer et al. ICCV 2019 Sec. 3.3). Pure numpy.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from gaze4hri_core.gaze import convert_frame, normalize, pitchyaw_to_vector
from gaze4hri_core.registry import Registry

__all__ = ["DECODERS", "decode", "l2cs_angles_deg", "softmax", "L2CS_BINS", "L2CS_BIN_DEG", "L2CS_OFFSET_DEG"]

L2CS_BINS = 90
L2CS_BIN_DEG = 4.0
L2CS_OFFSET_DEG = 180.0


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Numerically stable softmax."""
    x = np.asarray(x, dtype=np.float64)
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def l2cs_angles_deg(logits: np.ndarray) -> np.ndarray:
    """Expectation over L2CS-Net's 90 bins of 4 deg (Abdelrahman et al. 2022, Sec. 3.2):
    angle = sum(softmax(logits) * idx) * 4 - 180 degrees, idx = 0..89."""
    logits = np.asarray(logits)
    if logits.shape[-1] != L2CS_BINS:
        raise ValueError(f"L2CS head has {logits.shape[-1]} bins, expected {L2CS_BINS}")
    idx = np.arange(L2CS_BINS, dtype=np.float64)
    return softmax(logits, -1) @ idx * L2CS_BIN_DEG - L2CS_OFFSET_DEG


def _pitchyaw(outs: Sequence[np.ndarray]) -> np.ndarray:
    """[pitch, yaw] radians, Frame A (ETH-XGaze label order; PureGaze README)."""
    g = np.asarray(outs[0], dtype=np.float64)
    return pitchyaw_to_vector(g[..., 0], g[..., 1], "A")


def _yawpitch(outs: Sequence[np.ndarray]) -> np.ndarray:
    """[yaw, pitch] radians, Frame A (GazeTR test code reads g[0] as yaw)."""
    g = np.asarray(outs[0], dtype=np.float64)
    return pitchyaw_to_vector(g[..., 1], g[..., 0], "A")


def _l2cs(outs: Sequence[np.ndarray]) -> np.ndarray:
    """Two 90-bin heads, the FIRST horizontal (yaw), the second vertical (pitch);
    GazeHub gazeto3d([yaw, pitch]) in Frame A (methods.md, L2CS-Net)."""
    yaw = np.radians(l2cs_angles_deg(outs[0]))
    pitch = np.radians(l2cs_angles_deg(outs[1]))
    return pitchyaw_to_vector(pitch, yaw, "A")


def _l2cs_first_as_pitch(outs: Sequence[np.ndarray]) -> np.ndarray:
    """The study's L2CS decoding (profile ``study``): the FIRST head is taken as pitch
    and the second as yaw (GazeForHRI/GazeModels@l2cs:gaze_model_l2cs.py:40-53), and
    its basis change to rgb_camera_link [z, -y, -x] (ibid. :67-69) swaps x and y back,
    so in the camera frame g = (v_y, v_x, v_z) of v = vector(pitch=h1, yaw=h2).
    Agrees with ``l2cs_bins`` to first order; apart at large combined angles."""
    h1 = np.radians(l2cs_angles_deg(outs[0]))
    h2 = np.radians(l2cs_angles_deg(outs[1]))
    v = pitchyaw_to_vector(h1, h2, "A")
    return np.stack([v[..., 1], v[..., 0], v[..., 2]], axis=-1)


def _vector_b(outs: Sequence[np.ndarray]) -> np.ndarray:
    """3D vectors in Gaze360's eye Frame B (x left, y up, z away) -> Frame A axes,
    re-normalized (Kellnhofer et al. 2019 Sec. 3.3). Clip outputs keep their T axis."""
    return normalize(convert_frame(np.asarray(outs[0], dtype=np.float64), "B", "A"))


#: output rule (``MethodSpec.output``, ``MethodProfile.output``) -> decoder(list of outputs
#: in spec.onnx_outputs order) -> (..., 3) Frame A
DECODERS: Registry[Callable[[Sequence[np.ndarray]], np.ndarray]] = Registry("output rule", where="MethodSpec.output")
DECODERS.add("pitchyaw_rad", _pitchyaw)
DECODERS.add("yawpitch_rad", _yawpitch)
DECODERS.add("l2cs_bins", _l2cs)
DECODERS.add("l2cs_bins_first_as_pitch", _l2cs_first_as_pitch)
DECODERS.add("vector_b", _vector_b)


def decode(rule: str, outs: Sequence[np.ndarray]) -> np.ndarray:
    """Decode ``outs`` with the named rule; an unknown rule is the registry's one-line error."""
    return normalize(DECODERS.get(rule)(outs))
