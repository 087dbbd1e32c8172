"""Gaze conventions (methods.md Frame A / Frame B) and the angular error."""
import numpy as np
import pytest
from gaze4hri_core.gaze import (
    angular_error_deg,
    convert_frame,
    pitchyaw_to_vector,
    ray_frame_to_camera,
    vector_to_pitchyaw,
)
from hypothesis import given
from hypothesis import strategies as st

pytestmark = pytest.mark.unit


def test_into_camera_is_minus_z_in_both_frames():
    np.testing.assert_allclose(pitchyaw_to_vector(0.0, 0.0), [0, 0, -1], atol=1e-15)
    np.testing.assert_allclose(pitchyaw_to_vector(0.0, 0.0, "B"), [0, 0, -1], atol=1e-15)


def test_hand_worked_frame_a():
    # looking down 30 deg: y (down) component +sin 30
    np.testing.assert_allclose(pitchyaw_to_vector(np.radians(-30), 0.0), [0, 0.5, -np.sqrt(3) / 2], atol=1e-12)
    # yaw +90: x = -1 (towards the camera's left in the image, the subject's right)
    np.testing.assert_allclose(pitchyaw_to_vector(0.0, np.pi / 2), [-1, 0, 0], atol=1e-12)
    # GazeHub: yaw = atan2(-x, -z), pitch = asin(-y)
    v = np.array([0.2, -0.3, -0.9])
    p, y = vector_to_pitchyaw(v)
    u = v / np.linalg.norm(v)
    assert np.isclose(p, np.arcsin(-u[1])) and np.isclose(y, np.arctan2(-u[0], -u[2]))


def test_frame_b_axes_are_flipped_x_y():
    v = np.array([0.1, 0.2, -0.97])
    np.testing.assert_allclose(convert_frame(v, "A", "B"), [-0.1, -0.2, -0.97])
    np.testing.assert_allclose(convert_frame(convert_frame(v, "A", "B"), "B", "A"), v)
    # the same physical direction has the same (pitch, yaw) in both frames
    np.testing.assert_allclose(vector_to_pitchyaw(convert_frame(v, "A", "B"), "B"), vector_to_pitchyaw(v, "A"))


angles = st.tuples(st.floats(-1.5, 1.5), st.floats(-3.1, 3.1))


@given(angles, st.sampled_from(["A", "B"]))
def test_pitchyaw_round_trip(py, frame):
    v = pitchyaw_to_vector(*py, frame=frame)
    np.testing.assert_allclose(vector_to_pitchyaw(v, frame), py, atol=1e-9)
    assert np.isclose(np.linalg.norm(v), 1.0)


def test_vectorised_shapes():
    p = np.zeros((4, 5))
    assert pitchyaw_to_vector(p, p).shape == (4, 5, 3)
    assert vector_to_pitchyaw(np.ones((4, 5, 3))).shape == (4, 5, 2)
    assert angular_error_deg(np.ones((7, 3)), np.ones((7, 3))).shape == (7,)


def test_angular_error_reference_and_precision():
    assert np.isclose(angular_error_deg([1, 0, 0], [0, 1, 0]), 90.0)
    assert np.isclose(angular_error_deg([1, 0, 0], [-1, 0, 0]), 180.0)
    # arccos loses precision below ~1e-4 deg in float64; atan2 keeps it
    eps = np.radians(1e-6)
    assert np.isclose(angular_error_deg([0, 0, 1], [np.sin(eps), 0, np.cos(eps)]), 1e-6, rtol=1e-6)
    assert angular_error_deg([0, 0, 2], [0, 0, 5]) == 0.0


def test_angular_error_nan_safe():
    assert np.isnan(angular_error_deg([0, 0, 0], [0, 0, 1]))
    assert np.isnan(angular_error_deg([np.nan, 0, 1], [0, 0, 1]))
    out = angular_error_deg([[0, 0, 1], [np.inf, 0, 0]], [[0, 0, 1], [0, 0, 1]])
    assert out[0] == 0 and np.isnan(out[1])


def test_ray_frame_identity_on_axis_and_rotation_off_axis():
    v = np.array([0.1, 0.2, -0.97])
    np.testing.assert_allclose(ray_frame_to_camera(v, [0, 0, 1]), v, atol=1e-12)
    # a face 45 deg to the right: "into the camera" along the ray is -ray in the camera frame
    ray = np.array([1.0, 0, 1.0]) / np.sqrt(2)
    np.testing.assert_allclose(ray_frame_to_camera([0, 0, -1], ray), -ray, atol=1e-12)


def test_unknown_frame():
    with pytest.raises(ValueError, match="frame"):
        pitchyaw_to_vector(0, 0, "C")
