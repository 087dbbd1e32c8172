"""Video Swin Transformer trunk as used by Omnivore Swin-T (the GaT encoder), inference only.

Liu et al., "Video Swin Transformer", CVPR 2022 (Sec. 3.1-3.2: 3D patch partition, 3D
shifted windows with cyclic shift and masks, 3D relative position bias) on Liu et al.,
"Swin Transformer", ICCV 2021 (Sec. 3.2, Eq. 4). Configuration of Omnivore's
``omnivore_swinT`` (Girdhar et al., CVPR 2022): patch 2x4x4, window 8x7x7, embed 96,
depths 2-2-6-2, heads 3-6-12-24, qkv bias, patch norm, MLP ratio 4, GELU. A window that
is not smaller than the feature map along an axis shrinks to it and is not shifted
along that axis (so at T = 8 the temporal window is 4 and never shifts).

Names mirror the Omnivore trunk (``patch_embed.proj``, ``layers.2.blocks.1.attn.
relative_position_bias_table``, ``layers.0.downsample.reduction``, ``norm``) and the
``relative_position_index`` buffers are kept, so the released tensors load strictly.
The RGB-D ``depth_patch_embed`` of Omnivore is not built (dropped at import, see gat.py).
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["SwinTransformer3D", "relative_position_index", "shifted_window_mask"]


def relative_position_index(window: tuple[int, int, int]) -> torch.Tensor:
    """(N, N) index into the (2Wd-1)(2Wh-1)(2Ww-1) bias table for the N = Wd*Wh*Ww tokens
    of a window, tokens ordered (d, h, w) (Video Swin Sec. 3.2)."""
    wd, wh, ww = window
    coords = np.stack(np.meshgrid(np.arange(wd), np.arange(wh), np.arange(ww), indexing="ij")).reshape(3, -1)
    rel = coords[:, :, None] - coords[:, None, :]  # (3, N, N)
    rel = rel + np.array([wd - 1, wh - 1, ww - 1])[:, None, None]
    idx = rel[0] * (2 * wh - 1) * (2 * ww - 1) + rel[1] * (2 * ww - 1) + rel[2]
    return torch.from_numpy(idx.astype(np.int64))


def _effective_window(size, window, shift):
    """Window/shift actually used for a (D, H, W) map: an axis no larger than the window
    uses the whole axis and no shift."""
    win, sh = list(window), list(shift)
    for i, s in enumerate(size):
        if s <= window[i]:
            win[i], sh[i] = s, 0
    return tuple(win), tuple(sh)


def _partition(x: torch.Tensor, win) -> torch.Tensor:
    """(B, D, H, W, C) -> (B * nW, Wd*Wh*Ww, C), windows in (d, h, w) raster order."""
    b, d, h, w, c = x.shape
    x = x.reshape(b, d // win[0], win[0], h // win[1], win[1], w // win[2], win[2], c)
    return x.permute(0, 1, 3, 5, 2, 4, 6, 7).reshape(-1, win[0] * win[1] * win[2], c)


def _reverse(windows: torch.Tensor, win, b: int, d: int, h: int, w: int) -> torch.Tensor:
    x = windows.reshape(b, d // win[0], h // win[1], w // win[2], win[0], win[1], win[2], -1)
    return x.permute(0, 1, 4, 2, 5, 3, 6, 7).reshape(b, d, h, w, -1)


def shifted_window_mask(size, win, shift) -> torch.Tensor:
    """(nW, N, N) additive mask (0 or -100) keeping attention inside the regions that a
    cyclic shift brought together (Swin Sec. 3.2, "efficient batch computation")."""
    d, h, w = size
    label = np.zeros((1, d, h, w, 1), dtype=np.float32)
    cnt = 0
    cuts = [(slice(0, -win[i]), slice(-win[i], -shift[i]), slice(-shift[i], None)) for i in range(3)]
    for sd in cuts[0]:
        for sh in cuts[1]:
            for sw in cuts[2]:
                label[:, sd, sh, sw, :] = cnt
                cnt += 1
    lw = _partition(torch.from_numpy(label), win).squeeze(-1)  # (nW, N)
    diff = lw.unsqueeze(1) - lw.unsqueeze(2)
    return torch.where(diff != 0, torch.tensor(-100.0), torch.tensor(0.0))


class WindowAttention3D(nn.Module):
    """W-MSA with a learned 3D relative position bias (Swin Eq. 4)."""

    def __init__(self, dim: int, window: tuple[int, int, int], heads: int):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        size = (2 * window[0] - 1) * (2 * window[1] - 1) * (2 * window[2] - 1)
        self.relative_position_bias_table = nn.Parameter(torch.zeros(size, heads))
        self.register_buffer("relative_position_index", relative_position_index(window))
        self.qkv = nn.Linear(dim, 3 * dim, bias=True)
        self.proj = nn.Linear(dim, dim)
        nn.init.trunc_normal_(self.relative_position_bias_table, std=0.02)

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
        bw, n, c = x.shape
        qkv = self.qkv(x).reshape(bw, n, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q * self.scale) @ k.transpose(-2, -1)
        # a shrunk window uses the leading N x N block of the full-window index (as Omnivore)
        bias = self.relative_position_bias_table[self.relative_position_index[:n, :n].reshape(-1)]
        attn = attn + bias.reshape(n, n, -1).permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            nw = mask.shape[0]
            attn = attn.reshape(-1, nw, self.heads, n, n) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.reshape(-1, self.heads, n, n)
        attn = torch.softmax(attn, dim=-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(bw, n, c))


class _Mlp(nn.Module):
    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(F.gelu(self.fc1(x)))


class SwinBlock3D(nn.Module):
    """Pre-norm block: x + (S)W-MSA(LN(x)); x + MLP(LN(x)) (Swin Eq. 3)."""

    def __init__(self, dim: int, heads: int, window, shift):
        super().__init__()
        self.window, self.shift = tuple(window), tuple(shift)
        self.norm1 = nn.LayerNorm(dim)
        self.attn = WindowAttention3D(dim, self.window, heads)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = _Mlp(dim, 4 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, d, h, w, c = x.shape
        win, shift = _effective_window((d, h, w), self.window, self.shift)
        y = self.norm1(x)
        pd, ph, pw = [(win[i] - s % win[i]) % win[i] for i, s in enumerate((d, h, w))]
        if pd or ph or pw:
            y = F.pad(y, (0, 0, 0, pw, 0, ph, 0, pd))
        dp, hp, wp = d + pd, h + ph, w + pw
        mask = None
        if any(s > 0 for s in shift):
            y = torch.roll(y, shifts=(-shift[0], -shift[1], -shift[2]), dims=(1, 2, 3))
            mask = shifted_window_mask((dp, hp, wp), win, shift).to(y.dtype)
        y = _reverse(self.attn(_partition(y, win), mask), win, b, dp, hp, wp)
        if any(s > 0 for s in shift):
            y = torch.roll(y, shifts=shift, dims=(1, 2, 3))
        if pd or ph or pw:
            y = y[:, :d, :h, :w, :]
        x = x + y
        return x + self.mlp(self.norm2(x))


class PatchMerging(nn.Module):
    """2x2 spatial neighbours concatenated (order x00, x10, x01, x11) -> LN -> Linear(4C -> 2C)."""

    def __init__(self, dim: int):
        super().__init__()
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = nn.LayerNorm(4 * dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[2], x.shape[3]
        if h % 2 or w % 2:
            x = F.pad(x, (0, 0, 0, w % 2, 0, h % 2))
        x = torch.cat([x[:, :, 0::2, 0::2], x[:, :, 1::2, 0::2], x[:, :, 0::2, 1::2], x[:, :, 1::2, 1::2]], -1)
        return self.reduction(self.norm(x))


class _Stage(nn.Module):
    def __init__(self, dim: int, depth: int, heads: int, window, downsample: bool):
        super().__init__()
        shift = tuple(s // 2 for s in window)
        self.blocks = nn.ModuleList(
            [SwinBlock3D(dim, heads, window, (0, 0, 0) if i % 2 == 0 else shift) for i in range(depth)]
        )
        self.downsample = PatchMerging(dim) if downsample else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for blk in self.blocks:
            x = blk(x)
        return x if self.downsample is None else self.downsample(x)


class _PatchEmbed3D(nn.Module):
    def __init__(self, patch, cin: int, dim: int):
        super().__init__()
        self.patch = tuple(patch)
        self.proj = nn.Conv3d(cin, dim, kernel_size=patch, stride=patch)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, T, H, W) -> (B, T', H', W', dim), zero-padding T, H, W up to the patch."""
        t, h, w = x.shape[2:]
        pt, ph, pw = [(p - s % p) % p for p, s in zip(self.patch, (t, h, w), strict=True)]
        if pt or ph or pw:
            x = F.pad(x, (0, pw, 0, ph, 0, pt))
        return self.norm(self.proj(x).permute(0, 2, 3, 4, 1))


class SwinTransformer3D(nn.Module):
    """Omnivore Swin-T trunk: forward returns the normalised last-stage map (B, C, D, H, W)
    (Omnivore's ``trunk(x, ["stage3"])[0]``)."""

    def __init__(self, patch=(2, 4, 4), dim: int = 96, depths=(2, 2, 6, 2), heads=(3, 6, 12, 24), window=(8, 7, 7)):
        super().__init__()
        self.patch_embed = _PatchEmbed3D(patch, 3, dim)
        self.layers = nn.ModuleList(
            [_Stage(dim * 2**i, depths[i], heads[i], window, i < len(depths) - 1) for i in range(len(depths))]
        )
        self.num_features = dim * 2 ** (len(depths) - 1)
        self.norm = nn.LayerNorm(self.num_features)
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.trunc_normal_(m.weight, std=0.02)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch_embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x).permute(0, 4, 1, 2, 3)
