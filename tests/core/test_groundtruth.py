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


# ------------------------------------------------------------- tracked table (issue 13)
def test_tracked_table_targets_follow_a_nudged_table():
    """Targets = table pose at the frame x the target's table-frame offset; checked
    against an independent computation (scipy rotations, per frame) with a table that
    is bumped 3 cm and 5 deg mid-trial."""
    from gaze4hri_core.groundtruth import tracked_targets_world
    from scipy.spatial.transform import Rotation

    offset = np.array([1.1, 0.35, 0.0])
    t_tab = np.arange(0, 2_000_000_000, 10_000_000, dtype=np.int64)  # 100 Hz, 2 s
    nudged = t_tab >= 1_000_000_000
    yaw = np.where(nudged, 95.0, 90.0)
    pos = np.tile([0.35, -0.80, 0.0], (len(t_tab), 1)) + np.where(nudged[:, None], [0.03, 0.0, 0.0], 0.0)
    quat = Rotation.from_euler("z", yaw[:, None], degrees=True).as_quat()  # xyzw
    frames = t_tab[::3][:-1] + 5_000_000  # between mocap samples
    got, ok = tracked_targets_world(t_tab, pos, quat, offset, frames, smooth_s=0.0)
    assert ok.all()
    for i, tf in enumerate(frames):
        k = np.searchsorted(t_tab, tf) - 1
        w = (tf - t_tab[k]) / (t_tab[k + 1] - t_tab[k])
        p = (1 - w) * pos[k] + w * pos[k + 1]
        from scipy.spatial.transform import Slerp

        R = Slerp([0, 1], Rotation.from_quat(quat[k:k + 2]))([w])[0]
        np.testing.assert_allclose(got[i], R.apply(offset) + p, atol=1e-9)
    before, after = got[frames < 900_000_000], got[frames > 1_100_000_000]
    assert np.ptp(before, axis=0).max() < 1e-12 and np.ptp(after, axis=0).max() < 1e-12
    assert np.linalg.norm(after[0] - before[0]) > 0.05  # the target moved with the table
    # beyond the stream: not bridged
    _, ok2 = tracked_targets_world(t_tab, pos, quat, offset, np.array([3_000_000_000]))
    assert not ok2.any()


def test_camera_from_body_and_back_to_tool0_round_trip(default_calibration_dir):
    from gaze4hri_core.calibration import load_calibration
    from gaze4hri_core.groundtruth import camera_from_body, camera_in_world, pose_disagreement, tool0_from_camera
    from gaze4hri_core.trajectories import front_camera_pose, tool0_for_camera

    cal = load_calibration(default_calibration_dir, "default")
    T_bt = tool0_for_camera(cal, front_camera_pose(cal))
    T_wc = camera_in_world(cal.T_world_base, T_bt, cal.T_tool0_camera)
    T_wbody = T_wc @ cal.T_cambody_camera.inv()  # where the camera's rigid body is
    R, p = camera_from_body(T_wbody.R[None], T_wbody.t[None], cal.T_cambody_camera)
    np.testing.assert_allclose(R[0], T_wc.R, atol=1e-12)
    np.testing.assert_allclose(p[0], T_wc.t, atol=1e-12)
    R_bt, p_bt = tool0_from_camera(R, p, cal.T_world_base, cal.T_tool0_camera)
    np.testing.assert_allclose(R_bt[0], T_bt.R, atol=1e-12)
    np.testing.assert_allclose(p_bt[0], T_bt.t, atol=1e-12)
    d, a = pose_disagreement(R, p, R, p + np.array([[0.003, 0.0, 0.004]]))
    assert d[0] == pytest.approx(0.005) and a[0] == pytest.approx(0.0, abs=1e-6)


def test_tracked_table_jitter_is_averaged_and_a_bump_still_moves_the_target():
    from gaze4hri_core.groundtruth import tracked_targets_world
    from scipy.spatial.transform import Rotation

    rng = np.random.default_rng(0)
    t_tab = np.arange(0, 3_000_000_000, 10_000_000, dtype=np.int64)
    bumped = t_tab >= 1_500_000_000
    pos = np.where(bumped[:, None], [0.05, 0.0, 0.0], 0.0) + rng.normal(0, 1e-4, (len(t_tab), 3))
    rot = Rotation.from_rotvec(rng.normal(0, np.radians(0.03), (len(t_tab), 3)))
    offset = np.array([1.0, 0.0, 0.0])
    got, ok = tracked_targets_world(t_tab, pos, rot.as_quat(), offset, t_tab[10:-10])
    truth = offset + np.where(bumped[10:-10, None], [0.05, 0.0, 0.0], 0.0)
    far = np.abs(t_tab[10:-10] - 1_500_000_000) > 300_000_000  # away from the bump
    err = np.linalg.norm(got - truth, axis=1)[far]
    assert ok.all() and err.max() < 3e-4  # raw jitter on the 1 m lever: ~0.5 mm
