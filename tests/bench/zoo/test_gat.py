"""GaT network (zoo/nets/gat.py, _swin3d.py): official state-dict layout, 3D shifted-window
attention against a token-level reference, the official head's resize-and-pool, checkpoint
import (released and Lightning layouts), and ONNX export with ONNX Runtime parity."""
from __future__ import annotations

import copy
import json
import warnings

import numpy as np
import pytest
import torch
from gaze4hri_bench.specs import SPECS
from gaze4hri_bench.zoo.nets import gat
from gaze4hri_bench.zoo.nets._swin3d import SwinBlock3D, relative_position_index
from gaze4hri_core.errors import Gaze4HRIError
from torch import nn

SPEC = SPECS["gat_gaze360"]


@pytest.fixture(scope="module")
def manifest(repo_root):
    return json.loads((repo_root / gat.MANIFEST).read_text())


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    m = gat.build()
    with torch.no_grad():  # non-trivial LayerNorm affine terms, so a wrong norm placement shows
        for mod in m.modules():
            if isinstance(mod, nn.LayerNorm):
                mod.weight.uniform_(0.5, 1.5)
                mod.bias.normal_(0.0, 0.1)
    return m


def _official_from_config() -> list[tuple[str, tuple[int, ...]]]:
    """Released GaT names/shapes written from omnivore_swinT's arguments (patch 2x4x4, embed
    96, depths 2-2-6-2, heads 3-6-12-24, window 8x7x7, qkv bias, patch norm, depth_mode
    summed_rgb_d_tokens) and GaT's MLPHead(num_layers=1, out 3)."""
    p = "encoder.encoder."
    out = [(p + "patch_embed.proj.weight", (96, 3, 2, 4, 4)), (p + "patch_embed.proj.bias", (96,)),
           (p + "patch_embed.norm.weight", (96,)), (p + "patch_embed.norm.bias", (96,)),
           (p + "depth_patch_embed.proj.weight", (96, 1, 2, 4, 4)), (p + "depth_patch_embed.proj.bias", (96,)),
           (p + "depth_patch_embed.norm.weight", (96,)), (p + "depth_patch_embed.norm.bias", (96,))]
    table = (2 * 8 - 1) * (2 * 7 - 1) * (2 * 7 - 1)
    for i, (depth, heads) in enumerate(zip((2, 2, 6, 2), (3, 6, 12, 24), strict=True)):
        c = 96 * 2**i
        for j in range(depth):
            b = f"{p}layers.{i}.blocks.{j}."
            out += [(b + "norm1.weight", (c,)), (b + "norm1.bias", (c,)),
                    (b + "attn.relative_position_bias_table", (table, heads)),
                    (b + "attn.relative_position_index", (392, 392)),
                    (b + "attn.qkv.weight", (3 * c, c)), (b + "attn.qkv.bias", (3 * c,)),
                    (b + "attn.proj.weight", (c, c)), (b + "attn.proj.bias", (c,)),
                    (b + "norm2.weight", (c,)), (b + "norm2.bias", (c,)),
                    (b + "mlp.fc1.weight", (4 * c, c)), (b + "mlp.fc1.bias", (4 * c,)),
                    (b + "mlp.fc2.weight", (c, 4 * c)), (b + "mlp.fc2.bias", (c,))]
        if i < 3:
            out += [
                (f"{p}layers.{i}.downsample.reduction.weight", (2 * c, 4 * c)),
                (f"{p}layers.{i}.downsample.norm.weight", (4 * c,)),
                (f"{p}layers.{i}.downsample.norm.bias", (4 * c,)),
            ]
    out += [
        (p + "norm.weight", (768,)),
        (p + "norm.bias", (768,)),
        ("decoder.gaze.layers.0.weight", (3, 768)),
        ("decoder.gaze.layers.0.bias", (3,)),
    ]
    return out


@pytest.mark.unit
def test_official_layout_matches_config_and_manifest(manifest):
    official = _official_from_config()
    assert gat.official_shapes() == official
    recorded = [(n, tuple(s)) for n, s in manifest["tensors"]]
    dropped = [(n, tuple(s)) for n, s in manifest["dropped"]]
    assert [x for x in official if x not in dropped] == recorded
    assert [n for n, _ in dropped] == [n for n, _ in official if n.startswith(gat.DROPPED_PREFIXES)]


@pytest.mark.unit
def test_state_dict_equals_manifest(model, manifest):
    ours = [(k, list(v.shape)) for k, v in model.state_dict().items()]
    assert ours == [(n, s) for n, s in manifest["tensors"]]
    assert manifest["n_parameters"] == sum(p.numel() for p in model.parameters())


