"""One safety monitor per robot (issue 20): the robot node builds it, feeds it the
head-band stream and hands it to its driver; the session gives the node its subject
and the eye-head offset, so the distance limit is measured from the eye midpoint."""
from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("rclpy")
from gaze4hri_acq.runner import Stack, StackConfig  # noqa: E402
from gaze4hri_acq.session_config import session_config  # noqa: E402
from rclpy.lifecycle import TransitionCallbackReturn  # noqa: E402


@pytest.mark.unit
def test_the_session_gives_the_robot_node_its_subject_from_every_entry_point():
    cfg = session_config(subject="S12", backend="real")
    robot = cfg.node_parameters()["robot"]
    assert robot["subject"] == "S12" and robot["backend"] == "real" and robot["robot_ip"] == cfg.robot_ip


@pytest.mark.node
def test_the_robot_node_owns_the_one_monitor_its_driver_checks():
    cfg = StackConfig(backend="sim", nodes=("mocap", "robot"), sim={"real_time_factor": 2.0})
    with Stack(cfg) as st:
        for name in ("mocap", "robot"):
            n = st.nodes[name]
            assert n.trigger_configure() == TransitionCallbackReturn.SUCCESS, n.last_error
            assert n.trigger_activate() == TransitionCallbackReturn.SUCCESS
        robot = st.nodes["robot"]
        assert robot.driver.safety is robot.monitor and st.world.arm.monitor is robot.monitor
        # the node's stream feeds it: the head band's track is live within a moment
        deadline = time.monotonic() + 60
        while robot.monitor.head_world is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert robot.monitor.head_world is not None
        eye = np.array([0.01, -0.02, -0.11])
        assert robot.handle_eye_head({"eye_in_head": eye.tolist()})["eye_in_head"] == pytest.approx(eye.tolist())
        assert np.allclose(robot.monitor.eye_in_head, eye)
        with pytest.raises(Exception, match="bad eye-head offset"):
            robot.handle_eye_head({"eye_in_head": ["x", 0, 0]})


@pytest.mark.node
def test_an_orchestrator_only_process_builds_no_simulated_world():
    """Issue 20: a launched simulated session had two nodes named /sim_world (the device
    process's and the orchestrator's own, unused world)."""
    with Stack(StackConfig(backend="sim", nodes=("orchestrator",), intra_process=False)) as st:
        assert st.world is None
        assert all(n.get_name() != "sim_world" for n in st._extra_nodes)


@pytest.mark.node
def test_the_robot_node_reads_a_lost_head_band_from_the_status_bytes():
    """The 100 Hz motion-capture status reaches the robot node as bytes: a frame where every
    body is tracked only moves the stream's time; one that says 'lost' is decoded and starts
    the monitor's loss timer (the node's own check stops a motion on it)."""
    from gaze4hri_acq.nodes._cdr import encode_diagnostics

    with Stack(StackConfig(backend="sim", nodes=("robot",), sim={"real_time_factor": 2.0})) as st:
        robot = st.nodes["robot"]
        assert robot.trigger_configure() == TransitionCallbackReturn.SUCCESS, robot.last_error
        t = st.world.clock.now_ns() + 10**12  # later than any sample the simulated arm feeds

        def status(stamp, head):
            vals = {"id": 1, "tracking_valid": head == "tracked", "marker_error_m": 0.0001, "frame_number": 7}
            return encode_diagnostics(stamp, "world", [(0, "table", "tracked", "", vals),
                                                       (0 if head == "tracked" else 1, "head_band", head, "", vals)])

        robot._on_mocap_status_cdr("/mocap/status", status(t, "tracked"))
        assert robot._mocap_ns == t and robot.monitor._head_first_lost_ns is None
        robot._on_mocap_status_cdr("/mocap/status", status(t + 10_000_000, "lost"))
        assert robot._mocap_ns == t + 10_000_000 and robot.monitor._head_first_lost_ns == t + 10_000_000
