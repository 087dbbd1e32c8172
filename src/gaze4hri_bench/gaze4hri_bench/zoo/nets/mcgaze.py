"""MCGaze inference network (Guan, Chen, Zeng, Cao, Xiao, "End-to-end Video Gaze Estimation
via Capturing Head-face-eye Spatial-temporal Interaction Context", IEEE SPL 2023), written
from the paper and the official mmdet 2.x configuration
``configs/multiclue_gaze/multiclue_gaze_r50_{gaze360,l2cs}.py`` (zgchen33/MCGaze).

Test-time path of the official ``MultiClueGaze.simple_test`` for one clip:
ResNet-50 + FPN on each frame -> 3 learned proposal boxes (face, eyes, head; normalised
cx, cy, w, h scaled to the image size) and 3 learned query features -> 4 stages of
multi-level RoIAlign 7x7 + :class:`QueryStage` (spatial and temporal attention, dynamic
conv, FFN, box refinement) -> the last stage's gaze head -> unit vectors in Frame B.

Inputs: ``clip`` (B, 7, 3, H, W), RGB head crops normalised with the mmdet mean/std of
``SPECS['mcgaze_gaze360']``, each frame's image at the top left and zeros (the normalised
padding of mmdet's ``Pad``) after it, H and W the clip's padded size (dynamic axes: the
official pipeline pads each image to a multiple of 32 and the clip to its largest
frame, mmcv ``collate``; at most 448); ``frame_hw`` (B, 7, 2), each frame's image height
and width in input pixels. The official test pipeline resizes a crop cut at the image
border with its aspect ratio kept and scales the learned proposal boxes by that image
size, not the padded one (``FixedEmbeddingRPNHead`` reads ``img_metas['img_shape']``;
MCGaze_demo/demo.ipynb); a frame of height 0 is absent: the temporal attention ignores
it, so a clip with k present frames gives those frames what the official k-frame clip
gives (official tests run a video shorter than 7 frames as one shorter clip,
tools/test_gaze360_gaze.py). Output ``gaze`` (B, 7, 3). Frames of one clip interact (the
temporal attention); clips of a batch do not.
"""
from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from gaze4hri_core.errors import Gaze4HRIError
from torch import nn

from .._checkpoint import describe_mismatch
from ._mcgaze_backbone import FPN, ResNet50
from ._mcgaze_head import GazeHead, QueryStage, delta2bbox
from ._roi_align import multilevel_roi_align

__all__ = [
    "FAMILY", "MANIFEST", "MCGaze", "build", "convert_checkpoint", "split_checkpoint",
    "write_official_checkpoint", "official_shapes", "DROPPED_PATTERN",
]

FAMILY = "mcgaze"
MANIFEST = "docs/models/mcgaze_gaze360.json"
CLIP_LEN, SIZE, NUM_STAGES, NUM_PROPOSALS, DIM = 7, 448, 4, 3, 256
STRIDES = (4, 8, 16, 32)
SOURCE_FILES = (
    "zgchen33/MCGaze @ b8ce708: configs/multiclue_gaze/multiclue_gaze_r50_gaze360.py, "
    "mmdet/models/detectors/multiclue_gaze.py, dense_heads/fixed_embedding_rpn_head.py, "
    "roi_heads/multiclue_gaze_roi_head.py, roi_heads/bbox_heads/gaze_stqi_head.py, "
    "roi_heads/bbox_heads/bbox_head.py, roi_heads/mask_heads/gaze_head.py, utils/transformer.py (DynamicConv); "
    "mmcv 1.4.8 cnn/bricks/transformer.py (MultiheadAttention, FFN)"
)
CONTAINER = (
    "mmcv save_checkpoint .pth: {'meta': {mmdet_version, CLASSES, config, ...}, 'state_dict': OrderedDict, "
    "'optimizer': ... (optional)}; keys backbone.*, neck.*, rpn_head.*, roi_head.*"
)
KEY_MAPPING = [
    "take obj['state_dict'] (mmdet checkpoint); ignore 'meta' and 'optimizer'",
    "strip a DataParallel 'module.' prefix if present; fill absent BatchNorm num_batches_tracked with 0",
    "drop the tensors listed under 'dropped' (regex DROPPED_PATTERN in mcgaze.py): per stage fc_cls, fc_reg, "
    "cls_fcs.*, {face,eyes,head}_fc_cls (detection scores only) and roi_head.gaze_head.0-2 (deep supervision)",
    "no renaming: every other key must match 'tensors' (names and shapes), then load_state_dict(strict=True)",
]

