"""Safety monitor: each limit stops or refuses with its reason; the live check and
the preview agree with hand-computed geometry."""
import numpy as np
import pytest
from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.device_config import RobotConfig, validate
from gaze4hri_core.safety import (
    EYE_SOURCE_BOUND,
    EYE_SOURCE_SUBJECT,
    SafetyLimits,
    SafetyMonitor,
    compose,
    exp_so3,
    ik_track,
    quat_of,
    rotvec_of,
)
from gaze4hri_core.trajectories import front_camera_pose, sample_path, tool0_for_camera
from gaze4hri_core.transforms import SE3
from gaze4hri_sim.arm import HOME_Q
from scipy.spatial.transform import Rotation

from gaze4hri_core import kinematics

pytestmark = pytest.mark.unit
MS = 1_000_000


@pytest.fixture(scope="module")
def cal(default_calibration_dir):
    return load_calibration(default_calibration_dir, "default")


def _monitor(cal, **kw):
    return SafetyMonitor(SafetyLimits(**kw), cal.T_world_base, cal.T_tool0_camera, "ur5", cal.eye_in_head)


def _head_at_eye(cal, eye):
    """Head-band pose whose eye midpoint (default subject) is ``eye``."""
    return SE3(np.eye(3), eye) @ cal.T_head_eye.inv()


def _front_tool(cal):
    return tool0_for_camera(cal, front_camera_pose(cal))


def test_limits_validate_and_name_the_field():
    with pytest.raises(Exception, match="max_tcp_speed"):
        validate(RobotConfig, {"limits": {"max_tcp_speed": 2.0}})
    with pytest.raises(ValueError, match="workspace_min"):
        SafetyLimits(workspace_min=(0, 0, 1), workspace_max=(1, 1, 0.5))
    assert SafetyLimits().max_tcp_speed == 0.25 and SafetyLimits().min_camera_head_m == 0.35


def test_fast_rotation_helpers_match_scipy():
    rng = np.random.default_rng(1)
    for w in rng.normal(0, 1.2, size=(50, 3)):
        R = Rotation.from_rotvec(w).as_matrix()
        np.testing.assert_allclose(exp_so3(w), R, atol=1e-12)
        np.testing.assert_allclose(rotvec_of(R), Rotation.from_matrix(R).as_rotvec(), atol=1e-9)
        q = Rotation.from_matrix(R).as_quat()
        q = -q if q[3] < 0 else q
        np.testing.assert_allclose(quat_of(R), q, atol=1e-12)
    A, B = SE3.from_rotvec([0.1, 0.2, 0.3], [0.3, -0.2, 0.1]), SE3.from_rotvec([-0.4, 0, 1], [1.0, 0.5, -2])
    assert compose(A, B).almost_equal(A @ B, 1e-12, 1e-12)


def test_ik_track_follows_the_current_branch():
    T = kinematics.forward(HOME_Q)
    q = ik_track(T, HOME_Q + 0.02)
    np.testing.assert_allclose(q, HOME_Q, atol=1e-6)
    far = np.eye(4)
    far[:3, 3] = [2.0, 0, 0]
    assert ik_track(far, HOME_Q) is None


def test_front_pose_is_ok_with_head_tracked(cal):
    m = _monitor(cal)
    m.update_head(0, _head_at_eye(cal, cal.eye_nominal_world))
    np.testing.assert_allclose(m.head_world, cal.eye_nominal_world, atol=1e-12)
    assert m.check(50 * MS, _front_tool(cal), 0.05).ok


def test_mocap_loss_longer_than_100ms_stops(cal):
    m = _monitor(cal)
    T = _front_tool(cal)
    assert m.check(0, T).code == "mocap_loss"  # never seen
    m.update_head(0, _head_at_eye(cal, cal.eye_nominal_world))
    m.update_head(10 * MS, None)  # untracked frames from here on
    assert m.check(99 * MS, T).ok
    v = m.check(101 * MS, T)
    assert not v and v.code == "mocap_loss" and "101 ms" in v.reason
    # silence counts as loss too; idle robots are not stopped for it
    m.update_head(200 * MS, _head_at_eye(cal, cal.eye_nominal_world))
    assert not m.check(320 * MS, T)
    assert m.check(320 * MS, T, moving=False).ok


