"""The benchmark's colour table, shared by the report's figures (stats) and the review clips
(review), so that a method has one colour everywhere and neither package imports the other.

Colour is keyed, never positional: :func:`method_color` gives a method the same colour in
every figure and clip; conditions (fixed camera / arc, crop / rectified, mutual-gaze scans,
illumination levels) take :data:`CONDITION_COLORS`, greys and earth tones that share no hue
with the methods'. Contrast follows WCAG 2 (relative luminance, contrast ratio).
"""
from __future__ import annotations

import zlib

import numpy as np

__all__ = ["METHOD_COLORS", "CONDITION_COLORS", "BASELINES", "method_color", "condition_color", "hex_rgb",
           "relative_luminance", "contrast_ratio"]

#: One fixed colour per method, in every figure keyed by method (Okabe-Ito and tab10 hues).
METHOD_COLORS = {
    "puregaze_eth": "#0072B2", "gazetr_eth": "#D55E00", "puregaze_gaze360": "#56B4E9", "gazetr_gaze360": "#E69F00",
    "l2cs_gaze360": "#009E73", "mcgaze_gaze360": "#CC79A7", "gat_gaze360": "#7B3294",
    "head_pose": "#555555", "straight": "#999999", "tiny_test": "#B8860B",
}
#: Colours for methods not listed above, picked by a stable hash of the name.
_EXTRA = ("#1B9E77", "#E7298A", "#66A61E", "#A6761D", "#1F78B4", "#E31A1C", "#6A3D9A", "#B15928")
#: Weight-free baselines: reference lines, not bars; kept off the networks' colour scales.
BASELINES = frozenset({"head_pose", "straight"})
#: One fixed colour per condition, hues that no method uses (greys and earth tones).
CONDITION_COLORS = {
    "fixed camera": "#4D4D4D", "fixed": "#4D4D4D", "arc": "#BDBDBD",
    "crop": "#8C6D46", "rectified": "#D9C7A7",
    "h_slow": "#3F3F3F", "h_fast": "#7F7F7F", "v_slow": "#A68A64", "v_fast": "#E0D2B8",
    "10": "#2B2B2B", "25": "#6B6B6B", "50": "#A5A5A5", "100": "#D6D6D6",
}
_COND_EXTRA = ("#5E5E5E", "#B09A7A", "#8F8F8F", "#CDBB9C", "#363636")


def method_color(method: str) -> str:
    """The method's fixed colour (its registered name; unknown names by a stable hash)."""
    m = str(method)
    return METHOD_COLORS.get(m) or _EXTRA[zlib.crc32(m.encode()) % len(_EXTRA)]


def condition_color(condition) -> str:
    """The condition's fixed colour (no method uses it)."""
    c = str(condition)
    return CONDITION_COLORS.get(c) or _COND_EXTRA[zlib.crc32(c.encode()) % len(_COND_EXTRA)]


def hex_rgb(h: str) -> tuple[int, int, int]:
    """"#RRGGBB" -> (r, g, b), 0-255."""
    h = h.lstrip("#")
    return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


def relative_luminance(rgb) -> float:
    """WCAG 2 relative luminance of an sRGB colour (0-255 per channel)."""
    c = np.asarray(rgb, float) / 255.0
    lin = np.where(c <= 0.03928, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(lin @ np.array([0.2126, 0.7152, 0.0722]))


def contrast_ratio(a, b) -> float:
    """WCAG 2 contrast ratio (1-21) between two sRGB colours."""
    la, lb = sorted((relative_luminance(a), relative_luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)
