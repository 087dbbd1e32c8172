"""Calibration files load, round-trip, and fail with one line naming file and field."""
import shutil

import numpy as np
import pytest
import yaml
from gaze4hri_core.calibration import (
    CameraIntrinsics,
    calibration_hashes,
    load_calibration,
    load_camera_info,
    load_targets,
    save_camera_info,
    save_eye_head,
)
from gaze4hri_core.errors import CalibrationError
from gaze4hri_core.transforms import SE3

pytestmark = pytest.mark.unit


@pytest.fixture
def caldir(tmp_path, default_calibration_dir):
    d = tmp_path / "cal"
    shutil.copytree(default_calibration_dir, d)
    return d


def _edit(path, fn):
    data = yaml.safe_load(path.read_text())
    fn(data)
    path.write_text(yaml.safe_dump(data))


def test_default_loads(caldir):
    c = load_calibration(caldir, subject="default")
    assert c.intrinsics.width == 1920 and c.robot_model == "ur5"
    assert set(c.targets) >= {f"P{i}" for i in range(1, 10)} | {f"H{i}" for i in range(1, 7)}
    assert c.T_head_eye is not None and set(c.hashes) >= {"camera_info.yaml", "subjects/default.yaml"}


def test_camera_info_round_trip_and_scaling(tmp_path):
    K = np.array([[1380.0, 0, 959.5], [0, 1380.0, 539.5], [0, 0, 1]])
    intr = CameraIntrinsics(1920, 1080, K, np.array([0.1, -0.2, 0, 0, 0.01]))
    save_camera_info(tmp_path / "ci.yaml", intr)
    back = load_camera_info(tmp_path / "ci.yaml")
    np.testing.assert_allclose(back.K, K)
    np.testing.assert_allclose(back.D, intr.D)
    s = intr.scaled(640, 360)
    assert np.isclose(s.fx, 460.0) and np.isclose(s.cx, 319.5) and np.isclose(s.cy, 179.5)
    # the principal point projects to itself
    np.testing.assert_allclose(s.project([[0, 0, 1.0]]), [[319.5, 179.5]])


@pytest.mark.parametrize(
    "fname, mutate, needle",
    [
        ("camera_info.yaml", lambda d: d["camera_matrix"].update(data=[1, 2, 3]), "camera_matrix"),
        ("camera_info.yaml", lambda d: d.pop("image_width"), "image_width"),
        ("hand_eye.yaml", lambda d: d.update(rotation_xyzw=[0, 0, 0, 2]), "rotation_xyzw"),
        ("hand_eye.yaml", lambda d: d.update(translation=[0, 0]), "translation"),
        ("hand_eye.yaml", lambda d: d.update(child="camera_link"), "expected tool0 -> camera_color_optical_frame"),
        ("registration.yaml", lambda d: d.update(robot_model="ur10"), "robot_model"),
        ("targets.yaml", lambda d: d["targets"].pop("P5"), "P5"),
        ("scene.yaml", lambda d: d.update(subject_forward_world=[0, 0, 1]), "subject_forward_world"),
        ("scene.yaml", lambda d: d["front_camera"].update(distance_m=-1), "front_camera.distance_m"),
    ],
)
def test_bad_files_fail_with_one_line(caldir, fname, mutate, needle):
    _edit(caldir / fname, mutate)
    with pytest.raises(CalibrationError) as ei:
        load_calibration(caldir, subject="default")
    line = str(ei.value)
    assert "\n" not in line and fname in line and needle in line


def test_missing_and_unparsable(caldir, tmp_path):
    with pytest.raises(CalibrationError, match="S99.yaml"):
        load_calibration(caldir, subject="S99")
    (caldir / "targets.yaml").write_text("targets: [unclosed\n")
    with pytest.raises(CalibrationError, match=r"targets.yaml:\d+"):
        load_targets(caldir / "targets.yaml")
    with pytest.raises(CalibrationError, match="not found"):
        load_calibration(tmp_path / "nope")


def test_eye_head_save_and_hash_changes(caldir):
    before = calibration_hashes(caldir, "S01")
    save_eye_head(caldir / "subjects" / "S01.yaml", SE3(np.eye(3), [0.07, 0, -0.09]), subject="S01", rms_m=0.001)
    c = load_calibration(caldir, subject="S01")
    np.testing.assert_allclose(c.eye_in_head, [0.07, 0, -0.09])
    assert "subjects/S01.yaml" in calibration_hashes(caldir, "S01") and "subjects/S01.yaml" not in before


def test_robot_model_is_looked_up_in_the_kinematics_registry(caldir):
    _edit(caldir / "registration.yaml", lambda d: d.update(robot_model="UR5E"))
    assert load_calibration(caldir, subject="default").robot_model == "ur5e"  # case-insensitive (registry.py)
    _edit(caldir / "registration.yaml", lambda d: d.update(robot_model="ur5x"))
    with pytest.raises(CalibrationError) as ei:
        load_calibration(caldir, subject="default")
    assert ei.value.what == "unknown robot model 'ur5x'" and ei.value.where.endswith("registration.yaml: robot_model")
    assert ei.value.fix == "did you mean ur5 or ur5e? known: ur5, ur5e"
