"""gaze4hri-acq from a shell: bad input is one line and a non-zero exit, never a
traceback; SIGKILL/SIGINT/SIGTERM mid-trial keep completed trials intact, mark the
interrupted one incomplete, and --resume finishes the session."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
from gaze4hri_core.session import bag_dir, load_manifest  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402

CLI = [sys.executable, "-m", "gaze4hri_acq.cli"]
ENV = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF", "PYTHONUNBUFFERED": "1"}


def run(*args, timeout=120):
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=ENV)


def _one_line_error(p):
    assert p.returncode != 0
    # [LEVEL] lines are ROS node logs
    lines = [ln for ln in p.stderr.splitlines() if ln.strip() and not ln.startswith("[")]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert "Traceback" not in p.stderr
    return lines[0]


@pytest.mark.unit
@pytest.mark.parametrize("args,needle", [
    (["session", "--subject", "S1", "--resolution", "big"], "resolution must be WxH"),
    (["session", "--subject", "S1", "--resolution", "4000x3000"], "outside"),
    (["session", "--subject", "S1", "--experiments", "dance"], "unknown experiment 'dance'"),
    (["session", "--subject", "S1", "--backend", "mock"], "invalid choice"),
    (["session", "--subject", "S1", "--trial-seconds", "-1"], "greater than 0, got '-1'"),
    (["session", "--subject", "S1", "--fps", "29.97"], "fps must be a whole number"),
    (["session", "--subject", "../x", "--backend", "sim"], "invalid subject"),
    (["session", "--subject", "S1", "--trials", "illum010_P10"], "unknown trial id"),
    (["replay", "/nonexistent/S1"], "session manifest not found"),
    (["calibrate", "eye-head", "--backend", "sim"], "needs --out"),
])
def test_bad_input_is_one_line(tmp_path, args, needle):
    if "--out-dir" not in args and args[0] == "session":
        args = [*args, "--out-dir", str(tmp_path)]
    line = _one_line_error(run(*args))
    assert needle in line
    assert not any(tmp_path.iterdir())  # no partial session directory


@pytest.mark.node
def test_absent_device_names_device_address_and_fix(tmp_path):
    """backend real on a machine without the lab: the camera refuses first."""
    p = run("session", "--subject", "default", "--backend", "real", "--out-dir", str(tmp_path),
            "--resolution", "640x360", "--quiet")
    line = _one_line_error(p)
    assert "camera" in line and ("RealSense" in line or "pyrealsense2" in line)
    assert not (tmp_path / "default").exists()


def _start(out: Path, *extra) -> subprocess.Popen:
    return subprocess.Popen([*CLI, "session", "--subject", "S09", "--backend", "sim", "--out-dir", str(out), "--quiet",
                             "--trials", "illum010_P1", "illum010_P2", "illum010_P3", "--resolution", "160x90",
                             "--trial-seconds", "3", "--real-time-factor", "2", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def _wait_recording(out: Path, trial: str, timeout=90.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            m = load_manifest(out / "S09")
            f = bag_dir(out / "S09", trial) / f"{trial}_0.mcap"
            # the file exists from the bag's opening: wait for a flushed chunk (a few 160x90 frames) on disk
            if m.trials[trial].status == "recording" and f.exists() and f.stat().st_size > 200_000:
                time.sleep(0.2)
                return
        except Exception:
            pass
        time.sleep(0.1)
    raise AssertionError(f"{trial} never started recording")


@pytest.mark.node
@pytest.mark.slow
# SIGTERM takes SIGINT's path (exit code 143 instead of 130): in the long tier
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT, pytest.param(signal.SIGTERM, marks=pytest.mark.long)])
def test_signal_mid_trial_then_resume(tmp_path, sig):
    p = _start(tmp_path)
    try:
        _wait_recording(tmp_path, "illum010_P2")
        p.send_signal(sig)
        _out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    sdir = tmp_path / "S09"
    m = load_manifest(sdir)
    assert m.trials["illum010_P1"].status == "done"
    with Reader(bag_dir(sdir, "illum010_P1")) as r:  # the completed trial is intact
        assert r.message_count > 0
    if sig == signal.SIGKILL:
        assert m.trials["illum010_P2"].status == "recording"  # nobody could mark it
    else:
        assert p.returncode == {signal.SIGINT: 130, signal.SIGTERM: 143}[sig], (p.returncode, err[-1000:])  # EXIT_CODES
        assert "interrupted" in err and "--resume" in err
        assert m.trials["illum010_P2"].status == "incomplete"
        with Reader(bag_dir(sdir, "illum010_P2")) as r:  # closed cleanly, readable
            assert r.message_count > 0
        if sig == signal.SIGINT:  # the resume below (repair, mark incomplete, redo) runs for SIGKILL and SIGTERM
            return
    # --resume: a killed trial is found 'recording', its bag repaired, marked incomplete, then redone
    q = run("session", "--subject", "S09", "--backend", "sim", "--out-dir", str(tmp_path), "--quiet", "--resume",
            "--trials", "illum010_P1", "illum010_P2", "illum010_P3", "--resolution", "160x90", "--trial-seconds", "0.5",
            "--real-time-factor", "50", timeout=180)
    assert q.returncode == 0, q.stderr[-2000:]
    m = load_manifest(sdir)
    assert [r.status for r in m.trials.values()] == ["done", "done", "done"]
    assert m.trials["illum010_P2"].attempts == 2
    old = sdir / "bags" / ".attempts" / "illum010_P2.1"
    with Reader(old) as r:  # the interrupted attempt is kept, readable as far as written
        assert r.message_count > 0


@pytest.mark.node
def test_calibrate_eye_head_in_the_simulated_lab(tmp_path):
    p = run("calibrate", "eye-head", "--subject", "S03", "--backend", "sim", "--out", str(tmp_path / "cal"))
    assert p.returncode == 0, p.stderr[-1000:]
    from gaze4hri_core.calibration import load_calibration

    cal = load_calibration(tmp_path / "cal", "S03")  # the whole directory validates with the new file
    assert cal.T_head_eye is not None and "calibration ok" in p.stdout


@pytest.mark.node
def test_calibrate_registration_in_the_simulated_lab(tmp_path):
    """The world-base registration in the simulated lab: the arm's marker seen at every point
    (it aged out of the samples' wait at 20x real time), the new registration saved."""
    p = run("calibrate", "registration", "--backend", "sim", "--out", str(tmp_path / "cal"))
    assert p.returncode == 0, p.stderr[-1000:]
    from gaze4hri_core.calibration import load_calibration

    assert "registration: RMS" in p.stdout and load_calibration(tmp_path / "cal").T_world_base is not None


@pytest.mark.node
@pytest.mark.slow
def test_real_disk_full_on_a_small_tmpfs(tmp_path):
    """A real ENOSPC: the session starts on a 40 MB tmpfs, another writer fills it
    mid-trial; the robot and the trial stop, the bag stays readable, the operator
    is told in one line."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", str(mnt)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        p = subprocess.Popen([*CLI, "session", "--subject", "S09", "--backend", "sim", "--out-dir", str(mnt), "--quiet",
                              "--trials", "illum010_P1", "--resolution", "320x180", "--trial-seconds", "4",
                              "--real-time-factor", "1"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
        t0 = time.monotonic()
        bag = bag_dir(mnt / "S09", "illum010_P1") / "illum010_P1_0.mcap"  # rosbag2's name from the start
        while time.monotonic() - t0 < 60:  # wait until some frames are on disk
            if bag.exists() and bag.stat().st_size > 2_000_000:
                break
            time.sleep(0.05)
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        with open(mnt / "filler", "wb") as f:  # another process takes the rest of the disk
            try:
                f.write(b"\0" * max(0, free - 64 * 1024))
            except OSError:
                pass
        _out, err = p.communicate(timeout=120)
        assert p.returncode != 0
        lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
        assert len(lines) == 1 and "disk full" in lines[0] and "--resume" in lines[0], err[-2000:]
        rec = load_manifest(mnt / "S09").trials["illum010_P1"]
        assert rec.status == "failed" and "disk full" in rec.reason
        with Reader(bag_dir(mnt / "S09", "illum010_P1")) as r:
            assert r.message_count > 0
        assert not list(mnt.rglob(".gaze4hri_disk_reserve"))  # the recorder's ballast was given back
    finally:
        if "p" in locals() and p.poll() is None:
            p.kill()
        subprocess.run(["umount", str(mnt)], capture_output=True)


# ---------------------------------------------------------------- issue 16: help, trials, exit codes
@pytest.mark.unit
def test_trials_lists_the_protocol():
    import json

    p = run("trials")
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split()[:4] == ["ID", "EXPERIMENT", "CONDITION", "TARGET"] and "CAMERA MOTION" in lines[0]
    assert "63 trials" in p.stdout
    conflict = next(ln for ln in lines if ln.startswith("conflict_left_H2 "))
    assert "conflict" in conflict and "+25" in conflict and "fixed" in conflict
    rows = json.loads(run("trials", "--json", "--experiments", "mutual").stdout)
    assert [r["id"] for r in rows] == ["mutual_h_slow", "mutual_h_fast", "mutual_v_slow", "mutual_v_fast"]
    assert all(r["duration_s"] > 0 and "line" in r["camera_motion"] for r in rows)


@pytest.mark.unit
def test_version_and_help_on_every_option():
    import argparse

    from gaze4hri_acq.cli import EXIT_CODES, build_parser

    v = run("--version")
    assert v.returncode == 0 and v.stdout.startswith("gaze4hri-acq ")
    top = run("--help").stdout
    assert "exit codes:" in top and all(f"  {k}" in top for k in EXIT_CODES)
    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    missing = [f"{name} {'/'.join(a.option_strings) or a.dest}" for name, sp in subs.choices.items()
               for a in sp._actions if a.help is None and not isinstance(a, argparse._HelpAction)]
    assert not missing, f"options without help: {missing}"
    for name, sp in subs.choices.items():
        h = sp.format_help()
        assert "examples:" in h, name
        if name != "node":
            assert "(default:" in h, name


@pytest.mark.node
def test_resume_adds_trials_and_a_failed_trial_exits_1(tmp_path):
    """--resume --trials X on a session recorded without X records X; a failed trial
    makes the exit code 1 and the output names the --redo command."""
    common = ["--subject", "S01", "--backend", "sim", "--out-dir", str(tmp_path), "--resolution", "160x90",
              "--trial-seconds", "0.5", "--real-time-factor", "50", "--quiet"]
    p = run("session", *common, "--trials", "illum010_P1")
    assert p.returncode == 0, p.stderr[-2000:]
    q = run("session", *common, "--resume", "--trials", "arc_P5", "--sim-mocap-dropout", "arc_P5", "1.0", "0.5",
            timeout=180)
    m = load_manifest(tmp_path / "S01")
    assert list(m.trials) == ["illum010_P1", "arc_P5"]  # added, in protocol order
    assert m.trials["arc_P5"].status == "failed" and m.trials["arc_P5"].attempts == 1
    assert q.returncode == 1, q.stderr[-2000:]
    assert f"--out-dir {tmp_path}" in q.stdout and "--redo arc_P5" in q.stdout


# ---------------------------------------------------------------- issue 29: the options from the schema
@pytest.mark.unit
def test_session_options_are_the_session_config_fields():
    """One option per SessionConfig field but the orchestrator's tuning (config/orchestrator.yaml):
    its help the field's description, its choices the Literal's, its default the field's."""
    import argparse
    from typing import Literal, get_args

    from gaze4hri_acq.cli import build_parser
    from gaze4hri_acq.session_config import SessionConfig, tuning_field_names

    subs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    by_dest = {a.dest: a for a in subs.choices["session"]._actions if a.dest != "help"}
    assert set(by_dest) == set(SessionConfig.model_fields) - set(tuning_field_names())
    assert set(tuning_field_names()) == {"head_yaw_tolerance_deg", "head_hold_s", "head_check_timeout_s",
                                         "calibration_max_age_days", "eye_head_max_age_hours", "disk_margin",
                                         "motion_timeout_s"}
    for name, a in by_dest.items():
        f = SessionConfig.model_fields[name]
        assert a.help in (f.description, argparse.SUPPRESS), name
        if getattr(f.annotation, "__origin__", None) is Literal:
            assert list(a.choices) == list(get_args(f.annotation)), name
    # every historical flag (and the docs' commands) still parses, to the same field
    flags = {a.option_strings[0]: d for d, a in by_dest.items()}
    assert flags["--trials"] == "trial_ids" and flags["--calibration"] == "calibration_dir"
    assert flags["--sim-mocap-dropout"] == "mocap_dropout" and flags["--sim-table-nudge"] == "table_nudge"
    assert by_dest["subject"].required and by_dest["live_view"].default == "127.0.0.1:8765"
    assert by_dest["fail_after_bytes"].help == argparse.SUPPRESS
    assert list(by_dest["backend"].choices) == ["sim", "real"] and by_dest["fps"].default == 30


@pytest.mark.unit
def test_session_options_become_one_validated_config():
    from gaze4hri_acq.cli import _redo_base, _session_args, build_parser

    argv = ["session", "--subject", "S12", "--backend", "real", "--trials", "illum010_P1", "arc_P5", "--fps", "60",
            "--resolution", "1280x720", "--calibration", "/tmp/cal", "--sim-mocap-dropout", "arc_P5", "1.0", "0.5",
            "--resume", "--experiments", "illumination", "--live-view", "off", "--seed", "-3"]
    cfg = _session_args(build_parser().parse_args(argv[:-2]))
    assert cfg.trial_ids == ("illum010_P1", "arc_P5") and cfg.fps == 60 and isinstance(cfg.fps, int)
    assert cfg.resolution == (1280, 720) and str(cfg.calibration_dir) == "/tmp/cal" and cfg.resume
    assert cfg.mocap_dropout == ("arc_P5", 1.0, 0.5) and cfg.live_view == "off" and cfg.experiments == ("illumination",)
    assert cfg.head_yaw_tolerance_deg == 7.0  # config/orchestrator.yaml's tuning underneath
    assert cfg.node_parameters()["camera"]["fps"] == 60 and cfg.settings()["fps"] == 60  # camera and session.yaml
    # the re-run command keeps how the session is recorded, not which trials, --resume or the test hooks
    assert _redo_base(argv) == ("gaze4hri-acq session --subject S12 --backend real --fps 60 --resolution 1280x720 "
                                "--calibration /tmp/cal --live-view off --seed -3")
