"""Ground truth of the study (Sec. III-B) on hand-worked geometry."""
import numpy as np
import pytest
from gaze4hri_core.gaze import vector_to_pitchyaw
from gaze4hri_core.groundtruth import (
    camera_in_world,
    camera_yaw_deg,
    eye_in_world,
    gaze_in_camera,
    head_forward_in_camera,
    head_gaze_conflict_deg,
    mutual_gaze_in_camera,
)
from gaze4hri_core.rig import camera_on_arc
from gaze4hri_core.transforms import SE3, look_at
from scipy.spatial.transform import Rotation

pytestmark = pytest.mark.unit


def test_gaze_straight_down_into_camera_frame():
    eye = np.array([0.0, 0.0, 0.5])
    T_wh = SE3(np.eye(3), eye + [0, 0, 0.1])
    T_wc = look_at([1.0, 0, 0.5], eye)  # camera 1 m in front, at eye height
    g = gaze_in_camera(T_wh, [0, 0, -0.1], [0.5, 0.0, 0.0], T_wc)
    # target 0.5 m forward and 0.5 m down: 45 deg below the horizontal, straight ahead
    np.testing.assert_allclose(np.degrees(vector_to_pitchyaw(g)), [-45, 0], atol=1e-9)


def test_mutual_gaze_is_minus_z():
    eye = np.array([0.1, 0.2, 0.4])
    T_wh = SE3(Rotation.from_euler("z", 20, degrees=True).as_matrix(), eye)
    T_wc = camera_on_arc(eye, [1, 0, 0], 0.5, 17.0, -6.0)
    np.testing.assert_allclose(mutual_gaze_in_camera(T_wh, [0, 0, 0], T_wc), [0, 0, -1], atol=1e-12)


def test_camera_in_world_chain():
    T_wb = SE3(Rotation.from_euler("z", 180, degrees=True).as_matrix(), [0.6, 0, 0])
    T_bt = SE3(np.eye(3), [0.5, 0, 0.3])
    T_tc = SE3(np.eye(3), [0, 0, 0.1])
    np.testing.assert_allclose(camera_in_world(T_wb, T_bt, T_tc).t, [0.1, 0, 0.4], atol=1e-12)


def test_head_forward_and_conflict():
    eye = np.zeros(3)
    T_wc = look_at([1, 0, 0], eye)
    T_he = SE3(np.eye(3), [0, 0, 0])
    # head yawed 25 deg to the subject's left, gaze straight at the camera
    T_wh = SE3(Rotation.from_euler("z", 25, degrees=True).as_matrix(), eye)
    f = head_forward_in_camera(T_wh, T_he, T_wc)
    g = mutual_gaze_in_camera(T_wh, [0, 0, 0], T_wc)
    assert np.isclose(head_gaze_conflict_deg(f, g), 25.0)
    # subject and camera face each other: the subject's left (+y world) is the
    # camera's right, i.e. positive x in the optical frame
    assert f[0] > 0


def test_eye_in_world_and_camera_yaw():
    T_wh = SE3(Rotation.from_euler("z", 90, degrees=True).as_matrix(), [1, 2, 3])
    np.testing.assert_allclose(eye_in_world(T_wh, [0.1, 0, 0]), [1, 2.1, 3])
    eye = np.array([-0.45, 0.01, 0.32])
    for yaw in (-30, 0, 30):
        T = camera_on_arc(eye, [1, 0, 0], 0.5, yaw, -6.0)
        assert np.isclose(camera_yaw_deg(T, eye), yaw)
        assert np.isclose(np.linalg.norm(T.t - eye), 0.5)
