"""compute_ground_truth on hand-built pose streams: a subject facing the camera, the
head convention used by normalization, mutual gaze, and FK vs recorded TCP pose."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.data.frame_truth import FrameTable, PoseStream, compute_ground_truth, fk_stream
from gaze4hri_bench.faces.normalization import EYE_TO_FACE_CENTRE_MM
from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.kinematics import inverse
from gaze4hri_core.protocol import trial_by_id
from gaze4hri_core.rig import camera_on_arc
from gaze4hri_core.transforms import SE3

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def cal(default_calibration_dir):
    return load_calibration(default_calibration_dir, "default")


def _streams(cal, yaw_deg=0.0, n=5):
    """Eyes at the nominal seat facing the camera (camera 0.5 m in front, level with the
    eyes), head turned by ``yaw_deg``; 100 Hz head, 125 Hz robot, frames at 30 Hz."""
    from scipy.spatial.transform import Rotation

    eye = cal.eye_nominal_world
    f = cal.subject_forward_world
    T_wc = camera_on_arc(eye, f, 0.5, 0.0, 0.0)
    R_eye = (
        np.column_stack([f, np.cross([0, 0, 1.0], f), [0, 0, 1.0]])
        @ Rotation.from_euler("z", yaw_deg, degrees=True).as_matrix()
    )
    T_wh = SE3(R_eye, eye) @ cal.T_head_eye.inv()
    T_bt = cal.T_world_base.inv() @ T_wc @ cal.T_tool0_camera.inv()
    th = np.arange(0, 300_000_000, 10_000_000)
    tr = np.arange(0, 300_000_000, 8_000_000)
    head = PoseStream(th, np.tile(T_wh.t, (len(th), 1)), np.tile(T_wh.quat_xyzw, (len(th), 1)))
    robot = PoseStream(tr, np.tile(T_bt.t, (len(tr), 1)), np.tile(T_bt.quat_xyzw, (len(tr), 1)))
    t = 20_000_000 + np.arange(n) * 33_333_333
    frames = FrameTable(np.arange(n), t, 1000 + np.arange(n), np.array(["ok"] * n, dtype=object))
    return frames, head, robot, T_wc, T_bt


def test_frontal_face_geometry(cal):
    frames, head, robot, T_wc, _ = _streams(cal)
    gt = compute_ground_truth(frames, head, robot, cal, trial_by_id("mutual_h_slow"))
    assert gt["valid"].all()
    r = gt.iloc[0]
    # looking into the camera is (0, 0, -1): pitch = yaw = 0 (Frame A)
    assert np.allclose(r[["gt_x", "gt_y", "gt_z"]].to_numpy(float), [0, 0, -1], atol=1e-9)
    assert abs(r["gt_pitch_deg"]) < 1e-6 and abs(r["gt_yaw_deg"]) < 1e-6
    assert np.allclose(r[["head_fwd_x", "head_fwd_y", "head_fwd_z"]].to_numpy(float), [0, 0, -1], atol=1e-9)
    assert r["head_gaze_conflict_deg"] < 1e-6 and abs(r["camera_yaw_deg"]) < 1e-6
    # head in the camera: OpenCV head axes, a frontal upright face is the identity
    R = r[[f"R_head_{i}{j}" for i in range(3) for j in range(3)]].to_numpy(float).reshape(3, 3)
    assert np.allclose(R, np.eye(3), atol=1e-9)
    assert np.allclose(r[["eye_cx", "eye_cy", "eye_cz"]].to_numpy(float), [0, 0, 0.5], atol=1e-9)
    assert np.allclose(
        r[["face_cx", "face_cy", "face_cz"]].to_numpy(float), [0, 0, 0.5] + EYE_TO_FACE_CENTRE_MM / 1000, atol=1e-9
    )
    assert np.allclose(r[["target_cx", "target_cy", "target_cz"]].to_numpy(float), 0.0, atol=1e-9)  # mutual: the camera


def test_head_turn_and_table_target(cal):
    frames, head, robot, T_wc, _ = _streams(cal, yaw_deg=25.0)  # head to the subject's left
    gt = compute_ground_truth(frames, head, robot, cal, trial_by_id("conflict_left_H2"))
    r = gt.iloc[0]
    fwd = r[["head_fwd_x", "head_fwd_y", "head_fwd_z"]].to_numpy(float)
    # the subject's left is the camera's right (+x): the head forward turns towards +x
    assert fwd[0] > 0.4 and np.degrees(np.arccos(-fwd[2])) == pytest.approx(25.0, abs=1e-6)
    # H2 lies on the table in front of and below the eyes: gaze points down (pitch < 0)
    assert r["gt_pitch_deg"] < -20 and abs(r["gt_yaw_deg"]) < 4.0  # H2 is 1 cm off the seat axis
    g = r[["gt_x", "gt_y", "gt_z"]].to_numpy(float)
    assert r["head_gaze_conflict_deg"] == pytest.approx(np.degrees(np.arccos(np.clip(g @ fwd, -1, 1))), abs=1e-6)
    # the target in the camera frame is the surveyed marker, and the gaze points at it from the eyes
    tgt = r[["target_cx", "target_cy", "target_cz"]].to_numpy(float)
    assert np.allclose(tgt, T_wc.inv().apply(cal.targets["H2"]), atol=1e-9)
    eye = r[["eye_cx", "eye_cy", "eye_cz"]].to_numpy(float)
    assert np.allclose((tgt - eye) / np.linalg.norm(tgt - eye), g, atol=1e-9)


def test_fk_equals_tcp(cal):
    frames, head, robot, _, T_bt = _streams(cal)
    q = inverse(T_bt.matrix, cal.robot_model)[0]
    fk = fk_stream(robot.t_ns, np.tile(q, (len(robot.t_ns), 1)), cal.robot_model)
    a = compute_ground_truth(frames, head, robot, cal, trial_by_id("illum100_P5"))
    b = compute_ground_truth(frames, head, fk, cal, trial_by_id("illum100_P5"))
    cols = ["gt_x", "gt_y", "gt_z", "face_cx", "face_cy", "face_cz", "camera_yaw_deg"]
    assert np.allclose(a[cols].to_numpy(float), b[cols].to_numpy(float), atol=1e-9)


def test_missing_streams_invalidate(cal):
    frames, head, robot, _, _ = _streams(cal)
    gt = compute_ground_truth(frames, PoseStream.empty(), robot, cal, trial_by_id("illum100_P5"))
    assert (gt["invalid_reason"] == "mocap_lost").all() and gt["gt_x"].isna().all()
    gt = compute_ground_truth(frames, head, PoseStream.empty(), cal, trial_by_id("illum100_P5"))
    assert (gt["invalid_reason"] == "interp_gap").all()


@pytest.mark.replay
def test_fk_from_recorded_joint_states(tmp_path, cal):
    """A bag with /joint_states and no /robot/tcp_pose: the camera pose comes from the
    UR forward kinematics and the ground truth matches the exact truth."""
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.testing.session import TrialSpec, write_session
    from gaze4hri_core.gaze import angular_error_deg
    from gaze4hri_core.session import Topics

    root = tmp_path / "root"
    write_session(
        root,
        "S01",
        [TrialSpec("arc_P3", seconds=0.6, omit_topics=(Topics.TCP_POSE,), extra={"joints": True})],
        tmp=tmp_path,
    )
    ds = Dataset(root)
    ref = ds.trials()[0]
    gt = ds.trial_ground_truth(ref)
    m = gt[gt["valid"]].merge(ds.sim_truth(ref), on="t_ns")
    assert len(m) >= 15
    assert np.nanmax(angular_error_deg(m[["gt_x", "gt_y", "gt_z"]].to_numpy(), m[["x", "y", "z"]].to_numpy())) < 0.1