@pytest.mark.unit
def test_relative_position_index_formula():
    idx = relative_position_index((8, 7, 7))
    coords = [(d, h, w) for d in range(8) for h in range(7) for w in range(7)]
    rng = np.random.default_rng(0)
    for i, j in rng.integers(0, len(coords), size=(200, 2)):
        (d1, h1, w1), (d2, h2, w2) = coords[i], coords[j]
        assert idx[i, j] == (d1 - d2 + 7) * 13 * 13 + (h1 - h2 + 6) * 13 + (w1 - w2 + 6)
    assert idx.min() == 0 and idx.max() == 15 * 13 * 13 - 1


def _naive_block(blk: SwinBlock3D, x: torch.Tensor, shift) -> torch.Tensor:
    """Token-level (S)W-MSA block: token i attends to token j iff both fall in the same
    window of the cyclically shifted grid; pairs from different pre-shift regions get -100;
    bias from the full-window (8x7x7) relative index of their in-window positions."""
    _, d, h, w, c = x.shape
    size = np.array([d, h, w])
    win = np.minimum(np.array(blk.window), size)
    shift = np.where(size <= np.array(blk.window), 0, np.array(shift))
    pos = np.stack(np.meshgrid(np.arange(d), np.arange(h), np.arange(w), indexing="ij"), -1).reshape(-1, 3)
    s = (pos - shift) % size  # position on the shifted grid
    win_id = s // win
    local = s % win
    region = np.where(s < size - win, 0, np.where(s < size - shift, 1, 2))
    same_win = (win_id[:, None, :] == win_id[None, :, :]).all(-1)
    same_reg = (region[:, None, :] == region[None, :, :]).all(-1)
    full = np.array([8, 7, 7])
    rel = local[:, None, :] - local[None, :, :] + (full - 1)
    rel_idx = rel[..., 0] * 13 * 13 + rel[..., 1] * 13 + rel[..., 2]
    a = blk.attn
    y = blk.norm1(x).reshape(-1, c)
    q, k, v = a.qkv(y).reshape(-1, 3, a.heads, c // a.heads).permute(1, 2, 0, 3)
    logits = (q * a.scale) @ k.transpose(-2, -1)
    logits = logits + a.relative_position_bias_table[torch.from_numpy(rel_idx)].permute(2, 0, 1)
    logits = logits + torch.from_numpy(np.where(same_reg, 0.0, -100.0)).float()
    logits = logits.masked_fill(~torch.from_numpy(same_win), float("-inf"))
    out = (torch.softmax(logits, -1) @ v).permute(1, 0, 2).reshape(-1, c)
    x = x + a.proj(out).reshape(x.shape)
    return x + blk.mlp(blk.norm2(x))


@pytest.mark.unit
@pytest.mark.parametrize("size,shifted", [((4, 14, 14), True), ((4, 14, 14), False), ((4, 7, 7), True)])
def test_window_attention_matches_token_level_reference(size, shifted):
    torch.manual_seed(1)
    blk = SwinBlock3D(8, 2, (8, 7, 7), (4, 3, 3) if shifted else (0, 0, 0)).eval()
    with torch.no_grad():
        blk.attn.relative_position_bias_table.normal_(0, 1.0)
        x = torch.randn(1, *size, 8)
        got = blk(x)
        ref = _naive_block(blk, x, (4, 3, 3) if shifted else (0, 0, 0))
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=1e-5)


