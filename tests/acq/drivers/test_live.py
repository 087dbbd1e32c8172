"""Live hardware checks (marker ``live``, deselected by default; run in the lab with
``pytest -m live tests/acq/drivers/test_live.py`` and the devices' addresses in
GAZE4HRI_UR_HOST, GAZE4HRI_MOTIVE_IP + GAZE4HRI_LOCAL_IP; a RealSense on USB).
Each only reads: nothing moves."""
import os

import numpy as np
import pytest
from gaze4hri_acq.drivers.registry import make_camera, make_mocap, make_robot, robot_monitor
from gaze4hri_core.device_config import CameraConfig, MocapConfig, RobotConfig

pytestmark = pytest.mark.live


def _env(name):
    v = os.environ.get(name)
    if not v:
        pytest.skip(f"set {name}")
    return v


def test_ur_streams_state_at_the_rtde_rate():
    cfg = RobotConfig(host=_env("GAZE4HRI_UR_HOST"), read_only=True)
    robot = make_robot("real", cfg, safety=robot_monitor(cfg))
    robot.connect()
    try:
        stamps = []
        for _ in range(50):
            stamps.append(robot.state().stamp_ns)
            robot.clock.sleep(1 / robot.rate_hz)
        assert np.all(np.diff(stamps) >= 0) and robot.clock_map.rtt_ns < 5e6
    finally:
        robot.close()


def test_realsense_streams_1080p30():
    rs = pytest.importorskip("pyrealsense2")
    if not len(rs.context().query_devices()):
        pytest.skip("no RealSense camera connected")
    cam = make_camera("real", CameraConfig())
    cam.start()
    try:
        frames = [f for f in (cam.read(1.0) for _ in range(60)) if f is not None]
        assert len(frames) >= 55 and frames[0].image.shape == (1080, 1920, 3)
        assert frames[0].timestamp_domain == "global_time"
        fps = (len(frames) - 1) / ((frames[-1].stamp_ns - frames[0].stamp_ns) / 1e9)
        assert fps == pytest.approx(30, rel=0.05)
    finally:
        cam.stop()


def test_motive_streams_the_head_band():
    m = make_mocap("real", MocapConfig(server_ip=_env("GAZE4HRI_MOTIVE_IP"), local_ip=_env("GAZE4HRI_LOCAL_IP")))
    m.connect()
    try:
        frames = [f for f in (m.read(0.1) for _ in range(200)) if f is not None]
        assert len(frames) > 50
        assert any(b.tracking_valid for f in frames for b in f.bodies.values())
    finally:
        m.close()
