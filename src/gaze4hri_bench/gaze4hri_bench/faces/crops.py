"""Crop rules named by ``MethodSpec.crop_rule`` and the tensor conversion of a patch.

Every rule maps a box [x1, y1, x2, y2] (pixels) to a patch of ``size`` x ``size`` RGB
uint8 (parts of the square outside the image black, as the official code paths pad),
except the :data:`KEEP_RATIO` rules, whose patch keeps the aspect ratio of the region
left after cutting it at the image border (long side ``size``). Rules (facts in
../shared/reference/methods.md):

* ``l2cs_face_box``: the face box itself, no margin (not squared), resized to 224 and
  then to ``size`` (448), as L2CS-Net's official demo.
* ``l2cs_face_box_pil``: ``l2cs_face_box`` with the 224 -> ``size`` step done by PIL's
  bilinear resize, as torchvision's ``Resize(448)`` on a PIL image in L2CS-Net's
  transforms, which the study ran (profile setting ``l2cs_resize_pil``).
* ``l2cs_face_box_pad20``: ``l2cs_face_box`` with each side of the integer box moved
  out by 20 px before the clamp (:data:`STUDY_CROP_PAD_PX`; the study's crop inputs of
  PureGaze (ETH), PureGaze (Gaze360) and GazeTR (Gaze360), profile setting
  ``crop_pad_20px``).
* ``mcgaze_head_square``: square of half side int(0.8 max(w, h)) of the float head box
  about the centre (int(x1 + x2) // 2, int(y1 + y2) // 2) (the coordinate sum truncated
  towards zero, then floor-halved), cut at the image border and resized with its aspect
  ratio kept so that its long side is ``size`` (MCGaze_demo/demo.ipynb: the slice
  ``img[max(0, cy - l):min(cy + l, H), max(0, cx - l):min(cx + l, W)]``, then the
  L2CS-setting test pipeline's ``Resize(img_scale=(448, 448), keep_ratio=True)``, mmcv
  ``imrescale``). Its patch is not square at a border: the network pads it after
  normalisation and takes its size as a second input (:data:`KEEP_RATIO`).
* ``gat_head_box``: square of side 0.9 max(w, h), horizontally centred on the head
  box, top edge at ymin + 0.09 max(w, h) (GaT, idiap/gaze3d), its x, y, width and
  height each truncated towards zero (right edge int(x) + int(w)), black outside the
  image, resized with torchvision's antialiased bilinear (:func:`resize_antialiased`).

Both are the official steps for boxes at any float coordinate and at the image borders
(tests/bench/faces/test_crop_parity.py, benchmarks/crop_parity.py; residuals in
docs/models_video.md, "Crops").

The study cropped every method like ``l2cs_face_box`` (GazeForHRI/GazeModels@l2cs:
gaze_estimation.py:302-315: integer box, clamped, 224x224 without squaring), its box
grown 10 % per side by its face rule (pipeline.face_pass.apply_face_rule); for L2CS
the 224 -> 448 step through PIL (``l2cs_face_box_pil``).

Head rules need a head box. With only a face detector (the study's yolov8n-face, or
MediaPipe), :func:`head_box_from_face` derives one; see its docstring.
"""
from __future__ import annotations

import functools
from collections.abc import Callable

import cv2
import numpy as np
from gaze4hri_core.registry import Registry

__all__ = ["CROP_RULES", "KEEP_RATIO", "crop", "crop_square", "crop_int_antialiased", "crop_cut_keep_ratio",
           "keep_ratio_size", "resize_antialiased", "GAT_RESIZE", "STUDY_CROP_PAD_PX", "grow_box", "head_box_from_face",
           "rule_square", "to_tensor", "pad_tensor", "clip_pad_size", "HEAD_FROM_FACE"]

# Face box -> head box factors (fractions of the face box width w and height h).
# Face detectors (WIDER FACE style: YOLOv8-face, MediaPipe BlazeFace) box roughly brows
# to chin and cheek to cheek. Head boxes (CrowdHuman "head", GaT's detector; MCGaze's
# head proposal) also hold the forehead, hair and ears. Average adult anthropometry
# (vertex-to-menton ~ 23 cm vs brow-to-chin ~ 14-15 cm; head breadth ~ 15 cm vs
# bizygomatic ~ 13-14 cm plus ears) gives about 1.55 h and 1.3 w; the extra height goes
# mostly above the brows (0.45 h) and a little below the chin (0.1 h).
HEAD_FROM_FACE = {"width": 1.3, "above": 0.45, "below": 0.10}


