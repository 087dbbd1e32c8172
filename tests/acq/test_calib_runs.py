"""Calibration runs end to end on the simulator: each recovers the world's (perturbed)
truth, writes the core's YAML and that YAML loads back; bad data asks for a retry."""
import shutil

import numpy as np
import pytest
from gaze4hri_acq.calib_runs import (
    EyeHeadRun,
    RegistrationRun,
    TargetSurveyRun,
    registration_points,
    run_eye_head,
    run_registration,
    run_target_survey,
)
from gaze4hri_acq.drivers.registry import make_mocap, make_robot, make_world, robot_monitor
from gaze4hri_core.calibration import load_calibration, load_targets
from gaze4hri_core.device_config import MocapConfig, RobotConfig, SimConfig
from gaze4hri_core.errors import CalibrationError
from gaze4hri_core.trajectories import front_camera_pose, tool0_for_camera
from gaze4hri_core.transforms import SE3
from gaze4hri_sim.clock import SimClock
from scipy.spatial.transform import Rotation

pytestmark = pytest.mark.unit


class SteppingMocap:
    """The simulated mocap with the manual clock advanced on every read (single thread)."""

    def __init__(self, mocap, clock):
        self.m, self.clock = mocap, clock

    def read(self, timeout_s=0.1):
        f = self.m.read(timeout_s)
        if f is None:
            self.clock.advance(0.01)
            f = self.m.read(timeout_s)
        return f


@pytest.fixture()
def calib_copy(tmp_path, default_calibration_dir):
    d = tmp_path / "calibration"
    shutil.copytree(default_calibration_dir, d)
    return d


def _world(calib_dir, **kw):
    cal = load_calibration(calib_dir, "default")
    return make_world(SimConfig(seed=5, calibration_dir=calib_dir), clock=SimClock(manual=True), calibration=cal, **kw)


def test_registration_points_span_3d():
    pts = registration_points(SE3.identity(), 4)
    P = np.array([p.t for p in pts])
    assert np.linalg.matrix_rank(P[1:] - P[0]) == 3
    with pytest.raises(ValueError):
        registration_points(SE3.identity(), 3)


def test_registration_recovers_the_true_transform(calib_copy):
    cal = load_calibration(calib_copy, "default")
    # the lab's truth differs from the file by 2 cm and 1.5 deg
    truth = SE3(
        Rotation.from_euler("z", 1.5, degrees=True).as_matrix() @ cal.T_world_base.R,
        cal.T_world_base.t + [0.02, -0.01, 0.005],
    )
    world = _world(calib_copy, true_registration=truth)
    robot = make_robot(
        "sim",
        RobotConfig(calibration_dir=calib_copy),
        world=world,
        safety=robot_monitor(RobotConfig(calibration_dir=calib_copy)),
    )
    robot.connect()
    mocap = SteppingMocap(make_mocap("sim", MocapConfig(), world=world), world.clock)
    mocap.m.connect()
    world.enable_robot_marker(True, [0.0, 0.0, 0.03])
    world.clock.advance(0.1)
    run = RegistrationRun(calib_copy, np.array([0.0, 0.0, 0.03]), n_points=6, samples_per_point=10)
    center = tool0_for_camera(cal, front_camera_pose(cal))
    rep = run_registration(robot, mocap, run, center, world.clock, settle_s=0.1)
    assert rep.n_points == 6 and rep.rms_m < 0.0005  # marker jitter only
    assert rep.T.almost_equal(truth, tol_m=0.0005, tol_rad=np.radians(0.1))
    new = load_calibration(calib_copy, "default")
    assert new.T_world_base.almost_equal(rep.T, 1e-5, 1e-5)


def test_registration_with_a_loose_marker_is_not_saved(calib_copy):
    run = RegistrationRun(calib_copy, n_points=4, max_rms_m=0.002)
    rng = np.random.default_rng(0)
    for p in registration_points(SE3(np.eye(3), [0.5, 0.0, 0.3]), 4):
        run.add(p, p.apply(run.marker_in_tool0) + rng.normal(0, 0.01, (5, 3)))  # 1 cm wobble
    rep = run.result()
    assert not run.ok(rep)
    with pytest.raises(CalibrationError, match="registration RMS"):
        run.save(rep)


