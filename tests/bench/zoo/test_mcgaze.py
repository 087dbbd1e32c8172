"""MCGaze network (zoo/nets/mcgaze.py): official state-dict layout, RoIAlign and box
semantics against independent references, clip-level properties of the query stages,
official-checkpoint import, and ONNX export with ONNX Runtime parity."""
from __future__ import annotations

import copy
import json
import math

import numpy as np
import pytest
import torch
from gaze4hri_bench.specs import SPECS
from gaze4hri_bench.zoo.nets import mcgaze
from gaze4hri_bench.zoo.nets._mcgaze_head import delta2bbox
from gaze4hri_bench.zoo.nets._roi_align import map_roi_levels, multilevel_roi_align, roi_align_level
from gaze4hri_core.errors import Gaze4HRIError

SPEC = SPECS["mcgaze_gaze360"]


@pytest.fixture(scope="module")
def manifest(repo_root):
    return json.loads((repo_root / mcgaze.MANIFEST).read_text())


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return mcgaze.build()


# --- independent enumeration of the official names, from the config numbers -----------------

def _official_from_config() -> list[tuple[str, tuple[int, ...]]]:
    """Names/shapes of the official MultiClueGaze state dict, written from the mmdet config
    (ResNet-50 'pytorch', FPN 4 outs, FixedEmbeddingRPNHead(3), 4 x GazeSTQIHead, 4 x GazeHead)."""
    out = []

    def bn(p, c):
        out.extend([(p + ".weight", (c,)), (p + ".bias", (c,)), (p + ".running_mean", (c,)),
                    (p + ".running_var", (c,)), (p + ".num_batches_tracked", ())])

    out.append(("backbone.conv1.weight", (64, 3, 7, 7)))
    bn("backbone.bn1", 64)
    cin = 64
    for li, (w, n) in enumerate([(64, 3), (128, 4), (256, 6), (512, 3)], 1):
        for b in range(n):
            p = f"backbone.layer{li}.{b}"
            out.append((p + ".conv1.weight", (w, cin, 1, 1)))
            bn(p + ".bn1", w)
            out.append((p + ".conv2.weight", (w, w, 3, 3)))
            bn(p + ".bn2", w)
            out.append((p + ".conv3.weight", (4 * w, w, 1, 1)))
            bn(p + ".bn3", 4 * w)
            if b == 0:
                out.append((p + ".downsample.0.weight", (4 * w, cin, 1, 1)))
                bn(p + ".downsample.1", 4 * w)
            cin = 4 * w
    for i, c in enumerate([256, 512, 1024, 2048]):
        out += [(f"neck.lateral_convs.{i}.conv.weight", (256, c, 1, 1)), (f"neck.lateral_convs.{i}.conv.bias", (256,))]
    for i in range(4):
        out += [(f"neck.fpn_convs.{i}.conv.weight", (256, 256, 3, 3)), (f"neck.fpn_convs.{i}.conv.bias", (256,))]
    out += [("rpn_head.init_proposal_bboxes.weight", (3, 4)), ("rpn_head.init_proposal_features.weight", (3, 256))]

    def lin(p, o, i, bias=True):
        out.append((p + ".weight", (o, i)))
        if bias:
            out.append((p + ".bias", (o,)))

    def ln(p):
        out.extend([(p + ".weight", (256,)), (p + ".bias", (256,))])

    for s in range(4):
        p = f"roi_head.bbox_head.{s}"
        lin(p + ".fc_cls", 4, 256 * 49)  # mmdet BBoxHead: num_classes + 1 over the flattened RoI
        lin(p + ".fc_reg", 4, 256 * 49)
        out += [(p + ".attention.attn.in_proj_weight", (768, 256)), (p + ".attention.attn.in_proj_bias", (768,))]
        lin(p + ".attention.attn.out_proj", 256, 256)
        ln(p + ".attention_norm")
        lin(p + ".instance_interactive_conv.dynamic_layer", 2 * 256 * 64, 256)
        out += [
            (p + ".instance_interactive_conv.norm_in.weight", (64,)),
            (p + ".instance_interactive_conv.norm_in.bias", (64,)),
        ]
        ln(p + ".instance_interactive_conv.norm_out")
        lin(p + ".instance_interactive_conv.fc_layer", 256, 256 * 49)
        ln(p + ".instance_interactive_conv.fc_norm")
        ln(p + ".instance_interactive_conv_norm")
        lin(p + ".ffn.layers.0.0", 2048, 256)
        lin(p + ".ffn.layers.1", 256, 2048)
        ln(p + ".ffn_norm")
        lin(p + ".cls_fcs.0", 256, 256, bias=False)
        ln(p + ".cls_fcs.1")
        for clue in ("face", "eyes", "head"):
            lin(p + f".{clue}_fc_cls", 1, 256)
        for j in range(3):
            lin(p + f".reg_fcs.{3 * j}", 256, 256, bias=False)
            ln(p + f".reg_fcs.{3 * j + 1}")
        for clue in ("face", "eyes", "head"):
            lin(p + f".{clue}_fc_reg", 4, 256)
    for s in range(4):
        p = f"roi_head.gaze_head.{s}"
        for clue in ("face", "eyes", "head"):
            for j in range(2):
                lin(p + f".gaze_{clue}_fcs.{3 * j}", 256, 256, bias=False)
                ln(p + f".gaze_{clue}_fcs.{3 * j + 1}")
        for clue in ("face", "eyes", "head"):
            lin(p + f".fc_{clue}_confidence", 3, 256)
        for clue in ("face", "eyes", "head"):
            for j in range(2):
                lin(p + f".gaze_{clue}_confidence.{3 * j}", 256, 256, bias=False)
                ln(p + f".gaze_{clue}_confidence.{3 * j + 1}")
        for clue in ("face", "eyes", "head"):
            lin(p + f".fc_{clue}", 3, 256)
        lin(p + ".fc_gaze", 3, 9)
    return out