def head_box_from_face(box, factors: dict | None = None) -> np.ndarray:
    """Head box from a face box (same centre x; widened by ``width``; extended by
    ``above`` h upwards and ``below`` h downwards; HEAD_FROM_FACE by default)."""
    f = {**HEAD_FROM_FACE, **(factors or {})}
    x1, y1, x2, y2 = np.asarray(box, float).reshape(4)
    w, h = x2 - x1, y2 - y1
    cx = 0.5 * (x1 + x2)
    hw = 0.5 * f["width"] * w
    return np.array([cx - hw, y1 - f["above"] * h, cx + hw, y2 + f["below"] * h])


def _square_mcgaze(box) -> np.ndarray:
    """MCGaze's head square (zgchen33/MCGaze @ b8ce708, MCGaze_demo/demo.ipynb, lines of
    the .ipynb file): the box stays float (``xy = int(xy)`` at 169-170 only rebinds the
    loop variable); the centre is the coordinate SUM truncated towards zero, then
    floor-halved, ``int(y1 + y2) // 2`` and ``int(x1 + x2) // 2`` (171); the half side is
    ``int(max(y2 - y1, x2 - x1) * 0.8)`` of the float box (172). Returns the integer
    square [cx - l, cy - l, cx + l, cy + l] (end-exclusive, as the demo's slice, 173)."""
    x1, y1, x2, y2 = (float(v) for v in np.asarray(box, float).reshape(4))
    cy, cx = int(y1 + y2) // 2, int(x1 + x2) // 2
    half = int(max(y2 - y1, x2 - x1) * 0.8)
    return np.array([cx - half, cy - half, cx + half, cy + half], float)


def _square_gat(box) -> np.ndarray:
    """GaT's square (idiap/gaze3d @ f2c13de, utils_demo.py:33-36 ``BboxReshape(square=True,
    ratio=-0.1)`` -> src/data/components/transforms.py:42-67 ``reshape_bbox_adjust_top``),
    in float64 (transforms.py:99) and in the official order of operations, so that
    :func:`crop_int_antialiased` truncates the same floats: x_mid = (x1 + x2) / 2 (47);
    s = max(x2 - x1, y2 - y1) * (1 + ratio) (49-57); xmin = x_mid - s / 2 (58);
    ymin = y1 - s * ratio (64; ratio <= 0); returned as (xmin, ymin, xmin + s, ymin + s)
    (66-67, torchvision ``_box_xywh_to_xyxy``: x + w)."""
    x1, y1, x2, y2 = (float(v) for v in np.asarray(box, float).reshape(4))
    ratio = -0.1
    x_mid = (x1 + x2) / 2
    s = max(x2 - x1, y2 - y1) * (1 + ratio)
    xmin = x_mid - s / 2
    ymin = y1 - s * ratio
    return np.array([xmin, ymin, xmin + s, ymin + s])


def crop_square(image: np.ndarray, region, out_w: int, out_h: int | None = None) -> np.ndarray:
    """Resample the axis-aligned ``region`` [x1, y1, x2, y2] (pixel edges, may leave the
    image) to out_w x out_h with bilinear interpolation; outside the image is black."""
    out_h = out_w if out_h is None else out_h
    x1, y1, x2, y2 = np.asarray(region, float).reshape(4)
    sx = out_w / max(x2 - x1, 1e-6)
    sy = out_h / max(y2 - y1, 1e-6)
    # pixel centres: u_out + 0.5 = sx * (u_in + 0.5 - x1)
    A = np.array([[sx, 0.0, sx * (0.5 - x1) - 0.5], [0.0, sy, sy * (0.5 - y1) - 0.5]])
    return cv2.warpAffine(image, A, (int(out_w), int(out_h)), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)


