"""Trajectories of the protocol: the geometry the study asks for, in the core's frames,
and previews that pass the safety limits for every trial."""
import numpy as np
import pytest
from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.groundtruth import camera_yaw_deg
from gaze4hri_core.safety import SafetyLimits, SafetyMonitor
from gaze4hri_core.trajectories import (
    TrajectorySettings,
    front_camera_pose,
    interpolate_path,
    plan_trial,
    preview_move,
    sample_path,
    trapezoid,
)
from gaze4hri_core.transforms import SE3

from gaze4hri_core import kinematics, protocol

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def cal(default_calibration_dir):
    return load_calibration(default_calibration_dir, "default")


def _cam(cal, T_base_tool0):
    return cal.T_world_base @ T_base_tool0 @ cal.T_tool0_camera


def test_trapezoid_profile():
    p = trapezoid(0.2, 0.1, 0.5)  # accelerates 0.2 s over 0.01 m, cruises 1.8 s
    assert p.t_acc == pytest.approx(0.2) and p.duration == pytest.approx(2.2)
    assert float(p.s(p.duration)) == pytest.approx(0.2) and float(p.s(0.2)) == pytest.approx(0.01)
    assert float(p.speed(1.0)) == pytest.approx(0.1) and float(p.speed(2.1)) == pytest.approx(0.05)
    tri = trapezoid(0.01, 0.1, 0.5)  # too short to reach 0.1 m/s
    assert tri.v == pytest.approx(np.sqrt(0.01 * 0.5)) and tri.duration == pytest.approx(2 * np.sqrt(0.01 / 0.5))
    t = np.linspace(0, p.duration, 500)
    assert np.all(np.diff(p.s(t)) >= -1e-15)


def test_interpolation_is_linear_with_slerp():
    A = SE3.identity()
    B = SE3.from_rotvec([0.2, 0, 0], [0, 0, np.pi / 2])
    mid = interpolate_path([A, B], np.array([0.1]))[0]
    np.testing.assert_allclose(mid.t, [0.1, 0, 0])
    np.testing.assert_allclose(mid.rotvec, [0, 0, np.pi / 4], atol=1e-12)


def test_fixed_camera_is_the_front_position(cal):
    plan = plan_trial(protocol.trial_by_id("illum100_P5"), cal, cal.eye_nominal_world)
    assert plan.kind == "fixed" and plan.motion is None
    cam = _cam(cal, plan.approach.waypoints_base[0])
    d = cam.t - cal.eye_nominal_world
    assert np.linalg.norm(d) == pytest.approx(0.5)
    assert camera_yaw_deg(cam, cal.eye_nominal_world) == pytest.approx(0.0, abs=1e-9)
    assert np.degrees(np.arcsin(d[2] / 0.5)) == pytest.approx(-6.0)
    # optical axis (camera z) on the eyes
    np.testing.assert_allclose(cam.R[:, 2], -d / 0.5, atol=1e-12)


def test_arc_about_the_live_eye_keeps_the_axis_on_the_eyes(cal):
    eye = cal.eye_nominal_world + np.array([0.02, -0.03, 0.01])  # the subject has moved
    plan = plan_trial(protocol.trial_by_id("arc_P3"), cal, eye)
    assert plan.kind == "arc" and plan.motion.constant_speed
    poses = [plan.approach.waypoints_base[0], *plan.motion.waypoints_base]
    yaws = []
    for T in poses:
        cam = _cam(cal, T)
        assert np.linalg.norm(cam.t - eye) == pytest.approx(0.5, abs=1e-9)
        np.testing.assert_allclose(cam.R[:, 2], (eye - cam.t) / 0.5, atol=1e-9)
        yaws.append(camera_yaw_deg(cam, eye))
    assert yaws[0] == pytest.approx(-30) and yaws[-1] == pytest.approx(30)
    assert np.all(np.diff(yaws) > 0)


