"""L2CS-Net (Abdelrahman, Hempel, Khalifa, Al-Hamadi, "L2CS-Net: Fine-Grained Gaze
Estimation in Unconstrained Environments", arXiv:2203.03339, 2022); inference
network only.

Sec. 3 of the paper: a ResNet-50 backbone with global average pooling and two
identical fully connected heads, one per gaze angle, each classifying the angle into
bins (Gaze360: 90 bins of 4 degrees over [-180, 180)); the continuous angle is the
softmax expectation over bin centres (decoded by the pipeline, not in the ONNX model).

Input ``face``: B x 3 x 448 x 448 RGB face crop, ImageNet mean/std. Outputs
``yaw_bins`` (the head the official code names ``fc_yaw_gaze``, which Gaze360 training
fits to the horizontal angle) and ``pitch_bins`` (``fc_pitch_gaze``), B x 90 logits each.
Official names: torchvision-style ResNet at top level (``conv1``, ``layer1`` ...),
``fc_yaw_gaze``, ``fc_pitch_gaze``, and the unused ``fc_finetune`` (dropped at import).
"""
from __future__ import annotations

from collections import OrderedDict
from pathlib import Path

import torch
from torch import nn

from .._checkpoint import map_state_dict
from ._resnet import Bottleneck, ResNetTrunk

__all__ = ["FAMILY", "MANIFEST", "DROPPED_PREFIXES", "N_BINS", "L2CSNet", "build", "convert_checkpoint",
           "write_official_checkpoint"]

FAMILY = "l2cs"
MANIFEST = "docs/models/l2cs.json"
N_BINS = 90
#: vestigial Linear(2048 + 3, 3) kept in the official checkpoints, never used in forward
DROPPED_PREFIXES = ("fc_finetune.",)
SOURCE_FILES = "Ahmednull/L2CS-Net l2cs/model.py @ 9cd4934, train.py @ 57a3375"
CONTAINER = ("torch.save(model.state_dict()) in a .pkl file (train.py): a flat OrderedDict; `module.` prefixes "
             "stripped if present")


class L2CSNet(ResNetTrunk):
    """ResNet-50 trunk, global average pooling, two 90-bin classification heads."""

    def __init__(self, n_bins: int = N_BINS):
        super().__init__(Bottleneck, (3, 4, 6, 3))
        self.fc_yaw_gaze = nn.Linear(self.out_channels, n_bins)
        self.fc_pitch_gaze = nn.Linear(self.out_channels, n_bins)

    def forward(self, face: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        feat = super().forward(face).mean(dim=(2, 3))
        return self.fc_yaw_gaze(feat), self.fc_pitch_gaze(feat)


def build() -> L2CSNet:
    """The inference network, eval mode, freshly initialised."""
    return L2CSNet().eval()


def convert_checkpoint(obj) -> OrderedDict[str, torch.Tensor]:
    """Official container -> our state dict: unwrap, strip ``module.``, drop ``fc_finetune``."""
    return map_state_dict(obj, L2CSNet().state_dict(), FAMILY, dropped=DROPPED_PREFIXES)


def write_official_checkpoint(model: nn.Module, path: str | Path, seed: int = 0) -> None:
    """Save ``model`` as train.py does: flat state dict with the vestigial ``fc_finetune``."""
    torch.manual_seed(seed)
    sd = OrderedDict(model.state_dict())
    fin = nn.Linear(2048 + 3, 3)
    sd["fc_finetune.weight"], sd["fc_finetune.bias"] = fin.weight.detach(), fin.bias.detach()
    torch.save(sd, path)