def test_eye_head_recovers_the_subject_and_writes_the_file(calib_copy):
    true_eh = SE3(Rotation.from_euler("y", -6, degrees=True).as_matrix(), [0.065, 0.004, -0.095])
    world = _world(calib_copy, true_eye_head=true_eh)
    mocap = SteppingMocap(make_mocap("sim", MocapConfig(), world=world), world.clock)
    mocap.m.connect()
    world.place_tool_on_head(True)
    world.set_gaze_target("P5")
    run = EyeHeadRun(calib_copy, "S07", n_samples=40)
    d = run_eye_head(mocap, run, prompt=lambda msg: pytest.fail(f"unexpected retry: {msg}"))
    assert d.ok and d.report.n_used >= 35
    assert d.report.T_head_eye.almost_equal(true_eh, tol_m=0.0003, tol_rad=np.radians(0.1))
    cal = load_calibration(calib_copy, "S07")
    np.testing.assert_allclose(cal.eye_in_head, true_eh.t, atol=3e-4)


def test_eye_head_asks_for_a_retry_when_the_tool_slips(calib_copy):
    world = _world(calib_copy)
    run = EyeHeadRun(calib_copy, "S08", n_samples=30, max_attempts=2)
    rng = np.random.default_rng(1)
    H = world.subject.T_world_head(world.clock.now_ns())
    for _ in range(30):
        slip = SE3.from_rotvec(rng.normal(0, 0.004, 3), rng.normal(0, 0.05, 3))  # wobbling 4 mm / 3 deg
        run.add(H, H @ world.T_head_eye @ slip)
    d = run.evaluate()
    assert not d.ok and d.retry and "retry" in d.message and "attempt 2 of 2" in d.message
    with pytest.raises(CalibrationError, match="not accepted"):
        run.save(d)
    run.next_attempt()
    assert run.attempts == 2 and not run.heads
    for _ in range(30):
        run.add(H, H @ world.T_head_eye @ SE3.from_rotvec(rng.normal(0, 0.004, 3), rng.normal(0, 0.05, 3)))
    d2 = run.evaluate()
    assert not d2.ok and not d2.retry and "giving up" in d2.message


def test_target_survey_writes_all_targets(calib_copy):
    cal = load_calibration(calib_copy, "default")
    moved = {k: v + np.array([0.004, -0.003, 0.0]) for k, v in cal.targets.items()}  # the table was nudged
    world = _world(calib_copy)
    world.calib.targets.update(moved)
    mocap = SteppingMocap(make_mocap("sim", MocapConfig(), world=world), world.clock)
    mocap.m.connect()
    run = TargetSurveyRun(calib_copy, world.props.probe_tip_in_probe, samples_per_target=5)
    placed = []

    def place(name):
        placed.append(name)
        world.place_probe(name)
        world.clock.advance(0.02)

    rep = run_target_survey(mocap, run, place)
    assert placed == list(run.targets)
    saved = load_targets(calib_copy / "targets.yaml")
    for k in moved:
        np.testing.assert_allclose(saved[k], moved[k], atol=5e-4)
    assert max(rep.spread_m.values()) < 0.002


def test_target_survey_with_the_table_tracked_writes_its_pose(calib_copy):
    """The table-target calibration: the table's rigid body is sampled with the probe, its
    mean pose written as table.yaml, so each target gets its offset in the table frame."""
    (calib_copy / "table.yaml").rename(calib_copy / "table_truth.yaml")
    from gaze4hri_core.calibration import load_transform

    T_true, _ = load_transform(calib_copy / "table_truth.yaml", "world", "table")
    cal = load_calibration(calib_copy, "default")
    world = make_world(
        SimConfig(seed=5, calibration_dir=calib_copy),
        clock=SimClock(manual=True),
        calibration=cal.__class__(**{**cal.__dict__, "T_world_table_survey": T_true}),
    )
    mocap = SteppingMocap(make_mocap("sim", MocapConfig(), world=world), world.clock)
    mocap.m.connect()
    run = TargetSurveyRun(calib_copy, world.props.probe_tip_in_probe, samples_per_target=5, targets=("P1", "P5"))

    def place(name):
        world.place_probe(name)
        world.clock.advance(0.02)

    run_target_survey(mocap, run, place)
    got = load_calibration(calib_copy, "default")
    assert got.T_world_table_survey is not None and len(run.table_poses) == 10
    assert np.linalg.norm(got.T_world_table_survey.t - T_true.t) < 5e-4
    assert np.degrees(np.arccos(np.clip((np.trace(got.T_world_table_survey.R.T @ T_true.R) - 1) / 2, -1, 1))) < 0.1
    np.testing.assert_allclose(got.targets_in_table()["P1"], T_true.inv().apply(cal.targets["P1"]), atol=1e-3)