#: Official tensors not on the test-time gaze path: the detection-score branch of every
#: stage (``cls_fcs``, ``{face,eyes,head}_fc_cls``, and mmdet ``BBoxHead``'s unused
#: ``fc_cls``/``fc_reg`` over the flattened 7x7x256 RoI) and the gaze heads of stages
#: 0-2 (deep supervision; ``simple_test`` reads only the last stage).
DROPPED_PATTERN = re.compile(
    r"^roi_head\.bbox_head\.\d+\.(fc_cls|fc_reg|cls_fcs\.\d+|face_fc_cls|eyes_fc_cls|head_fc_cls)\."
    r"|^roi_head\.gaze_head\.[0-2]\."
)


class _ProposalEmbedding(nn.Module):
    """``FixedEmbeddingRPNHead``: 3 learned boxes (cx, cy, w, h in [0, 1]) and features."""

    def __init__(self, n: int = NUM_PROPOSALS, dim: int = DIM):
        super().__init__()
        self.init_proposal_bboxes = nn.Embedding(n, 4)
        self.init_proposal_features = nn.Embedding(n, dim)
        nn.init.constant_(self.init_proposal_bboxes.weight[:, :2], 0.5)
        nn.init.constant_(self.init_proposal_bboxes.weight[:, 2:], 1.0)

    def boxes(self, height: int, width: int) -> torch.Tensor:
        """(3, 4) x1y1x2y2 boxes in pixels of the (unpadded) input image."""
        return self.frame_boxes(torch.tensor([[float(height), float(width)]]))[0]

    def frame_boxes(self, hw: torch.Tensor) -> torch.Tensor:
        """(N, 3, 4) x1y1x2y2 boxes of N frames from their (unpadded) image sizes (N, 2)
        = (height, width): the learned normalised boxes times each frame's size."""
        b = self.init_proposal_bboxes.weight
        xyxy = torch.cat((b[:, :2] - 0.5 * b[:, 2:], b[:, :2] + 0.5 * b[:, 2:]), dim=-1)  # (3, 4)
        whwh = torch.stack((hw[:, 1], hw[:, 0], hw[:, 1], hw[:, 0]), dim=-1).to(xyxy.dtype)  # (N, 4)
        return xyxy.unsqueeze(0) * whwh.unsqueeze(1)


class _RoIHead(nn.Module):
    """Stages and the final gaze head, keyed as in ``MultiClueGazeROIHead``."""

    def __init__(self):
        super().__init__()
        self.bbox_head = nn.ModuleList([QueryStage() for _ in range(NUM_STAGES)])
        self.gaze_head = nn.ModuleDict({str(NUM_STAGES - 1): GazeHead()})


class MCGaze(nn.Module):
    """clip (B, T, 3, H, W), frame_hw (B, T, 2) -> gaze (B, T, 3) unit vectors, Frame B
    (official T = 7, H and W at most 448)."""

    def __init__(self):
        super().__init__()
        self.backbone = ResNet50()
        self.neck = FPN()
        self.rpn_head = _ProposalEmbedding()
        self.roi_head = _RoIHead()

    def forward(self, clip: torch.Tensor, frame_hw: torch.Tensor | None = None) -> torch.Tensor:
        """``frame_hw`` None: every frame present and filling the whole input."""
        if clip.dim() != 5 or clip.shape[2] != 3:
            raise Gaze4HRIError(
                f"MCGaze expects a clip tensor (B, 7, 3, 448, 448), got {tuple(clip.shape)}",
                "mcgaze forward", "stack 7 normalised RGB head crops per sample",
            )
        b, t, c, h, w = clip.shape
        if frame_hw is not None and tuple(frame_hw.shape) != (b, t, 2):
            raise Gaze4HRIError(f"MCGaze frame_hw must be (B, T, 2) = {(b, t, 2)}, got {tuple(frame_hw.shape)}",
                                "mcgaze forward", "pass each frame's image (height, width); 0 marks an absent frame")
        feats = self.neck(self.backbone(clip.reshape(b * t, c, h, w)))
        n = b * t
        if frame_hw is None:  # (eager only: h and w are Python ints here)
            hw, key_bias = clip.new_tensor([float(h), float(w)]).expand(n, 2), None
        else:
            present = (frame_hw[..., 0] > 0).reshape(n, 1)
            # absent frames get any finite boxes (their outputs are discarded)
            hw = torch.where(present, frame_hw.reshape(n, 2).to(clip.dtype), clip.new_full((1, 2), 32.0))
            # absent frames get a -1e9 attention logit: exp underflows to exactly 0 weight
            key_bias = (~present).to(clip.dtype).reshape(b, 1, t).expand(b, NUM_PROPOSALS, t)
            key_bias = key_bias.reshape(b * NUM_PROPOSALS, 1, 1, t) * -1e9
        boxes = self.rpn_head.frame_boxes(hw)
        query = self.rpn_head.init_proposal_features.weight.unsqueeze(0).expand(n, NUM_PROPOSALS, DIM)
        for stage in self.roi_head.bbox_head:
            rois = multilevel_roi_align(feats, boxes, STRIDES, out_size=7, sampling_ratio=2)
            query, deltas = stage(query, rois, t, key_bias)
            boxes = delta2bbox(boxes, deltas)
        gaze = self.roi_head.gaze_head[str(NUM_STAGES - 1)](query)
        return gaze.reshape(b, t, 3)


