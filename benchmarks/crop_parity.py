"""GaT and MCGaze reference crops against their official pre-processing, in grey levels
and in degrees on random-weight networks.

What the official code does to a head box at float coordinates (every step written out
below, independently of gaze4hri_bench.faces.crops; docs/models_video.md, "Crops"):

GaT (idiap/gaze3d @ f2c13de, demo pre-processing ``utils_demo.py:31-48`` TRANSFORM):
  1. ``BboxReshape(square=True, ratio=-0.1)`` (transforms.py:95-110 ->
     ``reshape_bbox_adjust_top`` 42-67), float64 (``torch.tensor(np.array(bbox))``, 99):
     x_mid = (x1 + x2) / 2; s = max(x2 - x1, y2 - y1) * (1 + ratio); xmin = x_mid - s / 2;
     ymin = y1 - s * ratio; returned as xyxy (xmin, ymin, xmin + s, ymin + s) (box_convert,
     torchvision ops/_box_convert.py ``_box_xywh_to_xyxy``: x + w).
  2. ``Crop(224)`` (transforms.py:129-147): back to xywh (w = x2 - x1, ``_box_xyxy_to_xywh``),
     then ``.type(torch.int16)`` (132): x, y, w AND h each truncated towards zero, so the
     right edge is int(xmin) + int(w), not int(xmin + s).
  3. ``tf.functional.resized_crop(img, y, x, h, w, 224, antialias=True)`` (135-143);
     torchvision 0.16.1 (environment.yaml) v2 ``resized_crop_image`` = ``crop_image``
     (_geometry.py:1349-1364: slice, then zero padding where the box leaves the image) +
     ``resize_image`` (194-268): bilinear, ``align_corners=False``, antialias; uint8 stays
     uint8 (torch's native kernel) only if "AVX2" is in the CPU capability string
     (230-236; an AVX-512 CPU reports "AVX512" and takes the other path), else
     float32 -> interpolate -> ``round_`` -> uint8 (250-265).
  4. ``ToTensor`` (to_dtype float32, scale: / 255) and ImageNet ``Normalize``.

MCGaze (zgchen33/MCGaze @ b8ce708, ``MCGaze_demo/demo.ipynb``, lines of the .ipynb file):
  1. box floats as read from the detector's label file (46-49; ``xy = int(xy)`` at
     169-170 only rebinds the loop variable);
  2. centre ``int(y1 + y2) // 2``, ``int(x1 + x2) // 2``: the SUM truncated towards zero,
     then floor-halved (171); half side ``l = int(max(y2 - y1, x2 - x1) * 0.8)`` from the
     float box (172);
  3. ``img[max(0, cy - l):min(cy + l, H), max(0, cx - l):min(cx + l, W)]`` (173; ``w, h``
     at 168 are the numpy rows and columns): cut at the border, no padding;
  4. the L2CS-setting test pipeline (configs/multiclue_gaze/multiclue_gaze_r50_l2cs.py:33-36,
     demo 121): ``Resize(img_scale=(448, 448), keep_ratio=True)`` -> mmcv 1.4.8 ``imrescale``
     (mmcv/image/geometric.py:221-249): scale = min(448 / long, 448 / short), each side
     ``int(side * scale + 0.5)`` (_scale_size 16-29, rescale_size 205-213), ``cv2.resize``
     INTER_LINEAR (imresize 88-89, backend 'cv2' from transforms.py:79,221);
     ``Normalize`` (mmcv/image/photometric.py:25-44: BGR->RGB, subtract mean, multiply by
     1/std); ``Pad(size_divisor=32)`` with zeros, then mmcv ``collate`` pads the clip to
     its largest frame.

Ours: ``gaze4hri_bench.faces.crops.crop(image, head_box, rule, size, box_kind="head")``,
then the method's ``to_tensor`` / padding (``OnnxMethod._prepared`` and ``fit_clip``).

Image: a photograph (matplotlib's bundled grace_hopper.jpg, 600 x 512). Boxes: random
floats, head sized, inside the image, across each border, and mostly outside.

    .venv/bin/python benchmarks/crop_parity.py [--boxes 400] [--clips 3] [--seeds 2] [--no-network]

Grey levels: max and mean |ours - official| over the crops (uint8, all channels), and
the number of crops whose shape differs. Degrees: the angle between the random-weight
network's outputs for the official clip and for ours, over all frames, networks and
clips (the zoo's ``random_model``; the ONNX exports match these PyTorch networks to
2e-6, docs/models_video.md). Random weights measure input sensitivity, not a trained
network's error.
"""
from __future__ import annotations

