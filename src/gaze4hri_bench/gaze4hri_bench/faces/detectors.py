"""Face detectors behind one registry (lazy "module:Class" entries, did-you-mean errors).

* ``yolov8_face_onnx``: YOLOv8-face (the study's yolov8n-face weights, Sezer et al.
  Sec. III-D) exported to ONNX and run with ONNX Runtime; letterbox to 640, boxes + 5
  keypoints decoded and NMS in numpy. Weights are third-party (not shipped).
* ``yolov8_face_pt``: the same weights through Ultralytics; needs working torchvision
  operators (PyPI has no CPU torchvision whose ``nms`` works with the CPU torch here),
  so it fails with a clear message where they are broken.
* ``mediapipe``: BlazeFace full-range detector + face-mesh landmarks (offline models
  of the mediapipe 0.10.21 wheel); gives EAR and the six normalization landmarks.
* ``opencv_haar``: OpenCV's frontal-face Haar cascade (cv2.data); boxes only.

``auto`` picks ``yolov8_face_onnx`` when its weights are present, else ``mediapipe``,
and says so in the detector's ``name`` (never silently).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.registry import Registry

__all__ = ["FaceDetection", "Detector", "DETECTORS", "get_detector", "available", "detector_names", "nms",
           "letterbox", "decode_yolov8_face", "YOLO_FACE_FILE", "find_yolo_weights"]

YOLO_FACE_FILE = "yolov8n-face.onnx"
YOLO_FACE_PT = "yolov8n-face.pt"
_YOLO_WHERE = ("yolov8n-face is a third-party release (github.com/derronqi/yolov8-face, README download links; "
               "also github.com/akanametov/yolo-face releases): export it with `yolo export model=yolov8n-face.pt "
               "format=onnx imgsz=640` on a machine with Ultralytics and put the .onnx in models/ or $GAZE4HRI_MODELS")


@dataclass
class FaceDetection:
    """One face: ``box`` [x1, y1, x2, y2] pixels, ``score`` in [0, 1], ``keypoints``
    (5, 2) pixels (eyes image-left first, nose, mouth corners) or None, ``landmarks``
    (468+, 3) face-mesh points (mediapipe) or None, ``track_id`` set by the tracker."""

    box: np.ndarray
    score: float
    keypoints: np.ndarray | None = None
    landmarks: np.ndarray | None = field(default=None, repr=False)
    track_id: int | None = None

    @property
    def center(self) -> np.ndarray:
        return np.array([(self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2])

    @property
    def area(self) -> float:
        return float(max(self.box[2] - self.box[0], 0) * max(self.box[3] - self.box[1], 0))


class Detector:
    """Base: ``detect(image_rgb uint8 HxWx3) -> list[FaceDetection]`` sorted by score."""

    name = "detector"
    has_landmarks = False

    def detect(self, image: np.ndarray) -> list[FaceDetection]:
        raise NotImplementedError

    def close(self) -> None:
        pass


def check_image(image: np.ndarray) -> np.ndarray:
    a = np.asarray(image)
    if a.ndim != 3 or a.shape[2] != 3 or a.dtype != np.uint8:
        raise ValueError(f"detect: expected an RGB uint8 (H, W, 3) image, got {a.dtype} {a.shape}")
    return np.ascontiguousarray(a)


# -- numpy helpers ---------------------------------------------------------------------------
def nms(boxes: np.ndarray, scores: np.ndarray, iou: float = 0.5) -> np.ndarray:
    """Greedy non-maximum suppression; indices kept, best first."""
    b = np.asarray(boxes, float).reshape(-1, 4)
    s = np.asarray(scores, float).reshape(-1)
    order = np.argsort(-s, kind="stable")
    area = np.maximum(b[:, 2] - b[:, 0], 0) * np.maximum(b[:, 3] - b[:, 1], 0)
    keep = []
    while order.size:
        i = order[0]
        keep.append(i)
        rest = order[1:]
        xx1 = np.maximum(b[i, 0], b[rest, 0])
        yy1 = np.maximum(b[i, 1], b[rest, 1])
        xx2 = np.minimum(b[i, 2], b[rest, 2])
        yy2 = np.minimum(b[i, 3], b[rest, 3])
        inter = np.maximum(xx2 - xx1, 0) * np.maximum(yy2 - yy1, 0)
        ov = inter / np.maximum(area[i] + area[rest] - inter, 1e-9)
        order = rest[ov <= iou]
    return np.array(keep, np.int64)


def letterbox(image: np.ndarray, size: int = 640, fill: int = 114) -> tuple[np.ndarray, float, tuple[float, float]]:
    """Ultralytics-style letterbox: keep aspect, scale to fit ``size``, pad centred with
    grey 114. Returns (image, ratio, (pad_x, pad_y)); original = (p - pad) / ratio."""
    import cv2

    h, w = image.shape[:2]
    r = min(size / h, size / w)
    nw, nh = int(round(w * r)), int(round(h * r))
    px, py = (size - nw) / 2, (size - nh) / 2
    resized = cv2.resize(image, (nw, nh), interpolation=cv2.INTER_LINEAR) if (nw, nh) != (w, h) else image
    top, left = int(round(py - 0.1)), int(round(px - 0.1))
    out = np.full((size, size, 3), fill, np.uint8)
    out[top:top + nh, left:left + nw] = resized
    return out, r, (left, top)


def decode_yolov8_face(pred: np.ndarray, ratio: float, pad: tuple[float, float], conf: float = 0.25, iou: float = 0.5,
                       image_shape: tuple[int, int] | None = None) -> list[FaceDetection]:
    """YOLOv8-pose-style face head output (1, 4 + 1 + 15, N) or (1, N, 20): per anchor
    cx, cy, w, h (letterbox pixels), face score, 5 x (x, y, visibility) -> detections in
    original pixels after NMS (derronqi/yolov8-face export)."""
    p = np.asarray(pred, np.float32)
    if p.ndim == 3:
        p = p[0]
    if p.shape[0] not in (20,) and p.shape[-1] == 20:
        p = p.T
    if p.shape[0] != 20:
        raise ValueError(f"YOLOv8-face output must have 20 channels (4 box + 1 score + 15 keypoints), got {pred.shape}")
    p = p.T  # (N, 20)
    s = p[:, 4]
    m = s >= conf
    p, s = p[m], s[m]
    if not len(p):
        return []
    cx, cy, w, h = p[:, 0], p[:, 1], p[:, 2], p[:, 3]
    boxes = np.stack([cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2], axis=1)
    keep = nms(boxes, s, iou)
    px, py = pad
    out = []
    for i in keep:
        b = (boxes[i] - [px, py, px, py]) / ratio
        kp = p[i, 5:20].reshape(5, 3)[:, :2]
        kp = (kp - [px, py]) / ratio
        if image_shape is not None:
            H, W = image_shape[:2]
            b = np.clip(b, [0, 0, 0, 0], [W, H, W, H])
        out.append(FaceDetection(b.astype(float), float(s[i]), kp.astype(float)))
    return out


def _model_dirs(extra: Path | None = None) -> list[Path]:
    dirs = []
    if extra is not None:
        dirs.append(Path(extra))
    env = os.environ.get("GAZE4HRI_MODELS")
    if env:
        dirs.append(Path(env))
    dirs.append(Path.cwd() / "models")
    dirs.append(Path(__file__).resolve().parents[4] / "models")
    return list(dict.fromkeys(d.resolve() for d in dirs))


def find_yolo_weights(weights: Path | str | None = None, filename: str = YOLO_FACE_FILE) -> Path | None:
    """The YOLOv8-face weights file: ``weights`` if given, else the first of
    $GAZE4HRI_MODELS, ./models, <repo>/models that holds ``filename``."""
    if weights is not None:
        p = Path(weights)
        return p if p.is_file() else None
    for d in _model_dirs():
        if (d / filename).is_file():
            return d / filename
    return None


def _missing(filename: str, weights) -> Gaze4HRIError:
    where = str(weights) if weights is not None else " or ".join(str(d / filename) for d in _model_dirs())
    return Gaze4HRIError(f"YOLOv8-face weights {filename} not found", where, _YOLO_WHERE)


# -- detectors --------------------------------------------------------------------------------
class YoloV8FaceOnnx(Detector):
    """YOLOv8-face ONNX through ONNX Runtime (CPU unless ``providers`` says otherwise)."""

    def __init__(self, name: str = "yolov8_face_onnx", weights: Path | str | None = None, conf: float = 0.25,
                 iou: float = 0.5, size: int = 640, providers: list[str] | None = None, threads: int | None = None):
        path = find_yolo_weights(weights)
        if path is None:
            raise _missing(YOLO_FACE_FILE, weights)
        import onnxruntime as ort

        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = int(threads)
        try:
            self.session = ort.InferenceSession(str(path), so, providers=providers or ["CPUExecutionProvider"])
        except Exception as e:
            raise Gaze4HRIError(
                f"cannot load YOLOv8-face ONNX ({type(e).__name__})", str(path), "re-export the model (opset >= 12)"
            ) from None
        self.input = self.session.get_inputs()[0].name
        self.name, self.path, self.conf, self.iou, self.size = name, path, conf, iou, size

    def detect(self, image: np.ndarray) -> list[FaceDetection]:
        img = check_image(image)
        lb, r, pad = letterbox(img, self.size)
        x = (lb.astype(np.float32) / 255.0).transpose(2, 0, 1)[None]
        out = self.session.run(None, {self.input: x})[0]
        return decode_yolov8_face(out, r, pad, self.conf, self.iou, img.shape)


class YoloV8FacePt(Detector):
    """YOLOv8-face .pt through Ultralytics' predictor (needs working torchvision ops)."""

    def __init__(self, name: str = "yolov8_face_pt", weights: Path | str | None = None, conf: float = 0.25):
        path = find_yolo_weights(weights, YOLO_FACE_PT)
        if path is None:
            raise _missing(YOLO_FACE_PT, weights)
        try:
            import torch
            import torchvision

            torchvision.ops.nms(torch.zeros((1, 4)), torch.zeros(1), 0.5)
        except Exception as e:
            raise Gaze4HRIError(
                f"Ultralytics prediction needs torchvision operators, which fail here ({type(e).__name__}: "
                f"{str(e).splitlines()[0][:120] if str(e) else ''})",
                "yolov8_face_pt",
                "use --detector yolov8_face_onnx (same weights exported to ONNX), or install a torchvision "
                "build that matches your torch",
            ) from None
        os.environ.setdefault("YOLO_OFFLINE", "1")
        from ultralytics import YOLO

        self.model = YOLO(str(path))
        self.name, self.conf = name, conf

    def detect(self, image: np.ndarray) -> list[FaceDetection]:
        img = check_image(image)
        r = self.model.predict(img[..., ::-1], conf=self.conf, verbose=False)[0]
        out = []
        kps = r.keypoints.xy.cpu().numpy() if getattr(r, "keypoints", None) is not None else None
        for i, (b, s) in enumerate(zip(r.boxes.xyxy.cpu().numpy(), r.boxes.conf.cpu().numpy(), strict=True)):
            out.append(FaceDetection(b.astype(float), float(s), kps[i].astype(float) if kps is not None else None))
        return out