@pytest.mark.unit
@pytest.mark.parametrize("t", [8, 6])
def test_head_resizes_all_three_axes_then_pools(model, t):
    """Official GaT: F.interpolate(x, size=T, trilinear, align_corners=True) with an int
    size resizes (T/2, 7, 7) -> (T, T, T); the spatial mean is then taken on the T x T grid.
    At T = 8 a 7 -> 8 align-corners resize gives every input column weight 8/7, so the
    pooled value equals the plain 7x7 mean; at other T it does not."""
    g = torch.Generator().manual_seed(2)
    feat = torch.randn(1, 768, t // 2, 7, 7, generator=g)

    class Fixed(nn.Module):
        def forward(self, x):
            return feat

    with torch.device("meta"):  # only the head is real
        m = gat.GaT().eval()
    m.decoder = copy.deepcopy(model.decoder)
    m.encoder = Fixed()

    def interp(n_in: int, n_out: int) -> np.ndarray:  # align_corners=True linear weights
        mat = np.zeros((n_out, n_in))
        for o in range(n_out):
            p = o * (n_in - 1) / (n_out - 1)
            lo = min(int(np.floor(p)), n_in - 2)
            mat[o, lo], mat[o, lo + 1] = 1 - (p - lo), p - lo
        return mat

    mt, ms = interp(t // 2, t), interp(7, t)
    f64 = feat[0].double().numpy()
    pooled = np.einsum("td,hy,wx,cdyx->tc", mt, ms, ms, f64) / (t * t)
    lin = model.decoder["gaze"].layers[0]
    g_ref = pooled @ lin.weight.double().detach().numpy().T + lin.bias.double().detach().numpy()
    g_ref /= np.linalg.norm(g_ref, axis=-1, keepdims=True)
    with torch.no_grad():
        got = m(torch.zeros(1, t, 3, 224, 224))[0].double().numpy()
    np.testing.assert_allclose(got, g_ref, atol=1e-5)
    plain = np.einsum("td,cdyx->tc", mt, f64) / 49.0
    if t == 8:
        np.testing.assert_allclose(plain, pooled, atol=1e-12)
    else:
        assert np.abs(plain - pooled).max() > 1e-3


@pytest.mark.unit
def test_bad_input_shape_raises(model):
    with pytest.raises(Gaze4HRIError, match="clip tensor"):
        model(torch.zeros(1, 3, 224, 224))


# --- official checkpoint import -------------------------------------------------------------


@pytest.mark.replay
@pytest.mark.parametrize("prefix", ["", "model."])
def test_convert_official_checkpoint(model, tmp_path, manifest, prefix):
    path = tmp_path / "gat_gaze360.ckpt"
    gat.write_official_checkpoint(model, path, prefix=prefix)
    obj = torch.load(path, map_location="cpu", weights_only=True)
    assert [(k, tuple(v.shape)) for k, v in obj["state_dict"].items()] == [
        (prefix + n, s) for n, s in gat.official_shapes()
    ]
    sd, dropped = gat.split_checkpoint(obj)
    assert dropped == [n for n, _ in manifest["dropped"]]
    with torch.device("meta"):
        fresh = gat.GaT()
    fresh.load_state_dict(sd, strict=True, assign=True)
    for k, v in model.state_dict().items():
        assert torch.equal(fresh.state_dict()[k], v), k


@pytest.mark.replay
def test_bad_checkpoints_name_the_keys(model, tmp_path):
    path = tmp_path / "gat.ckpt"
    gat.write_official_checkpoint(model, path)
    obj = torch.load(path, map_location="cpu", weights_only=True)
    sd = dict(obj["state_dict"])
    sd.pop("decoder.gaze.layers.0.bias")
    sd["encoder.encoder.norm.weight"] = torch.ones(96)
    with pytest.raises(
        Gaze4HRIError,
        match=r"1 missing \(decoder\.gaze\.layers\.0\.bias\).*wrong shape \(encoder\.encoder\.norm\.weight \[96\]",
    ):
        gat.convert_checkpoint({"state_dict": sd})
    sd = dict(obj["state_dict"])
    key = "encoder.encoder.layers.1.blocks.0.attn.relative_position_index"
    sd[key] = relative_position_index((2, 7, 7)).new_zeros(392, 392)
    with pytest.raises(Gaze4HRIError, match="relative_position_index differs"):
        gat.convert_checkpoint({"state_dict": sd})
    with pytest.raises(Gaze4HRIError, match="no GaT state dict"):
        gat.convert_checkpoint({"epoch": 3, "hyper_parameters": {}})


# --- ONNX export and ONNX Runtime parity ----------------------------------------------------


@pytest.mark.replay
@pytest.mark.slow
# the default suite exports GaT through the zoo (tests/bench/zoo/test_families.py: contract, parity);
# this direct export: long tier
@pytest.mark.long
def test_onnx_contract_and_runtime_parity(model, tmp_path):
    import onnx
    import onnxruntime as ort

    path = tmp_path / "gat_gaze360.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.randn(1, 8, 3, 224, 224),),
            str(path),
            input_names=["clip"],
            output_names=["gaze"],
            opset_version=17,
            dynamo=False,
            dynamic_axes={"clip": {0: "B"}, "gaze": {0: "B"}},
        )
    m = onnx.load(str(path))
    dims = lambda vi: tuple(d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim)  # noqa: E731
    assert {i.name: dims(i) for i in m.graph.input} == SPEC.onnx_inputs
    assert {o.name: dims(o) for o in m.graph.output} == SPEC.onnx_outputs
    assert max(op.version for op in m.opset_import if op.domain in ("", "ai.onnx")) == 17
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 8, 3, 224, 224, generator=g)  # traced at 1, run at 2: dynamic batch
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(["gaze"], {"clip": x.numpy()})[0]
    with torch.no_grad():
        ref = model(x).numpy()
    assert got.shape == (2, 8, 3)
    assert np.abs(got - ref).max() < 1e-4
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, atol=1e-5)
