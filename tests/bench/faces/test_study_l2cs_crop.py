"""The study profile's L2CS crop is the study's own crop arithmetic, bit for bit.

The study's steps (GazeForHRI/GazeModels@l2cs), written out here independently of
gaze4hri_bench.faces.crops: ``map(int, box)`` (truncation towards zero), the slice
``frame[max(y1, 0):min(y2, H), max(x1, 0):min(x2, W)]`` (gaze_estimation.py:302-305),
``cv2.resize(crop, (224, 224))`` (315), then L2CS's transforms ``ToPILImage`` and
``Resize(448)`` (l2cs/utils.py:19-27): PIL's BILINEAR, re-implemented below from
Pillow's libImaging/Resample.c (triangle filter, 22-bit fixed-point weights, the
horizontal pass rounded to uint8 before the vertical one). The reference profile's
L2CS crop keeps cv2 for both resizes (its outputs are unchanged).
"""
from __future__ import annotations

import cv2
import numpy as np
import pytest
from gaze4hri_bench.faces import crops

from gaze4hri_bench import profiles as P

_BITS = 22  # Resample.c: PRECISION_BITS = 32 - 8 - 2


def _pil_bilinear_pass(x: np.ndarray, n_out: int, axis: int) -> np.ndarray:
    """One pass of Pillow's uint8 bilinear resample along ``axis`` (Resample.c
    precompute_coeffs, normalize_coeffs_8bpc, ImagingResample{Horizontal,Vertical}_8bpc)."""
    n_in = x.shape[axis]
    if n_in == n_out:
        return x
    scale = n_in / n_out
    fscale = max(scale, 1.0)
    support = 1.0 * fscale  # bilinear filter support 1
    xs = np.moveaxis(x, axis, 0).astype(np.int64)
    out = np.empty((n_out,) + xs.shape[1:], np.uint8)
    for i in range(n_out):
        centre = (i + 0.5) * scale
        lo = max(int(centre - support + 0.5), 0)
        n = min(int(centre + support + 0.5), n_in) - lo
        w = [max(0.0, 1.0 - abs((j + lo - centre + 0.5) / fscale)) for j in range(n)]
        total = 0.0
        for v in w:
            total += v
        w = [v / total for v in w] if total != 0.0 else w
        k = [int(0.5 + v * (1 << _BITS)) if v >= 0 else int(-0.5 + v * (1 << _BITS)) for v in w]
        acc = np.full(xs.shape[1:], 1 << (_BITS - 1), np.int64)
        for j in range(n):
            acc += xs[lo + j] * k[j]
        out[i] = np.clip(acc >> _BITS, 0, 255)
    return np.moveaxis(out, 0, axis)


def _study_l2cs_patch(frame: np.ndarray, box) -> np.ndarray:
    x1, y1, x2, y2 = map(int, box[:4])
    part = frame[max(y1, 0):min(y2, frame.shape[0]), max(x1, 0):min(x2, frame.shape[1])]
    p = cv2.resize(part, (224, 224))
    return _pil_bilinear_pass(_pil_bilinear_pass(p, 448, 1), 448, 0)  # width first, then height


_FRAME = cv2.GaussianBlur(np.random.default_rng(7).integers(0, 256, (360, 640, 3)).astype(np.uint8), (0, 0), 2)
_BOXES = [
    [250.7, 80.2, 341.9, 201.6],  # inside, float corners
    [-12.4, 100.0, 60.3, 190.8],  # across the left border
    [580.5, -0.6, 640.0, 77.9],  # at the top-right corner (x2 = W as head_bboxes.npy clamps it)
    [400.0, 300.2, 470.8, 365.0],  # across the bottom
]


def test_pil_reimplementation_is_pillow():
    """The written-out resample above is Pillow's (so the comparison below is with the study's step)."""
    from PIL import Image

    p = cv2.resize(_FRAME[50:180, 200:290], (224, 224))
    assert np.array_equal(_pil_bilinear_pass(_pil_bilinear_pass(p, 448, 1), 448, 0),
                          np.asarray(Image.fromarray(p).resize((448, 448), Image.BILINEAR)))


@pytest.mark.parametrize("box", _BOXES)
def test_study_l2cs_crop_is_the_study_arithmetic(box):
    rule = P.get_profile("study").record("l2cs_gaze360").crop_rule
    ours = crops.crop(_FRAME, box, rule, 448)
    assert ours.shape == (448, 448, 3) and ours.dtype == np.uint8
    assert np.array_equal(ours, _study_l2cs_patch(_FRAME, box))


@pytest.mark.parametrize("box", _BOXES)
def test_reference_l2cs_crop_keeps_cv2_for_both_resizes(box):
    """Reference unchanged: cv2 INTER_LINEAR 224 then 448 (about a third of the pixels 1
    grey level off the study's PIL step)."""
    assert P.get_profile("reference").record("l2cs_gaze360").crop_rule == "l2cs_face_box"
    x1, y1, x2, y2 = map(int, box)
    part = _FRAME[max(y1, 0):min(y2, 360), max(x1, 0):min(x2, 640)]
    want = cv2.resize(cv2.resize(part, (224, 224)), (448, 448))
    ref = crops.crop(_FRAME, box, "l2cs_face_box", 448)
    assert np.array_equal(ref, want)
    d = np.abs(ref.astype(int) - _study_l2cs_patch(_FRAME, box).astype(int))
    assert d.max() == 1 and 0.05 < (d > 0).mean() < 0.6


def test_study_pil_rule_at_224_is_the_plain_crop():
    """At 224 (no second resize) the rule is the study's crop alone."""
    box = _BOXES[1]
    plain = crops.crop(_FRAME, box, "l2cs_face_box", 224)
    assert np.array_equal(crops.crop(_FRAME, box, "l2cs_face_box_pil", 224), plain)
