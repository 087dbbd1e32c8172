"""MCGaze query stages and gaze head (Guan, Chen, Zeng, Cao, Xiao, "End-to-end Video Gaze
Estimation via Capturing Head-face-eye Spatial-temporal Interaction Context", IEEE SPL
2023, Sec. II; official code: zgchen33/MCGaze, ``GazeSTQIHead`` and ``GazeHead``).

One query per clue (face, eyes, head) and frame. Each stage (Sec. II-B, "spatial-temporal
query interaction"): self-attention among the 3 queries of a frame, then the *same*
attention weights among the T frames of each query (both with a residual and the same
LayerNorm), a dynamic 1x1 convolution whose kernels are generated from the query and
applied to its 7x7 RoI feature (Sparse R-CNN, Sun et al. CVPR 2021, Sec. 3.4), an FFN,
and a per-clue box-delta regressor that refines the query boxes for the next stage.
The gaze head (Sec. II-C) maps each clue's final query to a gaze vector and a 3-d
confidence, fuses the weighted vectors with Linear(9 -> 3) and L2-normalises.

Only the modules on the test-time gaze path exist here; the classification branch and
the gaze heads of stages 0-2 (deep supervision) are dropped at import (see mcgaze.py).
Names follow the official modules (mmcv ``MultiheadAttention.attn``, ``FFN.layers``,
mmdet ``DynamicConv``) so the official tensors load with ``strict=True``.
"""
from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["QueryStage", "GazeHead", "delta2bbox", "CLUES"]

CLUES = ("face", "eyes", "head")
#: DeltaXYWHBBoxCoder(target_stds=[0.5, 0.5, 1, 1]) and its default wh_ratio_clip
_DELTA_STDS = (0.5, 0.5, 1.0, 1.0)
_MAX_LOG_RATIO = float(abs(np.log(16 / 1000)))


def delta2bbox(boxes: torch.Tensor, deltas: torch.Tensor) -> torch.Tensor:
    """Apply (dx, dy, dw, dh) deltas to x1y1x2y2 boxes (Girshick et al. R-CNN, App. C;
    mmdet 2.x ``delta2bbox`` with means 0, stds (0.5, 0.5, 1, 1), no border clip)."""
    stds = deltas.new_tensor(_DELTA_STDS)
    d = deltas * stds
    pxy = (boxes[..., :2] + boxes[..., 2:]) * 0.5
    pwh = boxes[..., 2:] - boxes[..., :2]
    gxy = pxy + pwh * d[..., :2]
    gwh = pwh * d[..., 2:].clamp(min=-_MAX_LOG_RATIO, max=_MAX_LOG_RATIO).exp()
    return torch.cat((gxy - gwh * 0.5, gxy + gwh * 0.5), dim=-1)


class _Attention(nn.Module):
    """Multi-head self-attention with ``nn.MultiheadAttention``'s parameter layout
    (packed ``in_proj_weight``/``in_proj_bias``, ``out_proj``); batch-first input."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.in_proj_weight = nn.Parameter(torch.empty(3 * dim, dim))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * dim))
        self.out_proj = nn.Linear(dim, dim)
        nn.init.xavier_uniform_(self.in_proj_weight)

    def forward(self, x: torch.Tensor, key_bias: torch.Tensor | None = None) -> torch.Tensor:
        """``key_bias`` (b, 1, 1, n): added to the logits of each key (-1e9: ignored)."""
        b, n, d = x.shape
        hd = d // self.heads
        qkv = F.linear(x, self.in_proj_weight, self.in_proj_bias).reshape(b, n, 3, self.heads, hd)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)  # (b, heads, n, hd)
        logits = (q * (1.0 / math.sqrt(hd))) @ k.transpose(-2, -1)
        attn = torch.softmax(logits if key_bias is None else logits + key_bias, dim=-1)
        out = (attn @ v).transpose(1, 2).reshape(b, n, d)
        return self.out_proj(out)


class _ResidualAttention(nn.Module):
    """mmcv ``MultiheadAttention``: x + MHA(x) (the wrapped module is ``.attn``)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.attn = _Attention(dim, heads)

    def forward(self, x: torch.Tensor, key_bias: torch.Tensor | None = None) -> torch.Tensor:
        return x + self.attn(x, key_bias)


class _DynamicConv(nn.Module):
    """Sparse R-CNN dynamic instance interaction: query -> (256x64, 64x256) kernels applied
    as two 1x1 convs (bmm) to the 49 RoI positions, LN+ReLU after each, flatten ->
    Linear(49*256 -> 256) + LN + ReLU."""

    def __init__(self, dim: int = 256, feat: int = 64, roi: int = 7):
        super().__init__()
        self.dim, self.feat = dim, feat
        self.dynamic_layer = nn.Linear(dim, 2 * dim * feat)
        self.norm_in = nn.LayerNorm(feat)
        self.norm_out = nn.LayerNorm(dim)
        self.fc_layer = nn.Linear(dim * roi * roi, dim)
        self.fc_norm = nn.LayerNorm(dim)

    def forward(self, query: torch.Tensor, roi_feat: torch.Tensor) -> torch.Tensor:
        x = roi_feat.flatten(2).transpose(1, 2)  # (R, 49, dim)
        params = self.dynamic_layer(query)
        n_in = self.dim * self.feat
        w_in = params[:, :n_in].reshape(-1, self.dim, self.feat)
        w_out = params[:, n_in:].reshape(-1, self.feat, self.dim)
        x = F.relu(self.norm_in(torch.bmm(x, w_in)))
        x = F.relu(self.norm_out(torch.bmm(x, w_out)))
        return F.relu(self.fc_norm(self.fc_layer(x.flatten(1))))


