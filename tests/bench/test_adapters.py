"""Method adapters end to end on tiny ONNX models with each method's exact signature,
whose output is a known function of the image (horizontal gradient -> yaw, vertical ->
pitch; gaze4hri_bench.methods.testing):

* pre-processing follows the spec (colour order, scale, mean/std, layout);
* decoding reproduces the NumPy reference of the network's angles;
* flip tests: a mirrored input flips the sign of yaw and keeps pitch, at the network
  level and through the whole crop / rectified path (mirrored scene -> mirrored
  camera-frame prediction), so a swapped or mis-signed decoder fails;
* a crop's ray correction: looking into the camera gives -ray for an off-centre face.
"""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.methods import get_method
from gaze4hri_bench.methods.base import FrameContext
from gaze4hri_bench.methods.network import box_ray, ray_basis
from gaze4hri_bench.methods.testing import gradient_angles
from gaze4hri_bench.pipeline.runtime import Runner
from gaze4hri_core.gaze import vector_to_pitchyaw

from .conftest import onnx_method_names

pytestmark = pytest.mark.replay

pytest.importorskip("gaze4hri_bench.faces.crops", reason="faces.crops (crop, to_tensor) not in this build yet")

S = np.diag([-1.0, 1.0, 1.0])  # mirror of the camera's x axis


