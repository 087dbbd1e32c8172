"""The doctor's robot checks against the UR controller emulator (gaze4hri_sim.ur_controller,
spoken to by the real ur_rtde client), each fault injected: a protective stop, an
emergency stop, local mode, the wrong controller series, no controller at all; and the
pure checks of joints, workspace, TCP offset and payload."""
import math

import pytest
from gaze4hri_acq.doctor.record import exit_code
from gaze4hri_acq.doctor.robot import RobotReport, robot_checks
from gaze4hri_acq.testing.ur_testbed import Controller, free_host
from gaze4hri_core.calibration import load_calibration

pytest.importorskip("rtde_receive")
pytest.importorskip("dashboard_client")
from gaze4hri_acq.doctor.robot import gather_robot  # noqa: E402 - after the importorskip


@pytest.fixture()
def emulator():
    started = []

    def start(*args):
        c = Controller(*args)
        started.append(c)
        return c

    yield start
    for c in started:
        c.close()


def _checks(host, model, cal_dir):
    return robot_checks(gather_robot(host, model, timeout_s=3.0, sample_s=0.2), model,
                        load_calibration(cal_dir).T_world_base)


def _line(checks, name):
    return next(c.line() for c in checks if c.name == name)


@pytest.mark.replay
def test_a_healthy_controller_passes_then_a_protective_stop_and_an_emergency_stop_fail(emulator,
                                                                                     default_calibration_dir):
    emu = emulator()
    checks = _checks(emu.host, "ur5", default_calibration_dir)
    assert exit_code(checks) == 0, [c.line() for c in checks if c.status == "fail"]
    assert _line(checks, "controller").startswith("PASS robot controller: PolyScope 3.15.7")
    assert _line(checks, "safety") == "PASS robot safety: safety NORMAL"
    assert _line(checks, "mode") == "PASS robot mode: robot mode RUNNING"
    assert "TCP offset 0.0 mm" in _line(checks, "tcp offset")
    assert _line(checks, "workspace").startswith("PASS")
    assert _line(checks, "kinematics") == "PASS robot kinematics: reported TCP 0.0 mm from UR5 forward kinematics"

    assert emu.control("pstop") == "ok"
    checks = _checks(emu.host, "ur5", default_calibration_dir)
    assert exit_code(checks) == 1
    assert _line(checks, "safety").startswith("FAIL robot safety: safety PROTECTIVE_STOP (3) -> release the "
                                              "protective stop")

    assert emu.control("unlock") == "ok" and emu.control("estop") == "ok"
    checks = _checks(emu.host, "ur5", default_calibration_dir)
    assert exit_code(checks) == 1
    assert _line(checks, "safety") == ("FAIL robot safety: safety ROBOT_EMERGENCY_STOP (emergency stop) -> release "
                                       "the emergency stop button, then power on and unlock on the pendant")


@pytest.mark.replay
def test_local_mode_and_the_wrong_series_fail(emulator, default_calibration_dir):
    emu = emulator("--series", "e", "--local-control")
    checks = _checks(emu.host, "ur5", default_calibration_dir)
    assert exit_code(checks) == 1
    assert _line(checks, "controller") == ("FAIL robot controller: PolyScope 5.11.1.108318 (UR5): not CB3 as "
                                           "--robot-model ur5 needs -> pass --robot-model ur5e")
    assert _line(checks, "remote") == ("FAIL robot remote: local mode: the controller refuses remote programs -> "
                                       "switch the pendant to Remote Control (top right of PolyScope)")


@pytest.mark.replay
def test_an_unreachable_controller_is_one_fail_line(default_calibration_dir):
    host = free_host()  # nothing listens there
    checks = _checks(host, "ur5", default_calibration_dir)
    assert [c.line() for c in checks] == [
        f"FAIL robot rtde: {host}:30004 UR robot (RTDE): connection refused -> power on the controller, check the "
        "robot IP and that RTDE is enabled"]
    assert exit_code(checks) == 1


@pytest.mark.unit
def test_joints_workspace_tcp_offset_and_payload_are_judged(default_calibration_dir):
    cal = load_calibration(default_calibration_dir)
    far = RobotReport("h", robot_mode=7, safety_mode=1, q=(0.0, -1.0, 1.0, 0.0, 0.0, math.radians(355)),
                      tcp_pose=(2.0, 0.0, 0.3, 0.0, 3.14, 0.0), tcp_offset=(0.0, 0.0, 0.1, 0, 0, 0), payload_kg=0.0,
                      polyscope="3.15.7.106331")
    checks = {c.name: c for c in robot_checks(far, "ur5", cal.T_world_base)}
    assert checks["joints"].line() == ("FAIL robot joints: largest joint 355 deg (limit 360) -> unwind the joint "
                                       "near its limit with the pendant (freedrive or jog)")
    assert checks["workspace"].status == "fail" and "outside" in checks["workspace"].value
    assert checks["kinematics"].status == "fail" and "mm from UR5 forward kinematics" in checks["kinematics"].value
    assert checks["tcp offset"].status == "warn" and "100.0 mm" in checks["tcp offset"].value
    assert checks["payload"].status == "warn" and "0.000 kg" in checks["payload"].value
    assert checks["mode"].status == "pass" and checks["safety"].status == "pass"
    reduced = robot_checks(RobotReport("h", robot_mode=5, safety_mode=2, polyscope="3.15.7"), "ur5", None)
    assert {c.name: c.status for c in reduced}["mode"] == "fail"
    assert "reduced mode" in next(c.fix for c in reduced if c.name == "safety")