@functools.lru_cache(maxsize=256)  # depends on the sizes only: built once, not for every crop
def _aa_taps(n_in: int, n_out: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Source indices (n_out, K), float32 weights (n_out, K) and tap counts (n_out,) of
    an antialiased bilinear resize n_in -> n_out, ``align_corners=False``, computed in
    the float32 / float64 mix of PyTorch's CPU kernel (ATen UpSampleKernel.cpp,
    ``_compute_indices_min_size_weights_aa``; the same triangle filter as PIL): scale =
    n_in / n_out (float32); centre = scale (i + 0.5); support = max(scale, 1); window
    [trunc(c - support + 0.5), trunc(c + support + 0.5)) clipped to the input; weight
    1 - |(j - c + 0.5) / max(scale, 1)| (positive part), summed in order and divided by
    the sum."""
    f32, f64 = np.float32, np.float64
    scale = f32(n_in) / f32(n_out)
    support = scale if scale >= 1 else f32(1.0)
    invscale = f32(1.0 / f64(scale)) if scale >= 1 else f32(1.0)
    centre = (f64(scale) * (np.arange(n_out) + 0.5)).astype(f32)
    lo = np.maximum(np.trunc((centre - support).astype(f64) + 0.5).astype(np.int64), 0)
    hi = np.minimum(np.trunc((centre + support).astype(f64) + 0.5).astype(np.int64), n_in)
    count = hi - lo
    j = np.arange(int(count.max()))
    idx = lo[:, None] + j[None, :]
    x = (((idx.astype(f32) - centre[:, None]).astype(f64) + 0.5) * f64(invscale)).astype(f32)
    w = np.where(np.abs(x) < 1, (1.0 - np.abs(x).astype(f64)).astype(f32), f32(0.0))
    w[j[None, :] >= count[:, None]] = 0
    total = np.zeros(n_out, f32)
    for k in range(len(j)):  # sequential float32 sum, as the kernel's loop
        total = total + w[:, k]
    w = (w / total[:, None]).astype(f32)
    out = (np.minimum(idx, n_in - 1), w, count)
    for a in out:
        a.flags.writeable = False  # shared by every caller (cached)
    return out


def _aa_pass(x: np.ndarray, n_out: int, axis: int) -> np.ndarray:
    """One separable pass of :func:`resize_antialiased` along ``axis`` (float32)."""
    n_in = x.shape[axis]
    if n_in == n_out:  # the kernel skips a dimension whose size does not change
        return x
    idx, w, _ = _aa_taps(n_in, n_out)
    shape = [1] * x.ndim
    shape[axis] = n_out
    out = np.take(x, idx[:, 0], axis=axis) * w[:, 0].reshape(shape)
    for k in range(1, idx.shape[1]):  # output = t0 w0; output += tj wj, in float32
        out = out + np.take(x, idx[:, k], axis=axis) * w[:, k].reshape(shape)
    return out


def resize_antialiased(image: np.ndarray, out_w: int, out_h: int) -> np.ndarray:
    """uint8 (H, W, C) -> (out_h, out_w, C): torchvision's antialiased bilinear resize
    of a uint8 image on its float path (torchvision 0.16.1 v2 ``resize_image``,
    _geometry.py:248-265: to float32, ``interpolate(mode="bilinear", align_corners=False,
    antialias=True)``, ``round_``, back to uint8), re-implemented in numpy: PyTorch's
    separable CPU kernel, width first, then height, on a float32 intermediate
    (:func:`_aa_taps`); rounded half to even. Equal to torch's float path within 1 grey
    level at rare rounding ties (docs/models_video.md, "Crops")."""
    x = np.asarray(image).astype(np.float32)
    x = _aa_pass(x, int(out_w), 1)
    x = _aa_pass(x, int(out_h), 0)
    return np.clip(np.rint(x), 0, 255).astype(np.uint8)


#: how GaT's crop is resized: "torch_float" (:func:`resize_antialiased`, torchvision
#: 0.16.1 on a CPU whose capability string is not exactly "AVX2", e.g. AVX-512) or "pil"
#: (PIL's BILINEAR, within 2 grey levels, mean 0.001, of torch's native uint8 kernel,
#: which torchvision 0.16.1 takes on an "AVX2" CPU); docs/models_video.md, "Crops".
GAT_RESIZE = "torch_float"


def crop_int_antialiased(image: np.ndarray, region, size: int) -> np.ndarray:
    """GaT's official crop of the float ``region`` [x1, y1, x2, y2] (idiap/gaze3d @
    f2c13de, transforms.py:129-147 ``Crop(224)``): converted to (x, y, w, h) with
    w = x2 - x1, h = y2 - y1 (131, torchvision ``_box_xyxy_to_xywh``), then each of x, y,
    w, h truncated towards zero (``.type(torch.int16)``, 132): the right edge is
    int(x1) + int(x2 - x1), not int(x2). ``resized_crop`` (135-143; torchvision 0.16.1
    v2 ``crop_image``, _geometry.py:1349-1364) slices the image and pads with zeros where
    the box leaves it; ``resize_image`` (194-268) resizes with antialiased bilinear
    (:data:`GAT_RESIZE`)."""
    x1f, y1f, x2f, y2f = (float(v) for v in np.asarray(region, float).reshape(4))
    x1, y1 = int(x1f), int(y1f)
    w, h = int(x2f - x1f), int(y2f - y1f)
    H, W = image.shape[:2]
    out = np.zeros((max(h, 1), max(w, 1), 3), np.uint8)
    sx1, sy1, sx2, sy2 = max(x1, 0), max(y1, 0), min(x1 + w, W), min(y1 + h, H)
    if sx2 > sx1 and sy2 > sy1:
        out[sy1 - y1:sy2 - y1, sx1 - x1:sx2 - x1] = image[sy1:sy2, sx1:sx2]
    if GAT_RESIZE == "pil":
        from PIL import Image

        return np.asarray(Image.fromarray(out).resize((int(size), int(size)), Image.BILINEAR))
    return resize_antialiased(out, int(size), int(size))


def keep_ratio_size(h: int, w: int, size: int) -> tuple[int, int]:
    """(height, width) of an h x w image rescaled into size x size with its aspect ratio
    kept: mmcv 1.4.8 ``rescale_size`` for ``img_scale=(size, size)`` (mmcv/image/
    geometric.py:205-213: scale = min(size / long side, size / short side); _scale_size,
    16-29: each side ``int(side * scale + 0.5)``)."""
    scale = min(size / max(h, w), size / min(h, w))
    return int(h * scale + 0.5), int(w * scale + 0.5)


def crop_cut_keep_ratio(image: np.ndarray, region, size: int) -> np.ndarray:
    """MCGaze's official crop of the integer ``region`` (:func:`_square_mcgaze`): cut at
    the image border by numpy slicing (MCGaze_demo/demo.ipynb:173), resized with its
    aspect ratio kept so that its long side is ``size`` (configs/multiclue_gaze/
    multiclue_gaze_r50_l2cs.py:33 ``Resize(img_scale=(448, 448), keep_ratio=True)``,
    backend cv2 (mmdet/datasets/pipelines/transforms.py:79, 217-221) -> mmcv 1.4.8
    ``imrescale``, mmcv/image/geometric.py:221-249: sizes by :func:`keep_ratio_size`,
    ``cv2.resize`` INTER_LINEAR, 88-89): equal to the official crop. A region wholly
    outside the image raises (the demo's slice would wrap round a negative end index)."""
    x1, y1, x2, y2 = (int(v) for v in np.asarray(region, float).reshape(4))
    H, W = image.shape[:2]
    part = image[max(0, y1):min(y2, H), max(0, x1):min(x2, W)]
    if part.shape[0] == 0 or part.shape[1] == 0:
        raise ValueError(f"crop: region {[x1, y1, x2, y2]} lies outside the {W}x{H} image")
    h, w = keep_ratio_size(part.shape[0], part.shape[1], int(size))
    return cv2.resize(np.ascontiguousarray(part), (w, h), interpolation=cv2.INTER_LINEAR)


def pad_tensor(x: np.ndarray, size: int) -> np.ndarray:
    """A (3, h, w) normalised tensor padded with zeros at the bottom and right to
    (3, size, size): mmdet's ``Pad`` after ``Normalize`` (a zero is the mean colour)."""
    c, h, w = x.shape
    if h == size and w == size:
        return x
    out = np.zeros((c, size, size), x.dtype)
    out[:, :h, :w] = x
    return out


def clip_pad_size(hw, size: int, divisor: int = 32) -> tuple[int, int]:
    """The padded (height, width) of a clip whose frames' images are ``hw`` (T, 2) (rows
    (0, 0): absent frames): mmdet's ``Pad(size_divisor=32)`` rounds each image up to a
    multiple of 32, mmcv's ``collate`` pads the batch (the clip) to its largest; at most
    ``size``. A clip without a present frame keeps ``size`` x ``size``."""
    a = np.asarray(hw, float).reshape(-1, 2)
    a = a[a[:, 0] > 0]
    if not len(a):
        return int(size), int(size)
    up = np.ceil(a.max(axis=0) / divisor) * divisor
    return int(min(up[0], size)), int(min(up[1], size))


def grow_box(box, margin: float, shape) -> np.ndarray:
    """The study's box margin (GazeForHRI/Gaze4HRI@main:head_detection.py:114-120): each
    side moved out by ``margin`` x the box width (x) or height (y), clamped to the image."""
    x1, y1, x2, y2 = np.asarray(box, float).reshape(4)
    w, h = x2 - x1, y2 - y1
    H, W = shape[:2]
    return np.array([max(0.0, x1 - margin * w), max(0.0, y1 - margin * h), min(float(W), x2 + margin * w),
                     min(float(H), y2 + margin * h)])


#: the study's crop padding (px) of PureGaze (ETH), PureGaze (Gaze360) and GazeTR (Gaze360):
#: ``padd = 20`` in GazeForHRI/GazeModels@puregaze:gaze_estimation.py:235,
#: @puregaze_gaze360:gaze_estimation.py:248, @gazetr_gaze360:gaze_estimation.py:242
#: (L2CS, GaT and GazeTR (ETH) pad 0: @l2cs and @gaze3d:gaze_estimation.py:304,
#: @gazetr: headcrop_padding default 0)
STUDY_CROP_PAD_PX = 20


def _l2cs(image, face_box, size, pad: int = 0):
    x1, y1, x2, y2 = np.asarray(face_box, float)
    # official demo (l2cs/pipeline.py): integer box clamped at 0, frame[y1:y2, x1:x2]
    # (slicing also clamps at the far edges) -> 224 -> 448. ``pad``: each side of the
    # truncated box moved out by pad px before the clamp (the study's ``padd``)
    H, W = image.shape[:2]
    x1, y1 = max(int(x1) - pad, 0), max(int(y1) - pad, 0)
    x2, y2 = min(int(x2) + pad, W), min(int(y2) + pad, H)
    if x2 <= x1 or y2 <= y1:
        raise ValueError(f"crop: face box {np.round(face_box, 1).tolist()} lies outside the {W}x{H} image")
    p = cv2.resize(np.ascontiguousarray(image[y1:y2, x1:x2]), (224, 224), interpolation=cv2.INTER_LINEAR)
    return p if size == 224 else cv2.resize(p, (size, size), interpolation=cv2.INTER_LINEAR)


def _l2cs_pil(image, face_box, size):
    """The study's L2CS crop (GazeForHRI/GazeModels@l2cs): the 224 patch of ``_l2cs``
    (gaze_estimation.py:302-315), then torchvision's ``Resize(448)`` on a PIL image
    (gaze_model_l2cs.py:37 -> l2cs/utils.py:19-27,40-49 ``ToPILImage``, ``Resize``): PIL's
    BILINEAR, which rounds to uint8 after each pass and so differs from cv2's INTER_LINEAR
    by 1 grey level in about a third of the pixels (benchmarks/study_l2cs_parity.py)."""
    from PIL import Image

    p = _l2cs(image, face_box, 224)
    return p if size == 224 else np.asarray(Image.fromarray(p).resize((size, size), Image.BILINEAR))


# name -> (needs a head box?, region function or full crop function)
CROP_RULES: Registry[tuple[bool, Callable]] = Registry("crop rule", where="faces.crops")
CROP_RULES.add("l2cs_face_box", (False, _l2cs))
CROP_RULES.add("l2cs_face_box_pad20", (False, lambda image, box, size: _l2cs(image, box, size, STUDY_CROP_PAD_PX)))
CROP_RULES.add("l2cs_face_box_pil", (False, _l2cs_pil))
CROP_RULES.add("mcgaze_head_square", (True, _square_mcgaze))
CROP_RULES.add("gat_head_box", (True, _square_gat))

#: how a head rule's region becomes its patch (default: crop_square, black outside)
_SAMPLERS: dict[str, Callable] = {"gat_head_box": crop_int_antialiased, "mcgaze_head_square": crop_cut_keep_ratio}
#: rules whose patch keeps the aspect ratio of the region cut at the image border: the
#: method pads it after normalisation (pad_tensor) and needs its size as an input
KEEP_RATIO = frozenset({"mcgaze_head_square"})


def rule_square(box, rule: str, box_kind: str = "face") -> np.ndarray:
    """The image region [x1, y1, x2, y2] a rule crops for ``box`` (head rules only)."""
    needs_head, fn = _rule(rule)
    if not needs_head:
        return np.asarray(box, float)
    b = np.asarray(box, float).reshape(4)
    if box_kind == "face":
        b = head_box_from_face(b)
    return fn(b)


def _rule(rule: str):
    return CROP_RULES.get(rule)


def crop(image: np.ndarray, box, rule: str, size: int, box_kind: str = "face") -> np.ndarray:
    """Patch (size, size, 3) of ``image`` for ``box`` by crop rule ``rule`` (a
    :data:`KEEP_RATIO` rule: (h, w, 3) with max(h, w) = size). ``box_kind`` ``face`` (a
    face detector's box; head rules derive the head box) or ``head``."""
    needs_head, fn = _rule(rule)
    b = np.asarray(box, float).reshape(4)
    if not np.isfinite(b).all() or b[2] <= b[0] or b[3] <= b[1]:
        raise ValueError(f"crop: invalid box {b.tolist()}")
    if not needs_head:
        return fn(image, b, int(size))
    return _SAMPLERS.get(rule, crop_square)(image, rule_square(b, rule, box_kind), int(size))


def to_tensor(patch: np.ndarray, spec) -> np.ndarray:
    """RGB uint8 (H, W, 3) -> float32 (3, H, W) per ``spec`` (a MethodSpec or a profile
    record: ``colour`` rgb/bgr, ``mean``, ``std``): channel order, scaled to [0, 1],
    then (x - mean) / std when given. A uint8 patch goes through a 256-entry table per
    channel (cv2.LUT on its planes), computed with the same float32 operations: the same
    bits as the arithmetic (_to_tensor_arith) at about a tenth of its cost (a test holds
    them equal)."""
    p = np.asarray(patch)
    if p.ndim != 3 or p.shape[2] != 3:
        raise ValueError(f"to_tensor: expected (H, W, 3), got {p.shape}")
    bgr = getattr(spec, "colour", "rgb") == "bgr"
    mean = None if spec.mean is None else tuple(float(v) for v in np.asarray(spec.mean, np.float32).reshape(-1))
    std = None if spec.std is None else tuple(float(v) for v in np.asarray(spec.std, np.float32).reshape(-1))
    if p.dtype == np.uint8 and p.size and (mean is None or len(mean) == 3) and (std is None or len(std) == 3):
        planes = cv2.split(p)  # uint8 planes: the channel-first copy at a quarter of the float bytes
        table = _tensor_lut(mean, std)
        out = np.empty((3, p.shape[0], p.shape[1]), np.float32)
        for k in range(3):  # output channel k reads input channel 2 - k for bgr, else k
            cv2.LUT(planes[2 - k if bgr else k], table[k], dst=out[k])
        return out
    return _to_tensor_arith(p, bgr, spec.mean, spec.std)


def _to_tensor_arith(p: np.ndarray, bgr: bool, mean, std) -> np.ndarray:
    """to_tensor's arithmetic (any dtype; a scalar or per-channel mean/std)."""
    if bgr:
        p = p[..., ::-1]
    x = p.astype(np.float32) * np.float32(1.0 / 255.0)
    if mean is not None:
        x -= np.asarray(mean, np.float32)
    if std is not None:
        x /= np.asarray(std, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1))


@functools.lru_cache(maxsize=16)
def _tensor_lut(mean: tuple | None, std: tuple | None) -> np.ndarray:
    """(3, 256) float32: entry [k, v] is what _to_tensor_arith makes of value v in output
    channel k (the same float32 operations, so the same bits)."""
    levels = np.repeat(np.arange(256, dtype=np.uint8).reshape(256, 1, 1), 3, axis=2)
    return np.ascontiguousarray(_to_tensor_arith(levels, False, mean, std)[:, :, 0])