@pytest.mark.parametrize("tid,along,across,speed,pass_m,step_m", [
    ("mutual_h_slow", 0, 1, 0.05, 0.5, 0.1), ("mutual_h_fast", 0, 1, 0.1, 0.5, 0.1),
    ("mutual_v_slow", 1, 0, 0.05, 0.2, 0.25), ("mutual_v_fast", 1, 0, 0.1, 0.2, 0.25)])
def test_line_scans_are_the_studys_raster(cal, tid, along, across, speed, pass_m, step_m):
    """The study's scan (line_movement_analysis.py:58-76, config.py:344-347): passes 0, 2, 4 of
    2 x half length along the image axis (h: x, v: y), steps 1, 3 of the other half length
    across it, four corners, orientation fixed, the middle pass through the front camera and
    the raster starting at the image's top-left corner (our assumption, rig.raster_scan_points)."""
    plan = plan_trial(protocol.trial_by_id(tid), cal, cal.eye_nominal_world)
    cams = [_cam(cal, T) for T in (plan.approach.waypoints_base[0], *plan.motion.waypoints_base)]
    centre = front_camera_pose(cal)
    assert len(cams) == 6 and plan.notes["corners"] == 4
    for k, (a, b) in enumerate(zip(cams[:-1], cams[1:], strict=True)):
        d = centre.R.T @ (b.t - a.t)  # in the centre camera's optical frame
        ax, length = (along, pass_m) if k % 2 == 0 else (across, step_m)
        assert abs(d[ax]) == pytest.approx(length, abs=1e-9), k
        np.testing.assert_allclose(np.delete(d, ax), 0.0, atol=1e-9)
        np.testing.assert_allclose(b.R, centre.R, atol=1e-9)  # orientation fixed
    local = np.array([centre.R.T @ (c.t - centre.t) for c in cams])
    np.testing.assert_allclose(local[0], [-0.25, -0.10, 0.0], atol=1e-9)  # image top-left
    np.testing.assert_allclose((local[2] + local[3]) / 2, 0.0, atol=1e-9)  # pass 2 centred on the front pose
    assert np.abs(local[:, 0]).max() == pytest.approx(0.25) and np.abs(local[:, 1]).max() == pytest.approx(0.10)
    L = 3 * pass_m + 2 * step_m
    assert plan.notes["length_m"] == pytest.approx(L) == pytest.approx(protocol.line_path_length_m(tid.split("_")[1]))
    # one movel per side, blend 0: the camera stops at each corner; 5 ramp pairs at 0.5 m/s^2
    assert (
        plan.motion.speed == speed and plan.motion.blend == 0 and plan.motion.stops and not plan.motion.constant_speed
    )
    assert plan.notes["duration_s"] == pytest.approx(L / speed + 5 * speed / plan.motion.accel)


def test_the_slow_scan_is_the_fast_one_at_half_the_time_rate(cal):
    """Every slow corner at twice the fast one's time (line_movement_analysis.py:64-76): half
    the speed, a quarter of the acceleration; durations (= recording) h 18 s / 36 s, v 12 s /
    24 s, as trajectories.line_duration_s and the session's estimate say."""
    from gaze4hri_acq.orchestrator.session import trial_seconds_estimate
    from gaze4hri_core.trajectories import line_duration_s

    for axis, fast_s in (("h", 18.0), ("v", 12.0)):
        fast = plan_trial(protocol.trial_by_id(f"mutual_{axis}_fast"), cal, cal.eye_nominal_world)
        slow = plan_trial(protocol.trial_by_id(f"mutual_{axis}_slow"), cal, cal.eye_nominal_world)
        assert (
            slow.motion.accel == pytest.approx(fast.motion.accel / 4)
            and fast.motion.accel == TrajectorySettings().motion_accel
        )
        assert fast.notes["duration_s"] == pytest.approx(fast_s) and slow.notes["duration_s"] == pytest.approx(
            2 * fast_s
        )
        for plan in (fast, slow):
            trial = protocol.trial_by_id(plan.trial_id)
            assert line_duration_s(axis, trial.camera_motion.speed_mps) == pytest.approx(plan.notes["duration_s"])
            assert trial_seconds_estimate(trial, 5.0) == pytest.approx(plan.notes["duration_s"] + 1.0)


