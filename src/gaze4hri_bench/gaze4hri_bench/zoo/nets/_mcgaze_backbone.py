"""MCGaze image trunk: ResNet-50 returning C2..C5, and the FPN neck (P2..P5, 256 ch).

ResNet: He et al., CVPR 2016 (Table 1), mmdet ``style='pytorch'`` (the stride sits on
the 3x3 conv), BatchNorm in eval mode (``norm_eval=True``). FPN: Lin et al., CVPR 2017
(Sec. 3): 1x1 lateral convs, nearest-neighbour top-down addition, 3x3 output convs; the
MCGaze config has ``num_outs=4`` so no extra levels are built. Module names follow
mmdet 2.x (``layer1.0.downsample.1``, ``lateral_convs.0.conv``) so the official state
dict loads under ``backbone.`` / ``neck.``.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["ResNet50", "FPN"]


class _Bottleneck(nn.Module):
    """1x1 -> 3x3 (stride) -> 1x1 x4, projection shortcut when the shape changes."""

    def __init__(self, cin: int, width: int, stride: int):
        super().__init__()
        cout = width * 4
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        skip = x if self.downsample is None else self.downsample(x)
        return F.relu(y + skip)


class ResNet50(nn.Module):
    """ResNet-50 without the classifier; forward returns the outputs of layer1..layer4."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        cin = 64
        for i, (width, blocks, stride) in enumerate(((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)), start=1):
            layer = []
            for b in range(blocks):
                layer.append(_Bottleneck(cin, width, stride if b == 0 else 1))
                cin = width * 4
            self.add_module(f"layer{i}", nn.Sequential(*layer))

    def forward(self, x: torch.Tensor) -> list[torch.Tensor]:
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 3, stride=2, padding=1)
        outs = []
        for i in range(1, 5):
            x = getattr(self, f"layer{i}")(x)
            outs.append(x)
        return outs


class _ConvModule(nn.Module):
    """mmcv ``ConvModule`` without norm/activation: a conv stored under ``.conv``."""

    def __init__(self, cin: int, cout: int, k: int):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=k // 2, bias=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)


class FPN(nn.Module):
    """Feature pyramid over C2..C5 -> P2..P5 (strides 4, 8, 16, 32)."""

    def __init__(self, in_channels=(256, 512, 1024, 2048), out_channels: int = 256):
        super().__init__()
        self.lateral_convs = nn.ModuleList()
        self.fpn_convs = nn.ModuleList()
        for cin in in_channels:
            self.lateral_convs.append(_ConvModule(cin, out_channels, 1))
            self.fpn_convs.append(_ConvModule(out_channels, out_channels, 3))

    def forward(self, feats: list[torch.Tensor]) -> list[torch.Tensor]:
        lat = [conv(f) for conv, f in zip(self.lateral_convs, feats, strict=True)]
        for i in range(len(lat) - 1, 0, -1):
            lat[i - 1] = lat[i - 1] + F.interpolate(lat[i], size=lat[i - 1].shape[-2:], mode="nearest")
        return [conv(x) for conv, x in zip(self.fpn_convs, lat, strict=True)]
