"""Issue 13, session flow: a session starts with the subject's eye-head calibration
when the subject has no file (in simulation against the simulated subject, whose own
offset it must recover), the session's calibration snapshot holds the subject's file,
and the session is benchmarkable as it is; --skip-calibration names the file it used."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")
from gaze4hri_core.calibration import load_eye_head  # noqa: E402
from gaze4hri_core.device_config import DEFAULT_CALIBRATION  # noqa: E402
from gaze4hri_core.errors import SessionError  # noqa: E402
from gaze4hri_core.session import load_manifest  # noqa: E402
from gaze4hri_sim.subject import simulated_eye_head  # noqa: E402

pytestmark = pytest.mark.node
BIN = Path(sys.executable).parent


def _cli(*args, cwd=None):
    env = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF"}
    return subprocess.run([str(BIN / args[0]), *args[1:]], capture_output=True, text=True, timeout=300, env=env,
                          cwd=cwd)


@pytest.mark.slow
@pytest.mark.long  # ~18 s, a session and a benchmark run; the calibration at the session's start is checked in the
# default tier by the tests beside it and test_cli.py::test_calibrate_eye_head_in_the_simulated_lab
def test_subject_without_file_to_benchmarked_session_with_no_manual_step(tmp_path):
    assert not (Path(DEFAULT_CALIBRATION) / "subjects" / "S97.yaml").exists()
    p = _cli("gaze4hri-acq", "session", "--subject", "S97", "--backend", "sim", "--out-dir", str(tmp_path / "sessions"),
             "--trials", "illum100_P5", "--resolution", "320x180", "--trial-seconds", "1", "--real-time-factor", "50",
             "--quiet")
    assert p.returncode == 0, p.stderr
    assert "eye-head calibration of S97 (none found)" in p.stdout
    sdir = tmp_path / "sessions" / "S97"
    m = load_manifest(sdir)
    assert "subjects/S97.yaml" in m.calibration["hashes"]  # the snapshot holds the subject's file
    assert m.settings["eye_head"]["calibrated_now"] is True
    # the simulated subject has its own offset, and the calibration recovered it
    nominal = load_eye_head(Path(DEFAULT_CALIBRATION) / "subjects" / "default.yaml")
    truth = simulated_eye_head("S97", nominal)
    got = load_eye_head(sdir / "calibration" / "subjects" / "S97.yaml")
    assert np.linalg.norm(truth.t - nominal.t) > 0.003  # not silently the default subject
    assert np.linalg.norm(got.t - truth.t) < 0.002  # within the run's 2 mm residual limit
    assert not (Path(DEFAULT_CALIBRATION) / "subjects" / "S97.yaml").exists()  # the lab's calibration untouched
    b = _cli("gaze4hri-bench", "run", "--method", "head_pose", "--data", str(tmp_path / "sessions"),
             "--out", str(tmp_path / "res"), "--no-progress")
    assert b.returncode == 0, b.stderr
    import pyarrow.parquet as pq

    t = pq.read_table(next((tmp_path / "res").glob("head_pose*.parquet"))).to_pandas()
    assert len(t) > 10 and set(t["subject"]) == {"S97"}


def test_skip_calibration_uses_and_names_the_existing_file(tmp_path, capsys):
    from gaze4hri_acq.calibrate import eye_head_for_session
    from gaze4hri_acq.cli import SessionArgs, run_session_args

    cal = tmp_path / "cal"
    shutil.copytree(DEFAULT_CALIBRATION, cal)
    args = dict(subject="S98", backend="sim", out_dir=tmp_path / "s", trial_ids=("illum100_P5",), resolution=(160, 90),
                trial_seconds=0.3, real_time_factor=50.0, quiet=True, yes=True, calibration_dir=cal,
                skip_calibration=True)
    with pytest.raises(SessionError, match="--skip-calibration: no eye-head file for subject S98"):
        run_session_args(SessionArgs(**args))
    r = eye_head_for_session("sim", "S98", cal, cal)  # the subject calibrated earlier
    assert r.truth_error_m is not None and r.truth_error_m < 0.002
    shutil.rmtree(tmp_path / "s", ignore_errors=True)
    sdir = run_session_args(SessionArgs(**args))
    out = capsys.readouterr().out
    assert f"eye-head calibration skipped: using {cal / 'subjects' / 'S98.yaml'}" in out
    m = load_manifest(sdir)
    assert m.settings["eye_head"]["skipped"] is True and "subjects/S98.yaml" in m.calibration["hashes"]
    assert m.trials["illum100_P5"].status == "done"


@pytest.mark.unit
@pytest.mark.parametrize("hours_old,calibrates", [(13.0, True), (1.0, False)])
def test_an_eye_head_file_older_than_the_limit_is_calibrated_again(tmp_path, hours_old, calibrates):
    """eye_head_max_age_hours (12 h): a file dated 13 h ago is replaced by a new eye-head
    calibration before the first trial; one dated 1 h ago is used as it is."""
    from datetime import datetime, timedelta, timezone

    import yaml
    from gaze4hri_acq.orchestrator.session import _subject_eye_head
    from gaze4hri_acq.session_config import session_config

    cal = tmp_path / "cal"
    shutil.copytree(DEFAULT_CALIBRATION, cal)
    f = cal / "subjects" / "default.yaml"
    doc = yaml.safe_load(f.read_text())
    doc["date"] = (datetime.now(timezone.utc) - timedelta(hours=hours_old)).isoformat()
    f.write_text(yaml.safe_dump(doc))
    runs = []

    def eye_head(out):
        runs.append(out)
        return type("R", (), {"message": "residual 0.4 mm"})()

    class View:
        def message(self, _t):
            pass

        def status(self, _t):
            pass

    cfg = session_config(subject="default", backend="real", calibration_dir=cal)
    assert cfg.eye_head_max_age_hours == 12.0
    out, note = _subject_eye_head(cfg, cal, tmp_path / "session", eye_head, View())
    assert bool(runs) is calibrates and note["calibrated_now"] is calibrates
    if calibrates:
        assert note["report"] == "residual 0.4 mm" and runs == [cal]
    else:
        assert note["age_hours"] == pytest.approx(hours_old, abs=0.05) and out == cal