def test_head_too_close_stops_with_distance(cal):
    m = _monitor(cal)
    cam = front_camera_pose(cal).t
    toward = cam + (cal.eye_nominal_world - cam) * (0.20 / 0.5)  # the subject leans in: eyes 0.20 m from the camera
    m.update_head(0, _head_at_eye(cal, toward))
    v = m.check(1 * MS, _front_tool(cal))
    assert not v and v.code == "head_distance"
    assert "0.200 m" in v.reason and "0.350 m" in v.reason


def test_workspace_speed_and_operator(cal):
    m = _monitor(cal)
    m.update_head(0, _head_at_eye(cal, cal.eye_nominal_world))
    low = SE3(_front_tool(cal).R, _front_tool(cal).t + [0, 0, 0.30])  # Base z up: tool0 near the table
    v = m.check(1 * MS, SE3(low.R, [0.5, 0.0, -0.05]))
    assert v.code == "workspace" and "workspace box" in v.reason
    assert m.check(1 * MS, _front_tool(cal), tcp_speed=0.30).code == "speed"
    m.request_stop("key 's' pressed")
    v = m.check(1 * MS, _front_tool(cal))
    assert v.code == "operator" and "key 's'" in v.reason
    m.clear_stop()
    assert m.check(1 * MS, _front_tool(cal)).ok


def test_preview_refuses_overspeed_and_accel_commands(cal):
    m = _monitor(cal)
    m.update_head(0, _head_at_eye(cal, cal.eye_nominal_world))
    T0 = _front_tool(cal)
    T1 = SE3(T0.R, T0.t + [0, 0.1, 0])
    t, poses, _, _ = sample_path([T0, T1], 0.3, 0.5, 50)
    v, _ = m.preview(t, poses, HOME_Q, 0.3, 0.5, now_ns=1 * MS)
    assert v.code == "speed" and "0.300" in v.reason
    v, _ = m.preview(t, poses, HOME_Q, 0.1, 3.0, now_ns=1 * MS)
    assert v.code == "accel"


def test_preview_refuses_unreachable_and_head_distance(cal):
    m = _monitor(cal)
    m.update_head(0, _head_at_eye(cal, cal.eye_nominal_world))
    T0 = _front_tool(cal)
    # straight at the subject: the camera passes within 0.35 m of the eyes
    T1 = SE3(T0.R, T0.t + [0.25, 0, 0])  # Base +x points at the subject (registration yaw pi)
    t, poses, _, _ = sample_path([T0, T1], 0.1, 0.5, 50)
    v, q = m.preview(t, poses, HOME_Q, 0.1, 0.5, now_ns=1 * MS)
    assert v.code == "head_distance" and q is None
    # straight up beyond the UR5's 0.85 m reach (box widened so reach decides)
    m2 = _monitor(cal, workspace_min=(-5, -5, -5), workspace_max=(5, 5, 5))
    m2.update_head(0, _head_at_eye(cal, cal.eye_nominal_world))
    T2 = SE3(T0.R, T0.t + [0.0, 0.0, 1.2])
    v, _ = m2.preview(np.array([0.0, 10.0]), [T0, T2], HOME_Q, 0.25, 1.0, now_ns=1 * MS)
    assert v.code == "unreachable" and "out of reach" in v.reason
    # approaching the edge of the reach the joints speed up without bound: refused too
    t, poses, _, _ = sample_path([T0, T2], 0.25, 1.0, 20)
    v, _ = m2.preview(t, poses, HOME_Q, 0.25, 1.0, now_ns=1 * MS)
    assert v.code in ("joint_speed", "ik_flip", "unreachable")