@pytest.mark.unit
def test_official_layout_matches_config_and_manifest(manifest):
    official = _official_from_config()
    assert mcgaze.official_shapes() == official
    recorded = [(n, tuple(s)) for n, s in manifest["tensors"]]
    dropped = [(n, tuple(s)) for n, s in manifest["dropped"]]
    assert [x for x in official if x not in dropped] == recorded
    assert sorted(recorded + dropped) == sorted(official)
    assert all(mcgaze.DROPPED_PATTERN.search(n) for n, _ in dropped)
    assert not any(mcgaze.DROPPED_PATTERN.search(n) for n, _ in recorded)


@pytest.mark.unit
def test_state_dict_equals_manifest(model, manifest):
    ours = [(k, list(v.shape)) for k, v in model.state_dict().items()]
    assert ours == [(n, s) for n, s in manifest["tensors"]]
    assert manifest["n_tensors"] == len(ours) == 542
    assert manifest["n_parameters"] == sum(p.numel() for p in model.parameters())


# --- RoIAlign against a literal port of mmcv's CPU kernel --------------------------------------


def _mmcv_roi_align_ref(feat: np.ndarray, box, scale: float, out: int = 7, ratio: int = 2) -> np.ndarray:
    """mmcv roi_align_forward_cpu (aligned=True, avg), one box, loops over samples."""
    c, h, w = feat.shape
    x1, y1, x2, y2 = (v * scale - 0.5 for v in box)
    bw, bh = (x2 - x1) / out, (y2 - y1) / out
    res = np.zeros((c, out, out))

    def bilinear(y, x):
        if y < -1.0 or y > h or x < -1.0 or x > w:
            return np.zeros(c)
        y, x = max(y, 0.0), max(x, 0.0)
        yl, xl = int(y), int(x)
        if yl >= h - 1:
            yh = yl = h - 1
            y = float(yl)
        else:
            yh = yl + 1
        if xl >= w - 1:
            xh = xl = w - 1
            x = float(xl)
        else:
            xh = xl + 1
        ly, lx = y - yl, x - xl
        hy, hx = 1 - ly, 1 - lx
        return (
            hy * hx * feat[:, yl, xl]
            + hy * lx * feat[:, yl, xh]
            + ly * hx * feat[:, yh, xl]
            + ly * lx * feat[:, yh, xh]
        )

    for ph in range(out):
        for pw in range(out):
            acc = np.zeros(c)
            for iy in range(ratio):
                yy = y1 + ph * bh + (iy + 0.5) * bh / ratio
                for ix in range(ratio):
                    xx = x1 + pw * bw + (ix + 0.5) * bw / ratio
                    acc += bilinear(yy, xx)
            res[:, ph, pw] = acc / (ratio * ratio)
    return res


