"""Face detectors: the real MediaPipe and Haar paths find the astronaut's face; the
YOLOv8-face ONNX path decodes a real ONNX Runtime output (a tiny constant model with
the YOLOv8-face head layout); missing weights and broken torchvision fail in one line."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.faces import detectors as D
from gaze4hri_core.errors import Gaze4HRIError

FACE = np.array([175.0, 68.0, 275.0, 170.0])  # the astronaut's face in skimage.data.astronaut()


def iou(a, b):
    x1, y1 = max(a[0], b[0]), max(a[1], b[1])
    x2, y2 = min(a[2], b[2]), min(a[3], b[3])
    i = max(x2 - x1, 0) * max(y2 - y1, 0)
    return i / ((a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - i)


@pytest.fixture(scope="module")
def astronaut():
    import skimage.data

    return skimage.data.astronaut()


@pytest.fixture(scope="module")
def mp_detector():
    pytest.importorskip("mediapipe")
    d = D.get_detector("mediapipe")
    yield d
    d.close()


@pytest.mark.replay
def test_mediapipe_finds_face_with_landmarks(astronaut, mp_detector):
    from gaze4hri_bench.faces.landmarks import mean_ear

    dets = mp_detector.detect(astronaut)
    assert len(dets) == 1 and dets[0].score > 0.8
    f = dets[0]
    assert iou(f.box, FACE) > 0.6
    assert f.keypoints.shape == (5, 2) and f.landmarks.shape[0] >= 468
    x1, y1, x2, y2 = f.box
    assert (
        (f.keypoints[:, 0] > x1) & (f.keypoints[:, 0] < x2) & (f.keypoints[:, 1] > y1) & (f.keypoints[:, 1] < y2)
    ).all()
    assert f.keypoints[0, 0] < f.keypoints[1, 0]  # image-left eye first
    assert f.keypoints[2, 1] > f.keypoints[0, 1]  # nose below the eyes
    ear = mean_ear(f.landmarks)
    assert 0.2 < ear < 0.45  # open eyes: above the blink threshold
    # a mirrored image gives a mirrored box
    m = mp_detector.detect(np.ascontiguousarray(astronaut[:, ::-1]))
    assert iou(m[0].box, [512 - FACE[2], FACE[1], 512 - FACE[0], FACE[3]]) > 0.6
    assert mp_detector.detect(np.zeros((240, 320, 3), np.uint8)) == []


@pytest.mark.replay
def test_haar_finds_face_without_landmarks(astronaut):
    d = D.get_detector("haar")
    dets = d.detect(astronaut)
    assert dets and iou(dets[0].box, FACE) > 0.6 and dets[0].keypoints is None
    assert 0 < dets[0].score < 1


@pytest.mark.unit
def test_registry_names_and_errors(tmp_path, monkeypatch):
    assert {"yolov8_face_onnx", "yolov8_face_pt", "mediapipe", "opencv_haar", "auto"} <= set(D.detector_names())
    with pytest.raises(Gaze4HRIError, match="did you mean mediapipe"):
        D.get_detector("mediapip")
    monkeypatch.setenv("GAZE4HRI_MODELS", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    if D.find_yolo_weights() is not None:
        pytest.skip("YOLOv8-face weights are installed here")
    with pytest.raises(Gaze4HRIError) as ei:
        D.get_detector("yolov8_face_onnx")
    msg = str(ei.value)
    assert "yolov8n-face.onnx not found" in msg and "derronqi/yolov8-face" in msg and "\n" not in msg
    assert D.available()["yolov8_face_onnx"][0] is False
    with pytest.raises(Gaze4HRIError, match="yolov8n-face.pt not found"):
        D.get_detector("yolov8_face_pt")
    # auto never hides its choice
    if D.available()["mediapipe"][0]:
        a = D.get_detector("auto")
        assert a.name == "auto:mediapipe"
        a.close()


@pytest.mark.unit
def test_yolov8_pt_fails_clearly_where_torchvision_ops_fail(tmp_path):
    pytest.importorskip("torch")
    w = tmp_path / "yolov8n-face.pt"
    w.write_bytes(b"not a checkpoint")
    try:
        import torch
        import torchvision

        torchvision.ops.nms(torch.zeros((1, 4)), torch.zeros(1), 0.5)
        pytest.skip("torchvision operators work here")
    except Exception:
        pass
    with pytest.raises(Gaze4HRIError, match="torchvision operators.*yolov8_face_onnx"):
        D.get_detector("yolov8_face_pt", weights=w)


def _constant_yolo_onnx(path, pred):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes = [
        helper.make_node("ReduceMean", ["images"], ["m"], keepdims=0),
        helper.make_node("Mul", ["m", "zero"], ["z"]),
        helper.make_node("Add", ["pred", "z"], ["output0"]),
    ]
    g = helper.make_graph(
        nodes,
        "yolo_face_const",
        [helper.make_tensor_value_info("images", TensorProto.FLOAT, [1, 3, 640, 640])],
        [helper.make_tensor_value_info("output0", TensorProto.FLOAT, list(pred.shape))],
        [
            numpy_helper.from_array(pred.astype(np.float32), "pred"),
            numpy_helper.from_array(np.zeros((), np.float32), "zero"),
        ],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


@pytest.mark.replay
def test_yolov8_onnx_decodes_through_onnxruntime(tmp_path):
    """A 320x180 frame letterboxes at ratio 2 with 140 px of padding on top; a face
    at (cx, cy, w, h) = (320, 320, 100, 120) in letterbox pixels is (135, 60, 185, 120)
    in the frame. A duplicate with a lower score is suppressed, a weak one dropped."""
    pred = np.zeros((1, 20, 3), np.float32)
    kps = np.array([[300, 300, 1], [340, 300, 1], [320, 320, 1], [305, 345, 1], [335, 345, 1]], np.float32).ravel()
    pred[0, :, 0] = [320, 320, 100, 120, 0.9, *kps]
    pred[0, :, 1] = [322, 318, 100, 120, 0.8, *kps]
    pred[0, :, 2] = [100, 300, 40, 40, 0.1, *kps]
    w = tmp_path / "yolov8n-face.onnx"
    _constant_yolo_onnx(w, pred)
    d = D.get_detector("yolov8_face_onnx", weights=w)
    dets = d.detect(np.zeros((180, 320, 3), np.uint8))
    assert len(dets) == 1
    assert np.allclose(dets[0].box, [135, 60, 185, 120]) and dets[0].score == pytest.approx(0.9)
    assert np.allclose(dets[0].keypoints[0], [150, 80])
    # the same decoding from a transposed (1, N, 20) head
    out = D.decode_yolov8_face(pred.transpose(0, 2, 1), 2.0, (0, 140))
    assert len(out) == 1 and np.allclose(out[0].box, [135, 60, 185, 120])


@pytest.mark.unit
def test_nms_and_letterbox():
    b = np.array([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30]], float)
    assert list(D.nms(b, np.array([0.5, 0.9, 0.7]), 0.5)) == [1, 2]
    img, r, pad = D.letterbox(np.zeros((360, 640, 3), np.uint8))
    assert img.shape == (640, 640, 3) and r == 1.0 and pad == (0, 140) and img[0, 0, 0] == 114