import argparse
import math
import time

import numpy as np

IMAGENET_MEAN, IMAGENET_STD = [0.485, 0.456, 0.406], [0.229, 0.224, 0.225]
MMDET_MEAN, MMDET_STD = [123.675, 116.28, 103.53], [58.395, 57.12, 57.375]


def photograph() -> np.ndarray:
    """RGB uint8 photograph of a face (matplotlib's sample data; a textured synthetic
    image when it is missing)."""
    try:
        from matplotlib import cbook
        from PIL import Image

        with Image.open(cbook.get_sample_data("grace_hopper.jpg", asfileobj=False)) as im:
            return np.asarray(im.convert("RGB")).copy()
    except Exception:  # noqa: BLE001 - any failure: fall back to a synthetic image
        import cv2

        rng = np.random.default_rng(7)
        small = rng.integers(0, 256, (60, 64, 3)).astype(np.uint8)
        img = cv2.resize(small, (512, 600), interpolation=cv2.INTER_CUBIC)
        return np.clip(img.astype(int) + rng.integers(-30, 31, img.shape), 0, 255).astype(np.uint8)


def random_boxes(n: int, H: int, W: int, seed: int = 0) -> list[tuple[str, np.ndarray]]:
    """(where, head box) at float coordinates: inside, across each border, mostly outside."""
    rng = np.random.default_rng(seed)
    out = []
    kinds = ["inside", "left", "right", "top", "bottom", "corner"]
    for i in range(n):
        kind = kinds[i % len(kinds)]
        w, h = rng.uniform(40, 220), rng.uniform(50, 260)
        x1, y1 = rng.uniform(0, W - w), rng.uniform(0, H - h)
        if kind in ("left", "corner"):
            x1 = rng.uniform(-0.7 * w, 0.3 * w)
        if kind == "right":
            x1 = W - w + rng.uniform(-0.3 * w, 0.7 * w)
        if kind in ("top", "corner"):
            y1 = rng.uniform(-0.7 * h, 0.3 * h)
        if kind == "bottom":
            y1 = H - h + rng.uniform(-0.3 * h, 0.7 * h)
        out.append((kind, np.array([x1, y1, x1 + w, y1 + h])))
    return out


# ----------------------------------------------------------------- official GaT steps
def gat_official_box(box) -> tuple[int, int, int, int]:
    """(top, left, height, width) as GaT's Crop passes them to resized_crop (steps 1-2)."""
    import torch

    b = torch.tensor(np.array([box], dtype=np.float64))  # transforms.py:99
    ratio = -0.1
    x_mid = (b[:, 0:1] + b[:, 2:3]) / 2  # 47
    x1, y1, x2, y2 = b.unbind(-1)
    wh = torch.stack((x2 - x1, y2 - y1), dim=-1)  # 49: xyxy -> xywh
    sizes = torch.max(wh, 1)[0]  # 52
    sizes = torch.stack([sizes, sizes], 1) * (1 + ratio)  # 53, 57
    xmin = x_mid - sizes[:, 0:1] / 2  # 58
    ymin = b[:, 1:2] - sizes[:, 1:2] * ratio  # 64 (ratio <= 0)
    xyxy = torch.cat([xmin, ymin, xmin + sizes[:, 0:1], ymin + sizes[:, 1:2]], 1)  # 66-67: xywh -> xyxy
    xywh = torch.cat([xyxy[:, 0:2], xyxy[:, 2:4] - xyxy[:, 0:2]], 1).type(torch.int16)  # 131-132
    x, y, w, h = (int(v) for v in xywh[0])
    return y, x, h, w