class MediaPipeFaces(Detector):
    """BlazeFace full-range detector (up to ~5 m; ``model_selection=1``) and, when
    ``landmarks``, face-mesh points per face (keypoints from the mesh)."""

    has_landmarks = True

    def __init__(
        self,
        name: str = "mediapipe",
        min_score: float = 0.5,
        landmarks: bool = True,
        model_selection: int = 1,
        refine: bool = False,
    ):
        from .landmarks import FaceMesh, mediapipe_import

        mp = mediapipe_import()
        self._fd = mp.solutions.face_detection.FaceDetection(
            model_selection=model_selection, min_detection_confidence=min_score
        )
        self._mesh = FaceMesh(refine=refine) if landmarks else None
        self.name = name
        self.has_landmarks = landmarks

    def detect(self, image: np.ndarray) -> list[FaceDetection]:
        from .landmarks import keypoints5

        img = check_image(image)
        H, W = img.shape[:2]
        res = self._fd.process(img)
        out = []
        for d in res.detections or []:
            rb = d.location_data.relative_bounding_box
            box = np.array([rb.xmin * W, rb.ymin * H, (rb.xmin + rb.width) * W, (rb.ymin + rb.height) * H], float)
            box = np.clip(box, [0, 0, 0, 0], [W, H, W, H])
            if box[2] - box[0] < 2 or box[3] - box[1] < 2:
                continue
            lm = self._mesh.landmarks(img, box) if self._mesh is not None else None
            kp = keypoints5(lm) if lm is not None else None
            out.append(FaceDetection(box, float(d.score[0]), kp, lm))
        out.sort(key=lambda f: -f.score)
        return out

    def close(self) -> None:
        self._fd.close()
        if self._mesh is not None:
            self._mesh.close()


