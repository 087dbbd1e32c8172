"""GaT and MCGaze crops (reference profile) against their official pre-processing,
re-derived here step by step from the official code and the libraries it calls (numpy
only; nothing of gaze4hri_bench is used for the reference side):

GaT, idiap/gaze3d @ f2c13de (utils_demo.py:31-48; src/data/components/transforms.py):
  square: x_mid = (x1 + x2) / 2, s = max(w, h) * 0.9, xmin = x_mid - s / 2,
  ymin = y1 + 0.09 max(w, h) written as y1 - s * (-0.1) (42-67), in float64 (99);
  pixels: x, y, w = (xmin + s) - xmin, h truncated towards zero (``.type(torch.int16)``,
  131-132); torchvision 0.16.1 ``crop_image`` (slice + zero padding) then ``resize_image``
  bilinear, align_corners=False, antialias=True (135-143): the triangle filter stretched
  by the scale when shrinking (PyTorch's ``_compute_indices_min_size_weights_aa``: centre
  (i + 0.5) * scale, support max(scale, 1), window [int(c - support + 0.5), int(c +
  support + 0.5)) clipped to the image, weights normalised), rounded.
MCGaze, zgchen33/MCGaze @ b8ce708 (MCGaze_demo/demo.ipynb, lines of the .ipynb file):
  centre ``int(y1 + y2) // 2``, ``int(x1 + x2) // 2`` (171), half side
  ``int(max(h, w) * 0.8)`` of the float box (172), numpy slice cut at the image (173);
  mmcv 1.4.8 ``imrescale`` to (448, 448): each side int(side * scale + 0.5)
  (mmcv/image/geometric.py:16-29, 205-213), ``cv2.resize`` INTER_LINEAR (88-89):
  source x = (i + 0.5) * in / out - 0.5, clamped at the first and last pixel.

The reference resizes are float re-derivations of fixed-point (cv2, PIL) or float32
(torch) kernels: equal within 1 grey level. The image is uniform noise, so a crop one
pixel off differs by tens of grey levels.
"""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.faces import crops

pytestmark = pytest.mark.unit


