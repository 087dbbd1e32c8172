"""faces.blazeface_lite: MediaPipe's full-range BlazeFace run by LiteRT with the graph's
own rules (pure: the anchors, the box decoding, the weighted suppression, the letterbox)
against MediaPipe's face-detection graph on rendered faces; and the default run's face
pass without importing mediapipe."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from gaze4hri_bench.faces.blazeface_lite import decode_boxes, letterbox_square, ssd_anchors, weighted_nms

pytestmark = pytest.mark.unit


def test_anchors_one_per_cell_of_the_stride_4_grid():
    a = ssd_anchors(192, 4)
    assert a.shape == (48 * 48, 2)
    np.testing.assert_allclose(a[0], [0.5 / 48, 0.5 / 48])
    np.testing.assert_allclose(a[1], [1.5 / 48, 0.5 / 48])  # row by row: x first
    np.testing.assert_allclose(a[48], [0.5 / 48, 1.5 / 48])


def test_decoding_is_x_y_w_h_over_the_input_size_around_the_anchor():
    raw = np.zeros((1, 16))
    raw[0, :4] = [19.2, -9.6, 96.0, 48.0]  # x, y offsets, w, h in input pixels
    (box,) = decode_boxes(raw, np.array([[0.5, 0.5]]), 192)
    np.testing.assert_allclose(box, [0.6 - 0.25, 0.45 - 0.125, 0.6 + 0.25, 0.45 + 0.125])


def test_weighted_suppression_averages_the_overlapping_boxes_by_score():
    boxes = np.array([[0.0, 0.0, 1.0, 1.0], [0.1, 0.0, 1.1, 1.0], [3.0, 3.0, 4.0, 4.0], [0.0, 0.0, 0.3, 0.3]])
    scores = np.array([0.9, 0.6, 0.8, 0.7])  # IoU(0, 1) = 0.82; box 3 overlaps box 0 by 0.09 only
    faces = weighted_nms(boxes, scores, 0.3)
    assert [s for _, s in faces] == [0.9, 0.8, 0.7]  # each with its best score, best first
    np.testing.assert_allclose(faces[0][0], (0.9 * boxes[0] + 0.6 * boxes[1]) / 1.5)
    np.testing.assert_allclose(faces[1][0], boxes[2])
    np.testing.assert_allclose(faces[2][0], boxes[3])


def test_letterbox_pads_the_short_side():
    side, x0 = letterbox_square(640, 360)
    assert side == 640 and x0.tolist() == [0.0, -140.0]
    side, x0 = letterbox_square(360, 640)
    assert side == 640 and x0.tolist() == [-140.0, 0.0]


def _rendered(yaw_deg: float, w: int, h: int) -> np.ndarray:
    from gaze4hri_core.transforms import SE3

    from tests.bench.test_predict import face_scene

    r, T_cam = face_scene(w, h)
    a = np.radians(yaw_deg)
    Rz = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]])
    return r.render(T_cam, SE3(Rz, np.zeros(3)))


@pytest.mark.parametrize(("yaw_deg", "w", "h"), [(0.0, 640, 360), (20.0, 640, 360), (-10.0, 360, 480)])
def test_boxes_match_mediapipes_graph(yaw_deg, w, h):
    """The same face, box (to 0.05 px) and score (to 1e-4) as MediaPipe's face-detection graph,
    in landscape and portrait frames; a frame without a face gives none."""
    pytest.importorskip("mediapipe")
    pytest.importorskip("ai_edge_litert")
    from gaze4hri_bench.faces.blazeface_lite import LiteFaces
    from gaze4hri_bench.faces.detectors import MediaPipeFaces

    image = _rendered(yaw_deg, w, h)
    graph, lite = MediaPipeFaces(landmarks=False), LiteFaces()
    try:
        (ref,) = graph.detect(image)
        (got,) = lite.detect(image)
        np.testing.assert_allclose(got.box, ref.box, atol=0.05)
        assert got.score == pytest.approx(ref.score, abs=1e-4)
        assert lite.detect(np.zeros_like(image)) == []
    finally:
        graph.close()
        lite.close()


def test_the_default_face_pass_does_not_import_mediapipe():
    """The tracked EAR pass on MediaPipe's detector (the default's without YOLO weights) finds
    and measures the face with LiteRT alone: mediapipe (~0.6 CPU-s to import) stays unloaded."""
    pytest.importorskip("mediapipe")
    pytest.importorskip("ai_edge_litert")
    code = textwrap.dedent("""
        import sys
        import numpy as np
        from gaze4hri_bench.faces.ear_pass import EarPassSettings
        from gaze4hri_bench.pipeline.face_pass import FaceModels
        from tests.bench.faces.test_blazeface_lite import _rendered
        models = FaceModels("mediapipe")
        p = models.ear_pass(EarPassSettings(stride=1))
        for i in range(3):
            p.step(i, _rendered(0.0, 640, 360))
        rows = p.rows()
        assert p.acquired == 1 and all(np.isfinite(r["ear"]) for r in rows), rows
        assert models.detector_label() == "mediapipe"
        print("mediapipe" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=_repo())
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "False"


def test_auto_is_named_for_what_it_picks(monkeypatch):
    from gaze4hri_bench.faces import detectors

    monkeypatch.setattr(detectors, "find_yolo_weights", lambda weights=None: None)
    assert [detectors.mediapipe_name(n) for n in ("auto", "blazeface", "mediapipe", "yolo", "haar")] == \
        ["auto:mediapipe", "mediapipe", "mediapipe", None, None]
    monkeypatch.setattr(detectors, "find_yolo_weights", lambda weights=None: "yolov8n-face.onnx")
    assert detectors.mediapipe_name("auto") is None


def _repo() -> str:
    from pathlib import Path

    return str(Path(__file__).resolve().parents[3])
