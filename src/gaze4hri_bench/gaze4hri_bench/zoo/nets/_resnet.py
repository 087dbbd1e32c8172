"""Residual trunks shared by the ResNet-based families (He et al., "Deep Residual
Learning for Image Recognition", CVPR 2016, Sec. 3-4 and Table 1).

The stride-2 of a down-sampling block sits on the 3x3 convolution (the "ResNet v1.5"
variant used by torchvision and by every official gaze checkpoint we load). Module
names (``conv1``, ``bn1``, ``layer1.0.downsample.0`` ...) are the conventional ones,
so that the released checkpoints load with ``strict=True``.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["BasicBlock", "Bottleneck", "ResNetTrunk", "resnet18_trunk", "resnet50_trunk"]


def _shortcut(cin: int, cout: int, stride: int) -> nn.Sequential | None:
    """Projection shortcut (option B of He et al. Sec. 3.3) when the shape changes."""
    if stride == 1 and cin == cout:
        return None
    return nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))


class BasicBlock(nn.Module):
    """Two 3x3 convolutions with an identity/projection shortcut (ResNet-18/34)."""

    expansion = 1

    def __init__(self, cin: int, width: int, stride: int = 1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, width, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.downsample = _shortcut(cin, width, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        skip = x if self.downsample is None else self.downsample(x)
        return F.relu(y + skip)


class Bottleneck(nn.Module):
    """1x1 reduce -> 3x3 (carries the stride) -> 1x1 expand by 4 (ResNet-50/101/152)."""

    expansion = 4

    def __init__(self, cin: int, width: int, stride: int = 1):
        super().__init__()
        cout = width * self.expansion
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.downsample = _shortcut(cin, cout, stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        skip = x if self.downsample is None else self.downsample(x)
        return F.relu(y + skip)


class ResNetTrunk(nn.Module):
    """Stem (7x7/2 conv, BN, ReLU, 3x3/2 max-pool) and four stages; returns the stride-32
    feature map (B x 512*expansion x H/32 x W/32). No pooling, no classifier."""

    def __init__(self, block: type[BasicBlock] | type[Bottleneck], depths: tuple[int, int, int, int]):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        cin = 64
        for i, (width, n) in enumerate(zip((64, 128, 256, 512), depths, strict=True)):
            blocks = []
            for j in range(n):
                blocks.append(block(cin, width, stride=2 if (j == 0 and i > 0) else 1))
                cin = width * block.expansion
            setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
        self.out_channels = cin
        self._init()

    def _init(self) -> None:
        """He-normal convolutions (fan-out), unit/zero BN affine (He et al. 2015, Sec. 2.2)."""
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 3, stride=2, padding=1)
        return self.layer4(self.layer3(self.layer2(self.layer1(x))))


def resnet18_trunk() -> ResNetTrunk:
    """ResNet-18: BasicBlock x (2, 2, 2, 2), 512 output channels."""
    return ResNetTrunk(BasicBlock, (2, 2, 2, 2))


def resnet50_trunk() -> ResNetTrunk:
    """ResNet-50: Bottleneck x (3, 4, 6, 3), 2048 output channels."""
    return ResNetTrunk(Bottleneck, (3, 4, 6, 3))
