"""Face-mesh landmarks (MediaPipe legacy face mesh, 468/478 points, offline models in
the 0.10.21 wheel) and the eye aspect ratio used for blink detection.

MediaPipe's own short-range detector inside the face-mesh graph misses faces that are
small in a wide frame, so :class:`FaceMesh` runs on a square crop around a detected
face box and maps the points back to the full image.

EAR (Soukupova & Cech, "Real-Time Eye Blink Detection using Facial Landmarks",
CVWW 2016, Eq. 1): EAR = (|p2 - p6| + |p3 - p5|) / (2 |p1 - p4|), with p1/p4 the eye
corners and p2, p3 / p6, p5 the upper / lower lid points.
"""
from __future__ import annotations

import numpy as np

from .crops import crop_square
from .mesh_graph import MeshGraph, mediapipe_import

__all__ = ["FaceMesh", "eye_aspect_ratio", "mean_ear", "EAR_RIGHT", "EAR_LEFT", "KEYPOINTS5", "mediapipe_import",
           "to_image"]

# Face-mesh indices p1..p6 (MediaPipe canonical model). "Right" is the subject's right eye.
EAR_RIGHT = (33, 160, 158, 133, 153, 144)
EAR_LEFT = (362, 385, 387, 263, 373, 380)
# 5 keypoints in the RetinaFace / YOLOv8-face order (image-left eye first for a frontal
# face = subject's right eye): eye centres, nose tip, mouth corners.
KEYPOINTS5 = ((33, 133), (362, 263), (1,), (61,), (291,))


def eye_aspect_ratio(eye) -> float | np.ndarray:
    """EAR of six eye points p1..p6 (..., 6, 2 or 3) (Soukupova & Cech 2016, Eq. 1)."""
    p = np.asarray(eye, float)[..., :2]
    v1 = np.linalg.norm(p[..., 1, :] - p[..., 5, :], axis=-1)
    v2 = np.linalg.norm(p[..., 2, :] - p[..., 4, :], axis=-1)
    h = np.linalg.norm(p[..., 0, :] - p[..., 3, :], axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = (v1 + v2) / (2.0 * h)
    return float(e) if np.ndim(e) == 0 else e


def mean_ear(landmarks) -> float:
    """Mean EAR of both eyes from face-mesh landmarks (N >= 468, pixels)."""
    L = np.asarray(landmarks, float)
    return 0.5 * (eye_aspect_ratio(L[list(EAR_RIGHT)]) + eye_aspect_ratio(L[list(EAR_LEFT)]))


def keypoints5(landmarks) -> np.ndarray:
    L = np.asarray(landmarks, float)[:, :2]
    return np.array([L[list(ids)].mean(axis=0) for ids in KEYPOINTS5])


def to_image(pts: np.ndarray, region) -> np.ndarray:
    """Normalized landmarks of a square crop ``region`` (x1, y1, x2, y2) -> image pixels
    (x, y) and depth in the same pixel scale (MediaPipe's z is in units of the crop width)."""
    x1, y1, x2, _ = (float(v) for v in region)
    s = x2 - x1
    out = np.empty_like(pts, dtype=float)
    out[:, 0] = x1 + pts[:, 0] * s
    out[:, 1] = y1 + pts[:, 1] * s
    out[:, 2] = pts[:, 2] * s
    return out


class FaceMesh:
    """MediaPipe face mesh on a face box: ``landmarks(image, box)`` -> (468, 3) pixel
    x, y and relative depth, or None when no face is found in the crop.
    ``refine=True`` adds the 10 iris points (478)."""

    def __init__(self, refine: bool = False, margin: float = 0.25):
        # The FaceMesh class sets calculator options through a protobuf API that
        # protobuf >= 5 removed; the graph's own defaults (0.5 thresholds) are kept.
        self._graph = MeshGraph(refine=refine)
        self.margin = margin

    def landmarks(self, image: np.ndarray, box) -> np.ndarray | None:
        x1, y1, x2, y2 = np.asarray(box, float).reshape(4)
        s = max(x2 - x1, y2 - y1) * (1.0 + 2.0 * self.margin)
        cx, cy = 0.5 * (x1 + x2), 0.5 * (y1 + y2)
        region = (cx - s / 2, cy - s / 2, cx + s / 2, cy + s / 2)
        pts = self._graph.run(crop_square(image, region, 256))
        return None if pts is None else to_image(pts, region)

    def close(self) -> None:
        self._graph.close()
