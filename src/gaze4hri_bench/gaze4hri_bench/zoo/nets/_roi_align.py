"""Multi-level RoIAlign in plain PyTorch, exportable to ONNX (GridSample, opset >= 16).

Reproduces mmcv's ``RoIAlign(output_size=7, sampling_ratio=2, aligned=True,
pool_mode='avg')`` inside mmdet 2.x ``SingleRoIExtractor`` (He et al., "Mask R-CNN",
ICCV 2017, Sec. 3 for RoIAlign; Lin et al., "Feature Pyramid Networks", CVPR 2017,
Eq. 1 for the level rule). Semantics, from mmcv's CPU kernel:

* box corners are scaled by ``1/stride`` and shifted by -0.5 (``aligned=True``);
* each of the 7x7 bins averages ``s x s`` bilinear samples at the bin's regular
  sub-grid centres (s = ``sampling_ratio``), always dividing by ``s*s``;
* a sample with ``y < -1 or y > H or x < -1 or x > W`` contributes 0; otherwise the
  coordinate is clamped into ``[0, H-1] x [0, W-1]`` before bilinear interpolation.
  That is exactly ``grid_sample(padding_mode='border', align_corners=True)`` times a
  validity mask, which is how it is computed here;
* FPN level ``floor(log2(sqrt(w h) / finest_scale + 1e-6))`` clamped to the levels.

Every box is pooled from every level and the level is picked with a one-hot weight, so
the graph has no data-dependent control flow (mmdet does the same under ONNX export).
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch.nn import functional as F

__all__ = ["roi_align_level", "map_roi_levels", "multilevel_roi_align"]


def _sample_coords(lo: torch.Tensor, hi: torch.Tensor, out_size: int, ratio: int) -> torch.Tensor:
    """Sample positions along one axis: (..., out_size*ratio) for intervals [lo, hi]."""
    n = out_size * ratio
    k = torch.arange(n, dtype=lo.dtype, device=lo.device) + 0.5
    step = (hi - lo).unsqueeze(-1) / n  # bin_size / ratio
    return lo.unsqueeze(-1) + k * step


def roi_align_level(
    feat: torch.Tensor,
    boxes: torch.Tensor,
    spatial_scale: float,
    out_size: int = 7,
    sampling_ratio: int = 2,
    aligned: bool = True,
) -> torch.Tensor:
    """RoIAlign of ``boxes`` (N, P, 4: x1 y1 x2 y2, input pixels) on ``feat`` (N, C, H, W),
    box ``[n, p]`` read from image ``n``. Returns (N, P, C, out_size, out_size)."""
    if sampling_ratio <= 0:
        raise ValueError("adaptive sampling_ratio (<= 0) is data dependent and not supported")
    n_img, c, h, w = feat.shape
    p = boxes.shape[1]
    offset = 0.5 if aligned else 0.0
    x1 = boxes[..., 0] * spatial_scale - offset
    y1 = boxes[..., 1] * spatial_scale - offset
    x2 = boxes[..., 2] * spatial_scale - offset
    y2 = boxes[..., 3] * spatial_scale - offset
    if not aligned:  # legacy mode forces rois of at least 1x1
        x2 = x1 + torch.clamp(x2 - x1, min=1.0)
        y2 = y1 + torch.clamp(y2 - y1, min=1.0)
    xs = _sample_coords(x1, x2, out_size, sampling_ratio)  # (N, P, S)
    ys = _sample_coords(y1, y2, out_size, sampling_ratio)
    s = xs.shape[-1]
    # h and w stay tensors while tracing (no float()/max()), so an export with dynamic
    # spatial axes keeps them symbolic
    one = xs.new_ones(())
    valid_x = (xs >= -1.0) & (xs <= one * w)
    valid_y = (ys >= -1.0) & (ys <= one * h)
    valid = (valid_y.unsqueeze(-1) & valid_x.unsqueeze(-2)).to(feat.dtype)  # (N, P, S, S)
    gx = xs * (2.0 / (one * (w - 1)).clamp(min=1.0)) - 1.0
    gy = ys * (2.0 / (one * (h - 1)).clamp(min=1.0)) - 1.0
    grid = torch.stack(
        (gx.unsqueeze(-2).expand(n_img, p, s, s), gy.unsqueeze(-1).expand(n_img, p, s, s)), dim=-1
    )  # (N, P, S, S, 2) as (x, y)
    grid = grid.reshape(n_img, p * s, s, 2)
    samples = F.grid_sample(feat, grid, mode="bilinear", padding_mode="border", align_corners=True)
    samples = samples.reshape(n_img, c, p, s, s) * valid.unsqueeze(1)
    pooled = F.avg_pool2d(samples.reshape(n_img, c * p, s, s), sampling_ratio)  # mean of s*s samples
    return pooled.reshape(n_img, c, p, out_size, out_size).permute(0, 2, 1, 3, 4)


def map_roi_levels(boxes: torch.Tensor, num_levels: int, finest_scale: float = 56.0) -> torch.Tensor:
    """FPN level of each box (Lin et al. 2017, Eq. 1, mmdet's form): integer tensor (N, P)."""
    scale = torch.sqrt((boxes[..., 2] - boxes[..., 0]) * (boxes[..., 3] - boxes[..., 1]))
    lvl = torch.floor(torch.log2(scale / finest_scale + 1e-6))
    return lvl.clamp(min=0, max=num_levels - 1)


def multilevel_roi_align(
    feats: Sequence[torch.Tensor],
    boxes: torch.Tensor,
    strides: Sequence[int],
    out_size: int = 7,
    sampling_ratio: int = 2,
    finest_scale: float = 56.0,
) -> torch.Tensor:
    """``SingleRoIExtractor`` forward: (N, P, 4) boxes -> (N*P, C, out, out) RoI features,
    frame-major then proposal (the order of mmdet's ``bbox2roi``)."""
    lvl = map_roi_levels(boxes, len(feats), finest_scale)
    out = None
    for i, (feat, stride) in enumerate(zip(feats, strides, strict=True)):
        pooled = roi_align_level(feat, boxes, 1.0 / stride, out_size, sampling_ratio)
        pick = (lvl == float(i)).to(pooled.dtype)[..., None, None, None]
        term = pooled * pick
        out = term if out is None else out + term
    n, p = boxes.shape[:2]
    return out.reshape(n * p, *out.shape[2:])