def _noise(h: int = 300, w: int = 400, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def _boxes(H: int, W: int, n: int, seed: int = 1) -> list[np.ndarray]:
    """Head boxes at float coordinates: inside, across each border, partly outside at a
    corner (cycling through the six kinds)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        w, h = rng.uniform(25, 160), rng.uniform(30, 200)
        x1, y1 = rng.uniform(0, W - w), rng.uniform(0, H - h)
        kind = i % 6
        if kind in (1, 5):  # left, corner
            x1 = rng.uniform(-0.6 * w, 0.2 * w)
        if kind == 2:  # right
            x1 = W - w + rng.uniform(-0.2 * w, 0.6 * w)
        if kind in (3, 5):  # top, corner
            y1 = rng.uniform(-0.6 * h, 0.2 * h)
        if kind == 4:  # bottom
            y1 = H - h + rng.uniform(-0.2 * h, 0.6 * h)
        out.append(np.array([x1, y1, x1 + w, y1 + h]))
    return out


# ------------------------------------------------------------------ GaT, re-derived
def _aa_weights(n_in: int, n_out: int) -> np.ndarray:
    """(n_out, n_in) antialiased bilinear (triangle) weights, align_corners=False."""
    scale = n_in / n_out
    support = max(scale, 1.0)
    Wm = np.zeros((n_out, n_in))
    for i in range(n_out):
        c = (i + 0.5) * scale
        lo, hi = max(int(c - support + 0.5), 0), min(int(c + support + 0.5), n_in)
        j = np.arange(lo, hi)
        wt = np.clip(1.0 - np.abs((j - c + 0.5) / support), 0.0, None)
        Wm[i, lo:hi] = wt / wt.sum()
    return Wm


def _gat_official(img: np.ndarray, box, size: int = 224) -> np.ndarray:
    x1, y1, x2, y2 = (float(v) for v in box)
    s = max(x2 - x1, y2 - y1) * (1 + -0.1)
    xmin = (x1 + x2) / 2 - s / 2
    ymin = y1 - s * -0.1
    left, top = int(xmin), int(ymin)  # int16 cast: towards zero
    width, height = int((xmin + s) - xmin), int((ymin + s) - ymin)
    H, W = img.shape[:2]
    canvas = np.zeros((height, width, 3), float)  # zero padding outside the image
    r0, r1, c0, c1 = max(top, 0), min(top + height, H), max(left, 0), min(left + width, W)
    canvas[r0 - top:r1 - top, c0 - left:c1 - left] = img[r0:r1, c0:c1]
    rows = np.tensordot(_aa_weights(height, size), canvas, axes=(1, 0))  # (size, width, 3)
    out = np.tensordot(rows, _aa_weights(width, size), axes=(1, 1)).transpose(0, 2, 1)
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


# --------------------------------------------------------------- MCGaze, re-derived
def _linear_taps(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    src = (np.arange(n_out) + 0.5) * (n_in / n_out) - 0.5
    i0 = np.floor(src).astype(int)
    f = src - i0
    f[i0 < 0] = 0.0
    i0 = np.clip(i0, 0, n_in - 1)
    f[i0 >= n_in - 1] = 0.0
    return i0, np.minimum(i0 + 1, n_in - 1), f


def _mcgaze_official(img: np.ndarray, box) -> np.ndarray:
    x1, y1, x2, y2 = (float(v) for v in box)
    rows, cols = img.shape[:2]
    cy, cx = int(y1 + y2) // 2, int(x1 + x2) // 2
    half = int(max(y2 - y1, x2 - x1) * 0.8)
    part = img[max(0, cy - half):min(cy + half, rows), max(0, cx - half):min(cx + half, cols)].astype(float)
    h, w = part.shape[:2]
    scale = min(448 / max(h, w), 448 / min(h, w))
    nh, nw = int(h * scale + 0.5), int(w * scale + 0.5)
    a0, a1, fy = _linear_taps(h, nh)
    b0, b1, fx = _linear_taps(w, nw)
    rows_ = part[a0] * (1 - fy)[:, None, None] + part[a1] * fy[:, None, None]
    out = rows_[:, b0] * (1 - fx)[None, :, None] + rows_[:, b1] * fx[None, :, None]
    return np.clip(np.round(out), 0, 255).astype(np.uint8)


def _max_diff(a: np.ndarray, b: np.ndarray) -> int:
    assert a.shape == b.shape
    return int(np.abs(a.astype(int) - b.astype(int)).max())


def test_gat_crop_equals_the_official_steps_for_float_boxes_and_borders():
    img = _noise()
    H, W = img.shape[:2]
    boxes = _boxes(H, W, 24)
    # s = 100.5, xmin = 10.7: the right edge is int(10.7) + int(100.5) = 110, not int(111.2) = 111
    boxes.append(np.array([35.95, 20.0, 85.95, 20.0 + 100.5 / 0.9]))
    worst = [_max_diff(crops.crop(img, b, "gat_head_box", 224, box_kind="head"), _gat_official(img, b)) for b in boxes]
    assert max(worst) <= 1, [(i, d) for i, d in enumerate(worst) if d > 1]


def test_mcgaze_crop_equals_the_official_steps_for_float_boxes_and_borders():
    img = _noise()
    H, W = img.shape[:2]
    boxes = _boxes(H, W, 24)
    # sums truncated, not the corners: int(10.6 + 21.6) // 2 = 16 but (10 + 21) // 2 = 15;
    # a negative sum truncates towards zero: int(-60.9 + 30.4) // 2 = -15, floor would give -16
    boxes += [np.array([10.6, 10.6, 121.6, 141.6]), np.array([20.3, -60.9, 80.2, 30.4])]
    for i, b in enumerate(boxes):
        ours, ref = crops.crop(img, b, "mcgaze_head_square", 448, box_kind="head"), _mcgaze_official(img, b)
        assert ours.shape == ref.shape, (i, b)
        assert _max_diff(ours, ref) <= 1, (i, b)


def test_official_squares_round_like_the_official_code():
    """The integer pixel regions, checked against hand-computed values."""
    # MCGaze: cx = int(302.6) // 2 = 151, cy = int(221.8) // 2 = 110, l = int(121.4 * 0.8) = 97
    assert np.array_equal(crops.rule_square([100.7, 50.2, 201.9, 171.6], "mcgaze_head_square", "head"),
                          [151 - 97, 110 - 97, 151 + 97, 110 + 97])
    # above the image: cy = int(-30.5) // 2 = -30 // 2 = -15, cx = int(60.5) // 2 = 30, l = int(91.3 * 0.8) = 73
    assert np.array_equal(crops.rule_square([20.3, -60.9, 40.2, 30.4], "mcgaze_head_square", "head"),
                          [30 - 73, -15 - 73, 30 + 73, -15 + 73])
    # GaT: box 100 x 120 at (10.5, -20.25): s = 108, xmin = 60.5 - 54 = 6.5, ymin = -20.25 + 10.8 = -9.45;
    # left 6, top -9 (towards zero), width int(108.0) = 108 -> columns 6..113, rows -9..98 (black above)
    img = _noise()
    p = crops.crop(img, [10.5, -20.25, 110.5, 99.75], "gat_head_box", 108, box_kind="head")
    want = np.zeros((108, 108, 3), np.uint8)
    want[9:] = img[0:99, 6:114]
    assert np.array_equal(p, want)  # same size: the resize is the identity
