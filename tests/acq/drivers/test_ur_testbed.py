"""The real ur_rtde 1.6.5 (RTDEReceiveInterface, RTDEControlInterface, DashboardClient)
and RtdeRobot against the UR controller emulator (gaze4hri_sim.ur_controller) on
loopback: paths executed, stopL, protective stops, one-package states, the watchdog."""
import contextlib
import threading
import time

import numpy as np
import pytest
from gaze4hri_acq.testing.ur_testbed import Controller, head_in_front, monitor, wait_for
from gaze4hri_core.device_config import RobotConfig
from gaze4hri_core.devices import MotionRefused
from gaze4hri_core.transforms import SE3

from gaze4hri_core import kinematics

rtde_control = pytest.importorskip("rtde_control")
rtde_receive = pytest.importorskip("rtde_receive")
from dashboard_client import DashboardClient  # noqa: E402 - after the importorskip
from gaze4hri_acq.drivers.robot_rtde import RtdeRobot  # noqa: E402

Q0 = np.array([-2.885, -1.209, 1.569, -0.506, 2.346, -1.673])


@pytest.fixture()
def controller():
    started: list[Controller] = []

    def start(*args: str) -> Controller:
        c = Controller(*args)
        started.append(c)
        return c

    yield start
    for c in started:
        c.close()


def _path(rx, offsets, v, a):
    """An ur_rtde Path of movel entries shifted along y from the current pose: (start, goal, path)."""
    pose = rx.getActualTCPPose()
    path = rtde_control.Path()
    for dy in offsets:
        g = list(pose)
        g[1] += dy
        path.addEntry(rtde_control.PathEntry(rtde_control.PathEntry.MoveL, rtde_control.PathEntry.PositionTcpPose,
                                             g + [v, a, 0.0]))
    return pose, g, path