@pytest.mark.unit
def test_roi_align_matches_mmcv_kernel():
    g = torch.Generator().manual_seed(3)
    feat = torch.randn(2, 3, 13, 17, generator=g, dtype=torch.float64)
    boxes = torch.tensor(
        [
            [
                [4.0, 8.0, 40.0, 30.0],
                [-10.0, -6.0, 20.0, 12.0],
                [50.0, 30.0, 80.0, 60.0],
            ],  # inside, over the top-left, past the bottom-right
            [
                [0.0, 0.0, 68.0, 52.0],
                [33.0, 21.0, 33.5, 21.2],
                [-30.0, -30.0, -2.0, -1.0],
            ],  # whole map, tiny, fully outside
        ],
        dtype=torch.float64,
    )
    got = roi_align_level(feat, boxes, 0.25).numpy()
    for n in range(2):
        for p in range(3):
            ref = _mmcv_roi_align_ref(feat[n].numpy(), boxes[n, p].tolist(), 0.25)
            np.testing.assert_allclose(got[n, p], ref, atol=1e-10, err_msg=f"box {n},{p}")


@pytest.mark.unit
def test_roi_level_rule_and_multilevel_pick():
    # FPN level: floor(log2(sqrt(wh)/56 + 1e-6)), clamped to 0..3
    sides = torch.tensor([50.0, 111.9, 112.0, 223.0, 224.0, 448.0, 1000.0])
    boxes = torch.stack([torch.zeros_like(sides), torch.zeros_like(sides), sides, sides], -1)[None]
    assert map_roi_levels(boxes, 4)[0].tolist() == [0, 0, 1, 1, 2, 3, 3]
    g = torch.Generator().manual_seed(4)
    feats = [torch.randn(1, 2, 64 // s, 64 // s, generator=g) for s in (4, 8, 16, 32)]
    b = torch.tensor([[[0.0, 0.0, 60.0, 60.0], [8.0, 8.0, 30.0, 40.0], [0.0, 0.0, 130.0, 130.0]]])
    got = multilevel_roi_align(feats, b, (4, 8, 16, 32))
    for p, lvl in enumerate([0, 0, 1]):
        ref = roi_align_level(feats[lvl], b[:, p : p + 1], 1.0 / (4, 8, 16, 32)[lvl])[0, 0]
        torch.testing.assert_close(got[p], ref)


@pytest.mark.unit
def test_delta2bbox_matches_mmdet_docstring_example():
    # mmdet delta2bbox docstring (stds 1): roi (0,0,1,1) + (1,1,1,1) -> (0.1409, 0.1409, 2.8591, 2.8591);
    # our coder has stds (0.5, 0.5, 1, 1), so the centre deltas are doubled to give the same box.
    rois = torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0]])
    deltas = torch.tensor([[0.0, 0.0, 0.0, 0.0], [2.0, 2.0, 1.0, 1.0]])
    out = delta2bbox(rois, deltas)
    torch.testing.assert_close(
        out, torch.tensor([[0.0, 0.0, 1.0, 1.0], [0.1409, 0.1409, 2.8591, 2.8591]]), atol=1e-4, rtol=0
    )
    # width/height log-ratio is clamped at |log(16/1000)|, centre shifts are not
    big = delta2bbox(rois[:1], torch.tensor([[0.0, 0.0, 10.0, -10.0]]))
    w = big[0, 2] - big[0, 0]
    assert math.isclose(float(w), 1000 / 16, rel_tol=1e-5)


