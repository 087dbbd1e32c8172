"""PureGaze (Cheng, Bao, Lu, "PureGaze: Purifying Gaze Feature for Generalizable Gaze
Estimation", AAAI 2022), ResNet-50 version; inference network only.

Sec. 3 of the paper: a feature extractor (ResNet-50 trunk) feeds a gaze estimator
(global average pooling -> FC 2048 -> 2) and, during training only, an adversarial
reconstruction network (up-sampling + residual blocks) that purifies the feature.
At inference the reconstruction branch is unused, so it is dropped at import.

Input ``face``: B x 3 x 224 x 224 normalized face, BGR, in [0, 1]. Output ``gaze``:
B x 2 radians; the released ETH-XGaze model emits [pitch, yaw] (official README).
Official parameter names: ``feature.*`` (trunk), ``gazeEs.fc.*`` (head),
``deconv.deconv.*`` (training-only reconstruction branch).
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn

from .._checkpoint import map_state_dict
from ._resnet import BasicBlock, resnet50_trunk

__all__ = ["FAMILY", "MANIFEST", "DROPPED_PREFIXES", "PureGaze", "build", "convert_checkpoint",
           "write_official_checkpoint", "training_only_branch"]

FAMILY = "puregaze"
MANIFEST = "docs/models/puregaze.json"
#: training-only keys of the official checkpoint (the reconstruction network)
DROPPED_PREFIXES = ("deconv.",)
#: documented for docs/models/puregaze.json
SOURCE_FILES = "yihuacheng/PureGaze model/model.py, model/modules.py @ 74fa082"
CONTAINER = ("torch.save(net.state_dict()): a flat OrderedDict (trainer/trainer.py); `module.` prefixes stripped "
             "if present")


class _GazeHead(nn.Module):
    """Global average pooling and a linear regressor to two angles (paper Sec. 3.2)."""

    def __init__(self, channels: int = 2048):
        super().__init__()
        self.fc = nn.Linear(channels, 2)

    def forward(self, feat: torch.Tensor) -> torch.Tensor:
        return self.fc(feat.mean(dim=(2, 3)))


class PureGaze(nn.Module):
    """ResNet-50 trunk (``feature``) + pooled linear gaze head (``gazeEs``)."""

    def __init__(self):
        super().__init__()
        self.feature = resnet50_trunk()
        self.gazeEs = _GazeHead(self.feature.out_channels)

    def forward(self, face: torch.Tensor) -> torch.Tensor:
        return self.gazeEs(self.feature(face))


def build() -> PureGaze:
    """The inference network, eval mode, freshly initialised."""
    return PureGaze().eval()


def training_only_branch() -> nn.Module:
    """The shapes of the official reconstruction branch (``deconv.deconv.<i>``): five
    [x2 up-sample, 2 residual blocks] stages 2048 -> 256 -> 128 -> 64 -> 32 -> 16, then a
    1x1 conv to 3 channels. Used only to write and to recognise official checkpoints."""
    layers: list[nn.Module] = []
    cin = 2048
    for width in (256, 128, 64, 32, 16):
        layers += [nn.Upsample(scale_factor=2), nn.Sequential(BasicBlock(cin, width), BasicBlock(width, width))]
        cin = width
    layers.append(nn.Conv2d(cin, 3, 1))
    wrapper = nn.Module()
    wrapper.deconv = nn.Sequential(*layers)
    return wrapper


def convert_checkpoint(obj) -> OrderedDict[str, torch.Tensor]:
    """Official container -> our state dict: unwrap, strip ``module.``, drop ``deconv.*``."""
    return map_state_dict(obj, PureGaze().state_dict(), FAMILY, dropped=DROPPED_PREFIXES)


def write_official_checkpoint(model: nn.Module, path: str | Path, seed: int = 0) -> None:
    """Save ``model`` as the official trainer does (flat state dict, ``feature``,
    ``gazeEs``, then a randomly initialised ``deconv`` branch)."""
    torch.manual_seed(seed)
    sd = OrderedDict(model.state_dict())
    for k, v in training_only_branch().state_dict().items():
        sd[f"deconv.{k}"] = v
    torch.save(sd, path)