def test_sample_path_stops_at_every_waypoint_without_blend():
    """blend 0: one trapezoid per side, speed 0 at each waypoint (URScript moves with r = 0);
    a blended path keeps one trapezoid over the polyline."""
    P = [SE3(np.eye(3), p) for p in ([0, 0, 0], [0.3, 0, 0], [0.3, 0.1, 0], [0, 0.1, 0])]
    t, poses, v, prof = sample_path(P, 0.1, 0.5, 200, stops=True)
    one = trapezoid(0.3, 0.1, 0.5).duration + trapezoid(0.1, 0.1, 0.5).duration + trapezoid(0.3, 0.1, 0.5).duration
    assert prof.duration == pytest.approx(one) and prof.length == pytest.approx(0.7)
    pos = np.array([p.t for p in poses])
    for w in P[1:3]:  # the corners are passed at rest
        k = int(np.argmin(np.linalg.norm(pos - w.t, axis=1)))
        assert np.linalg.norm(pos[k] - w.t) < 1e-4 and v[k] < 0.01
    vel = np.linalg.norm(np.diff(pos, axis=0), axis=1) / np.diff(t)
    assert vel.max() <= 0.1 + 1e-9 and np.abs(np.diff(vel) / np.diff(t)[1:]).max() <= 0.5 * 1.05
    np.testing.assert_allclose(pos[-1], P[-1].t, atol=1e-12)
    _, _, vb, pb = sample_path(P, 0.1, 0.5, 200)
    assert pb.duration == pytest.approx(trapezoid(0.7, 0.1, 0.5).duration) and vb[len(vb) // 3] == pytest.approx(0.1)


def test_the_whole_raster_passes_the_monitor_of_the_default_rig(cal):
    """Every sample of every scan, corners included, within the default rig's workspace box,
    reach and joint limits and beyond the minimum camera-to-eyes distance (safety.monitor_for
    on calibration/, the subject at the nominal eye position); the preview's duration is the
    plan's."""
    from gaze4hri_core.safety import monitor_for
    from gaze4hri_sim.arm import HOME_Q

    m = monitor_for(cal)
    m.update_head(0, SE3(np.eye(3), cal.eye_nominal_world) @ cal.T_head_eye.inv())
    T_home = SE3.from_matrix(kinematics.forward(HOME_Q))
    for tid in ("mutual_h_slow", "mutual_h_fast", "mutual_v_slow", "mutual_v_fast"):
        plan = plan_trial(protocol.trial_by_id(tid), cal, cal.eye_nominal_world)
        pv = preview_move(plan.approach, T_home, HOME_Q, m, now_ns=1)
        assert pv.ok, pv.verdict.reason
        pv2 = preview_move(plan.motion, plan.approach.waypoints_base[0], pv.q[-1], m, now_ns=1)
        assert pv2.ok, (tid, pv2.verdict.reason)
        assert pv2.duration_s == pytest.approx(plan.notes["duration_s"], rel=1e-9)
        cam = np.array([_cam(cal, T).t for T in pv2.poses_base])
        for c in plan.notes["corners_camera_world"]:  # sampled through every corner
            assert np.linalg.norm(cam - c, axis=1).min() < 1e-4
        dist = np.linalg.norm(cam - cal.eye_nominal_world, axis=1)
        assert dist.min() >= m.limits.min_camera_head_m and dist.min() == pytest.approx(
            cal.front_camera_distance_m, abs=1e-3
        )


@pytest.mark.parametrize("trial_id", ["illum010_P1", "arc_P5", "conflict_left_H1", "mutual_h_fast", "mutual_v_slow"])
def test_every_kind_of_trial_previews_safely_from_home(cal, trial_id):
    from gaze4hri_sim.arm import HOME_Q

    m = SafetyMonitor(SafetyLimits(), cal.T_world_base, cal.T_tool0_camera, "ur5", cal.eye_in_head)
    m.update_head(0, SE3(np.eye(3), cal.eye_nominal_world) @ cal.T_head_eye.inv())
    plan = plan_trial(protocol.trial_by_id(trial_id), cal, cal.eye_nominal_world)
    T_home = SE3.from_matrix(kinematics.forward(HOME_Q))
    pv = preview_move(plan.approach, T_home, HOME_Q, m, now_ns=1)
    assert pv.ok, pv.verdict.reason
    if plan.motion is not None:
        pv2 = preview_move(plan.motion, plan.approach.waypoints_base[0], pv.q[-1], m, now_ns=1)
        assert pv2.ok, pv2.verdict.reason
        assert pv2.commanded_speed.max() == pytest.approx(plan.motion.speed, rel=1e-6)
        if plan.kind == "arc":
            # the arc lasts the study's 10 s recording, ramps included
            assert pv2.duration_s == pytest.approx(protocol.ARC_DURATION_S, abs=0.05)


def test_a_preview_that_violates_a_limit_names_it(cal):
    m = SafetyMonitor(SafetyLimits(min_camera_head_m=0.6), cal.T_world_base, cal.T_tool0_camera, "ur5", cal.eye_in_head)
    m.update_head(0, SE3(np.eye(3), cal.eye_nominal_world) @ cal.T_head_eye.inv())
    plan = plan_trial(protocol.trial_by_id("arc_P1"), cal, cal.eye_nominal_world, TrajectorySettings())
    from gaze4hri_sim.arm import HOME_Q

    pv = preview_move(plan.approach, SE3.from_matrix(kinematics.forward(HOME_Q)), HOME_Q, m, now_ns=1)
    assert not pv.ok and pv.verdict.code == "head_distance" and "0.600 m" in pv.verdict.reason


def test_sample_path_respects_speed_and_accel():
    A = SE3.identity()
    B = SE3(np.eye(3), [0.3, 0.1, 0.0])
    t, poses, v, prof = sample_path([A, B], 0.1, 0.4, 200)
    pos = np.array([p.t for p in poses])
    vel = np.linalg.norm(np.diff(pos, axis=0), axis=1) / np.diff(t)
    assert vel.max() <= 0.1 + 1e-9
    assert np.abs(np.diff(vel) / np.diff(t)[1:]).max() <= 0.4 * 1.05
    np.testing.assert_allclose(pos[-1], B.t, atol=1e-12)


def test_a_line_brought_within_the_minimum_distance_is_refused_before_motion(cal):
    """Safety still refuses what violates a limit with the study's longer scans: the
    subject leans 0.2 m towards the camera, so the horizontal line passes within the
    0.35 m minimum camera-head distance; the preview refuses it, naming the distance."""
    from gaze4hri_sim.arm import HOME_Q

    plan = plan_trial(protocol.trial_by_id("mutual_h_fast"), cal, cal.eye_nominal_world)
    front = front_camera_pose(cal)
    toward = cal.eye_nominal_world + 0.2 * (front.t - cal.eye_nominal_world) / np.linalg.norm(
        front.t - cal.eye_nominal_world
    )
    m = SafetyMonitor(SafetyLimits(), cal.T_world_base, cal.T_tool0_camera, "ur5", cal.eye_in_head)
    m.update_head(0, SE3(np.eye(3), toward) @ cal.T_head_eye.inv())
    T_home = SE3.from_matrix(kinematics.forward(HOME_Q))
    pv = preview_move(plan.approach, T_home, HOME_Q, m, now_ns=1, check_mocap=False)
    q = pv.q[-1] if pv.q is not None else HOME_Q
    pv2 = preview_move(plan.motion, plan.approach.waypoints_base[0], q, m, now_ns=1)
    assert not pv2.ok and pv2.verdict.code == "head_distance", pv2.verdict.reason
    assert "0.350 m" in pv2.verdict.reason
