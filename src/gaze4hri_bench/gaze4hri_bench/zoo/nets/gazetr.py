"""GazeTR-Hybrid (Cheng, Lu, "Gaze Estimation using Transformer", ICPR 2022,
arXiv:2105.14424); inference network.

Sec. 3.2 of the paper: a ResNet-18 trunk to stride 32, a 1x1 convolution reducing 512
channels to 32 (+ BN + ReLU), the 7x7 map flattened into 49 tokens and prefixed with a
learned token; a 6-layer transformer encoder (d_model 32, 8 heads, feed-forward 512,
ReLU, post-norm as in Vaswani et al. 2017 Sec. 3.1) with a learned 50 x 32 position
embedding added to queries and keys only (not to values), a final LayerNorm, and a
linear regressor from the learned token to two angles.

Input ``face``: B x 3 x 224 x 224 normalized face, BGR, in [0, 1]. Output ``gaze``:
B x 2 radians ([yaw, pitch] per the official test; settled by the flip test).
The official code indexes the position embedding with a CUDA-only ``arange``; here the
position index is a non-persistent buffer, so the model runs and exports on any device
and the state dict keeps the official keys.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

from .._checkpoint import map_state_dict
from ._resnet import BasicBlock, ResNetTrunk

__all__ = ["FAMILY", "MANIFEST", "GazeTRHybrid", "build", "convert_checkpoint", "write_official_checkpoint"]

FAMILY = "gazetr"
MANIFEST = "docs/models/gazetr.json"
DROPPED_PREFIXES: tuple[str, ...] = ()  # the official checkpoint holds inference weights only
SOURCE_FILES = "yihuacheng/GazeTR model.py, resnet.py @ f84ccfe"
CONTAINER = ("torch.save(net.state_dict()): a flat OrderedDict (trainer/total.py); `module.` prefixes stripped "
             "if present")

D_MODEL, N_HEADS, D_FF, N_LAYERS, N_TOKENS = 32, 8, 512, 6, 7 * 7 + 1


class _Backbone(ResNetTrunk):
    """ResNet-18 trunk followed by ``conv`` = [1x1 conv 512 -> 32 (with bias), BN, ReLU]."""

    def __init__(self, maps: int = D_MODEL):
        super().__init__(BasicBlock, (2, 2, 2, 2))
        self.conv = nn.Sequential(nn.Conv2d(self.out_channels, maps, 1), nn.BatchNorm2d(maps), nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(super().forward(x))


class _SelfAttention(nn.Module):
    """Multi-head scaled dot-product self-attention (Vaswani et al. 2017, Sec. 3.2.2) with
    packed Q/K/V projections (``in_proj_weight`` rows: Q, K, V) and ``out_proj``."""

    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads, self.scale = heads, 1.0 / math.sqrt(d // heads)
        self.in_proj_weight = nn.Parameter(torch.empty(3 * d, d))
        self.in_proj_bias = nn.Parameter(torch.zeros(3 * d))
        self.out_proj = nn.Linear(d, d)
        nn.init.xavier_uniform_(self.in_proj_weight)
        nn.init.zeros_(self.out_proj.bias)

    def forward(self, qk: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """``qk``: tokens with position code (queries and keys); ``v``: tokens without. B x L x d."""
        b, n, d = v.shape
        wq, wk, wv = self.in_proj_weight.chunk(3)
        bq, bk, bv = self.in_proj_bias.chunk(3)

        def heads(x: torch.Tensor) -> torch.Tensor:  # B x L x d -> B x h x L x d/h
            return x.reshape(b, n, self.heads, -1).transpose(1, 2)

        q, k, val = heads(F.linear(qk, wq, bq)), heads(F.linear(qk, wk, bk)), heads(F.linear(v, wv, bv))
        att = torch.softmax((q @ k.transpose(-2, -1)) * self.scale, dim=-1)
        return self.out_proj((att @ val).transpose(1, 2).reshape(b, n, d))


class _EncoderLayer(nn.Module):
    """Post-norm encoder layer: x = LN1(x + Attn(x + p, x + p, x)); x = LN2(x + FFN(x))."""

    def __init__(self, d: int = D_MODEL, heads: int = N_HEADS, d_ff: int = D_FF):
        super().__init__()
        self.self_attn = _SelfAttention(d, heads)
        self.linear1 = nn.Linear(d, d_ff)
        self.linear2 = nn.Linear(d_ff, d)
        self.norm1 = nn.LayerNorm(d)
        self.norm2 = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        x = self.norm1(x + self.self_attn(x + pos, x))
        return self.norm2(x + self.linear2(F.relu(self.linear1(x))))


class _Encoder(nn.Module):
    def __init__(self, n_layers: int = N_LAYERS, d: int = D_MODEL):
        super().__init__()
        self.layers = nn.ModuleList(_EncoderLayer(d) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x, pos)
        return self.norm(x)


class GazeTRHybrid(nn.Module):
    """ResNet-18 + 6-layer transformer; the learned token's output regresses the gaze."""

    def __init__(self):
        super().__init__()
        self.cls_token = nn.Parameter(torch.randn(1, 1, D_MODEL))
        self.base_model = _Backbone(D_MODEL)
        self.encoder = _Encoder()
        self.pos_embedding = nn.Embedding(N_TOKENS, D_MODEL)
        self.feed = nn.Linear(D_MODEL, 2)
        self.register_buffer("positions", torch.arange(N_TOKENS), persistent=False)

    def forward(self, face: torch.Tensor) -> torch.Tensor:
        tokens = self.base_model(face).flatten(2).transpose(1, 2)  # B x 49 x 32, row-major over the 7x7 map
        tokens = torch.cat([self.cls_token.expand(tokens.shape[0], -1, -1), tokens], dim=1)
        out = self.encoder(tokens, self.pos_embedding(self.positions).unsqueeze(0))
        return self.feed(out[:, 0])


def build() -> GazeTRHybrid:
    """The inference network, eval mode, freshly initialised."""
    return GazeTRHybrid().eval()


def convert_checkpoint(obj) -> OrderedDict[str, torch.Tensor]:
    """Official container -> our state dict: unwrap and strip ``module.`` (nothing dropped)."""
    return map_state_dict(obj, GazeTRHybrid().state_dict(), FAMILY, dropped=DROPPED_PREFIXES)


def write_official_checkpoint(model: nn.Module, path: str | Path, seed: int = 0) -> None:
    """Save ``model`` as the official trainer does (flat ``net.state_dict()``)."""
    torch.save(OrderedDict(model.state_dict()), path)