def build() -> MCGaze:
    """The MCGaze inference network in eval mode (random weights until a checkpoint loads)."""
    return MCGaze().eval()


_REFERENCE: list[tuple[str, tuple[int, ...]]] | None = None


def _reference() -> list[tuple[str, tuple[int, ...]]]:
    global _REFERENCE
    if _REFERENCE is None:
        with torch.device("meta"):
            m = MCGaze()
        _REFERENCE = [(k, tuple(v.shape)) for k, v in m.state_dict().items()]
    return _REFERENCE


def _dropped_stage(stage: int, where: str) -> list[tuple[str, tuple[int, ...]]]:
    p = f"roi_head.bbox_head.{stage}."
    if where == "start":  # mmdet BBoxHead registers fc_cls/fc_reg before the subclass layers
        flat = DIM * 7 * 7
        return [(p + "fc_cls.weight", (NUM_PROPOSALS + 1, flat)), (p + "fc_cls.bias", (NUM_PROPOSALS + 1,)),
                (p + "fc_reg.weight", (4, flat)), (p + "fc_reg.bias", (4,))]
    out = [(p + "cls_fcs.0.weight", (DIM, DIM)), (p + "cls_fcs.1.weight", (DIM,)), (p + "cls_fcs.1.bias", (DIM,))]
    for clue in ("face", "eyes", "head"):
        out += [(p + f"{clue}_fc_cls.weight", (1, DIM)), (p + f"{clue}_fc_cls.bias", (1,))]
    return out


def official_shapes() -> list[tuple[str, tuple[int, ...]]]:
    """Ordered (name, shape) of the full official state dict (module registration order of
    the mmdet model), dropped tensors included."""
    out: list[tuple[str, tuple[int, ...]]] = []
    last = str(NUM_STAGES - 1)
    for name, shape in _reference():
        m = re.match(r"roi_head\.bbox_head\.(\d+)\.(.*)", name)
        if m and m.group(2) == "attention.attn.in_proj_weight":
            out += _dropped_stage(int(m.group(1)), "start")
        if m and m.group(2) == "reg_fcs.0.weight":
            out += _dropped_stage(int(m.group(1)), "middle")
        if name.startswith(f"roi_head.gaze_head.{last}.") and name.endswith("gaze_face_fcs.0.weight"):
            head = [(k, s) for k, s in _reference() if k.startswith(f"roi_head.gaze_head.{last}.")]
            for st in range(NUM_STAGES - 1):
                out += [(k.replace(f"gaze_head.{last}.", f"gaze_head.{st}.", 1), s) for k, s in head]
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
        f"no MCGaze state dict in this checkpoint (top level: {top})", "mcgaze import",
        "pass multiclue_gaze_r50_l2cs.pth (mmdet file with 'state_dict')",
    )


def checkpoint_setting(obj: Any, path: str | Path | None = None) -> str | None:
    """The MCGaze test setting a checkpoint was trained for: ``l2cs`` (keep-ratio resize
    to 448 px, configs/multiclue_gaze/multiclue_gaze_r50_l2cs.py; the spec's pipeline and
    the study's), ``gaze360`` (CenterCrop 0.68 then 224 px, ..._gaze360.py), or None when
    neither the mmcv ``meta['config']`` text nor the file name tells. Both files hold the
    same architecture and keys (the l2cs config inherits the model), so the weights alone
    cannot tell them apart (zgchen33/MCGaze README, "Results and models")."""
    meta = obj.get("meta") if isinstance(obj, Mapping) else None
    cfg = str(meta.get("config") or "") if isinstance(meta, Mapping) else ""
    if "data/l2cs" in cfg or "multiclue_gaze_r50_l2cs" in cfg or re.search(r"img_scale\s*=\s*\(448,\s*448\)", cfg):
        return "l2cs"
    if "CenterCrop" in cfg or "multiclue_gaze_r50_gaze360" in cfg or re.search(r"img_scale\s*=\s*\(224,\s*224\)", cfg):
        return "gaze360"
    name = Path(path).name.lower() if path else ""
    return "l2cs" if "l2cs" in name else "gaze360" if "gaze360" in name else None