def _bounded(call, *args, timeout: float = 30.0):
    """One blocking ur_rtde call that waits on the controller's answer, run in a helper thread:
    if the emulator's answer is lost (seen once under a load average of 15 on 2 cores), ur_rtde
    waits in C++ forever, where pytest-timeout's signal cannot reach it, and the whole suite would
    hang; here the test fails in one line instead (and is rerun once, see the markers)."""
    out: list = []
    t = threading.Thread(target=lambda: out.append(call(*args)), daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        pytest.fail(f"ur_rtde {getattr(call, '__name__', call)} did not return within {timeout:.0f} s "
                     "(the emulator's answer was lost)")
    return out[0] if out else None


def _speed(rx) -> float:
    return float(np.linalg.norm(rx.getActualTCPSpeed()[:3]))


@pytest.mark.replay
@pytest.mark.flaky(reruns=1)
def test_real_ur_rtde_runs_a_path_and_stopl_stops_it(controller):
    emu = controller()
    rx = rtde_receive.RTDEReceiveInterface(emu.host, 125.0)
    db = DashboardClient(emu.host)
    db.connect()
    assert db.robotmode() == "Robotmode: RUNNING" and db.safetystatus() == "Safetystatus: NORMAL"
    ctl = rtde_control.RTDEControlInterface(emu.host, 125.0)
    try:
        assert db.programState() == "PLAYING rtde_control" and ctl.isProgramRunning()
        # movePath with two movel entries, asynchronous: executed by the emulator's command loop
        start, goal, path = _path(rx, [0.03, 0.06], 0.1, 0.5)
        assert _bounded(ctl.movePath, path, True)
        speeds, progress = [], set()
        wait_for(lambda: ctl.getAsyncOperationProgress() >= 0, 5, "the path to start")
        while (p := ctl.getAsyncOperationProgress()) >= 0:  # one read per loop: the path may end between two
            speeds.append(_speed(rx))
            progress.add(p)
            time.sleep(0.004)
        np.testing.assert_allclose(rx.getActualTCPPose()[:3], goal[:3], atol=1e-3)
        assert 0.09 < max(speeds) <= 0.1 + 1e-4  # cruised at, never above, the commanded 0.1 m/s
        assert progress <= {0, 1} and 1 in progress
        # stopL mid-motion: the arm decelerates on the path and stays short of the goal
        start = rx.getActualTCPPose()
        goal = list(start)
        goal[1] -= 0.1
        path = rtde_control.Path()
        path.addEntry(rtde_control.PathEntry(rtde_control.PathEntry.MoveL, rtde_control.PathEntry.PositionTcpPose,
                                             goal + [0.1, 0.5, 0.0]))
        assert _bounded(ctl.movePath, path, True)
        wait_for(lambda: _speed(rx) > 0.05, 5, "the arm to move")
        _bounded(ctl.stopL, 2.0, False)
        wait_for(lambda: _speed(rx) < 1e-6, 5, "the arm to stop")
        here = np.array(rx.getActualTCPPose()[:3])
        assert np.linalg.norm(here - start[:3]) > 0.002 and np.linalg.norm(here - goal[:3]) > 0.05
        time.sleep(0.05)
        np.testing.assert_allclose(rx.getActualTCPPose()[:3], here, atol=1e-9)
        assert ctl.getAsyncOperationProgress() < 0
    finally:  # bounded too: after a lost answer these wait on the same controller
        for call in (ctl.stopScript, ctl.disconnect, rx.disconnect, db.disconnect):
            with contextlib.suppress(BaseException):
                _bounded(call, timeout=10.0)


@pytest.mark.replay
def test_protective_stop_is_reported_and_a_move_refused(controller):
    emu = controller()
    rx = rtde_receive.RTDEReceiveInterface(emu.host, 125.0)
    ctl = rtde_control.RTDEControlInterface(emu.host, 125.0)
    db = DashboardClient(emu.host)
    db.connect()
    try:
        pose = rx.getActualTCPPose()
        goal = list(pose)
        goal[2] += 0.08
        assert ctl.moveL(goal, 0.1, 0.5, True)
        wait_for(lambda: _speed(rx) > 0.05, 5, "the arm to move")
        assert emu.control("pstop") == "ok"
        wait_for(rx.isProtectiveStopped, 5, "the protective stop")
        assert db.safetystatus() == "Safetystatus: PROTECTIVE_STOP" and rx.getSafetyMode() == 3
        wait_for(lambda: _speed(rx) < 1e-6, 5, "the arm to stand")
        held = rx.getActualTCPPose()
        assert np.linalg.norm(np.array(held[:3]) - pose[:3]) > 1e-3  # stopped where the stop caught it
        assert not ctl.moveL(pose, 0.1, 0.5)  # refused
        np.testing.assert_allclose(rx.getActualTCPPose(), held, atol=1e-12)
        db.unlockProtectiveStop()
        wait_for(lambda: not rx.isProtectiveStopped(), 5, "the unlock")
        assert db.safetystatus() == "Safetystatus: NORMAL"
    finally:
        ctl.disconnect()
        rx.disconnect()
        db.disconnect()


def _robot(emu, cal_dir, **kw) -> RtdeRobot:
    robot = RtdeRobot(RobotConfig(host=emu.host, connect_timeout_s=10.0, **kw), safety=monitor(cal_dir))
    robot.connect()
    return robot


@pytest.mark.replay
def test_state_is_one_rtde_package(controller, default_calibration_dir):
    """The emulator reports q = q0 + A sin(2 pi f t) of the package's own timestamp t;
    a state pairing the timestamp of one package with the joints of another breaks
    it (the former getter-by-getter state() did for ~10% of reads at 500 Hz)."""
    emu = controller("--series", "e", "--wobble", "0.2", "2.0")
    robot = _robot(emu, default_calibration_dir, read_only=True, rate_hz=500)
    try:
        bad = 0
        for _ in range(300):
            st = robot.state()
            expect = Q0 + 0.2 * np.sin(2 * np.pi * 2.0 * st.controller_time_s)
            T = kinematics.forward(st.q)
            bad += not (np.allclose(st.q, expect, atol=1e-9) and np.allclose(st.T_base_tool0.t, T[:3, 3], atol=1e-9))
        assert bad == 0, f"{bad} of 300 states mix two packages"
    finally:
        robot.close()


class _HeadFeed:
    """Head-band poses into the monitor at 100 Hz until stopped (the mocap stream)."""

    def __init__(self, mon, T_head):
        self.mon, self.T, self.last_ns = mon, T_head, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()
        wait_for(lambda: self.last_ns, 5, "the first head pose")

    def _run(self):
        while not self._stop.wait(0.01):
            now = time.time_ns()
            self.mon.update_head(now, self.T)
            self.last_ns = now

    def stop(self) -> int:
        self._stop.set()
        self._t.join()
        return self.last_ns


@pytest.mark.replay
@pytest.mark.flaky(reruns=1)  # a loopback emulator under a loaded CI; each call is bounded
def test_rtde_robot_moves_and_the_watchdog_stops_it(controller, default_calibration_dir):
    emu = controller()
    robot = _robot(emu, default_calibration_dir)
    mon = robot.safety
    try:
        start = robot.state().T_base_tool0
        feed = _HeadFeed(mon, head_in_front(mon, start))
        goal = SE3(start.R, start.t + [0.0, 0.04, 0.0])
        robot.move_linear([goal], 0.15, 0.5)  # the approach
        wait_for(lambda: not robot.is_moving(), 10, "the approach to finish")
        st = robot.state()
        assert np.linalg.norm(st.T_base_tool0.t - goal.t) < 1e-3 and robot.stop_reason is None
        # head poses stop arriving mid-motion: the watchdog stops the arm within the loss timeout
        far = SE3(start.R, start.t + [0.0, -0.12, 0.0])
        robot.move_linear([far], 0.1, 0.5)
        wait_for(lambda: robot.state().tcp_speed[:3].dot(robot.state().tcp_speed[:3]) > 0.05**2, 5, "the arm to move")
        last = feed.stop()
        wait_for(lambda: robot.stop_reason, 5, "the watchdog")
        assert "head band lost" in robot.stop_reason
        # stopL sent at the first watchdog tick past the timeout (one RTDE period, plus scheduling)
        timeout_ns = mon.limits.mocap_loss_timeout_s * 1e9
        lag = robot.stopped_ns - last
        # a loaded machine delays the watchdog thread (169 ms seen at load 8 on 2 cores); the
        # latency itself is measured by benchmarks/reliability_ur.py, not bounded tightly here
        print(f"watchdog: stopL {lag / 1e6:.0f} ms after the last head pose (loss timeout {timeout_ns / 1e6:.0f} ms)")
        assert timeout_ns <= lag <= timeout_ns + 3e9 / robot.rate_hz + 400e6, (
            f"stopL {lag / 1e6:.0f} ms after the last head pose"
        )
        wait_for(lambda: np.linalg.norm(robot.state().tcp_speed[:3]) < 1e-6, 5, "the arm to stand")
        assert np.linalg.norm(robot.state().T_base_tool0.t - far.t) > 0.02
        # a protective stop: reported in the state, and the next move is refused
        assert emu.control("pstop") == "ok"
        wait_for(lambda: robot.state().protective_stop, 5, "the protective stop in the state")
        mon.update_head(time.time_ns(), head_in_front(mon, start))
        with pytest.raises(MotionRefused, match="protective stop"):
            robot.move_linear([goal], 0.1, 0.5)
    finally:
        robot.close()


@pytest.mark.replay
@pytest.mark.flaky(reruns=1)  # a loopback emulator under a loaded CI; each call is bounded
def test_move_joints_is_the_previewed_line(controller, default_calibration_dir):
    """A joint goal runs as a linear move at the TCP limit: the measured TCP speed never
    exceeds 0.25 m/s and the tool stays on the line (a movej peaked at 0.38 m/s)."""
    emu = controller()
    robot = _robot(emu, default_calibration_dir)
    mon = robot.safety
    try:
        start = robot.state()
        feed = _HeadFeed(mon, head_in_front(mon, start.T_base_tool0))
        target = start.T_base_tool0.matrix
        target[:3, 3] += [0.0, 0.15, -0.05]
        q_goal = kinematics.inverse(target, "ur5", q_near=start.q)[0]
        robot.move_joints(q_goal, 1.0, 0.8)
        peak, off_line, n = 0.0, 0.0, 0
        a, b = start.T_base_tool0.t, target[:3, 3]
        while robot.is_moving():
            n += 1
            st = robot.state()
            peak = max(peak, float(np.linalg.norm(st.tcp_speed[:3])))
            p = st.T_base_tool0.t
            w = np.clip((p - a) @ (b - a) / ((b - a) @ (b - a)), 0, 1)
            off_line = max(off_line, float(np.linalg.norm(p - (a + w * (b - a)))))
            time.sleep(0.004)
        feed.stop()
        assert n > 10 and peak > 0.05, (n, peak)  # the motion was sampled while it ran
        assert peak <= mon.limits.max_tcp_speed + 1e-4 and off_line < 1e-3, (peak, off_line)
        np.testing.assert_allclose(robot.state().q, q_goal, atol=1e-3)
    finally:
        robot.close()