def test_a_path_previewed_again_reuses_its_joints_and_is_checked_again(cal, monkeypatch):
    """The simulated controller previews what the robot node has just previewed: the joint
    path of the same samples from the same joints is taken from the last preview (same
    numbers), while every check runs again (a head that came close refuses it)."""
    from gaze4hri_core import safety

    m = _monitor(cal)
    m.update_head(0, _head_at_eye(cal, cal.eye_nominal_world))
    T0 = _front_tool(cal)
    t, poses, _, _ = sample_path([T0, SE3(T0.R, T0.t + [0.0, 0.05, 0.02])], 0.1, 0.5, 125)
    calls = {"n": 0}
    ik = kinematics.inverse_many

    def counted(*a, **k):
        calls["n"] += 1
        return ik(*a, **k)

    monkeypatch.setattr(safety.kinematics, "inverse_many", counted)
    v1, q1 = m.preview(t, poses, HOME_Q, 0.1, 0.5, now_ns=1 * MS)
    v2, q2 = m.preview(t, poses, HOME_Q, 0.1, 0.5, now_ns=2 * MS)
    assert v1 and v2 and calls["n"] == 1 and np.array_equal(q1, q2)
    v3, q3 = m.preview(t, poses, HOME_Q + 1e-3, 0.1, 0.5, now_ns=3 * MS)  # other start joints: solved again
    assert v3 and calls["n"] == 2 and np.allclose(q3, q1, atol=1e-9)
    m.update_head(4 * MS, _head_at_eye(cal, m.T_world_base.apply(T0.t) + [0.0, 0.0, -0.05]))  # eyes at the tool
    v4, q4 = m.preview(t, poses, HOME_Q + 1e-3, 0.1, 0.5, now_ns=5 * MS)  # the same path, the head now at it
    assert not v4 and v4.code == "head_distance" and q4 is None


def _newton_path(poses, q0):
    """The joint path as ik_track follows it sample by sample (the preview's rule before it
    solved all samples at once), with the analytic fallback."""
    out, q = [], np.asarray(q0, float)
    for T in poses:
        nq = ik_track(T.matrix, q)
        q = nq if nq is not None else kinematics.inverse(T.matrix, q_near=q)[0]
        out.append(q)
    return np.array(out)


@pytest.mark.parametrize("trial_id", ["arc_P5", "mutual_h_slow", "mutual_v_fast"])
def test_a_previewed_joint_path_is_the_continuation_newton_steps_follow(cal, trial_id):
    """The preview solves all samples' IK branches at once and follows the nearest: the same
    joint path as Newton steps from each sample's predecessor, on the protocol's motions."""
    from gaze4hri_core.protocol import trial_by_id
    from gaze4hri_core.trajectories import TrajectorySettings, plan_trial

    m = _monitor(cal)
    m.update_head(0, _head_at_eye(cal, cal.eye_nominal_world))
    plan = plan_trial(trial_by_id(trial_id), cal, cal.eye_nominal_world, TrajectorySettings())
    start, q = _front_tool(cal), kinematics.inverse(_front_tool(cal).matrix, q_near=HOME_Q)[0]
    for mv in (plan.approach, plan.motion):
        t, poses, _, _ = sample_path(mv.path(start), mv.speed, mv.accel, 50.0, stops=mv.stops)
        v, qs = m.preview(t, poses, q, mv.speed, mv.accel, now_ns=1 * MS)
        assert v, v.reason
        np.testing.assert_allclose(qs, _newton_path(poses, q), atol=1e-6)
        start, q = poses[-1], qs[-1]


def test_poses_at_the_wrist_singularity_are_solved_sample_by_sample(cal):
    """At q5 = 0 q6 is free: such samples leave the all-at-once branches for the one-by-one
    solver (Newton steps, then the analytic IK), which follows the previous joints."""
    m = _monitor(cal, workspace_min=(-5, -5, -5), workspace_max=(5, 5, 5), require_head=False)
    q0 = np.array([0.3, -1.3, 1.4, -1.2, 0.0, 0.4])
    qs_true = q0 + np.outer(np.arange(40), [0.004, -0.003, 0.002, 0.003, 0.0, -0.002])
    poses = [SE3(T[:3, :3], T[:3, 3]) for T in kinematics.forward_many(qs_true)]
    t = np.arange(40) * 0.02
    assert kinematics.inverse_many(np.array([p.matrix for p in poses]))[1].all()  # every sample singular
    v, qs = m.preview(t, poses, q0, 0.05, 0.3)
    assert v, v.reason
    np.testing.assert_allclose(qs, _newton_path(poses, q0), atol=1e-9)
    for q, T in zip(qs, poses, strict=True):
        np.testing.assert_allclose(kinematics.forward(q), T.matrix, atol=1e-6)