def gat_official_crop(img: np.ndarray, box, path: str = "uint8") -> np.ndarray:
    """GaT's crop (steps 1-3) with torch: ``path`` "uint8" (torch's native uint8
    antialiased kernel: torchvision 0.16.1 on an AVX2 CPU) or "float" (float32, round)."""
    import torch
    import torch.nn.functional as F

    top, left, height, width = gat_official_box(box)
    t = torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1)  # to_image of an RGB array: CHW view
    H, W = t.shape[-2:]
    right, bottom = left + width, top + height
    if left < 0 or top < 0 or right > W or bottom > H:  # crop_image, _geometry.py:1355-1363
        t = t[..., max(top, 0):bottom, max(left, 0):right]
        pad = [
            max(min(right, 0) - left, 0),
            max(right - max(W, left), 0),
            max(min(bottom, 0) - top, 0),
            max(bottom - max(H, top), 0),
        ]
        t = F.pad(t, pad, mode="constant", value=0)
    else:
        t = t[..., top:bottom, left:right]
    x = t[None]
    if path == "uint8":
        y = F.interpolate(x, size=[224, 224], mode="bilinear", align_corners=False, antialias=True)
    else:
        y = (
            F.interpolate(x.float(), size=[224, 224], mode="bilinear", align_corners=False, antialias=True)
            .round_()
            .to(torch.uint8)
        )
    return y[0].permute(1, 2, 0).numpy()


def gat_official_tensor(patch: np.ndarray) -> np.ndarray:
    """ToTensor + Normalize (step 4): (3, 224, 224) float32."""
    x = patch.astype(np.float32).transpose(2, 0, 1) / np.float32(255.0)
    return (x - np.asarray(IMAGENET_MEAN, np.float32)[:, None, None]) / np.asarray(IMAGENET_STD, np.float32)[
        :, None, None
    ]


# -------------------------------------------------------------- official MCGaze steps
def mcgaze_official_crop(img: np.ndarray, box) -> np.ndarray:
    """MCGaze's crop (steps 1-4 up to the resize): (h, w, 3) uint8, long side 448."""
    import cv2

    hb = [float(v) for v in box]
    rows, cols = img.shape[:2]  # demo's ``w, h``
    cy, cx = int(hb[1] + hb[3]) // 2, int(hb[0] + hb[2]) // 2
    half = int(max(hb[3] - hb[1], hb[2] - hb[0]) * 0.8)
    part = img[max(0, cy - half) : min(cy + half, rows), max(0, cx - half) : min(cx + half, cols), :]
    h, w = part.shape[:2]
    scale = min(max(448, 448) / max(h, w), min(448, 448) / min(h, w))
    size = (int(w * float(scale) + 0.5), int(h * float(scale) + 0.5))
    return cv2.resize(part, size, interpolation=cv2.INTER_LINEAR)


