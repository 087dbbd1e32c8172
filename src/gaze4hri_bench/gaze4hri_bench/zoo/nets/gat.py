"""GaT, the Gaze Transformer of Vuillecard, Farkhondeh, Odobez, "Enhancing 3D Gaze
Estimation in the Wild using Weak Supervision with Gaze Following Labels", CVPR 2025
(idiap/gaze3d, ``src/models/gat_model.py``), written from the paper and the official
model description; the encoder is Omnivore Swin-T (see :mod:`._swin3d`).

Forward (official ``GaT.forward`` + the demo's normalisation): clip (B, T, 3, 224, 224) ->
(B, 3, T, H, W) -> Swin-T 3D -> final LayerNorm -> (B, 768, T/2, 7, 7) ->
``F.interpolate(size=T, mode='trilinear', align_corners=True)``: the official code passes
a scalar size, which resizes *all three* axes to T (time 4 -> 8 and space 7x7 -> 8x8),
reproduced here as is -> mean over the 8x8 spatial grid -> Linear(768 -> 3) per frame ->
L2 normalisation (the official demo normalises the head output with eps 1e-8).
Output ``gaze`` (B, T, 3) unit vectors in Frame B; the centre-frame prediction of the
8-frame window f-3..f+4 is index 3.
"""
from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from gaze4hri_core.errors import Gaze4HRIError
from torch import nn
from torch.nn import functional as F

from .._checkpoint import describe_mismatch
from ._swin3d import SwinTransformer3D, relative_position_index

__all__ = [
    "FAMILY", "MANIFEST", "GaT", "build", "convert_checkpoint", "split_checkpoint",
    "write_official_checkpoint", "official_shapes", "DROPPED_PREFIXES", "STRIP_PREFIXES",
]

FAMILY = "gat"
MANIFEST = "docs/models/gat_gaze360.json"
CLIP_LEN, SIZE = 8, 224

#: Omnivore's RGB-D patch embedding: part of the trunk (``depth_mode=
#: 'summed_rgb_d_tokens'``) and of the checkpoint, never used for RGB input.
DROPPED_PREFIXES = ("encoder.encoder.depth_patch_embed.",)
#: Lightning's ``GazeModule`` holds the network as ``self.model``; DataParallel adds ``module.``.
STRIP_PREFIXES = ("model.", "module.")
SOURCE_FILES = (
    "idiap/gaze3d @ f2c13de: src/models/gat_model.py, configs/model/gat.yaml, demo.py (load_gaze_model, "
    "predict_gaze), src/gaze_module.py; facebookresearch/omnivore @ 1d55abd: omnivore/models/omnivore_model.py "
    "(omnivore_swinT), omnivision/models/swin_transformer.py"
)
CONTAINER = (
    "Lightning-style .ckpt (Git LFS, 126,238,204 bytes): {'state_dict': OrderedDict, ...}; demo.py loads "
    "state_dict strictly into GaT, i.e. keys encoder.encoder.* and decoder.gaze.layers.0.*; a checkpoint saved "
    "by GazeModule during training prefixes them with 'model.'"
)
KEY_MAPPING = [
    "take obj['state_dict'] (Lightning checkpoint); ignore the other entries",
    "strip a leading 'model.' (GazeModule.model) and 'module.' (DataParallel) if present",
    "drop encoder.encoder.depth_patch_embed.* (Omnivore RGB-D patch embedding, unused for RGB)",
    "no renaming: every other key must match 'tensors' (names and shapes); the relative_position_index "
    "buffers must equal the 8x7x7-window index; then load_state_dict(strict=True)",
]


class _Encoder(nn.Module):
    """The official ``Swin3D`` wrapper: the trunk lives under ``.encoder``."""

    def __init__(self):
        super().__init__()
        self.encoder = SwinTransformer3D()
        self.output_features = self.encoder.num_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)


class _MLPHead(nn.Module):
    """The official ``MLPHead`` with ``num_layers=1``: a single Linear(768 -> 3)."""

    def __init__(self, cin: int, cout: int = 3):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(cin, cout)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers[0](x)


class GaT(nn.Module):
    """clip (B, T, 3, H, W), T >= 2 -> gaze (B, T, 3) unit vectors, Frame B."""

    def __init__(self):
        super().__init__()
        self.encoder = _Encoder()
        self.decoder = nn.ModuleDict({"gaze": _MLPHead(self.encoder.output_features)})

    def forward(self, clip: torch.Tensor) -> torch.Tensor:
        if clip.dim() != 5 or clip.shape[2] != 3 or clip.shape[1] < 2:
            raise Gaze4HRIError(
                f"GaT expects a clip tensor (B, 8, 3, 224, 224), got {tuple(clip.shape)}",
                "gat forward", "stack 8 normalised RGB head crops per sample (frames f-3..f+4)",
            )
        t = int(clip.shape[1])  # a fixed clip length: exported as a constant, not a symbolic dim
        x = self.encoder(clip.permute(0, 2, 1, 3, 4))  # (B, 768, T/2, 7, 7)
        # official: F.interpolate(x, size=t, ...) with an int size -> (t, t, t)
        x = F.interpolate(x, size=(t, t, t), mode="trilinear", align_corners=True)
        x = x.mean(dim=(-2, -1)).transpose(1, 2)  # (B, T, 768)
        g = self.decoder["gaze"](x)
        g = g / torch.linalg.vector_norm(g, dim=-1, keepdim=True).clamp(min=1e-8)
        return g.reshape(clip.shape[0], t, 3)  # explicit dims: the ONNX output keeps its (B, T, 3) shape