def test_preview_refuses_a_configuration_flip(cal):
    m = _monitor(cal, workspace_min=(-5, -5, -5), workspace_max=(5, 5, 5), require_head=False)
    T0 = _front_tool(cal)
    # the tool turned 150 deg about its axis within one 20 ms sample: joint 6 would
    # have to jump, which a linear move cannot do
    T1 = T0 @ SE3.from_rotvec([0, 0, 0], [0, 0, np.radians(150)])
    v, _ = m.preview(np.array([0.0, 0.02]), [T0, T1], HOME_Q, 0.1, 0.5)
    assert v.code == "ik_flip" and "joint 6" in v.reason


def test_the_distance_limit_is_measured_from_the_eye_midpoint_once_set(cal):
    """Issue 20: without the subject's offset the limit was measured from the head band's
    origin (about 0.12 m from the eyes); issue 31: until the offset arrives, eyes 0.30 m
    away are refused too (the band-to-eye bound), and by the exact eye point afterwards."""
    m = SafetyMonitor(SafetyLimits(), cal.T_world_base, cal.T_tool0_camera, "ur5", None)
    assert m.eye_source == EYE_SOURCE_BOUND
    cam = front_camera_pose(cal).t
    eye = cam + (cal.eye_nominal_world - cam) * (0.30 / 0.5)  # eyes 0.30 m from the camera
    m.update_head(0, _head_at_eye(cal, eye))
    band = float(np.linalg.norm(_head_at_eye(cal, eye).t - cam))
    assert band > 0.35  # the head band's origin alone was far enough (the acceptance)
    v = m.check(1 * MS, _front_tool(cal))
    assert v.code == "head_distance" and f"head band {band:.3f} m away" in v.reason and "no eye-head offset" in v.reason
    m.set_eye_in_head(cal.eye_in_head)  # the last sample is re-placed at once
    assert m.eye_source == EYE_SOURCE_SUBJECT
    v = m.check(1 * MS, _front_tool(cal))
    assert v.code == "head_distance" and "0.300 m from the head, below" in v.reason
    m.update_head(2 * MS, _head_at_eye(cal, cal.eye_nominal_world))  # at the front pose's 0.5 m: fine either way
    assert m.check(3 * MS, _front_tool(cal)).ok
    m.set_eye_in_head(None)  # an offset withdrawn: the bound again
    assert m.eye_source == EYE_SOURCE_BOUND and m.check(3 * MS, _front_tool(cal)).ok
    with pytest.raises(ValueError):
        m.set_eye_in_head([np.nan, 0, 0])


def test_before_the_offset_eyes_anywhere_within_the_bound_are_never_closer_than_the_limit(cal):
    """Issue 31: with the head band at random places about the front camera and the eyes
    at random points within ``eye_band_bound_m`` of it (in every direction), an accepted
    pose never has the eyes closer than the limit, and a refused one has some eye point
    within the bound that is (the bound is the sphere, not a looser margin)."""
    lim = SafetyLimits()
    assert lim.eye_band_bound_m >= float(np.linalg.norm(cal.eye_in_head))  # the default subject is inside it
    m = SafetyMonitor(lim, cal.T_world_base, cal.T_tool0_camera, "ur5", None)
    tool = _front_tool(cal)
    cam = cal.T_world_base.apply(tool.apply(cal.T_tool0_camera.t))
    rng = np.random.default_rng(31)
    accepted = refused = 0
    for i in range(400):
        u = rng.normal(size=3)
        band = cam + u / np.linalg.norm(u) * rng.uniform(0.30, 0.62)
        m.update_head(i * MS, SE3(exp_so3(rng.normal(size=3)), band))
        ok = m.check(i * MS, tool).ok
        dirs = rng.normal(size=(200, 3))
        dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
        eyes = band + dirs * (lim.eye_band_bound_m * rng.uniform(0, 1, (200, 1)) ** (1 / 3))
        toward = band + (cam - band) / np.linalg.norm(cam - band) * lim.eye_band_bound_m  # the worst eye point
        eyes = np.vstack([eyes, toward])
        nearest = float(np.min(np.linalg.norm(eyes - cam, axis=1)))
        if ok:
            accepted += 1
            assert nearest >= lim.min_camera_head_m - 1e-9, (band, nearest)
        else:
            refused += 1
            assert nearest < lim.min_camera_head_m + 1e-9, (band, nearest)
    assert accepted > 50 and refused > 50  # both sides of the boundary were exercised