def _patch(size: int, seed: int = 0) -> np.ndarray:
    """RGB uint8 patch with a left-right and a top-bottom intensity ramp (asymmetric)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size] / (size - 1)
    base = 70 + 110 * x**1.3 + 40 * y
    img = np.stack([base, 0.8 * base + 20, 0.6 * base + 30], -1) + rng.normal(0, 3, (size, size, 3))
    return np.clip(img, 0, 255).astype(np.uint8)


def _net_angles(m, runner, tensors: list[np.ndarray]) -> np.ndarray:
    """(pitch, yaw) in the network frame for single frames (clips: the frame repeated)."""
    x = np.stack(tensors)
    if m.spec.clip_len > 1:
        x = np.repeat(x[:, None], m.spec.clip_len, axis=1)
    xs = [x] + ([np.full((*x.shape[:2], 2), m.spec.size, np.float32)] if m.takes_hw else [])  # MCGaze: whole frames
    g = m.decode(runner.run(*xs))
    if g.ndim == 3:
        g = g[:, m.spec.out_index or 0]
    return vector_to_pitchyaw(g)


@pytest.fixture(scope="module")
def runners(tiny_models):
    cache = {}

    def get(name):
        if name not in cache:
            m = get_method(name)
            cache[name] = (m, Runner(tiny_models / m.spec.weights_file, m.spec, "cpu", batch=4))
        return cache[name]

    return get


@pytest.mark.parametrize("name", onnx_method_names())
def test_tensor_follows_the_spec(name):
    m = get_method(name)
    spec = m.spec
    p = _patch(spec.size)
    t = m.to_tensor(p)
    assert t.dtype == np.float32 and t.shape == (3, spec.size, spec.size)
    ref = p.astype(np.float64) / 255.0
    if spec.colour == "bgr":
        ref = ref[..., ::-1]
    if spec.mean is not None:
        ref = (ref - np.array(spec.mean)) / np.array(spec.std)
    np.testing.assert_allclose(t, ref.transpose(2, 0, 1), atol=1e-5)


@pytest.mark.parametrize("name", onnx_method_names())
def test_decoding_matches_the_reference_and_flip(name, runners):
    m, r = runners(name)
    p = _patch(m.spec.size)
    t, tf = m.to_tensor(p), m.to_tensor(np.ascontiguousarray(p[:, ::-1]))
    got = _net_angles(m, r, [t, tf])
    want = np.stack(gradient_angles(np.stack([t, tf])), -1)
    np.testing.assert_allclose(got, want, atol=2e-3)  # L2CS bins: expectation, not exact
    (pitch, yaw), (pitch_f, yaw_f) = got
    assert abs(yaw) > np.radians(5), "test patch must have a clear horizontal gradient"
    assert yaw_f == pytest.approx(-yaw, abs=2e-3)
    assert pitch_f == pytest.approx(pitch, abs=2e-3)


def _scene(W=320, H=240):
    y, x = np.mgrid[0:H, 0:W].astype(float)
    base = 60 + 150 * (x / W) ** 1.2 + 40 * (y / H)
    img = np.clip(np.stack([base, 0.9 * base, 0.7 * base + 20], -1), 0, 255).astype(np.uint8)
    K = np.array([[260.0, 0, 158.5], [0, 260.0, 121.0], [0, 0, 1]])
    return img, K


def _mirror(img, K):
    W = img.shape[1]
    Km = K.copy()
    Km[0, 2] = (W - 1) - K[0, 2]
    return np.ascontiguousarray(img[:, ::-1]), Km


def _rot(yaw_deg, pitch_deg):
    a, b = np.radians(yaw_deg), np.radians(pitch_deg)
    Ry = np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])
    Rx = np.array([[1, 0, 0], [0, np.cos(b), -np.sin(b)], [0, np.sin(b), np.cos(b)]])
    return Ry @ Rx  # OpenCV head axes: identity = frontal upright face (faces.normalization)


def _predict(m, r, ctx, input_type):
    prep = m.prepare(ctx, input_type)
    assert prep is not None
    xs = [prep.tensor[None]] + ([prep.hw[None]] if prep.hw is not None else [])
    if m.spec.clip_len > 1:
        xs = [np.repeat(x[:, None], m.spec.clip_len, axis=1) for x in xs]
    g = m.decode(r.run(*xs))
    if g.ndim == 3:
        g = g[:, m.spec.out_index or 0]
    return m.to_camera(g, prep.to_cam[None])[0]


@pytest.mark.parametrize("name", onnx_method_names())
def test_crop_path_flip(name, runners):
    m, r = runners(name)
    img, K = _scene()
    box = np.array([180.0, 60.0, 260.0, 150.0])  # off-centre face
    nan = np.full(3, np.nan)
    v = _predict(m, r, FrameContext(0, 0, img, box, K, nan, np.full((3, 3), np.nan), nan), "crop")
    imgm, Km = _mirror(img, K)
    W = img.shape[1]
    boxm = np.array([(W - 1) - box[2], box[1], (W - 1) - box[0], box[3]])
    vm = _predict(m, r, FrameContext(0, 0, imgm, boxm, Km, nan, np.full((3, 3), np.nan), nan), "crop")
    np.testing.assert_allclose(np.linalg.norm(v), 1.0, atol=1e-9)
    assert abs(v[0]) > 0.05
    np.testing.assert_allclose(vm, S @ v, atol=0.02)


@pytest.mark.parametrize("name", onnx_method_names())
def test_rectified_path_flip(name, runners):
    pytest.importorskip("gaze4hri_bench.faces.normalization", reason="faces.normalization not in this build yet")
    m, r = runners(name)
    img, K = _scene()
    c = np.array([0.06, -0.03, 0.65])
    R = _rot(20, -10)
    v = _predict(m, r, FrameContext(0, 0, img, None, K, c, R, np.full(3, np.nan)), "rectified")
    imgm, Km = _mirror(img, K)
    vm = _predict(m, r, FrameContext(0, 0, imgm, None, Km, S @ c, S @ R @ S, np.full(3, np.nan)), "rectified")
    np.testing.assert_allclose(np.linalg.norm(v), 1.0, atol=1e-9)
    assert abs(v[0]) > 0.05
    np.testing.assert_allclose(vm, S @ v, atol=0.02)


def test_crop_ray_correction_looking_into_the_camera():
    K = np.array([[500.0, 0, 320], [0, 500.0, 180], [0, 0, 1]])
    m = get_method("l2cs")
    centre = ray_basis(box_ray([300, 160, 340, 200], K))
    np.testing.assert_allclose(centre, np.eye(3), atol=1e-12)
    box = [500, 20, 600, 120]
    ray = box_ray(box, K)
    v = m.to_camera(np.array([[0.0, 0.0, -1.0]]), ray_basis(ray)[None])[0]
    np.testing.assert_allclose(v, -ray, atol=1e-12)  # from the face to the camera centre
    M = ray_basis(ray)
    np.testing.assert_allclose(M.T @ M, np.eye(3), atol=1e-12)
    assert np.linalg.det(M) == pytest.approx(1.0)
