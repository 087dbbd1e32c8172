"""Crop rules (methods.md) and the spec-driven tensor conversion."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.faces import crops
from gaze4hri_bench.specs import get_spec
from gaze4hri_core.errors import Gaze4HRIError

pytestmark = pytest.mark.unit


def _grid(h=400, w=600):
    """Image whose pixel (y, x) encodes its own coordinates (R = x mod 256, G = y mod 256)."""
    yy, xx = np.mgrid[0:h, 0:w]
    return np.stack([xx % 256, yy % 256, np.full_like(xx, 200)], axis=2).astype(np.uint8)


def test_head_rule_regions():
    head = np.array([100.0, 50.0, 200.0, 170.0])  # w 100, h 120 -> max 120
    assert np.allclose(crops.rule_square(head, "mcgaze_head_square", "head"), [150 - 96, 110 - 96, 150 + 96, 110 + 96])
    s = 0.9 * 120
    assert np.allclose(
        crops.rule_square(head, "gat_head_box", "head"),
        [150 - s / 2, 50 + 0.09 * 120, 150 + s / 2, 50 + 0.09 * 120 + s],
    )
    face = np.array([100.0, 100.0, 200.0, 200.0])
    hb = crops.head_box_from_face(face)
    assert np.allclose(hb, [85, 55, 215, 210])  # 1.3 w wide, +0.45 h above, +0.10 h below
    assert np.allclose(crops.rule_square(face, "gat_head_box"), crops.rule_square(hb, "gat_head_box", "head"))


def test_crop_samples_the_right_pixels_and_pads_black():
    img = _grid()
    p = crops.crop(img, [100, 50, 200, 170], "mcgaze_head_square", 192, box_kind="head")  # 192 px square -> 1 px/px
    assert p.shape == (192, 192, 3)
    assert p[0, 0, 0] == (150 - 96) % 256 and p[0, 0, 1] == (110 - 96) % 256
    assert p[191, 191, 0] == (150 + 95) % 256
    # a box at the image corner: GaT's square is black outside the image
    q = crops.crop(img, [-30, -30, 10, 10], "gat_head_box", 64, box_kind="head")
    assert (q[0, 0] == 0).all() and q[-1, -1, 2] == 200


def test_mcgaze_crop_is_cut_at_the_border_and_keeps_its_aspect_ratio():
    """MCGaze's demo slices the square out of the image (cut at its edges) and its test
    pipeline resizes with the aspect ratio kept, long side 448 (mmcv imrescale), here
    re-derived step by step for a head at the top border."""
    import cv2

    img = _grid(360, 640)
    box = [300.0, 10.0, 380.0, 110.0]  # head box: centre (340, 60), half side int(0.8 * 100) = 80
    p = crops.crop(img, box, "mcgaze_head_square", 448, box_kind="head")
    part = img[0:140, 260:420]  # rows max(0, 60 - 80):60 + 80, cols 340 - 80:340 + 80
    h, w = int(140 * 448 / 160 + 0.5), 448
    assert p.shape == (h, w, 3) == (392, 448, 3)
    np.testing.assert_array_equal(p, cv2.resize(part, (w, h), interpolation=cv2.INTER_LINEAR))
    # inside the image the square is the whole patch, resized like the official one too
    inside = crops.crop(img, [300.0, 100.0, 380.0, 200.0], "mcgaze_head_square", 448, box_kind="head")
    np.testing.assert_array_equal(inside, cv2.resize(img[70:230, 260:420], (448, 448), interpolation=cv2.INTER_LINEAR))
    assert crops.keep_ratio_size(140, 160, 448) == (392, 448) and crops.keep_ratio_size(300, 100, 448) == (448, 149)
    # padding happens after normalisation: zeros, the mean colour
    x = crops.pad_tensor(np.ones((3, 392, 448), np.float32), 448)
    assert x.shape == (3, 448, 448) and x[:, :392].min() == 1 and not x[:, 392:].any()


def test_l2cs_face_box_resizes_224_then_size():
    img = _grid()
    p = crops.crop(img, [100.0, 80.0, 212.0, 240.0], "l2cs_face_box", 448)
    assert p.shape == (448, 448, 3)
    # the box itself, no margin, anisotropic: left column ~ x = 100, top row ~ y = 80
    assert abs(int(p[2, 0, 0]) - 100) <= 1 and abs(int(p[0, 2, 1]) - 80) <= 1
    assert abs(int(p[-1, -1, 0]) - 211) <= 1 and abs(int(p[-1, -1, 1]) - 239) <= 1
    # a box past the image edge is clamped like the demo's slicing (no black border)
    q = crops.crop(img, [550.0, 300.0, 650.0, 450.0], "l2cs_face_box", 224)
    assert q[-1, -1, 2] == 200 and abs(int(q[-1, -1, 0]) - 599 % 256) <= 1


def test_errors():
    with pytest.raises(Gaze4HRIError, match="did you mean gat_head_box"):
        crops.crop(_grid(), [0, 0, 10, 10], "gat_head", 224)
    with pytest.raises(ValueError, match="invalid box"):
        crops.crop(_grid(), [10, 10, 5, 20], "gat_head_box", 224)


def test_to_tensor_follows_spec():
    patch = np.zeros((4, 4, 3), np.uint8)
    patch[..., 0], patch[..., 1], patch[..., 2] = 255, 0, 51  # RGB
    bgr = crops.to_tensor(patch, get_spec("puregaze_eth"))  # BGR, [0, 1], no mean/std
    assert bgr.dtype == np.float32 and bgr.shape == (3, 4, 4)
    assert np.allclose(bgr[:, 0, 0], [0.2, 0.0, 1.0])
    l2 = crops.to_tensor(patch, get_spec("l2cs_gaze360"))  # RGB, ImageNet mean/std
    assert np.allclose(l2[:, 0, 0], [(1 - 0.485) / 0.229, (0 - 0.456) / 0.224, (0.2 - 0.406) / 0.225], atol=1e-6)
    mc = crops.to_tensor(patch, get_spec("mcgaze_gaze360"))  # mmdet mean/std on 0-255
    assert np.allclose(mc[:, 0, 0], [(255 - 123.675) / 58.395, (0 - 116.28) / 57.12, (51 - 103.53) / 57.375], atol=1e-5)
    assert mc.flags.c_contiguous


@pytest.mark.parametrize("method", ["puregaze_eth", "l2cs_gaze360", "mcgaze_gaze360", "gazetr_eth", "gat_gaze360"])
def test_to_tensor_table_path_is_the_arithmetic_bit_for_bit(method):
    """The uint8 table path (cv2.LUT per plane) against the float32 arithmetic it replaces,
    for every value of every channel, on a contiguous patch and on a strided view."""
    spec = get_spec(method)
    rng = np.random.default_rng(7)
    patch = rng.integers(0, 256, (64, 48, 3), dtype=np.uint8)
    patch[0, :3] = [[0, 0, 0], [255, 255, 255], [1, 128, 254]]
    ramp = np.repeat(np.arange(256, dtype=np.uint8).reshape(16, 16, 1), 3, axis=2)
    for p in (patch, patch[1::2, ::3], ramp):
        got = crops.to_tensor(p, spec)
        want = crops._to_tensor_arith(p, getattr(spec, "colour", "rgb") == "bgr", spec.mean, spec.std)
        assert got.dtype == np.float32 and got.flags.c_contiguous and got.shape == want.shape
        assert np.array_equal(got, want)
    f = crops.to_tensor(patch.astype(np.float32), spec)  # not uint8: the arithmetic itself
    assert np.array_equal(f, crops.to_tensor(patch, spec))
