"""Calibration procedures against known transforms (and the Umeyama reference case)."""
import numpy as np
import pytest
from gaze4hri_core.procedures import eye_head_calibration, register_points, register_points_report, target_survey
from gaze4hri_core.transforms import SE3
from scipy.spatial.transform import Rotation

pytestmark = pytest.mark.unit


def test_register_points_recovers_transform_and_rms():
    rng = np.random.default_rng(1)
    R = Rotation.from_euler("zyx", [170, 5, -3], degrees=True).as_matrix()
    t = np.array([0.6, 0.02, -0.01])
    src = rng.uniform(-0.3, 0.3, size=(12, 3))
    dst = src @ R.T + t
    T, rms = register_points(src, dst)
    np.testing.assert_allclose(T[:3, :3], R, atol=1e-12)
    np.testing.assert_allclose(T[:3, 3], t, atol=1e-12)
    assert rms < 1e-12
    noisy = dst + rng.normal(scale=0.0005, size=dst.shape)
    rep = register_points_report(src, noisy)
    assert 0.0002 < rep.rms_m < 0.001 and rep.n_points == 12


def test_register_points_hand_worked_and_reflection_guard():
    # square rotated 90 deg about z: the reflection solution must not be returned
    src = np.array([[1, 0, 0], [0, 1, 0], [-1, 0, 0], [0, -1, 0.0]])
    dst = np.array([[0, 1, 0], [-1, 0, 0], [0, -1, 0], [1, 0, 0.0]])
    T, rms = register_points(src, dst)
    assert np.isclose(np.linalg.det(T[:3, :3]), 1.0) and rms < 1e-12
    np.testing.assert_allclose(T[:3, :3] @ [1, 0, 0], [0, 1, 0], atol=1e-12)


def test_register_points_bad_input():
    with pytest.raises(ValueError, match="at least 3"):
        register_points(np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="collinear"):
        register_points([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 0, 0], [1, 0, 0], [2, 0, 0]])


def test_eye_head_calibration_with_noise_and_outlier():
    rng = np.random.default_rng(2)
    truth = SE3(Rotation.from_euler("y", -8, degrees=True).as_matrix(), [0.073, 0.0, -0.091])
    heads, tools = [], []
    for i in range(20):
        H = SE3(Rotation.random(random_state=i).as_matrix(), rng.uniform(-0.5, 0.5, 3))
        noise = SE3(
            Rotation.from_rotvec(rng.normal(scale=np.radians(0.2), size=3)).as_matrix(),
            rng.normal(scale=0.0003, size=3),
        )
        heads.append(H)
        tools.append(H @ truth @ noise)
    tools[5] = tools[5] @ SE3(np.eye(3), [0.02, 0, 0])  # a bumped tool: 2 cm outlier
    rep = eye_head_calibration(heads, tools)
    assert rep.rejected == [5] and rep.n_used == 19
    assert np.linalg.norm(rep.T_head_eye.t - truth.t) < 0.0005
    assert np.degrees(Rotation.from_matrix(rep.T_head_eye.R.T @ truth.R).magnitude()) < 0.2
    assert rep.ok()


def test_target_survey_from_probe_poses():
    tip = np.array([0, 0, -0.12])
    poses = {"P5": [SE3(Rotation.random(random_state=i).as_matrix(), [0, 0, 0]) for i in range(5)]}
    poses["P5"] = [SE3(P.R, np.array([-0.15, 0, 0]) - P.R @ tip) for P in poses["P5"]]
    rep = target_survey({}, probe_tip_in_probe=tip, probe_poses=poses)
    np.testing.assert_allclose(rep.targets["P5"], [-0.15, 0, 0], atol=1e-12)
    assert rep.spread_m["P5"] < 1e-12 and rep.n_samples["P5"] == 5
