"""The default calibration is loadable, plausible and reproduces the study's Table S11."""
import numpy as np
import pytest
from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.gaze import vector_to_pitchyaw
from gaze4hri_core.groundtruth import gaze_in_camera
from gaze4hri_core.protocol import ARC_RADIUS_M, ARC_YAW_DEG
from gaze4hri_core.rig import camera_on_arc
from gaze4hri_core.transforms import SE3

from gaze4hri_core import kinematics

pytestmark = pytest.mark.unit

# Sezer et al., Table S11: mean ground-truth (pitch, yaw) in degrees across subjects.
TABLE_S11 = {
    "P1": (-24.90, -32.35), "P2": (-29.48, 0.01), "P3": (-26.11, 32.24),
    "P4": (-31.82, -42.05), "P5": (-40.69, 0.81), "P6": (-32.61, 42.99),
    "P7": (-40.25, -58.69), "P8": (-60.29, 4.26), "P9": (-39.33, 59.39),
}


@pytest.fixture(scope="module")
def cal(default_calibration_dir):
    return load_calibration(default_calibration_dir, subject="default")


def _head_pose_for_nominal_eye(cal) -> SE3:
    # head band placed so that the eye midpoint lands on the nominal eye position,
    # eye frame facing the subject's forward direction
    T_world_eye = SE3(np.eye(3), cal.eye_nominal_world)
    return T_world_eye @ cal.T_head_eye.inv()


def test_table_s11_within_3_degrees(cal):
    T_wh = _head_pose_for_nominal_eye(cal)
    T_wc = camera_on_arc(cal.eye_nominal_world, cal.subject_forward_world, cal.front_camera_distance_m, 0.0,
                         cal.front_camera_elevation_deg)
    for name, (pitch, yaw) in TABLE_S11.items():
        g = gaze_in_camera(T_wh, cal.eye_in_head, cal.targets[name], T_wc)
        py = np.degrees(vector_to_pitchyaw(g))
        assert abs(py[0] - pitch) < 3.0, (name, py, pitch)
        assert abs(py[1] - yaw) < 3.0, (name, py, yaw)


def test_eye_lands_on_nominal_position(cal):
    T_wh = _head_pose_for_nominal_eye(cal)
    np.testing.assert_allclose(T_wh.apply(cal.eye_in_head), cal.eye_nominal_world, atol=1e-12)


def test_camera_beyond_farthest_row_and_targets_on_table(cal):
    T_wc = camera_on_arc(cal.eye_nominal_world, cal.subject_forward_world, cal.front_camera_distance_m, 0.0,
                         cal.front_camera_elevation_deg)
    farthest = max(cal.targets[p][0] for p in ("P1", "P2", "P3"))
    assert T_wc.t[0] > farthest
    for name, p in cal.targets.items():
        assert abs(p[0]) <= 0.35 and abs(p[1]) <= 0.8 and p[2] == 0.0, name


@pytest.mark.parametrize("yaw", [ARC_YAW_DEG[0], 0.0, ARC_YAW_DEG[1]])
def test_arc_poses_reachable_by_ur5(cal, yaw):
    T_wc = camera_on_arc(
        cal.eye_nominal_world, cal.subject_forward_world, ARC_RADIUS_M, yaw, cal.front_camera_elevation_deg
    )
    T_base_tool0 = cal.T_world_base.inv() @ T_wc @ cal.T_tool0_camera.inv()
    sols = kinematics.inverse(T_base_tool0.matrix, cal.robot_model)
    assert sols, f"arc pose at {yaw} deg unreachable"
