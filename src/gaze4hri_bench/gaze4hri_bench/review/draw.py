"""Paint a review frame: arrows from overlay.frame_arrows, a legend with each method's
angular error, and the frame's validity reason (OpenCV drawing on an RGB copy).

Readable at a glance (issue 24): the legend's text is at least 1/30 of the frame height
(:func:`text_height`), white on a dark backing box (contrast ratio well above WCAG's
4.5:1 on any video), each method named next to a swatch in its fixed colour from the
report's palette (``gaze4hri_bench.style.method_color``; the text itself stays white so that a
dark method colour such as ``head_pose``'s grey stays legible). Arrows carry a halo
that contrasts with their colour (light under dark colours, dark under light ones). A
gaze along the camera's viewing ray (the ``straight`` baseline, a subject looking into
the lens) projects to a stub that cannot be seen: it is drawn as a marker, the
convention for a vector normal to the image plane: a circle with a dot for a vector
coming out of the image toward the viewer (into the camera), a circle with a cross for
one going into the image, away from the camera.
"""
from __future__ import annotations

import math

import numpy as np

from ..style import contrast_ratio, hex_rgb, relative_luminance
from .overlay import Arrow

__all__ = ["hex_rgb", "draw_frame", "text_height", "marker_radius", "relative_luminance", "contrast_ratio",
           "GT_COLOR", "TEXT_COLOR", "REASON_COLOR", "BOX_ALPHA"]

GT_COLOR = (0, 200, 0)
TEXT_COLOR = (255, 255, 255)
REASON_COLOR = (255, 140, 140)
#: Opacity of the black legend box: white text on it keeps a contrast ratio of at least
#: 7:1 over a white frame (box luminance 0.25 of white -> about 0.05).
BOX_ALPHA = 0.75
_FONT = 0  # cv2.FONT_HERSHEY_SIMPLEX


def text_height(frame_h: int) -> int:
    """Cap height (pixels) of the legend text: at least 1/30 of the frame height."""
    return max(1, math.ceil(frame_h / 30.0))


def marker_radius(frame_h: int) -> int:
    """Radius of the into/out-of-image marker; an arrow shorter than 3 radii gets one."""
    return max(3, int(round(0.8 * text_height(frame_h))))


def _halo(c) -> tuple[int, int, int]:
    """Black under a light colour, white under a dark one."""
    return (0, 0, 0) if relative_luminance(c) > 0.18 else (255, 255, 255)


def _font(frame_h: int) -> tuple[float, int]:
    import cv2

    px = text_height(frame_h)
    thick = max(1, int(round(px / 12)))
    scale = px / cv2.getTextSize("H", _FONT, 1.0, thick)[0][1]
    while cv2.getTextSize("H", _FONT, scale, thick)[0][1] < px:  # never below the target height
        scale *= 1.03
    return scale, thick


def _box(img, x0, y0, x1, y1) -> None:
    h, w = img.shape[:2]
    x0, y0, x1, y1 = max(0, x0), max(0, y0), min(w, x1), min(h, y1)
    if x1 > x0 and y1 > y0:
        roi = img[y0:y1, x0:x1]
        roi[:] = (roi.astype(np.float32) * (1.0 - BOX_ALPHA)).round().astype(np.uint8)


def _marker(img, center, r, toward_camera: bool, color, thick) -> None:
    """Circle with a dot (toward the viewer, into the camera) or a cross (away)."""
    import cv2

    c = tuple(int(round(v)) for v in center)
    halo = _halo(color)
    cv2.circle(img, c, r, halo, thick + 2, cv2.LINE_AA)
    cv2.circle(img, c, r, color, thick, cv2.LINE_AA)
    if toward_camera:
        d = max(2, r // 3)
        cv2.circle(img, c, d + 1, halo, -1, cv2.LINE_AA)
        cv2.circle(img, c, d, color, -1, cv2.LINE_AA)
    else:
        k = int(round(r / math.sqrt(2)))
        for sx, sy in ((1, 1), (1, -1)):
            p0, p1 = (c[0] - sx * k, c[1] - sy * k), (c[0] + sx * k, c[1] + sy * k)
            cv2.line(img, p0, p1, halo, thick + 2, cv2.LINE_AA)
        for sx, sy in ((1, 1), (1, -1)):
            p0, p1 = (c[0] - sx * k, c[1] - sy * k), (c[0] + sx * k, c[1] + sy * k)
            cv2.line(img, p0, p1, color, thick, cv2.LINE_AA)


def draw_frame(image: np.ndarray, arrows: list[Arrow], colors: dict[str, tuple[int, int, int]], header: str,
               reason: str, legend: list[tuple[str, str]] | None = None) -> np.ndarray:
    """RGB uint8 copy of ``image`` with the arrows (or markers, for a gaze along the
    viewing ray), a header line (trial, frame) and the legend lines (name, text) on a
    dark box in the top-left corner, each legend line after a swatch of the method's
    colour, and the validity reason on a box at the bottom."""
    import cv2

    img = np.ascontiguousarray(image.copy())
    h, w = img.shape[:2]
    scale, thick = _font(h)
    px = text_height(h)
    lw = max(1, int(round(h / 240)))
    r = marker_radius(h)
    markers = 0
    for a in arrows:
        c = GT_COLOR if a.name == "gt" else colors.get(a.name, (255, 255, 255))
        t = lw + (1 if a.name == "gt" else 0)
        p0 = tuple(int(round(x)) for x in np.clip(a.start, -10 * w, 10 * w))
        p1 = tuple(int(round(x)) for x in np.clip(a.end, -10 * w, 10 * w))
        length = math.hypot(p1[0] - p0[0], p1[1] - p0[1])
        if length < 3 * r and np.isfinite(a.depth_cos):  # along the viewing ray: a marker, not a stub
            _marker(img, p0, r + markers * (t + 3), a.depth_cos < 0, c, t)
            markers += 1
            continue
        cv2.arrowedLine(img, p0, p1, _halo(c), t + 2, cv2.LINE_AA, tipLength=0.15)
        cv2.arrowedLine(img, p0, p1, c, t, cv2.LINE_AA, tipLength=0.15)

    lines = ([(None, header)] if header else []) + [(n, s) for n, s in (legend or [])]
    if lines:
        pad = max(2, px // 2)
        step = int(round(px * 1.7))
        sw = px  # swatch side
        widths = [cv2.getTextSize(s, _FONT, scale, thick)[0][0] + (0 if n is None else sw + pad) for n, s in lines]
        _box(img, 0, 0, max(widths) + 2 * pad, pad + step * len(lines))
        y = pad + px
        for n, s in lines:
            x = pad
            if n is not None:
                c = GT_COLOR if n == "gt" else colors.get(n, (255, 255, 255))
                cv2.rectangle(img, (x, y - px), (x + sw, y), TEXT_COLOR, -1)
                inset = max(1, sw // 8)
                cv2.rectangle(img, (x + inset, y - px + inset), (x + sw - inset, y - inset), c, -1)
                x += sw + pad
            cv2.putText(img, s, (x, y), _FONT, scale, TEXT_COLOR, thick, cv2.LINE_AA)
            y += step
    if reason:
        s = f"invalid: {reason}"
        pad = max(2, px // 2)
        (tw, _), base = cv2.getTextSize(s, _FONT, scale, thick)
        _box(img, 0, h - px - 2 * pad - base, tw + 2 * pad, h)
        cv2.putText(img, s, (pad, h - pad - base), _FONT, scale, REASON_COLOR, thick, cv2.LINE_AA)
    return img
