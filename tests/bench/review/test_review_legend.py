"""Review frames readable at a glance (issue 24, item 3): read back from a rendered
1280 x 720 frame the legend's text height (at least 1/30 of the frame) and its contrast
against the legend box on a white frame, the method colours (the report's palette, on
the legend swatch and on the arrow), and the marker that stands for a gaze straight
into the camera (circle with a dot) or straight away from it (circle with a cross)."""

from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.review.draw import (
    TEXT_COLOR,
    contrast_ratio,
    draw_frame,
    hex_rgb,
    marker_radius,
    relative_luminance,
)
from gaze4hri_bench.review.overlay import frame_arrows
from gaze4hri_bench.review.render import _colors
from gaze4hri_bench.style import method_color

H, W = 720, 1280
K = np.array([[900.0, 0, 639.5], [0, 900.0, 359.5], [0, 0, 1]])
EYE = np.array([0.02, -0.01, 0.6])
KEYS = ["head_pose__crop", "straight__crop", "l2cs_gaze360__crop"]


def _runs(mask_rows: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) row of each run of True."""
    out, start = [], None
    for i, v in enumerate(list(mask_rows) + [False]):
        if v and start is None:
            start = i
        elif not v and start is not None:
            out.append((start, i - 1))
            start = None
    return out


def _near(px, rgb, tol=40) -> bool:
    return float(np.abs(np.asarray(px, float) - np.asarray(rgb, float)).max()) <= tol


@pytest.mark.unit
def test_legend_text_is_tall_contrasting_and_in_the_reports_colours():
    img = np.full((H, W, 3), 255, np.uint8)  # white: the worst case for a light text
    colors = _colors(KEYS)
    legend = [
        ("gt", "GROUND TRUTH"),
        ("head_pose__crop", "HEAD POSE 12.3 DEG"),
        ("straight__crop", "STRAIGHT 20.1 DEG"),
    ]
    out = draw_frame(img, [], colors, "S01 ARC P5 FRAME 12", "", legend)
    changed = (out != 255).any(axis=2)
    ys, xs = np.nonzero(changed)
    box = out[: ys.max() + 1, : xs.max() + 1]
    bg = np.median(box.reshape(-1, 3), axis=0)
    assert relative_luminance(bg) < 0.1  # a dark backing box
    lum = (box.astype(float) @ np.array([0.2126, 0.7152, 0.0722])) / 255.0
    ink = lum > 0.8  # the white text and the swatch borders
    x_text = int(np.nonzero(ink[:, :].any(axis=0))[0].min())
    lines = _runs(ink.any(axis=1))
    assert len(lines) == 4, lines  # header + three entries, separated by box rows
    for a, b in lines:  # capitals only: the ink height is the cap height
        assert b - a + 1 >= H / 30, (a, b)
    text_px = box[ink]
    assert contrast_ratio(np.median(text_px, axis=0), bg) >= 4.5
    assert contrast_ratio(TEXT_COLOR, bg) >= 7.0
    # each entry's swatch is in the report's colour for that method (head_pose's dark grey included)
    for (a, b), key in zip(lines[2:], ["head_pose__crop", "straight__crop"], strict=True):
        sw = out[(a + b) // 2, x_text : x_text + (b - a)]
        hits = [p for p in sw if _near(p, hex_rgb(method_color(key.split("__")[0])), 3)]
        assert len(hits) >= (b - a) // 2, key


@pytest.mark.unit
def test_an_arrow_keeps_its_method_colour_and_a_halo():
    g = np.array([0.5, 0.2, -1.0]) / np.linalg.norm([0.5, 0.2, -1.0])
    arrows = frame_arrows(K, EYE, g, {"head_pose__crop": g}, {"head_pose__crop": 3.0})
    img = np.full((H, W, 3), 85, np.uint8)  # a grey close to head_pose's own grey
    out = draw_frame(img, [a for a in arrows if a.name != "gt"], _colors(KEYS), "", "", [])
    a = arrows[1]
    mid = ((a.start + a.end) / 2).round().astype(int)
    assert _near(out[mid[1], mid[0]], hex_rgb(method_color("head_pose")), 3)
    # the halo: a light band right next to the dark arrow, on a dark grey frame
    d = (a.end - a.start) / np.linalg.norm(a.end - a.start)
    nrm = np.array([-d[1], d[0]])
    side = [out[tuple((mid + s * nrm).round().astype(int))[::-1]] for s in np.arange(1.0, 4.0, 0.5)]
    assert max(relative_luminance(p) for p in side) > 0.5


def _ring_hits(out, c, r, rgb) -> int:
    ang = np.linspace(0, 2 * np.pi, 16, endpoint=False)
    pts = (c[None, :] + r * np.stack([np.cos(ang), np.sin(ang)], 1)).round().astype(int)
    return sum(_near(out[v, u], rgb) for u, v in pts)


@pytest.mark.unit
@pytest.mark.parametrize("direction,toward", [((0.0, 0.0, -1.0), True), (tuple(EYE / np.linalg.norm(EYE)), False)])
def test_gaze_along_the_viewing_ray_is_a_marker(direction, toward):
    """``straight`` looks into the camera: its 0.25 m arrow would project to a stub of
    about 20 px; it is drawn as a circle with a dot (toward the viewer). A gaze straight
    away from the camera is a circle with a cross."""
    img = np.full((H, W, 3), 30, np.uint8)  # far from straight's light grey
    arrows = frame_arrows(K, EYE, np.array([np.nan] * 3), {"straight__crop": np.array(direction)}, {})
    (a,) = arrows
    assert (a.depth_cos < -0.99) if toward else (a.depth_cos > 0.99)
    rgb = hex_rgb(method_color("straight"))
    out = draw_frame(img, arrows, _colors(KEYS), "", "", [])
    c = a.start.round().astype(int)
    r = marker_radius(H)
    assert _ring_hits(out, c, r, rgb) >= 14  # the circle
    assert _near(out[c[1], c[0]], rgb)  # a dot or the cross's centre
    k = r / np.sqrt(2) * 0.6  # on the cross's diagonal, off the dot
    diag = [out[int(round(c[1] + sy * k)), int(round(c[0] + sx * k))] for sx in (-1, 1) for sy in (-1, 1)]
    crossed = sum(_near(p, rgb) for p in diag)
    assert crossed == (0 if toward else 4), crossed
    far = c + np.array([3 * r, 0])
    assert (out[far[1], far[0]] == 30).all()  # no stub arrow beyond the marker
