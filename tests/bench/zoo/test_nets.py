"""PureGaze, GazeTR-Hybrid and L2CS-Net networks against independent references:
published parameter counts, PyTorch's own multi-head attention, the head order of the
official forward, and the key mapping of every official container variant."""
from __future__ import annotations

import argparse
from collections import OrderedDict

import pytest

torch = pytest.importorskip("torch")

from gaze4hri_bench.specs import SPECS  # noqa: E402
from gaze4hri_bench.zoo._checkpoint import load_checkpoint, map_state_dict  # noqa: E402
from gaze4hri_bench.zoo.export import example_inputs  # noqa: E402
from gaze4hri_bench.zoo.manifests import official_layout  # noqa: E402
from gaze4hri_bench.zoo.nets import _resnet, gazetr, l2cs, puregaze  # noqa: E402
from gaze4hri_core.errors import Gaze4HRIError  # noqa: E402

pytestmark = pytest.mark.unit

# torchvision documents ResNet-18 / ResNet-50 (IMAGENET1K_V1) with 11,689,512 / 25,557,032
# parameters, including the 1000-way classifier (512*1000 + 1000 / 2048*1000 + 1000).
RESNET18_TRUNK = 11_689_512 - (512 * 1000 + 1000)
RESNET50_TRUNK = 25_557_032 - (2048 * 1000 + 1000)


@pytest.fixture(scope="module")
def layout():
    """family module -> its official flat state dict (built once per module)."""
    cache: dict = {}

    def get(mod):
        if mod.FAMILY not in cache:
            cache[mod.FAMILY] = official_layout(mod)
        return dict(cache[mod.FAMILY])

    return get


def n_params(m: torch.nn.Module) -> int:
    return sum(p.numel() for p in m.parameters())


def test_trunk_parameter_counts_match_published_resnets():
    assert n_params(_resnet.resnet18_trunk()) == RESNET18_TRUNK
    assert n_params(_resnet.resnet50_trunk()) == RESNET50_TRUNK


def test_family_parameter_counts():
    assert n_params(puregaze.build()) == RESNET50_TRUNK + 2048 * 2 + 2
    assert n_params(l2cs.build()) == RESNET50_TRUNK + 2 * (2048 * 90 + 90)
    per_layer = (3 * 32 * 32 + 3 * 32) + (32 * 32 + 32) + (32 * 512 + 512) + (512 * 32 + 32) + 2 * 2 * 32
    head = (512 * 32 + 32) + 2 * 32  # 1x1 conv with bias + BN affine
    assert n_params(gazetr.build()) == RESNET18_TRUNK + head + 6 * per_layer + 2 * 32 + 32 + 50 * 32 + (32 * 2 + 2)


def test_puregaze_reconstruction_branch_rebuilds_a_224_face():
    """The training-only branch described in the manifest maps the 7x7x2048 feature of a
    224 face back to a 3x224x224 image (PureGaze Sec. 3.3), so its shapes are coherent."""
    branch = puregaze.training_only_branch().eval()
    with torch.no_grad():
        img = branch.deconv(torch.zeros(1, 2048, 7, 7))
    assert img.shape == (1, 3, 224, 224)