def mcgaze_official_clip(patches: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Normalize, Pad(size_divisor=32), collate: (T, 3, ph, pw) float32 and (T, 2) sizes."""
    normed = []
    for p in patches:
        x = p.astype(np.float32) - np.asarray(MMDET_MEAN, np.float32)  # the image is RGB already
        x = x * (1 / np.float64(np.asarray(MMDET_STD))).astype(np.float32)
        normed.append(x.transpose(2, 0, 1))
    ph = int(math.ceil(max(x.shape[1] for x in normed) / 32) * 32)
    pw = int(math.ceil(max(x.shape[2] for x in normed) / 32) * 32)
    clip = np.stack([np.pad(x, ((0, 0), (0, ph - x.shape[1]), (0, pw - x.shape[2]))) for x in normed])
    return clip.astype(np.float32), np.array([p.shape[:2] for p in patches], np.float32)


# ----------------------------------------------------------------------------- report
def _grey(pairs) -> str:
    shape = sum(a.shape != b.shape for a, b in pairs)
    same = [np.abs(a.astype(int) - b.astype(int)) for a, b in pairs if a.shape == b.shape]
    mx = max(int(d.max()) for d in same) if same else 0
    mean = float(np.mean([d.mean() for d in same])) if same else 0.0
    over1 = sum(int(d.max()) > 1 for d in same)
    frac = sum(int((d > 0).sum()) for d in same) / max(sum(d.size for d in same), 1)
    return (
        f"max {mx:3d}, mean {mean:.4f} grey levels, {frac:.2e} of values differ, {over1} crops > 1, "
        f"{shape} of {len(pairs)} shapes differ"
    )


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a.reshape(-1, 3).astype(np.float64)
    b = b.reshape(-1, 3).astype(np.float64)
    cos = np.clip(np.sum(a * b, -1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1), -1, 1)
    return np.degrees(np.arccos(cos))


def _ours_gat(img: np.ndarray, box, kernel: str) -> np.ndarray:
    from gaze4hri_bench.faces import crops

    saved, crops.GAT_RESIZE = crops.GAT_RESIZE, kernel
    try:
        return crops.crop(img, box, "gat_head_box", 224, box_kind="head")
    finally:
        crops.GAT_RESIZE = saved


def grey_levels(img: np.ndarray, n: int) -> None:
    from gaze4hri_bench.faces.crops import GAT_RESIZE, crop

    H, W = img.shape[:2]
    boxes = random_boxes(n, H, W)
    print(
        f"\nGrey levels, {n} random float head boxes on a {W} x {H} photograph (inside, each border, corner); "
        f"GaT resize: ours {GAT_RESIZE!r} (default) and 'pil':"
    )
    for kind in ("all", "inside", "left", "right", "top", "bottom", "corner"):
        sel = [b for k, b in boxes if kind in ("all", k)]
        off_u8 = [gat_official_crop(img, b, "uint8") for b in sel]
        off_f = [gat_official_crop(img, b, "float") for b in sel]
        for kernel in ("torch_float", "pil"):
            ours = [_ours_gat(img, b, kernel) for b in sel]
            print(f"  {kind:6s} GaT ({kernel:11s}) vs torch float path: {_grey(list(zip(ours, off_f, strict=True)))}")
            print(
                f"  {kind:6s} GaT ({kernel:11s}) vs torch uint8 kernel: {_grey(list(zip(ours, off_u8, strict=True)))}"
            )
        mc = [(crop(img, b, "mcgaze_head_square", 448, box_kind="head"), mcgaze_official_crop(img, b)) for b in sel]
        print(f"  {kind:6s} MCGaze vs official:                    {_grey(mc)}")
    ints = [np.round(b) for _, b in boxes]
    gat_i = [(crop(img, b, "gat_head_box", 224, box_kind="head"), gat_official_crop(img, b, "float")) for b in ints]
    mc_i = [(crop(img, b, "mcgaze_head_square", 448, box_kind="head"), mcgaze_official_crop(img, b)) for b in ints]
    print(f"  integer boxes: GaT vs float path {_grey(gat_i)}; MCGaze {_grey(mc_i)}")


def clips(img: np.ndarray, n: int, seed: int = 1) -> list[tuple[str, list[np.ndarray]]]:
    """``n`` clips of 8 head boxes drifting at float coordinates: inside, cut by the top
    border, cut by the left border (MCGaze uses the first 7)."""
    rng = np.random.default_rng(seed)
    H, W = img.shape[:2]
    starts = [
        ("inside", (W / 2 - 60, H / 3 - 70)),
        ("top border", (W / 2 - 60, -35.3)),
        ("left border", (-30.7, H / 3 - 70)),
    ]
    out = []
    for label, (x0, y0) in (starts * (n // len(starts) + 1))[:n]:
        w, h = rng.uniform(100, 140), rng.uniform(120, 160)
        steps = np.cumsum(rng.normal(0, 2.0, (8, 2)), axis=0)
        out.append((label, [np.array([x0 + dx, y0 + dy, x0 + dx + w, y0 + dy + h]) for dx, dy in steps]))
    return out


def network(img: np.ndarray, n_clips: int, seeds: int) -> None:
    import torch
    from gaze4hri_bench.faces.crops import crop
    from gaze4hri_bench.methods import get_method
    from gaze4hri_bench.specs import SPECS
    from gaze4hri_bench.zoo import families
    from gaze4hri_bench.zoo.export import random_model

    cl = clips(img, n_clips)
    gat = get_method("gat_gaze360", profile="reference")
    mc = get_method("mcgaze_gaze360", profile="reference")
    print(
        f"\nEnd to end, random-weight networks (zoo random_model, seeds 0..{seeds - 1}), {n_clips} clips "
        f"({', '.join(label for label, _ in cl)}):"
    )
    # GaT: (B, 8, 3, 224, 224)
    off_u8 = np.stack(
        [np.stack([gat_official_tensor(gat_official_crop(img, b, "uint8")) for b in boxes]) for _, boxes in cl]
    )
    off_f = np.stack(
        [np.stack([gat_official_tensor(gat_official_crop(img, b, "float")) for b in boxes]) for _, boxes in cl]
    )
    ours = {
        k: np.stack([np.stack([gat.to_tensor(_ours_gat(img, b, k)) for b in boxes]) for _, boxes in cl])
        for k in ("torch_float", "pil")
    }
    res = {}
    t0 = time.perf_counter()
    k = len(cl)
    for seed in range(seeds):
        model = random_model(families.load_family("gat"), SPECS["gat_gaze360"], seed=seed)
        with torch.no_grad():
            g = model(
                torch.from_numpy(np.concatenate([off_f, off_u8, ours["torch_float"], ours["pil"]]).astype(np.float32))
            ).numpy()
        g_off = {"torch float path": g[:k], "torch uint8 kernel": g[k : 2 * k]}
        g_our = {"torch_float": g[2 * k : 3 * k], "pil": g[3 * k :]}
        for kernel, go in g_our.items():
            for path, gf in g_off.items():
                res.setdefault((kernel, path), []).append(_angles(go, gf))
    for (kernel, path), v in res.items():
        v = np.concatenate(v)
        print(
            f"  GaT ours ({kernel}) vs official ({path}): max {v.max():.4f} deg, "
            f"mean {v.mean():.4f}  ({len(v)} outputs)"
        )
    print(f"  (GaT: {time.perf_counter() - t0:.0f} s)")
    # MCGaze: (1, 7, 3, ph, pw) + frame_hw
    t0 = time.perf_counter()
    res_mc = []
    models = [random_model(families.load_family("mcgaze"), SPECS["mcgaze_gaze360"], seed=seed) for seed in range(seeds)]
    for label, boxes in cl:
        off, off_hw = mcgaze_official_clip([mcgaze_official_crop(img, b) for b in boxes[:7]])
        prep = [mc._prepared(crop(img, b, mc.crop_rule, 448, box_kind="head"), np.eye(3), None) for b in boxes[:7]]
        hw = np.stack([p.hw for p in prep])
        our = mc.fit_clip(np.stack([p.tensor for p in prep]), hw)
        same = our.shape == off.shape and np.array_equal(hw, off_hw)
        if not same:  # each clip through the network with its own image sizes
            print(
                f"  MCGaze {label}: image sizes differ: ours {our.shape[2:]} {hw[:, 0].astype(int).tolist()} x "
                f"{hw[:, 1].astype(int).tolist()}, official {off.shape[2:]} {off_hw[:, 0].astype(int).tolist()} x "
                f"{off_hw[:, 1].astype(int).tolist()}"
            )
        for model in models:
            with torch.no_grad():
                g_off = model(torch.from_numpy(off)[None], torch.from_numpy(off_hw)[None]).numpy()
                g_our = model(torch.from_numpy(np.ascontiguousarray(our))[None], torch.from_numpy(hw)[None]).numpy()
            a = _angles(g_our, g_off)
            res_mc.append(a)
        diff = f"max |input diff| {np.abs(our - off).max():.2e}" if same else "inputs differ in size"
        print(f"  MCGaze {label}: clip {tuple(off.shape)}, {diff}, max {max(r.max() for r in res_mc[-seeds:]):.4f} deg")
    if res_mc:
        v = np.concatenate(res_mc)
        print(f"  MCGaze ours vs official: max {v.max():.4f} deg, mean {v.mean():.4f}  ({len(v)} outputs)")
    print(f"  (MCGaze: {time.perf_counter() - t0:.0f} s)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boxes", type=int, default=400, help="random boxes for the grey-level comparison")
    ap.add_argument("--clips", type=int, default=3, help="clips for the end-to-end comparison")
    ap.add_argument("--seeds", type=int, default=2, help="random networks (weights seeds)")
    ap.add_argument("--no-network", action="store_true", help="grey levels only (no random-weight networks)")
    args = ap.parse_args(argv)
    import torch

    img = photograph()
    print(
        f"torch {torch.__version__}, CPU capability {torch.backends.cpu.get_cpu_capability()} "
        f"(torchvision 0.16.1 takes the uint8 kernel only for 'AVX2')"
    )
    grey_levels(img, args.boxes)
    if not args.no_network:
        network(img, args.clips, args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