@pytest.mark.unit
def test_proposals_are_scaled_learned_boxes(model):
    boxes = model.rpn_head.boxes(448, 448)
    # init_weights: cx = cy = 0.5, w = h = 1 -> the whole image
    torch.testing.assert_close(boxes, torch.tensor([[0.0, 0.0, 448.0, 448.0]] * 3))


# --- clip-level properties on small frames (the network is fully convolutional up to RoIAlign)


@pytest.fixture(scope="module")
def small_model(model):
    m = copy.deepcopy(model)
    with torch.no_grad():  # distinct face / eyes / head boxes (cx, cy, w, h)
        m.rpn_head.init_proposal_bboxes.weight.copy_(
            torch.tensor([[0.5, 0.55, 0.6, 0.6], [0.5, 0.45, 0.5, 0.2], [0.5, 0.5, 0.95, 0.95]])
        )
    return m


PERM = torch.tensor([6, 2, 0, 5, 1, 3, 4])


@pytest.fixture(scope="module")
def small_clips(small_model):
    """One batch: clip a, clip b, a with its frames permuted, a with frame 0 mirrored."""
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(2, 7, 3, 64, 64, generator=g)
    a_mod = a.clone()
    a_mod[0] = torch.flip(a_mod[0], dims=[-1])
    x = torch.stack([a, b, a[PERM], a_mod])
    with torch.no_grad():
        y = small_model(x)
    return x, y


@pytest.mark.unit
def test_forward_shape_and_unit_norm(small_clips):
    x, y = small_clips
    assert y.shape == (4, 7, 3)
    torch.testing.assert_close(y.norm(dim=-1), torch.ones(4, 7))


@pytest.mark.unit
def test_frames_interact_within_a_clip_only(small_model, small_clips):
    """Temporal attention mixes the frames of a clip and has no position code (official
    GazeSTQIHead), so a frame permutation permutes the outputs; clips do not interact."""
    x, y = small_clips
    torch.testing.assert_close(y[2], y[0][PERM], atol=1e-4, rtol=0)
    assert (y[3, 3] - y[0, 3]).abs().max() > 1e-3  # the centre frame sees frame 0
    with torch.no_grad():
        alone = small_model(x[1:2])
    torch.testing.assert_close(alone[0], y[1], atol=1e-4, rtol=0)  # same result without the other clips


@pytest.mark.unit
def test_absent_frames_give_the_shorter_clip(small_model, small_clips):
    """frame_hw height 0 leaves a frame out of the temporal attention: the present frames
    get exactly what the official shorter clip gives them (a video under 7 frames; the
    study's first causal windows), wherever the absent positions lie."""
    x, y = small_clips
    full = torch.full((1, 7, 2), 64.0)
    for present in ([0, 1, 2, 3], [3, 4, 5, 6], [0, 2, 6]):
        hw = torch.zeros(1, 7, 2)
        hw[0, present] = 64.0
        with torch.no_grad():
            masked = small_model(x[:1], hw)
            short = small_model(x[:1, present])
        torch.testing.assert_close(masked[0, present], short[0], atol=1e-5, rtol=0)
        assert (masked[0, present] - y[0, present]).abs().max() > 1e-3  # the absent frames did count before
    with torch.no_grad():
        torch.testing.assert_close(small_model(x[:1], full), y[:1], atol=1e-5, rtol=0)  # all present: unchanged


