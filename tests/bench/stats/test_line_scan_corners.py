"""Issue 23: our mutual-gaze scans are the study's raster, so the study's segmentation finds on
our recordings what it finds on the study's: four corners, five segments, the main passes
0, 2, 4 along the scan axis and the steps 1, 3 across it (GazeForHRI/Gaze4HRI@main
line_movement_analysis.py:44-98, 233-351; line_movement_analysis_paper.py:318-353).

The scan is run by the simulated robot (the sim backend's driver, manual clock), its joint
states sampled at the robot's 125 Hz as the robot node records them; the benchmark's own ground
truth (data.frame_truth: forward kinematics, registration, hand-eye, interpolation at 30 fps
frame stamps) gives the camera positions that stats.study_tables cuts.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gaze4hri_acq.drivers.registry import make_robot, make_world, robot_monitor
from gaze4hri_bench.data.frame_truth import FrameTable, PoseStream, compute_ground_truth, fk_stream
from gaze4hri_bench.stats.study_tables import label_segments, path_corners
from gaze4hri_core.device_config import RobotConfig, SimConfig
from gaze4hri_core.trajectories import front_camera_pose, plan_trial, stop_profile
from gaze4hri_core.transforms import SE3
from gaze4hri_sim.clock import SimClock

from gaze4hri_core import protocol

pytestmark = pytest.mark.unit

ROBOT_HZ, FPS = 125.0, 30.0


def _record_scan(trial_id: str, lead_s: float):
    """Run one line trial's approach, then record its scan, the recording starting ``lead_s``
    before the motion (the frames' phase against the corners is arbitrary, as in a session):
    (trial, plan, world, motion start, frame stamps, camera positions of the frames from the
    recorded joint states)."""
    world = make_world(SimConfig(seed=5), clock=SimClock(manual=True))
    robot = make_robot("sim", RobotConfig(), world=world, safety=robot_monitor(RobotConfig()))
    robot.connect()
    world.clock.advance(0.2)
    trial = protocol.trial_by_id(trial_id)
    world.set_trial(trial)
    plan = plan_trial(trial, world.calib, world.truth(world.clock.now_ns()).eye_world)
    robot.move_linear(list(plan.approach.waypoints_base), plan.approach.speed, plan.approach.accel)
    for _ in range(5000):
        if not robot.is_moving():
            break
        world.clock.advance(0.01)
    assert not robot.is_moving(), "the approach did not finish"
    m = plan.motion
    t_rec = world.clock.now_ns()
    ts, qs = [], []
    lead = int(round(lead_s * ROBOT_HZ))
    t0 = None
    for k in range(lead + int((plan.notes["duration_s"] + 0.5) * ROBOT_HZ)):
        if k == lead:  # the motion starts; the recording lasts it (data_collector.py:530-536)
            t0 = world.clock.now_ns()
            robot.move_linear(list(m.waypoints_base), m.speed, m.accel, m.blend, m.constant_speed)
        st = robot.state()
        ts.append(st.stamp_ns)
        qs.append(st.q)
        world.clock.advance(1.0 / ROBOT_HZ)
    assert not robot.is_moving() and robot.state().stop_reason is None
    ts = np.asarray(ts, np.int64)
    t_frames = t_rec + np.round(np.arange(0.0, (ts[-1] - t_rec) / 1e9, 1.0 / FPS) * 1e9).astype(np.int64)
    n = t_frames.size
    frames = FrameTable(np.arange(n), t_frames, np.arange(n), np.full(n, "ok"))
    gt = compute_ground_truth(
        frames, PoseStream.empty(), fk_stream(ts, np.asarray(qs), world.calib.robot_model), world.calib, trial
    )
    cam = gt[["cam_world_x", "cam_world_y", "cam_world_z"]].to_numpy(float)
    assert np.isfinite(cam).all()
    return trial, plan, world, t0, t_frames, cam


@pytest.mark.parametrize(
    "trial_id,along,lead_s",
    [("mutual_h_fast", 0, 0.4), ("mutual_v_fast", 1, 0.456), ("mutual_h_slow", 0, 0.416), ("mutual_v_slow", 1, 0.456)],
)
def test_a_simulated_line_trial_has_four_corners_and_five_segments(trial_id, along, lead_s):
    """The slow scans' ``lead_s`` are frame phases at which a slow scan run at the fast scan's
    acceleration (0.5 m/s^2, ramps of 0.1 s) loses all four corners to the finder's smoothing;
    run as the fast scan at half the time rate (trajectories.line_accel) it keeps them."""
    trial, plan, world, t0, t, cam = _record_scan(trial_id, lead_s)
    across = 1 - along
    corners = path_corners(t, cam)
    assert corners.size == 4
    # at the planned stops (one trapezoid per side, trajectories.stop_profile), within two frames
    R = plan.camera_start_world.R
    cams = [
        SE3(R, np.asarray(c))
        for c in (plan.camera_start_world.t, *plan.notes["corners_camera_world"], plan.camera_end_world.t)
    ]
    sides = stop_profile(cams, plan.motion.speed, plan.motion.accel).sides
    planned = t0 + np.round(np.cumsum([p.duration for p in sides])[:4] * 1e9).astype(np.int64)
    assert np.abs(corners - planned).max() <= 2e9 / FPS
    paths = pd.DataFrame(
        {
            "subject": "S01",
            "trial": trial.trial_id,
            "t_ns": t,
            "cam_world_x": cam[:, 0],
            "cam_world_y": cam[:, 1],
            "cam_world_z": cam[:, 2],
        }
    )
    seg = label_segments(paths, paths[["subject", "trial", "t_ns"]])
    assert set(seg["segment"]) == {0, 1, 2, 3, 4} and (seg["n_segments"] == 5).all()
    # positions in the front camera's image frame: main passes (0, 2, 4) sweep the scan axis
    # (2 x 0.25 m for h, 2 x 0.10 m for v) with the other coordinate held; steps (1, 3) move across
    centre = front_camera_pose(world.calib, plan.eye_world)
    local = (cam - centre.t) @ centre.R
    half = {0: 0.25, 1: 0.10}
    for s in range(5):
        p = local[seg["segment"].to_numpy() == s]
        span = np.ptp(p, axis=0)
        if s % 2 == 0:
            assert span[along] == pytest.approx(2 * half[along], abs=0.02), (s, span)
            assert span[across] < 0.02, (s, span)
        else:
            assert span[across] == pytest.approx(half[across], abs=0.02), (s, span)
            assert span[along] < 0.02, (s, span)
    # the middle pass runs through the front camera position (the study's neutral camera)
    mid = local[seg["segment"].to_numpy() == 2]
    assert np.abs(mid[:, across]).max() < 0.01 and mid[:, along].min() < 0 < mid[:, along].max()
