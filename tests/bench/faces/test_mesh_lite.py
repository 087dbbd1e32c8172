"""faces.mesh_lite: the region's geometry (pure: the warp and its inverse, MediaPipe's
landmarks-to-region rule) and the landmark model run by LiteRT against MediaPipe's own
face-mesh graph on a rendered face."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.faces.mesh_lite import Roi, from_roi, roi_affine, roi_from_box, roi_from_landmarks

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("roi", [Roi(320.5, 180.25, 150.0), Roi(100.0, 300.0, 401.0, 0.3), Roi(0.0, 0.0, 50.0, -2.0)])
def test_warp_and_its_inverse(roi):
    """A point p (edge coordinates) goes through the warp (pixel centres: p - 0.5) to the model's
    input and back through from_roi; the region's centre lands on the input's centre and its
    corners on the input's corners."""
    size = 192
    A = roi_affine(roi, size)
    p = np.random.default_rng(1).uniform(-100, 700, (50, 2))
    q = (p - 0.5) @ A[:, :2].T + A[:, 2] + 0.5  # input edge coordinates
    back = from_roi(np.c_[q, np.ones(len(q))], roi, size)
    np.testing.assert_allclose(back[:, :2], p, atol=1e-9)
    np.testing.assert_allclose(back[:, 2], roi.side / size)  # depth: input pixels -> image pixels
    c = (roi.centre - 0.5) @ A[:, :2].T + A[:, 2] + 0.5
    np.testing.assert_allclose(c, [size / 2, size / 2], atol=1e-9)
    h, ca, sa = roi.side / 2, np.cos(roi.angle), np.sin(roi.angle)
    corner = roi.centre + np.array([ca * -h - sa * -h, sa * -h + ca * -h])  # rotated top-left
    np.testing.assert_allclose((corner - 0.5) @ A[:, :2].T + A[:, 2] + 0.5, [0, 0], atol=1e-9)


def test_region_from_landmarks_is_mediapipes_rule():
    """Box centre, 1.5 x the longer side, roll = the outer eye corners' line (y down)."""
    lm = np.zeros((468, 3))
    lm[:, :2] = [[100, 50]] * 468
    lm[0, :2], lm[1, :2] = [60, 20], [160, 100]  # box 100 x 80 centred on (110, 60)
    lm[33, :2], lm[263, :2] = [80, 40], [120, 60]  # eye line down to the right: +atan(0.5)
    r = roi_from_landmarks(lm)
    assert r == pytest.approx((110.0, 60.0, 150.0, np.arctan2(20, 40)))


def test_region_from_a_box():
    assert roi_from_box([10, 20, 110, 60], 1.5) == pytest.approx((60.0, 40.0, 150.0, 0.0))


def _rendered_face(roll_deg: float) -> np.ndarray:
    """The simulator's face 0.55 m in front of a 640x360 camera, the head rolled by
    ``roll_deg`` (about the viewing axis)."""
    from gaze4hri_core.transforms import SE3

    from tests.bench.test_predict import face_scene

    r, T_cam = face_scene(640, 360)
    a = np.radians(roll_deg)
    Rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    return r.render(T_cam, SE3(Rx, np.zeros(3)))


@pytest.mark.parametrize("roll_deg", [0.0, 15.0])
def test_landmarks_match_mediapipes_graph(roll_deg):
    """On a rendered face (upright, and rolled), LiteRT's landmarks in the region MediaPipe's
    rule derives from the graph's own landmarks agree with the graph's to within 2 px
    (median) and give the same eye aspect ratio to 0.03; the region's roll follows the head's."""
    pytest.importorskip("mediapipe")
    pytest.importorskip("ai_edge_litert")
    from gaze4hri_bench.faces.detectors import get_detector
    from gaze4hri_bench.faces.landmarks import FaceMesh, mean_ear
    from gaze4hri_bench.faces.mesh_lite import LiteMesh

    image = _rendered_face(roll_deg)
    det = get_detector("mediapipe")
    mesh, lite = FaceMesh(), LiteMesh()
    try:
        (face,) = det.detect(image)
        ref = mesh.landmarks(image, face.box)
        assert ref is not None
        roi = roi_from_landmarks(ref)
        assert abs(abs(np.degrees(roi.angle)) - roll_deg) < 3.0, np.degrees(roi.angle)
        got = lite.landmarks(image, roi)
        assert got is not None
        d = np.linalg.norm(got[:, :2] - ref[:, :2], axis=1)
        assert np.median(d) < 2.0, np.median(d)
        assert abs(mean_ear(got) - mean_ear(ref)) < 0.03
        assert lite.landmarks(np.zeros_like(image), Roi(320, 180, 200)) is None  # no face: none
    finally:
        mesh.close()
        lite.close()
        det.close()
