"""Pure overlay geometry of a review frame: where the gaze arrows go in the image.

An arrow starts at the eye midpoint (camera frame, m) and runs ``length_m`` along a
unit gaze vector; both ends are projected with the pinhole model x = K X / Z (OpenCV
optical axes: x right, y down, z forward; Hartley & Zisserman, Sec. 6.1). A segment
that crosses behind the camera is clipped at ``near_m`` in front of it. No I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["project", "arrow_segment", "Arrow", "depth_cosine", "frame_arrows", "ARROW_LENGTH_M", "NEAR_M"]

ARROW_LENGTH_M = 0.25  # the study's subjects sit 0.5-1 m from the camera
NEAR_M = 0.05


def project(K, points_cam) -> np.ndarray:
    """Pixels (..., 2) of camera-frame points (..., 3); NaN where z <= 0."""
    P = np.asarray(points_cam, float)
    K = np.asarray(K, float)
    z = P[..., 2:3]
    with np.errstate(divide="ignore", invalid="ignore"):
        uvw = P @ K.T
        uv = uvw[..., :2] / z
    return np.where(z > 0, uv, np.nan)


def arrow_segment(
    K, origin_cam, direction_cam, length_m: float = ARROW_LENGTH_M, near_m: float = NEAR_M
) -> tuple[np.ndarray, np.ndarray] | None:
    """(start px, end px) of the arrow origin -> origin + length * direction, clipped to
    z >= near_m; None when the origin or direction is unknown or the whole arrow is
    behind the near plane."""
    o = np.asarray(origin_cam, float).reshape(3)
    d = np.asarray(direction_cam, float).reshape(3)
    if not (np.isfinite(o).all() and np.isfinite(d).all()) or np.linalg.norm(d) == 0:
        return None
    d = d / np.linalg.norm(d)
    e = o + length_m * d
    if o[2] < near_m and e[2] < near_m:
        return None
    if o[2] < near_m or e[2] < near_m:  # clip the part behind the near plane
        s = (near_m - o[2]) / (e[2] - o[2])
        c = o + s * (e - o)
        o, e = (c, e) if o[2] < near_m else (o, c)
    uv = project(K, np.stack([o, e]))
    return uv[0], uv[1]


@dataclass(frozen=True)
class Arrow:
    """One arrow to draw: label, start and end (pixels), the error label text, and
    ``depth_cos``: the cosine between the gaze and the camera's viewing ray through the
    eye midpoint (+1: straight away from the camera, into the image; -1: straight into
    the camera, out of the image; NaN: unknown). A gaze along the viewing ray projects
    to a stub that cannot be seen, so the painter draws a marker for it instead."""

    name: str
    start: np.ndarray
    end: np.ndarray
    text: str
    depth_cos: float = float("nan")


def depth_cosine(origin_cam, direction_cam) -> float:
    """Cosine between ``direction_cam`` and the viewing ray camera -> ``origin_cam``
    (negative: the gaze comes toward the camera; NaN when either is unknown or zero)."""
    o = np.asarray(origin_cam, float).reshape(3)
    d = np.asarray(direction_cam, float).reshape(3)
    no, nd = np.linalg.norm(o), np.linalg.norm(d)
    if not (np.isfinite(no) and np.isfinite(nd)) or no == 0 or nd == 0:
        return float("nan")
    return float(o @ d / (no * nd))


def frame_arrows(
    K, eye_cam, gt, preds: dict[str, np.ndarray], errors: dict[str, float], length_m: float = ARROW_LENGTH_M
) -> list[Arrow]:
    """The arrows of one frame: ground truth first (name ``gt``), then each method in
    the order given; methods whose vector is unknown (invalid frame) are left out."""
    out = []
    seg = arrow_segment(K, eye_cam, gt, length_m)
    if seg is not None:
        out.append(Arrow("gt", seg[0], seg[1], "ground truth", depth_cosine(eye_cam, gt)))
    for name, v in preds.items():
        seg = arrow_segment(K, eye_cam, v, length_m)
        if seg is None:
            continue
        e = errors.get(name, float("nan"))
        out.append(
            Arrow(name, seg[0], seg[1], f"{name}: {e:.1f} deg" if np.isfinite(e) else name, depth_cosine(eye_cam, v))
        )
    return out