def _reference_gazetr_layer(ours: torch.nn.Module, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
    """The official layer recomposed from torch.nn.MultiheadAttention (sequence-first),
    loaded with our layer's weights: attention(q=k=x+pos, v=x), post-norm, ReLU FFN."""
    sd = ours.state_dict()
    mha = torch.nn.MultiheadAttention(32, 8)
    mha.load_state_dict({k.removeprefix("self_attn."): v for k, v in sd.items() if k.startswith("self_attn.")})
    mha.eval()
    lin1, lin2 = torch.nn.Linear(32, 512), torch.nn.Linear(512, 32)
    n1, n2 = torch.nn.LayerNorm(32), torch.nn.LayerNorm(32)
    for name, mod in (("linear1", lin1), ("linear2", lin2), ("norm1", n1), ("norm2", n2)):
        mod.load_state_dict({k.split(".", 1)[1]: v for k, v in sd.items() if k.startswith(name + ".")})
    src = x.transpose(0, 1)  # L x B x d
    qk = src + pos.transpose(0, 1)
    src = n1(src + mha(qk, qk, value=src, need_weights=False)[0])
    src = n2(src + lin2(torch.relu(lin1(src))))
    return src.transpose(0, 1)


def test_gazetr_encoder_layer_equals_torch_multihead_attention():
    torch.manual_seed(1)
    layer = gazetr._EncoderLayer().eval()
    with torch.no_grad():
        for p in layer.parameters():
            p.add_(0.05 * torch.randn_like(p))
        x, pos = torch.randn(3, 50, 32), torch.randn(1, 50, 32)
        torch.testing.assert_close(layer(x, pos), _reference_gazetr_layer(layer, x, pos), atol=1e-5, rtol=1e-5)


def test_gazetr_position_code_reaches_queries_and_keys_only():
    """With all queries/keys identical (zero Q/K projections) attention is uniform whatever
    the position code: the code must not leak into the values."""
    torch.manual_seed(2)
    layer = gazetr._EncoderLayer().eval()
    with torch.no_grad():
        layer.self_attn.in_proj_weight[:64].zero_()
        layer.self_attn.in_proj_bias[:64].zero_()
        x = torch.randn(2, 50, 32)
        a, b = layer(x, torch.zeros(1, 50, 32)), layer(x, 10 * torch.randn(1, 50, 32))
    torch.testing.assert_close(a, b)


def test_gazetr_position_index_is_a_device_free_buffer():
    m = gazetr.build()
    assert "positions" not in m.state_dict()  # official keys only
    assert dict(m.named_buffers())["positions"].tolist() == list(range(50))
    with torch.no_grad():
        out = m(torch.rand(1, 3, 224, 224))  # CPU: the official CUDA-only arange would fail here
    assert out.shape == (1, 2)


def test_gazetr_reads_the_learned_token():
    """Only token 0 feeds the regressor: changing the learned token changes the output."""
    m = gazetr.build()
    x = torch.rand(1, 3, 224, 224)
    with torch.no_grad():
        a = m(x)
        m.cls_token.add_(1.0)
        b = m(x)
    assert not torch.allclose(a, b)


def test_l2cs_output_order_is_yaw_head_then_pitch_head():
    m = l2cs.build()
    x = example_inputs(SPECS["l2cs_gaze360"], 1)[0][:, :, :224, :224]  # fully convolutional: a smaller input suffices
    with torch.no_grad():
        y0, p0 = m(x)
        m.fc_yaw_gaze.bias.add_(torch.arange(90.0))
        y1, p1 = m(x)
    torch.testing.assert_close(y1 - y0, torch.arange(90.0).expand(1, 90))
    torch.testing.assert_close(p1, p0)


CONTAINERS = {
    "flat": lambda sd: sd,
    "dataparallel": lambda sd: OrderedDict(("module." + k, v) for k, v in sd.items()),
    "nested_state_dict": lambda sd: {"epoch": 50, "state_dict": sd, "optimizer": {"lr": 1e-4}},
    "nested_model_dataparallel": lambda sd: {"model": OrderedDict(("module." + k, v) for k, v in sd.items())},
}


@pytest.mark.parametrize("wrap", list(CONTAINERS))
@pytest.mark.parametrize("mod", [puregaze, gazetr, l2cs], ids=lambda m: m.FAMILY)
def test_convert_accepts_every_container_and_keeps_values(mod, wrap, layout):
    official = layout(mod)
    ours = mod.convert_checkpoint(CONTAINERS[wrap](official))
    assert list(ours) == list(mod.build().state_dict())
    for k, v in ours.items():
        assert v is official[k]


def test_missing_batchnorm_counters_are_filled(layout):
    """Checkpoints written before PyTorch 0.4.1 have no num_batches_tracked."""
    official = {k: v for k, v in layout(l2cs).items() if not k.endswith("num_batches_tracked")}
    ours = l2cs.convert_checkpoint(official)
    assert ours["bn1.num_batches_tracked"].item() == 0


@pytest.mark.parametrize(
    "edit, pattern",
    [
        (lambda sd: sd.pop("fc_yaw_gaze.weight"), r"1 missing \(fc_yaw_gaze\.weight\)"),
        (
            lambda sd: sd.update({"fc_roll_gaze.weight": torch.zeros(90, 2048)}),
            r"1 unexpected \(fc_roll_gaze\.weight\)",
        ),
        # L2CS MPIIGaze models have 28 bins: same keys, other shapes
        (
            lambda sd: sd.update({"fc_yaw_gaze.weight": torch.zeros(28, 2048)}),
            r"wrong shape \(fc_yaw_gaze\.weight \[28, 2048\] != \[90, 2048\]\)",
        ),
    ],
    ids=["missing", "unexpected", "wrong-shape"],
)
def test_mismatch_names_the_keys(edit, pattern, layout):
    sd = layout(l2cs)
    edit(sd)
    with pytest.raises(Gaze4HRIError, match=pattern):
        l2cs.convert_checkpoint(sd)


def test_map_state_dict_rejects_containers_without_tensors():
    with pytest.raises(Gaze4HRIError, match="no state dict found"):
        map_state_dict({"meta": {"epoch": 3}}, {"w": torch.zeros(1)}, "toy")


def test_load_checkpoint_needs_trust_for_pickled_objects(tmp_path, capsys):
    """A Lightning-style file with a pickled Namespace: refused, then loaded on request."""
    p = tmp_path / "lightning.ckpt"
    torch.save({"state_dict": {"w": torch.ones(2)}, "hyper_parameters": argparse.Namespace(lr=1e-4)}, p)
    with pytest.raises(Gaze4HRIError, match="--trust-pickle"):
        load_checkpoint(p)
    obj = load_checkpoint(p, trust_pickle=True)
    assert obj["hyper_parameters"].lr == 1e-4
    assert "full unpickling" in capsys.readouterr().err