class HaarFaces(Detector):
    """OpenCV frontal-face Haar cascade (Viola-Jones); boxes only. Score: the cascade's
    level weight squashed to (0, 1) (a ranking, not a probability)."""

    def __init__(
        self,
        name: str = "opencv_haar",
        cascade: str = "haarcascade_frontalface_default.xml",
        scale_factor: float = 1.1,
        min_neighbors: int = 5,
        min_size_frac: float = 0.05,
    ):
        import cv2

        path = Path(cv2.data.haarcascades) / cascade
        self._c = cv2.CascadeClassifier(str(path))
        if self._c.empty():
            raise Gaze4HRIError(
                "OpenCV Haar cascade not found", str(path), "install opencv-python-headless 4.x (5.x ships no cascades)"
            )
        self.name, self.sf, self.mn, self.msf = name, scale_factor, min_neighbors, min_size_frac

    def detect(self, image: np.ndarray) -> list[FaceDetection]:
        import cv2

        img = check_image(image)
        g = cv2.equalizeHist(cv2.cvtColor(img, cv2.COLOR_RGB2GRAY))
        m = max(int(min(g.shape) * self.msf), 20)
        rects, _levels, weights = self._c.detectMultiScale3(
            g, self.sf, self.mn, minSize=(m, m), outputRejectLevels=True
        )
        out = []
        for (x, y, w, h), wt in zip(np.asarray(rects).reshape(-1, 4), np.asarray(weights).reshape(-1), strict=True):
            out.append(FaceDetection(np.array([x, y, x + w, y + h], float), float(1.0 / (1.0 + np.exp(-wt))), None))
        out.sort(key=lambda f: -f.score)
        return out