@pytest.mark.unit
def test_proposals_follow_each_frames_image_size(small_model, small_clips):
    """The learned boxes scale with each frame's image (the official img_shape of a crop
    cut at the border), not with the padded input."""
    b = small_model.rpn_head.frame_boxes(torch.tensor([[64.0, 64.0], [40.0, 64.0]]))
    torch.testing.assert_close(b[0], small_model.rpn_head.boxes(64, 64))
    torch.testing.assert_close(b[1], small_model.rpn_head.boxes(40, 64))
    torch.testing.assert_close(b[1][:, [0, 2]], b[0][:, [0, 2]])
    torch.testing.assert_close(b[1][:, [1, 3]], b[0][:, [1, 3]] * 40 / 64)
    x, y = small_clips
    hw = torch.full((1, 7, 2), 64.0)
    hw[0, 2, 0] = 40.0
    with torch.no_grad():
        cut = small_model(x[:1], hw)
    assert (cut[0, 2] - y[0, 2]).abs().max() > 1e-3
    with pytest.raises(Gaze4HRIError, match="frame_hw"):
        small_model(x[:1], torch.zeros(1, 7))


@pytest.mark.unit
def test_bad_input_shape_raises(model):
    with pytest.raises(Gaze4HRIError, match="clip tensor"):
        model(torch.zeros(7, 3, 64, 64))


# --- official checkpoint import -------------------------------------------------------------


@pytest.fixture(scope="module")
def official_file(model, tmp_path_factory):
    path = tmp_path_factory.mktemp("mcgaze") / "multiclue_gaze_r50_l2cs.pth"
    mcgaze.write_official_checkpoint(model, path)
    return path


@pytest.mark.replay
def test_convert_official_checkpoint(model, official_file, manifest):
    obj = torch.load(official_file, map_location="cpu", weights_only=True)
    assert set(obj) == {"meta", "state_dict"}
    assert [(k, tuple(v.shape)) for k, v in obj["state_dict"].items()] == mcgaze.official_shapes()
    sd, dropped = mcgaze.split_checkpoint(obj)
    assert dropped == [n for n, _ in manifest["dropped"]]
    with torch.device("meta"):
        fresh = mcgaze.MCGaze()
    fresh.load_state_dict(mcgaze.convert_checkpoint(obj), strict=True, assign=True)
    for k, v in model.state_dict().items():
        assert torch.equal(fresh.state_dict()[k], v), k
    # DataParallel prefix is accepted too
    wrapped = {"state_dict": {"module." + k: v for k, v in obj["state_dict"].items()}}
    assert list(mcgaze.convert_checkpoint(wrapped)) == list(sd)


@pytest.mark.replay
def test_bad_checkpoints_name_the_keys(official_file):
    obj = torch.load(official_file, map_location="cpu", weights_only=True)
    sd = dict(obj["state_dict"])
    sd.pop("roi_head.bbox_head.2.ffn.layers.1.weight")
    with pytest.raises(Gaze4HRIError, match=r"1 missing \(roi_head\.bbox_head\.2\.ffn\.layers\.1\.weight\)"):
        mcgaze.convert_checkpoint({"state_dict": sd})
    sd = dict(obj["state_dict"])
    sd["neck.fpn_convs.0.conv.weight"] = torch.zeros(128, 256, 3, 3)
    sd["roi_head.extra.weight"] = torch.zeros(1)
    with pytest.raises(
        Gaze4HRIError, match=r"unexpected \(roi_head\.extra\.weight\).*wrong shape \(neck\.fpn_convs\.0"
    ):
        mcgaze.convert_checkpoint({"state_dict": sd})
    sd = {k: v for k, v in obj["state_dict"].items() if not k.endswith("num_batches_tracked")}
    assert int(mcgaze.convert_checkpoint({"state_dict": sd})["backbone.bn1.num_batches_tracked"]) == 0
    with pytest.raises(Gaze4HRIError, match="no MCGaze state dict"):
        mcgaze.convert_checkpoint({"meta": {}, "optimizer": {}})


# --- ONNX export and ONNX Runtime parity ----------------------------------------------------