def test_the_bound_applies_to_a_previewed_motion_too(cal):
    """The preview uses the same rule: a motion ending with the eyes 0.30 m away is refused
    before the offset (the head band alone is more than 0.35 m away), and after it."""
    cam = front_camera_pose(cal).t
    eye = cam + (cal.eye_nominal_world - cam) * (0.30 / 0.5)
    T1 = _front_tool(cal)
    T0 = SE3(T1.R, T1.t + [0, 0.05, 0])
    t, poses, _, _ = sample_path([T0, T1], 0.1, 0.5, 50)
    q0 = kinematics.inverse(T0.matrix, "ur5", q_near=HOME_Q)[0]
    for eye_in_head in (None, cal.eye_in_head):
        m = SafetyMonitor(SafetyLimits(), cal.T_world_base, cal.T_tool0_camera, "ur5", eye_in_head)
        m.update_head(0, _head_at_eye(cal, eye))
        v, q = m.preview(t, poses, q0, 0.1, 0.5, now_ns=1 * MS)
        assert v.code == "head_distance" and q is None, v
        m.update_head(2 * MS, _head_at_eye(cal, cal.eye_nominal_world))
        assert m.preview(t, poses, q0, 0.1, 0.5, now_ns=3 * MS)[0].ok


def test_an_older_or_non_finite_head_sample_never_refreshes_the_track(cal):
    m = _monitor(cal)
    m.update_head(100 * MS, _head_at_eye(cal, cal.eye_nominal_world))
    m.update_head(50 * MS, _head_at_eye(cal, cal.eye_nominal_world))  # a second feed, late
    assert m.check(250 * MS, _front_tool(cal)).code == "mocap_loss"
    m.update_head(260 * MS, None)
    assert m.check(261 * MS, _front_tool(cal)).code == "mocap_loss"


def test_a_planned_motion_is_held_to_the_limit_itself(cal):
    """Issue 20: the x1.1 measurement tolerance let joint moves through at 0.256 m/s."""
    m = _monitor(cal)
    m.update_head(0, _head_at_eye(cal, cal.eye_nominal_world))
    T0 = _front_tool(cal)
    T1 = SE3(T0.R, T0.t + [0, 0.2, 0])  # long enough to cruise at the limit
    t, poses, _, _ = sample_path([T0, T1], 0.25, 0.5, 50)
    assert m.preview(t, poses, HOME_Q, 0.25, 0.5, now_ns=1 * MS)[0].ok
    fast = t / 1.03  # the same path 3 % faster: within the old tolerance, above the limit
    v, _ = m.preview(fast, poses, HOME_Q, 0.25, 0.5, now_ns=1 * MS)
    assert v.code == "speed" and "0.25" in v.reason


@pytest.mark.unit
def test_pose_from_quat_is_se3_from_quat():
    from gaze4hri_core.safety import pose_from_quat
    from gaze4hri_core.transforms import SE3

    rng = np.random.default_rng(3)
    for _ in range(200):
        t, q = rng.normal(size=3), rng.normal(size=4) * rng.uniform(0.01, 10)
        a, b = pose_from_quat(t, q), SE3.from_quat(t, q)
        np.testing.assert_allclose(a.R, b.R, atol=1e-12)
        np.testing.assert_array_equal(a.t, b.t)
    for bad_t, bad_q in (((0, 0, 0), (0, 0, 0, 0)), ((0, 0, 0), (np.nan, 0, 0, 1)), ((np.inf, 0, 0), (0, 0, 0, 1))):
        with pytest.raises(ValueError):
            pose_from_quat(bad_t, bad_q)
        with pytest.raises(ValueError):
            SE3.from_quat(bad_t, bad_q)
