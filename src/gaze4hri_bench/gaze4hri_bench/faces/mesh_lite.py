"""MediaPipe's face-landmark model (face_landmark.tflite, in the 0.10.21 wheel) run by
LiteRT directly on a region of interest, for the tracked EAR pass (faces.ear_pass).

The face-mesh graph (faces.mesh_graph) spends ~5 ms a frame here, of which the network
is ~2.5 ms: the rest is the graph's scheduling across its threads. This module does the
graph's tracking loop itself with the graph's own rules (Kartynnik et al., "Real-time
Facial Surface Geometry from Monocular Video on Mobile GPUs", CVPR-W 2019, Sec. 2: the
next frame's region comes from this frame's landmarks), as MediaPipe's graphs define them:
- the region (face_landmark_landmarks_to_roi.pbtxt): the landmarks' axis-aligned box,
  its centre, 1.5 x its longer side (RectTransformation square_long), rotated so that
  the eye line is horizontal;
- the input (face_landmark_cpu.pbtxt): that square resampled to 192 x 192, RGB in [0, 1];
- the output: 468 x (x, y, z) in input pixels, and a face-presence logit (a face when
  its sigmoid is >= 0.5, i.e. the logit >= 0).
benchmarks/face_pass.py measures the EAR this gives against the full pass's.
"""
from __future__ import annotations

from typing import NamedTuple

import cv2
import numpy as np

from .mesh_graph import litert_model

__all__ = ["LiteMesh", "Roi", "roi_from_box", "roi_from_landmarks", "roi_affine", "from_roi"]

MODEL = "mediapipe/modules/face_landmark/face_landmark.tflite"
ROI_SCALE = 1.5  # face_landmark_landmarks_to_roi.pbtxt: RectTransformation scale_x = scale_y = 1.5
EYE_LINE = (33, 263)  # outer eye corners (the subject's right, then left): the region's roll


class Roi(NamedTuple):
    """A square region: centre (x, y) in image pixels (edges at 0 and W), side in pixels,
    roll in radians (the eye line's angle in the image, y down)."""

    cx: float
    cy: float
    side: float
    angle: float = 0.0

    @property
    def centre(self) -> np.ndarray:
        return np.array([self.cx, self.cy])


def roi_from_box(box, scale: float) -> Roi:
    """The square around a detector's box (x1, y1, x2, y2), ``scale`` x its longer side, upright."""
    x1, y1, x2, y2 = (float(v) for v in np.asarray(box, float).reshape(4))
    return Roi(0.5 * (x1 + x2), 0.5 * (y1 + y2), max(x2 - x1, y2 - y1) * scale)


def roi_from_landmarks(lm: np.ndarray, scale: float = ROI_SCALE) -> Roi:
    """The next frame's region from landmarks in image pixels (MediaPipe's
    face_landmark_landmarks_to_roi: box centre, ``scale`` x the longer side, eye-line roll)."""
    lo, hi = lm[:, :2].min(axis=0), lm[:, :2].max(axis=0)
    d = lm[EYE_LINE[1], :2] - lm[EYE_LINE[0], :2]
    return Roi(float(lo[0] + hi[0]) / 2, float(lo[1] + hi[1]) / 2, scale * float(max(hi - lo)),
               float(np.arctan2(d[1], d[0])))


def roi_affine(roi: Roi, size: int) -> np.ndarray:
    """2x3 affine from image pixel centres to the ``size`` x ``size`` input's pixel centres:
    input edge coordinate q = s R(-roll) (p - centre) + size / 2, s = size / side."""
    s = size / roi.side
    c, sn = np.cos(roi.angle), np.sin(roi.angle)
    M = s * np.array([[c, sn], [-sn, c]])
    t = 0.5 * size - M @ roi.centre + M @ np.full(2, 0.5) - 0.5  # edge -> centre convention on both sides
    return np.hstack([M, t[:, None]])


def from_roi(pts: np.ndarray, roi: Roi, size: int) -> np.ndarray:
    """Model output (N, 3) in input pixels -> image pixels (x, y; edge coordinates) and depth
    in image pixels (the inverse of :func:`roi_affine`)."""
    s = size / roi.side
    c, sn = np.cos(roi.angle), np.sin(roi.angle)
    out = np.empty(pts.shape, float)
    u, v = pts[:, 0] - 0.5 * size, pts[:, 1] - 0.5 * size
    out[:, 0] = roi.cx + (c * u - sn * v) / s
    out[:, 1] = roi.cy + (sn * u + c * v) / s
    out[:, 2] = pts[:, 2] / s
    return out


class LiteMesh:
    """``landmarks(image, roi) -> (468, 3)`` image-pixel landmarks of the face in ``roi``,
    or None when the model says there is none. One interpreter thread: the run's cores
    are busy with the gaze network."""

    def __init__(self, threads: int = 1):
        self._it = litert_model(MODEL, threads)
        inp = self._it.get_input_details()[0]
        self.size = int(inp["shape"][1])
        self._in = inp["index"]
        outs = {int(np.prod(o["shape"])): o["index"] for o in self._it.get_output_details()}
        self._points, self._flag = outs[468 * 3], outs[1]
        self._x = np.empty((1, self.size, self.size, 3), np.float32)

    def landmarks(self, image: np.ndarray, roi: Roi) -> np.ndarray | None:
        crop = cv2.warpAffine(image, roi_affine(roi, self.size), (self.size, self.size), flags=cv2.INTER_LINEAR,
                              borderMode=cv2.BORDER_CONSTANT)
        np.multiply(crop, np.float32(1.0 / 255.0), out=self._x[0], casting="unsafe")
        self._it.set_tensor(self._in, self._x)
        self._it.invoke()
        if float(self._it.get_tensor(self._flag).reshape(-1)[0]) < 0.0:  # sigmoid < 0.5: no face
            return None
        return from_roi(self._it.get_tensor(self._points).reshape(468, 3), roi, self.size)

    def close(self) -> None:
        self._it = None