@pytest.mark.replay
@pytest.mark.long  # the MCGaze export (tests/bench/zoo/conftest.py HEAVY_EXPORT)
def test_onnx_contract_and_runtime_parity(zoo_imported):
    """The ONNX model `models import` exported (the session's one MCGaze export,
    tests/bench/zoo/conftest.py) against the network written into the checkpoint."""
    imp = zoo_imported("mcgaze")
    model, onnx_file = imp.model, imp.onnx
    import onnx
    import onnxruntime as ort

    m = onnx.load(str(onnx_file))
    dims = lambda vi: tuple(d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim)  # noqa: E731
    assert {i.name: dims(i) for i in m.graph.input} == SPEC.onnx_inputs
    assert {o.name: dims(o) for o in m.graph.output} == SPEC.onnx_outputs
    assert max(op.version for op in m.opset_import if op.domain in ("", "ai.onnx")) == 17
    # traced at batch 1, run at batch 2: the batch axis is dynamic
    g = torch.Generator().manual_seed(7)
    x = torch.randn(2, 7, 3, 448, 448, generator=g)
    hw = torch.full((2, 7, 2), 448.0)
    hw[0, 1, 0] = 300.0  # a frame cut at the image border
    hw[1, 5:] = 0.0  # two absent frames (a shorter clip)
    sess = ort.InferenceSession(str(onnx_file), providers=["CPUExecutionProvider"])
    got = sess.run(["gaze"], {"clip": x.numpy(), "frame_hw": hw.numpy()})[0]
    with torch.no_grad():
        ref = model(x, hw).numpy()
        short = model(x[1:, :5]).numpy()
    np.testing.assert_allclose(got[1, :5], short[0], atol=1e-4)  # the exported mask is the shorter clip
    # dynamic image axes: a clip cut at the border, padded to 320 x 448 as the official collate does
    hw_cut = torch.tensor([[[300.0, 448.0]] * 7])
    got_cut = sess.run(["gaze"], {"clip": x[:1, :, :, :320].numpy(), "frame_hw": hw_cut.numpy()})[0]
    with torch.no_grad():
        ref_cut = model(x[:1, :, :, :320].contiguous(), hw_cut).numpy()
    assert np.abs(got_cut - ref_cut).max() < 1e-4
    assert got.shape == (2, 7, 3)
    assert np.abs(got - ref).max() < 1e-4
    np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, atol=1e-5)


@pytest.mark.replay
def test_import_tells_the_two_official_checkpoints_apart(model, official_file, tmp_path):
    """Same architecture and keys, two test pipelines: the L2CS-setting file (448 px, the
    spec's and the study's) is accepted; the Gaze360-setting file (CenterCrop 0.68, 224 px)
    is refused in one line naming the file to import, by its mmcv config or its name."""
    from gaze4hri_bench.zoo.manage import import_checkpoint

    obj = torch.load(official_file, map_location="cpu", weights_only=True)
    assert (
        mcgaze.checkpoint_setting(obj, official_file) == "l2cs" and mcgaze.check_checkpoint(obj, official_file) is None
    )
    g360 = {
        "meta": {
            **obj["meta"],
            "config": "test_pipeline = [dict(type='CenterCrop', crop_size=(0.68, 0.68)), "
            "dict(type='Resize', img_scale=(224, 224), keep_ratio=True)]",
        },
        "state_dict": obj["state_dict"],
    }
    bare = tmp_path / "multiclue_gaze_r50_gaze360.pth"
    torch.save({"state_dict": obj["state_dict"]}, str(bare))
    for o, path in ((g360, tmp_path / "renamed.pth"), (torch.load(bare, map_location="cpu", weights_only=True), bare)):
        assert mcgaze.checkpoint_setting(o, path) == "gaze360"
        with pytest.raises(Gaze4HRIError, match="Gaze360-setting checkpoint.*import multiclue_gaze_r50_l2cs.pth"):
            mcgaze.check_checkpoint(o, path)
    with pytest.raises(Gaze4HRIError, match="Gaze360-setting"):  # the import command refuses it before any export
        import_checkpoint("mcgaze_gaze360", bare, tmp_path / "models", quiet=True)
    assert not (tmp_path / "models" / "mcgaze_gaze360.onnx").exists()
    assert "cannot tell" in mcgaze.check_checkpoint({"state_dict": {}}, tmp_path / "weights.pth")
