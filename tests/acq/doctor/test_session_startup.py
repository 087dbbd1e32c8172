"""The session runs the doctor's checks at start-up: a fail refuses it in one line (the
table on stdout) before anything is written, ``--skip-checks`` starts without them, and
``gaze4hri-acq doctor`` is the same checks as a command (exit 0 in the simulated lab)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("rclpy")

CLI = [sys.executable, "-m", "gaze4hri_acq.cli"]
ENV = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF", "PYTHONUNBUFFERED": "1"}


def _run(*args, timeout=120):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=ENV)


@pytest.mark.node
@pytest.mark.slow  # two session processes: about 20 s on 2 loaded cores
def test_a_failing_check_refuses_the_session_and_skip_checks_passes_it(tmp_path, default_calibration_dir):
    cal = tmp_path / "cal"
    shutil.copytree(default_calibration_dir, cal)
    (cal / "registration.yaml").write_text((cal / "registration.yaml").read_text().replace("rms_m: null",
                                                                                         "rms_m: 0.004"))
    args = ["session", "--subject", "S1", "--backend", "sim", "--out-dir", str(tmp_path / "out"), "--quiet",
            "--calibration", str(cal), "--trials", "illum100_P5", "--resolution", "160x90", "--trial-seconds", "0.3",
            "--real-time-factor", "50"]
    p = _run(*args)
    assert p.returncode == 2, p.stderr[-2000:]
    errors = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("[")]
    assert len(errors) == 1 and errors[0].startswith("error: start-up checks failed ("), p.stderr[-2000:]
    assert "calibration registration rms: registration RMS 4.00 mm (limit 2)" in errors[0]
    assert "--skip-checks" in errors[0] and "FAIL    calibration  registration rms" in p.stdout
    assert not (tmp_path / "out" / "S1").exists()  # nothing written
    p = _run(*args, "--skip-checks", timeout=240)
    assert p.returncode == 0, p.stderr[-2000:]


@pytest.mark.node
def test_the_doctor_command_passes_the_simulated_lab(tmp_path):
    p = _run("doctor", "--backend", "sim", "--out-dir", str(tmp_path), "--json")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-2000:]
    doc = json.loads(p.stdout)
    assert doc["ok"] and doc["summary"].endswith("0 fail: ready")
    p = _run("doctor", "--backend", "sim", "--resolution", "big")
    assert p.returncode == 2 and p.stderr.startswith("error: invalid session setting 'resolution'")
