"""The simulated lab passes its own doctor (the session runs the same checks at start-up,
so ``make demo`` must), through the command's options and as JSON; a fail refuses the
session's start in one line naming the failing checks."""
import argparse
import io
import json
import shutil

import pytest
from gaze4hri_acq.doctor import render_table, run_doctor, startup_checks
from gaze4hri_acq.doctor.cli import add_doctor, doctor_main
from gaze4hri_acq.session_config import session_config
from gaze4hri_core.errors import SessionError


def _parse(*argv):
    p = argparse.ArgumentParser()
    add_doctor(p.add_subparsers(dest="command"))
    return p.parse_args(["doctor", *argv])


@pytest.mark.unit
def test_the_simulated_lab_passes_as_table_and_json(tmp_path):
    out = io.StringIO()
    assert doctor_main(_parse("--backend", "sim", "--out-dir", str(tmp_path)), out) == 0
    table = out.getvalue()
    assert table.splitlines()[0].split() == ["STATUS", "GROUP", "CHECK", "VALUE", "FIX"]
    assert "FAIL" not in table and table.rstrip().endswith("0 fail: ready")
    for group in ("robot", "camera", "mocap", "calibration", "host"):
        assert f"PASS    {group}" in table
    out = io.StringIO()
    assert doctor_main(_parse("--backend", "sim", "--out-dir", str(tmp_path), "--json", "--resolution", "320x180",
                              "--subject", "default"), out) == 0
    doc = json.loads(out.getvalue())
    assert doc["ok"] is True and {c["status"] for c in doc["checks"]} <= {"pass", "warn"}
    by = {(c["group"], c["name"]): c for c in doc["checks"]}
    assert by[("camera", "resolution")]["value"] == "320x180 as the session records"
    assert by[("calibration", "eye-head")]["status"] in ("pass", "warn")
    assert by[("calibration", "camera live")]["status"] == "pass"


@pytest.mark.unit
def test_a_fail_refuses_the_session_in_one_line(tmp_path, default_calibration_dir):
    cal = tmp_path / "cal"
    shutil.copytree(default_calibration_dir, cal)
    (cal / "targets.yaml").unlink()
    cfg = session_config(subject="S1", backend="sim", out_dir=tmp_path, calibration_dir=cal)
    printed = []
    with pytest.raises(SessionError) as e:
        startup_checks(cfg, out=printed.append)
    line = e.value.line()
    # the simulated lab is built from the calibration: each device says so, then the file itself
    assert line.startswith("start-up checks failed (5): robot controller: simulated arm: not built (targets file "
                           "not found ")
    assert "; camera device: simulated D435i: not built (the simulated lab); mocap server: " in line
    assert "; calibration targets.yaml: targets.yaml: missing in " in line and "; calibration load: " in line
    assert line.endswith("or pass --skip-checks for a rehearsal") and "\n" not in line
    assert "FAIL    calibration  targets.yaml" in printed[0]
    ok = startup_checks(session_config(subject="S1", backend="sim", out_dir=tmp_path))
    assert not [c for c in ok if c.status == "fail"]


@pytest.mark.unit
def test_the_real_backend_without_the_lab_fails_every_device(tmp_path):
    """No controller, camera nor Motive here: each device group's fail line, exit 1."""
    from gaze4hri_acq.doctor.run import DoctorTargets
    from gaze4hri_acq.testing.ur_testbed import free_host
    from gaze4hri_core.device_config import MocapConfig

    cfg = session_config(subject="S1", backend="real", out_dir=tmp_path, robot_ip=free_host())
    t = DoctorTargets(mocap=MocapConfig(connect_timeout_s=0.3), camera_s=0.2, mocap_s=0.2, robot_s=0.1)
    checks = run_doctor(cfg, t)
    fails = {c.group: c for c in checks if c.status == "fail"}
    assert set(fails) >= {"robot", "mocap"}, render_table(checks)
    assert fails["robot"].name == "rtde" and "connection refused" in fails["robot"].value
    assert fails["mocap"].name == "server"
    import pyrealsense2 as rs

    if not len(rs.context().query_devices()):
        assert fails["camera"].value == "USB serial any: no RealSense camera found"
