"""MediaPipe's full-range BlazeFace (face_detection_full_range_sparse.tflite, in the 0.10.21
wheel) run by LiteRT directly, with the graph's own pre- and post-processing, for the
tracked EAR pass (faces.ear_pass): it finds the face a few times a trial, and without it
the default run would import mediapipe (~0.6 CPU-s) and build its graphs for ~10 calls.

The rules are those of MediaPipe's face_detection.pbtxt with face_detection_full_range.pbtxt's
options (Bazarevsky et al., "BlazeFace: Sub-millisecond Neural Face Detection on Mobile
GPUs", CVPR-W 2019, Sec. 2; the sparse full-range variant of the model card):
- the input (ImageToTensorCalculator, keep_aspect_ratio; image_to_tensor_converter_opencv):
  the image letterboxed to 192 x 192 (corners onto corners), RGB in [-1, 1], the border 0
  before scaling (-1); the boxes go back through the same map (DetectionProjectionCalculator);
- the anchors (SsdAnchorsCalculator): one layer of stride 4, one fixed-size anchor per
  cell of the 48 x 48 grid, centred in its cell (offset 0.5);
- the decoding (TensorsToDetectionsCalculator, reverse_output_order): per anchor
  (x, y, w, h, 6 keypoints) / 192, centres offset by the anchor; score = sigmoid of the
  logit clipped to +-100; kept at >= the detector's threshold;
- the suppression (NonMaxSuppressionCalculator, WEIGHTED, IoU > 0.3): each kept face is
  the score-weighted mean of the boxes that overlap the best remaining one (the graph
  averages the keypoints too; the tracked pass does not use them).
"""
from __future__ import annotations

import numpy as np

from .detectors import Detector, FaceDetection, check_image
from .mesh_graph import litert_model

__all__ = ["LiteFaces", "ssd_anchors", "decode_boxes", "weighted_nms"]

MODEL = "mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite"
SIZE = 192  # face_detection_full_range.pbtxt: tensor_width = tensor_height = 192
STRIDE = 4  # ... num_layers 1, strides 4
IOU = 0.3  # face_detection.pbtxt: NonMaxSuppressionCalculator min_suppression_threshold
LOGIT_CLIP = 100.0  # ... TensorsToDetectionsCalculator score_clipping_thresh


def ssd_anchors(size: int = SIZE, stride: int = STRIDE) -> np.ndarray:
    """(N, 2) anchor centres in [0, 1], row by row (SsdAnchorsCalculator, one layer,
    anchor_offset 0.5, fixed_anchor_size: width = height = 1)."""
    n = size // stride
    y, x = np.mgrid[0:n, 0:n]
    return np.stack([(x.ravel() + 0.5) / n, (y.ravel() + 0.5) / n], axis=1)


def decode_boxes(raw: np.ndarray, anchors: np.ndarray, size: int = SIZE) -> np.ndarray:
    """Raw regressors (N, 16) -> boxes (N, 4: x1, y1, x2, y2) in [0, 1] of the model input
    (TensorsToDetectionsCalculator with reverse_output_order: x, y, w, h first, each
    / ``size``, the centre + the anchor's; the six keypoints after them are not used here)."""
    c = raw[:, 0:2] / size + anchors
    half = 0.5 * raw[:, 2:4] / size
    return np.concatenate([c - half, c + half], axis=1)


def letterbox_square(W: int, H: int) -> tuple[float, np.ndarray]:
    """The square the model sees (ImageToTensorCalculator, keep_aspect_ratio): the whole image
    padded on its short sides; its side and its top-left corner in image pixels. Its corners
    map onto the tensor's corners, as MediaPipe's OpenCV converter maps them (pixel
    coordinates on both sides, getPerspectiveTransform of the corners)."""
    side = float(max(W, H))
    return side, np.array([0.5 * (W - side), 0.5 * (H - side)])


def _iou(box: np.ndarray, boxes: np.ndarray) -> np.ndarray:
    lo, hi = np.maximum(box[:2], boxes[:, :2]), np.minimum(box[2:], boxes[:, 2:])
    inter = np.prod(np.clip(hi - lo, 0.0, None), axis=1)
    area = np.prod(box[2:] - box[:2])
    areas = np.prod(boxes[:, 2:] - boxes[:, :2], axis=1)
    return inter / np.maximum(area + areas - inter, 1e-12)


def weighted_nms(boxes: np.ndarray, scores: np.ndarray, iou: float = IOU) -> list[tuple[np.ndarray, float]]:
    """MediaPipe's WEIGHTED suppression: repeatedly take the best remaining detection and
    every remaining one overlapping it by IoU > ``iou`` (itself included); the face is their
    score-weighted mean box, with the best one's score."""
    order = np.argsort(-scores, kind="stable")
    out = []
    while order.size:
        best = order[0]
        near = _iou(boxes[best], boxes[order]) > iou
        group, order = order[near], order[~near]
        w = scores[group] / scores[group].sum()
        out.append((w @ boxes[group], float(scores[best])))
    return out


class LiteFaces(Detector):
    """``detect(image) -> [FaceDetection]``: face boxes, best first (no keypoints: the tracked
    pass needs the box alone). One interpreter thread: the run's cores are busy with the
    gaze network."""

    def __init__(self, name: str = "mediapipe_lite", min_score: float = 0.5, threads: int = 1):
        self._it = litert_model(MODEL, threads)
        inp = self._it.get_input_details()[0]
        self._in, self.size = inp["index"], int(inp["shape"][1])
        outs = {int(o["shape"][-1]): o["index"] for o in self._it.get_output_details()}
        self._reg, self._cls = outs[16], outs[1]
        self._anchors = ssd_anchors(self.size)
        self._x = np.empty((1, self.size, self.size, 3), np.float32)
        self.name, self.min_score = name, min_score

    def detect(self, image: np.ndarray) -> list[FaceDetection]:
        import cv2

        img = check_image(image)
        H, W = img.shape[:2]
        side, x0 = letterbox_square(W, H)
        s = self.size / side
        x = cv2.warpAffine(img, np.array([[s, 0.0, -s * x0[0]], [0.0, s, -s * x0[1]]]), (self.size, self.size),
                           flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT, borderValue=0)
        np.multiply(x, np.float32(2.0 / 255.0), out=self._x[0], casting="unsafe")
        self._x -= 1.0
        self._it.set_tensor(self._in, self._x)
        self._it.invoke()
        logits = np.clip(self._it.get_tensor(self._cls).reshape(-1).astype(float), -LOGIT_CLIP, LOGIT_CLIP)
        scores = 1.0 / (1.0 + np.exp(-logits))
        keep = scores >= self.min_score
        if not keep.any():
            return []
        boxes = decode_boxes(self._it.get_tensor(self._reg).reshape(-1, 16)[keep], self._anchors[keep], self.size)
        out = []
        for box, score in weighted_nms(boxes, scores[keep]):
            b = np.clip(np.tile(x0, 2) + box * side, 0, [W, H, W, H])  # DetectionProjectionCalculator
            if b[2] - b[0] < 2 or b[3] - b[1] < 2:
                continue
            out.append(FaceDetection(b, score, None))
        return out

    def close(self) -> None:
        self._it = None