class _FFN(nn.Module):
    """mmcv ``FFN`` (2 fcs, ReLU) with its residual: x + W2 relu(W1 x)."""

    def __init__(self, dim: int = 256, hidden: int = 2048):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Dropout(0.0)), nn.Linear(hidden, dim), nn.Dropout(0.0)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.layers(x)


def _fc_ln_relu(dim: int, n: int) -> nn.ModuleList:
    """n x (Linear without bias, LayerNorm, ReLU) as a flat ModuleList (official layout)."""
    mods = nn.ModuleList()
    for _ in range(n):
        mods.extend([nn.Linear(dim, dim, bias=False), nn.LayerNorm(dim), nn.ReLU()])
    return mods


def _run(mods: nn.ModuleList, x: torch.Tensor) -> torch.Tensor:
    for m in mods:
        x = m(x)
    return x


class QueryStage(nn.Module):
    """One ``GazeSTQIHead`` stage at test time: (queries, RoI features, T) -> (new queries,
    box deltas). Queries are (N, 3, 256) with N = B*T frames, frame-major."""

    def __init__(self, dim: int = 256, heads: int = 8, ffn: int = 2048, dyn: int = 64, reg_fcs: int = 3):
        super().__init__()
        self.dim = dim
        self.attention = _ResidualAttention(dim, heads)
        self.attention_norm = nn.LayerNorm(dim)
        self.instance_interactive_conv = _DynamicConv(dim, dyn)
        self.instance_interactive_conv_norm = nn.LayerNorm(dim)
        self.ffn = _FFN(dim, ffn)
        self.ffn_norm = nn.LayerNorm(dim)
        self.reg_fcs = _fc_ln_relu(dim, reg_fcs)
        self.face_fc_reg = nn.Linear(dim, 4)
        self.eyes_fc_reg = nn.Linear(dim, 4)
        self.head_fc_reg = nn.Linear(dim, 4)

    def forward(self, query: torch.Tensor, roi_feat: torch.Tensor, clip_len: int,
                key_bias: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """``key_bias`` (B*3, 1, 1, T): per-frame logit bias of the temporal attention
        (-1e9 for absent frames, which then weigh exactly 0)."""
        n, p, d = query.shape
        b = n // clip_len
        # spatial interaction: the 3 clue queries of each frame attend to each other
        q = self.attention_norm(self.attention(query))
        # temporal interaction: each clue's T queries of a clip attend to each other
        q = q.reshape(b, clip_len, p, d).transpose(1, 2).reshape(b * p, clip_len, d)
        q = self.attention_norm(self.attention(q, key_bias))
        q = q.reshape(b, p, clip_len, d).transpose(1, 2).reshape(n * p, d)
        q = self.instance_interactive_conv_norm(q + self.instance_interactive_conv(q, roi_feat))
        q = self.ffn_norm(self.ffn(q)).reshape(n, p, d)
        reg = _run(self.reg_fcs, q)
        deltas = torch.stack(
            (self.face_fc_reg(reg[:, 0]), self.eyes_fc_reg(reg[:, 1]), self.head_fc_reg(reg[:, 2])), dim=1
        )
        return q, deltas


class GazeHead(nn.Module):
    """Clue-wise gaze vectors fused by learned confidences (MCGaze Sec. II-C):
    g = normalize(W [c_f * g_f, c_e * g_e, c_h * g_h] + b), c_* and g_* in R^3."""

    def __init__(self, dim: int = 256):
        super().__init__()
        self.gaze_face_fcs = _fc_ln_relu(dim, 2)
        self.gaze_eyes_fcs = _fc_ln_relu(dim, 2)
        self.gaze_head_fcs = _fc_ln_relu(dim, 2)
        self.fc_face_confidence = nn.Linear(dim, 3)
        self.fc_eyes_confidence = nn.Linear(dim, 3)
        self.fc_head_confidence = nn.Linear(dim, 3)
        self.gaze_face_confidence = _fc_ln_relu(dim, 2)
        self.gaze_eyes_confidence = _fc_ln_relu(dim, 2)
        self.gaze_head_confidence = _fc_ln_relu(dim, 2)
        self.fc_face = nn.Linear(dim, 3)
        self.fc_eyes = nn.Linear(dim, 3)
        self.fc_head = nn.Linear(dim, 3)
        self.fc_gaze = nn.Linear(9, 3)

    def forward(self, query: torch.Tensor) -> torch.Tensor:
        """(N, 3, dim) final-stage queries -> (N, 3) unit gaze vectors (Frame B)."""
        fused = []
        for i, clue in enumerate(CLUES):
            x = query[:, i]
            gaze = getattr(self, f"fc_{clue}")(_run(getattr(self, f"gaze_{clue}_fcs"), x))
            conf = getattr(self, f"fc_{clue}_confidence")(_run(getattr(self, f"gaze_{clue}_confidence"), x))
            fused.append(conf * gaze)
        g = self.fc_gaze(torch.cat(fused, dim=-1))
        return g / torch.linalg.vector_norm(g, dim=-1, keepdim=True)
