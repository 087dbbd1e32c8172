"""The doctor's calibration checks: files present, an old calibration (a fail with the real
rig, as the session refuses it), residuals, the subject's eye-head file, and the live
agreement of the camera's body with FK x hand-eye and of the table with its survey."""
import datetime as dt
import os
import shutil

import numpy as np
import pytest
import yaml
from gaze4hri_acq.doctor.calibration import CalibrationLimits, file_checks, live_checks
from gaze4hri_acq.doctor.record import exit_code
from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.safety import compose
from gaze4hri_core.transforms import SE3

NOW = dt.datetime(2026, 11, 28, 12, 0, tzinfo=dt.timezone.utc)


@pytest.fixture()
def cal(tmp_path, default_calibration_dir):
    d = tmp_path / "cal"
    shutil.copytree(default_calibration_dir, d)
    for p in d.rglob("*.yaml"):
        _age(p, days=2)
    return d


def _age(path, days):
    """The file written ``days`` before NOW: its mtime (the rig's files) and its date field (a subject's file)."""
    t = NOW - dt.timedelta(days=days)
    if path.parent.name == "subjects":
        _set(path, date=t.isoformat())
    os.utime(path, (t.timestamp(), t.timestamp()))


def _set(path, **fields):
    data = yaml.safe_load(path.read_text())
    data.update(fields)
    path.write_text(yaml.safe_dump(data))


def _checks(d, real=True, subject=None):
    return {c.name: c for c in file_checks(d, load_calibration(d), None, CalibrationLimits(), real, NOW, subject)}


@pytest.mark.unit
def test_an_old_calibration_fails_with_the_real_rig(cal):
    _set(cal / "registration.yaml", rms_m=0.0008)
    _age(cal / "registration.yaml", days=45)
    c = _checks(cal)
    assert c["registration.yaml"].line() == ("FAIL calibration registration.yaml: registration.yaml: 45.0 days old "
                                             "(limit 30) -> re-run the calibration it comes from "
                                             "(docs/calibration.md)")
    assert c["registration rms"].line() == "PASS calibration registration rms: registration RMS 0.80 mm (limit 2)"
    assert exit_code(list(c.values())) == 1
    assert _checks(cal, real=False)["registration.yaml"].status == "warn"  # the simulated lab is built from it


@pytest.mark.unit
def test_a_missing_file_a_bad_residual_and_an_old_eye_head_file(cal):
    (cal / "targets.yaml").unlink()
    (cal / "table.yaml").unlink()
    _set(cal / "registration.yaml", rms_m=0.0031)
    _set(cal / "subjects" / "default.yaml", position_rms_m=0.001)
    _age(cal / "subjects" / "default.yaml", days=30 / 24)
    fc = file_checks
    c = {x.name: x for x in fc(cal, None, None, CalibrationLimits(), True, NOW, "default")}
    assert c["targets.yaml"].status == "fail" and "missing" in c["targets.yaml"].value
    assert c["table.yaml"].status == "warn"
    c = {x.name: x for x in fc(cal, object(), None, CalibrationLimits(), True, NOW, "default")}
    assert c["registration rms"].line().startswith("FAIL calibration registration rms: registration RMS 3.10 mm")
    assert c["eye-head"].status == "warn" and "30.0 h old, RMS 1.00 mm" in c["eye-head"].value
    assert "calibrates the subject anew" in c["eye-head"].fix
    assert {x.name: x for x in fc(cal, object(), None, CalibrationLimits(), True, NOW, "S77")}["eye-head"].value == (
        "no subjects/S77.yaml")


@pytest.mark.unit
def test_the_distance_rule_in_force_is_named(cal):
    """Issue 31, item 2: the doctor says which eye point the 0.35 m limit is measured from."""
    _set(cal / "subjects" / "default.yaml", position_rms_m=0.001)
    _age(cal / "subjects" / "default.yaml", days=1 / 24)

    def rule(subject):
        return {x.name: x for x in file_checks(cal, object(), None, CalibrationLimits(), True, NOW, subject)}[
            "distance rule"].value

    assert rule("default") == "camera >= 0.35 m from the eyes of subjects/default.yaml (subject calibration)"
    bound = ("camera >= 0.35 m from every point within 0.13 m of the head band (nominal bound) until the "
             "eye-head offset is known")
    assert rule("S77") == bound and rule(None) == bound  # no file yet; doctor without --subject
    _age(cal / "subjects" / "default.yaml", days=30 / 24)  # too old: the session calibrates anew first
    assert rule("default") == bound


@pytest.mark.unit
def test_live_consistency_in_mm_and_degrees(default_calibration_dir):
    calib = load_calibration(default_calibration_dir)
    T_bt = SE3(np.eye(3), np.array([0.4, 0.1, 0.3]))
    cam_world = compose(calib.T_world_base, T_bt, calib.T_tool0_camera)
    body = compose(cam_world, calib.T_cambody_camera.inv())
    good = {x.name: x for x in live_checks(calib, T_bt, {"camera": body, "table": calib.T_world_table_survey},
                                           CalibrationLimits())}
    assert good["camera live"].line() == "PASS calibration camera live: camera body vs FK x hand-eye: 0.0 mm, 0.00 deg"
    assert good["table live"].status == "pass"
    moved = compose(SE3(np.eye(3), np.array([0.02, 0.0, 0.0])), calib.T_world_table_survey)  # 20 mm along world x
    off = compose(body, SE3(np.eye(3), np.array([0.0, 0.008, 0.0])))
    bad = {x.name: x for x in live_checks(calib, T_bt, {"camera": off, "table": moved}, CalibrationLimits())}
    assert bad["camera live"].status == "warn" and bad["camera live"].value.endswith(": 8.0 mm, 0.00 deg")
    assert bad["table live"].line().startswith("FAIL calibration table live: table body vs its survey pose: 20.0 mm")
    assert "put it back" in bad["table live"].fix
    none = {x.name: x for x in live_checks(calib, None, {}, CalibrationLimits())}
    assert none["camera live"].value == "not measured (no robot pose)" and none["camera live"].status == "warn"
