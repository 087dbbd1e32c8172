"""gaze4hri_core.face_model: the generic face model's ETH face centre lies on the face's
midline, about 22 mm below and 9 mm in front of the eye-corner centre (OpenCV head frame)."""
from __future__ import annotations

import numpy as np
import pytest

from gaze4hri_core import face_model as fm

pytestmark = pytest.mark.unit


def test_face_centre_offset_and_model_symmetry():
    assert fm.FACE_MODEL_MM.shape == (6, 3) and len(fm.FACE_MODEL_MESH_IDS) == 6
    mirrored = fm.FACE_MODEL_MM[[3, 2, 1, 0, 5, 4]] * [-1.0, 1.0, 1.0]  # left <-> right
    np.testing.assert_allclose(mirrored, fm.FACE_MODEL_MM)
    np.testing.assert_allclose(fm.EYE_TO_FACE_CENTRE_MM, [0.0, 21.69, -8.88], atol=0.01)
    pts = np.arange(18.0).reshape(6, 3)
    np.testing.assert_allclose(fm.face_center_from_model_points(pts), 0.5 * (pts[:4].mean(0) + pts[4:].mean(0)))


def test_the_face_package_re_exports_the_core_model():
    nz = pytest.importorskip("gaze4hri_bench.faces.normalization")
    assert nz.FACE_MODEL_MM is fm.FACE_MODEL_MM and nz.EYE_TO_FACE_CENTRE_MM is fm.EYE_TO_FACE_CENTRE_MM
