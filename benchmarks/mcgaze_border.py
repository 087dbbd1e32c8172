"""MCGaze at the image border, with random weights: how far the official border rule
moves the network's output from the black-square crop gaze4hri used before, what a
fixed 448 x 448 input would leave, and that the pipeline's input equals the official one.

Official (zgchen33/MCGaze, MCGaze_demo/demo.ipynb + the L2CS-setting test pipeline): the
head square is sliced out of the image (cut at its border), resized with its aspect ratio
kept (long side 448), normalised, padded with zeros to a multiple of 32 and then to the
largest frame of the clip (mmcv collate), and the learned proposal boxes are scaled by
each frame's image size. The crop and the normalisation come from faces.crops (the crop
is checked against the demo's slicing and mmcv's resize in tests/bench/faces/test_crops.py);
the padding is written out here. Ours: the pipeline's padding (``pad_tensor`` then
``OnnxMethod.fit_clip``; the ONNX clip input has dynamic image axes). Before: a 448 x 448 square with black outside the
image, boxes scaled by 448. Also shown: the official images and boxes but padded to 448
x 448 (what a static input would give).

Two 7-frame clips in a 360 x 640 frame: a head moving up out of the image (the last
frames cut), and a head cut in every frame (so the official clip is padded to less than
448). Prints the angles between the variants over all frames and networks. Random weights: the effect
on a trained network's output differs; this measures input sensitivity.

    .venv/bin/python benchmarks/mcgaze_border.py [--seeds 3]
"""
from __future__ import annotations

import argparse
import math

import numpy as np


def _image(h: int = 360, w: int = 640, seed: int = 0) -> np.ndarray:
    """A smooth random RGB image (low-frequency noise upsampled), uint8."""
    import cv2

    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (h // 16, w // 16, 3)).astype(np.uint8)
    return cv2.GaussianBlur(cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC), (0, 0), 3)


def _angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    cos = np.clip(np.sum(a * b, axis=-1) / np.linalg.norm(a, axis=-1) / np.linalg.norm(b, axis=-1), -1, 1)
    return np.degrees(np.arccos(cos))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="random networks (weights seeds)")
    args = ap.parse_args(argv)
    import torch
    from gaze4hri_bench.faces.crops import crop_cut_keep_ratio, crop_square, pad_tensor, rule_square, to_tensor
    from gaze4hri_bench.methods import get_method
    from gaze4hri_bench.specs import SPECS
    from gaze4hri_bench.zoo import families
    from gaze4hri_bench.zoo.export import random_model

    spec = SPECS["mcgaze_gaze360"]
    method = get_method("mcgaze_gaze360")
    img = _image()
    clips = {"moving out of the top": np.linspace(60, 5, 7), "cut in every frame": np.linspace(10, -20, 7)}
    models = [random_model(families.load_family("mcgaze"), spec, seed=seed) for seed in range(args.seeds)]
    for label, ys in clips.items():
        heads = [np.array([280.0, y, 360.0, y + 100.0]) for y in ys]  # 80 x 100 head boxes
        regions = [rule_square(h, "mcgaze_head_square", "head") for h in heads]
        cut = [1 - (r[3] - max(r[1], 0)) / (r[3] - r[1]) for r in regions]
        contents = [crop_cut_keep_ratio(img, r, 448) for r in regions]
        # the official steps, written out here: normalise, pad each image to a multiple of 32, the clip to its largest
        normed = [to_tensor(c, spec) for c in contents]
        ph, pw = (int(math.ceil(max(x.shape[i] for x in normed) / 32) * 32) for i in (1, 2))
        official = np.stack([np.pad(x, ((0, 0), (0, ph - x.shape[1]), (0, pw - x.shape[2]))) for x in normed])
        hw = np.array([c.shape[:2] for c in contents], np.float32)
        # the pipeline's path (methods.network.OnnxMethod: prepare -> pad to 448 -> fit_clip)
        ours = method.fit_clip(np.stack([pad_tensor(x, 448) for x in normed]), hw)
        pad448 = np.stack([pad_tensor(x, 448) for x in normed])
        before = np.stack([to_tensor(crop_square(img, r, 448), spec) for r in regions])
        print(
            f"\n{label}: share of the square cut: {', '.join(f'{c:.0%}' for c in cut)}; "
            f"official padded size {ph} x {pw}"
        )
        res = {"before (black square, boxes by 448)": [], "padded to 448, boxes by image": [], "ours (pipeline)": []}
        t_hw = torch.from_numpy(hw)[None]
        for model in models:
            with torch.no_grad():
                g_off = model(torch.from_numpy(official)[None], t_hw)[0].numpy()
                for key, x, h in (
                    ("before (black square, boxes by 448)", before, None),
                    ("padded to 448, boxes by image", pad448, t_hw),
                    ("ours (pipeline)", ours, t_hw),
                ):
                    res[key].append(
                        _angles(model(torch.from_numpy(np.ascontiguousarray(x))[None], h)[0].numpy(), g_off)
                    )
        for key, v in res.items():
            v = np.concatenate(v)
            print(
                f"  {key} vs official: median {np.median(v):.3f} deg, max {v.max():.3f}  "
                f"({args.seeds} random networks x 7 frames)"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