def _auto(name: str = "auto", **kw) -> Detector:
    if find_yolo_weights(kw.get("weights")) is not None:
        d = YoloV8FaceOnnx("yolov8_face_onnx", **kw)
    else:
        kw.pop("weights", None)
        d = MediaPipeFaces("mediapipe", **kw)
    d.name = f"auto:{d.name}"
    return d


DETECTORS = Registry("face detector", where="--detector")
_M = "gaze4hri_bench.faces.detectors"
DETECTORS.register(
    "yolov8_face_onnx",
    f"{_M}:YoloV8FaceOnnx",
    "detector",
    "YOLOv8n-face (the study's) via ONNX Runtime",
    aliases=("yolo", "yolov8"),
)
DETECTORS.register(
    "yolov8_face_pt", f"{_M}:YoloV8FacePt", "detector", "YOLOv8n-face .pt via Ultralytics (needs torchvision ops)"
)
DETECTORS.register(
    "mediapipe",
    f"{_M}:MediaPipeFaces",
    "detector",
    "MediaPipe BlazeFace full range + face mesh (offline)",
    aliases=("blazeface",),
)
DETECTORS.register("opencv_haar", f"{_M}:HaarFaces", "detector", "OpenCV Haar cascade, boxes only", aliases=("haar",))
DETECTORS.register(
    "auto", f"{_M}:_auto", "detector", "yolov8_face_onnx if its weights are present, else mediapipe (named in .name)"
)


def mediapipe_name(name: str) -> str | None:
    """The name detector ``name`` gets when it runs MediaPipe's BlazeFace ("mediapipe", or
    "auto:mediapipe" for auto without YOLO weights: _auto's naming), else None."""
    entry = DETECTORS.find(name)
    if entry is not None and entry is DETECTORS.find("mediapipe"):
        return "mediapipe"
    if entry is not None and entry is DETECTORS.find("auto") and find_yolo_weights() is None:
        return "auto:mediapipe"
    return None


def detector_names() -> list[str]:
    return DETECTORS.names()


def get_detector(name: str, **kwargs) -> Detector:
    """Build a detector by name or alias (unknown names: the registry's did-you-mean error)."""
    return DETECTORS.create(name, **kwargs)


def available() -> dict[str, tuple[bool, str]]:
    """name -> (usable here, reason) without building heavy models."""
    out: dict[str, tuple[bool, str]] = {}
    w = find_yolo_weights()
    out["yolov8_face_onnx"] = (w is not None, str(w) if w else f"{YOLO_FACE_FILE} not found")
    wp = find_yolo_weights(None, YOLO_FACE_PT)
    out["yolov8_face_pt"] = (
        (False, "needs yolov8n-face.pt and working torchvision ops") if wp is None else (True, str(wp))
    )
    try:
        import importlib.util

        ok = importlib.util.find_spec("mediapipe") is not None
        out["mediapipe"] = (ok, "mediapipe 0.10.21 models" if ok else "mediapipe not installed")
    except (ImportError, ValueError):
        out["mediapipe"] = (False, "mediapipe not installed")
    import cv2

    out["opencv_haar"] = (
        (Path(cv2.data.haarcascades) / "haarcascade_frontalface_default.xml").is_file(),
        "cv2.data cascades",
    )
    out["auto"] = (out["yolov8_face_onnx"][0] or out["mediapipe"][0], "yolov8_face_onnx" if w else "mediapipe")
    return out