def build() -> GaT:
    """The GaT inference network in eval mode (random weights until a checkpoint loads)."""
    return GaT().eval()


_REFERENCE: list[tuple[str, tuple[int, ...]]] | None = None


def _reference() -> list[tuple[str, tuple[int, ...]]]:
    global _REFERENCE
    if _REFERENCE is None:
        with torch.device("meta"):
            m = GaT()
        _REFERENCE = [(k, tuple(v.shape)) for k, v in m.state_dict().items()]
    return _REFERENCE


def official_shapes() -> list[tuple[str, tuple[int, ...]]]:
    """Ordered (name, shape) of the released GaT state dict (``demo.py`` layout, no prefix),
    the unused RGB-D patch embedding included right after ``patch_embed`` as registered."""
    out = []
    for name, shape in _reference():
        if name == "encoder.encoder.layers.0.blocks.0.norm1.weight":
            p = DROPPED_PREFIXES[0]
            out += [(p + "proj.weight", (96, 1, 2, 4, 4)), (p + "proj.bias", (96,)),
                    (p + "norm.weight", (96,)), (p + "norm.bias", (96,))]
        out.append((name, shape))
    return out


def _unwrap(obj: Any) -> Mapping[str, Any]:
    if isinstance(obj, nn.Module):
        return obj.state_dict()
    if isinstance(obj, Mapping) and isinstance(obj.get("state_dict"), Mapping):
        return obj["state_dict"]
    if isinstance(obj, Mapping) and obj and all(isinstance(v, torch.Tensor) for v in obj.values()):
        return obj
    top = ", ".join(map(str, list(obj)[:6])) if isinstance(obj, Mapping) else type(obj).__name__
    raise Gaze4HRIError(
        f"no GaT state dict in this checkpoint (top level: {top})", "gat import",
        "pass checkpoints/gat_gaze360.ckpt from idiap/gaze3d (Lightning file with 'state_dict')",
    )


def split_checkpoint(obj: Any) -> tuple[OrderedDict[str, torch.Tensor], list[str]]:
    """Official container -> (our exact state dict, names of the dropped official tensors).

    Mapping: take ``obj['state_dict']``; strip a leading ``model.`` (Lightning
    ``GazeModule.model``) and ``module.``; drop :data:`DROPPED_PREFIXES`; all other names
    and shapes must match. The ``relative_position_index`` buffers must equal the ones we
    compute for the 8x7x7 window (a different window layout is refused).
    """
    sd = _unwrap(obj)
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for k, v in sd.items():
        k = str(k)
        for p in STRIP_PREFIXES:
            if k.startswith(p):
                k = k[len(p):]
        if k.startswith(DROPPED_PREFIXES):
            dropped.append(k)
        else:
            kept[k] = v
    ref = dict(_reference())
    missing = [k for k in ref if k not in kept]
    unexpected = [k for k in kept if k not in ref]
    wrong = [f"{k} {list(getattr(kept[k], 'shape', []))} != {list(ref[k])}" for k in ref
             if k in kept and (not isinstance(kept[k], torch.Tensor) or tuple(kept[k].shape) != ref[k])]
    if missing or unexpected or wrong:
        raise Gaze4HRIError(
            f"checkpoint does not match the GaT architecture: {describe_mismatch(missing, unexpected, wrong)}",
            "gat import", "use gat_gaze360.ckpt or gat_stwsge_gaze360_gf.ckpt from idiap/gaze3d",
        )
    expected_index = relative_position_index((8, 7, 7))
    bad = [k for k in ref if k.endswith("relative_position_index") and not torch.equal(kept[k].long(), expected_index)]
    if bad:
        raise Gaze4HRIError(
            f"checkpoint relative_position_index differs from the 8x7x7 window layout ({bad[0]}, {len(bad)} in all)",
            "gat import", "this is not an Omnivore Swin-T (window 8x7x7) GaT checkpoint",
        )
    return OrderedDict((k, kept[k]) for k, _ in _reference()), dropped


def convert_checkpoint(obj: Any) -> dict[str, torch.Tensor]:
    """Official GaT checkpoint (``{'state_dict': ...}``, optional ``model.`` prefix) -> our state dict."""
    return split_checkpoint(obj)[0]


def write_official_checkpoint(model: nn.Module, path: str | Path, prefix: str = "", seed: int = 0) -> None:
    """Test helper: ``model``'s weights in a Lightning-style container with the official key
    names (``prefix='model.'`` gives the raw training layout), the unused depth patch
    embedding filled with random values."""
    ours = model.state_dict()
    g = torch.Generator().manual_seed(seed)
    sd: OrderedDict[str, torch.Tensor] = OrderedDict()
    for name, shape in official_shapes():
        sd[prefix + name] = ours[name].detach().clone() if name in ours else torch.randn(shape, generator=g) * 0.02
    torch.save({"epoch": 0, "global_step": 0, "pytorch-lightning_version": "2.2.1", "state_dict": sd}, str(path))
