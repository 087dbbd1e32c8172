"""Data normalization (Zhang et al. 2018): round trips, the face centre lands on the
patch centre, 1.6 px/mm at f = 960, d = 600 mm, upright patches for upright heads, and
solvePnP head pose against the generic face model."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.faces import normalization as nz
from gaze4hri_core.gaze import angular_error_deg, pitchyaw_to_vector
from gaze4hri_core.gaze import normalize as unit
from scipy.spatial.transform import Rotation

pytestmark = pytest.mark.unit

K = np.array([[1380.0, 0, 959.5], [0, 1380.0, 539.5], [0, 0, 1]])


def _project(W, p):
    q = W @ np.append(p, 1.0)
    return q[:2] / q[2]


def _cases(n=20, seed=1):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        c = np.array([rng.uniform(-0.2, 0.2), rng.uniform(-0.15, 0.15), rng.uniform(0.35, 1.2)])
        R = Rotation.from_euler("yxz", rng.uniform(-40, 40, 3), degrees=True).as_matrix()
        yield c, R


def test_round_trip_gaze():
    rng = np.random.default_rng(0)
    for c, Rh in _cases():
        R = nz.normalization_rotation(c, Rh)
        assert np.allclose(R @ R.T, np.eye(3)) and np.isclose(np.linalg.det(R), 1.0)
        g = unit(rng.normal(size=3))
        assert np.allclose(nz.denormalize(nz.normalize_gaze(g, R), R), g)
    # batched form with one R per row
    Rs = np.stack([nz.normalization_rotation(c, Rh) for c, Rh in _cases(5)])
    G = unit(rng.normal(size=(5, 3)))
    gn = np.einsum("nij,nj->ni", Rs, G)
    assert np.allclose(nz.denormalize(gn, Rs), G)


def test_face_centre_maps_to_patch_centre_and_z_axis():
    for c, Rh in _cases():
        W, R = nz.normalization_homography(K, c, Rh, 960, 600, 224)
        assert np.allclose(_project(W, (K @ c)[:2] / c[2]), [112, 112], atol=1e-6)
        assert np.allclose(R @ unit(c), [0, 0, 1])


def test_scale_is_1p6_px_per_mm():
    """Two points 10 mm apart across the normalized view, at the face centre's depth,
    are 16 px apart in the 224 patch (f = 960, d = 600 mm)."""
    for c, Rh in _cases(8):
        W, R = nz.normalization_homography(K, c, Rh, 960, 600, 224)
        x_n = R[0]  # normalized camera x axis in the camera frame
        a, b = c - 0.005 * x_n, c + 0.005 * x_n
        pa, pb = _project(W, (K @ a)[:2] / a[2]), _project(W, (K @ b)[:2] / b[2])
        assert np.linalg.norm(pb - pa) == pytest.approx(16.0, rel=2e-3)
    # MPIIFaceGaze parameters: f = 1600, d = 1000 mm also give 1.6 px/mm
    c, Rh = next(_cases(1))
    W, R = nz.normalization_homography(K, c, Rh, 1600, 1000, 224)
    a, b = c - 0.005 * R[0], c + 0.005 * R[0]
    assert np.linalg.norm(_project(W, (K @ b)[:2] / b[2]) - _project(W, (K @ a)[:2] / a[2])) == pytest.approx(
        16.0, rel=2e-3
    )


def test_warp_image_and_upright_frontal_face():
    """A frontal upright head on the optical axis needs no rotation; an image marker at
    the face centre lands at the patch centre after warpPerspective."""
    img = np.zeros((1080, 1920, 3), np.uint8)
    c = np.array([0.05, -0.03, 0.6])
    u, v = (K @ c)[:2] / c[2]
    img[int(round(v)) - 2 : int(round(v)) + 3, int(round(u)) - 2 : int(round(u)) + 3] = 255
    patch, R = nz.normalize(img, K, c, np.eye(3))
    assert patch.shape == (224, 224, 3)
    ys, xs = np.nonzero(patch[..., 0] > 128)
    assert abs(xs.mean() - 111.5) < 1.5 and abs(ys.mean() - 111.5) < 1.5
    R0 = nz.normalization_rotation([0, 0, 0.6], np.eye(3))
    assert np.allclose(R0, np.eye(3))
    # gaze into the camera in the camera frame stays (0, 0, -1) for a face on the axis
    g = nz.normalize_gaze([0, 0, -1.0], R0)
    assert angular_error_deg(g, pitchyaw_to_vector(0.0, 0.0)) < 1e-9
    # intrinsics objects are accepted as well as K
    from gaze4hri_core.calibration import CameraIntrinsics

    p2, R2 = nz.normalize(img, CameraIntrinsics(1920, 1080, K, np.zeros(5)), c, np.eye(3), size=(224, 224))
    assert np.array_equal(p2, patch) and np.allclose(R2, R)


def test_parallel_head_axis_rejected():
    with pytest.raises(ValueError, match="parallel"):
        nz.normalization_rotation([0.6, 0, 0], np.eye(3))


def test_face_model_and_solvepnp_recovers_pose():
    m = nz.FACE_MODEL_MM
    assert m[0, 0] < m[1, 0] < 0 < m[2, 0] < m[3, 0]  # x to the subject's left (image right)
    assert (m[:4, 1] < 0).all() and (m[4:, 1] > 0).all()  # y down: eyes above the nose
    assert 85 < np.linalg.norm(m[3] - m[0]) < 95  # outer eye corners ~ 9 cm apart
    assert nz.EYE_TO_FACE_CENTRE_MM[1] > 15  # the ETH face centre is below the eyes
    for c, Rh in _cases(10, seed=3):
        t = c.copy()
        pts = (m / 1000.0) @ Rh.T + t
        uv = (pts @ K.T)[:, :2] / pts[:, 2:3]
        R, tt, fc = nz.head_pose_from_landmarks(uv, K)
        assert Rotation.from_matrix(R.T @ Rh).magnitude() < 1e-4
        assert np.allclose(tt, t, atol=1e-5)
        assert np.allclose(fc, nz.face_center_from_model_points(pts), atol=1e-5)