def check_checkpoint(obj: Any, path: str | Path | None = None) -> str | None:
    """Refuse the Gaze360-setting checkpoint (its own test pipeline is not the one
    ``mcgaze_gaze360`` feeds); returns a warning when the setting is unknown."""
    setting = checkpoint_setting(obj, path)
    if setting == "gaze360":
        raise Gaze4HRIError(
            "this is MCGaze's Gaze360-setting checkpoint (tested with CenterCrop 0.68 then 224 px); mcgaze_gaze360 "
            "feeds the L2CS-setting pipeline (keep-ratio resize to 448 px), as the study did",
            str(path or "mcgaze import"),
            "import multiclue_gaze_r50_l2cs.pth (MCGaze README, l2cs-setting; docs/models_video.md)")
    if setting is None:
        return ("cannot tell the MCGaze setting of this checkpoint (no mmcv meta config, no l2cs/gaze360 in its name): "
                "importing it as the L2CS-setting model the pipeline feeds (448 px)")
    return None


def split_checkpoint(obj: Any) -> tuple[OrderedDict[str, torch.Tensor], list[str]]:
    """Official container -> (our exact state dict, names of the dropped official tensors).

    Mapping: take ``obj['state_dict']`` (mmdet ``save_checkpoint``); strip a ``module.``
    prefix (DataParallel); drop keys matching :data:`DROPPED_PATTERN`; fill absent BatchNorm
    ``num_batches_tracked`` counters with 0; every other key must match our names and shapes.
    """
    sd = _unwrap(obj)
    kept: dict[str, Any] = {}
    dropped: list[str] = []
    for k, v in sd.items():
        k = str(k)
        k = k[len("module."):] if k.startswith("module.") else k
        if DROPPED_PATTERN.search(k):
            dropped.append(k)
        else:
            kept[k] = v
    ref = dict(_reference())
    for k in ref:  # BatchNorm counters are unused at inference and absent from some exports
        if k.endswith("num_batches_tracked") and k not in kept:
            kept[k] = torch.zeros((), dtype=torch.long)
    missing = [k for k in ref if k not in kept]
    unexpected = [k for k in kept if k not in ref]
    wrong = [f"{k} {list(getattr(kept[k], 'shape', []))} != {list(ref[k])}" for k in ref
             if k in kept and (not isinstance(kept[k], torch.Tensor) or tuple(kept[k].shape) != ref[k])]
    if missing or unexpected or wrong:
        raise Gaze4HRIError(
            f"checkpoint does not match the MCGaze architecture: {describe_mismatch(missing, unexpected, wrong)}",
            "mcgaze import", "use an official MCGaze R-50 checkpoint (multiclue_gaze_r50_*.pth)",
        )
    return OrderedDict((k, kept[k]) for k, _ in _reference()), dropped


def convert_checkpoint(obj: Any) -> dict[str, torch.Tensor]:
    """Official mmdet checkpoint (``{'state_dict', 'meta'}``) -> our exact state dict."""
    return split_checkpoint(obj)[0]


def write_official_checkpoint(model: nn.Module, path: str | Path, seed: int = 0) -> None:
    """Test helper: ``model``'s weights in the official container and key order, with random
    values for the dropped tensors and an mmdet-style ``meta``."""
    ours = model.state_dict()
    g = torch.Generator().manual_seed(seed)
    sd: OrderedDict[str, torch.Tensor] = OrderedDict()
    for name, shape in official_shapes():
        sd[name] = ours[name].detach().clone() if name in ours else torch.randn(shape, generator=g) * 0.02
    meta = {
        "mmdet_version": "2.23.0",
        "CLASSES": ("face", "eyes", "head"),
        # mmcv stores the merged config text (cfg.pretty_text); an excerpt of the l2cs one
        "config": "data_root = 'data/l2cs/'\ntest_pipeline = [dict(type='Resize', img_scale=(448, 448), "
                  "keep_ratio=True)]  # written by gaze4hri tests",
        "iter": 7000,
    }
    torch.save({"meta": meta, "state_dict": sd}, str(path))
