"""Paint a review frame: arrows from overlay.frame_arrows, a legend with each method's
angular error, and the frame's validity reason (OpenCV drawing on an RGB copy)."""
from __future__ import annotations

import numpy as np

from .overlay import Arrow

__all__ = ["hex_rgb", "draw_frame", "GT_COLOR"]

GT_COLOR = (0, 200, 0)


def hex_rgb(h: str) -> tuple[int, int, int]:
    h = h.lstrip("#")
    return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


def draw_frame(image: np.ndarray, arrows: list[Arrow], colors: dict[str, tuple[int, int, int]], header: str,
               reason: str, legend: list[tuple[str, str]] | None = None) -> np.ndarray:
    """RGB uint8 copy of ``image`` with the arrows, a header line (trial, frame), the
    legend lines (name, text) in each method's colour, and the validity reason."""
    import cv2

    img = np.ascontiguousarray(image.copy())
    h, w = img.shape[:2]
    scale = max(0.35, h / 720.0)
    thick = max(1, int(round(2 * scale)))
    for a in arrows:
        c = GT_COLOR if a.name == "gt" else colors.get(a.name, (255, 255, 255))
        p0 = tuple(int(round(x)) for x in np.clip(a.start, -10 * w, 10 * w))
        p1 = tuple(int(round(x)) for x in np.clip(a.end, -10 * w, 10 * w))
        cv2.arrowedLine(img, p0, p1, c, thick + (1 if a.name == "gt" else 0), cv2.LINE_AA, tipLength=0.15)

    def text(s, y, c):
        cv2.putText(img, s, (int(8 * scale), y), cv2.FONT_HERSHEY_SIMPLEX, 0.6 * scale, (0, 0, 0), thick + 2, cv2.LINE_AA)
        cv2.putText(img, s, (int(8 * scale), y), cv2.FONT_HERSHEY_SIMPLEX, 0.6 * scale, c, thick, cv2.LINE_AA)

    step = int(22 * scale)
    y = step
    text(header, y, (255, 255, 255))
    for name, s in legend or []:
        y += step
        text(s, y, GT_COLOR if name == "gt" else colors.get(name, (255, 255, 255)))
    if reason:
        text(f"invalid: {reason}", h - int(10 * scale), (255, 80, 80))
    return img
