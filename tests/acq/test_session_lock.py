"""One writer per session (issue 20, item 5): a second run or a --resume of a session
that another live process records is refused in one line naming the holder (exit 2);
a lock left by a killed process is taken over with a one-line notice; readers still
read a locked session. Plus the unbalanced quote of an unknown trial id."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from gaze4hri_core.errors import Gaze4HRIError, SessionError
from gaze4hri_core.session import load_manifest, new_manifest, save_manifest
from gaze4hri_core.session_lock import LOCK_NAME, SessionLock, SessionLocked, check_unlocked, read_holder

CLI = [sys.executable, "-m", "gaze4hri_acq.cli"]
ENV = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF", "PYTHONUNBUFFERED": "1"}
TRIALS = ["illum010_P1", "illum010_P2"]


def _session(root: Path, subject: str = "S07") -> Path:
    """A recorded session's manifest (no bags: the lock is checked before any is read)."""
    sdir = root / subject
    sdir.mkdir(parents=True)
    save_manifest(sdir, new_manifest(subject, "sim", TRIALS, {"resolution": [160, 90]}))
    return sdir


def _holder(sdir: Path) -> subprocess.Popen:
    """A second process that takes the session's lock through the module and keeps it."""
    code = textwrap.dedent(f"""
        import sys, time
        from gaze4hri_core.session_lock import SessionLock
        lock = SessionLock({str(sdir)!r}, command="gaze4hri-acq session --subject S07 (test holder)").acquire()
        print("locked", flush=True)
        sys.stdin.read()  # until the test closes our stdin
        lock.release()
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "locked"  # blocks until the lock is held
    return p


@pytest.fixture
def held(tmp_path):
    sdir = _session(tmp_path)
    p = _holder(sdir)
    yield sdir, p
    if p.poll() is None:
        p.kill()
        p.wait(10)
    p.stdin.close()


@pytest.mark.unit
def test_resume_while_another_process_records_is_refused_in_one_line(held):
    sdir, p = held
    before = (sdir / "session.yaml").read_bytes()
    q = subprocess.run([*CLI, "session", "--subject", "S07", "--backend", "sim", "--out-dir", str(sdir.parent),
                        "--quiet", "--resume", "--trials", *TRIALS, "--resolution", "160x90"], capture_output=True,
                       text=True, timeout=120, env=ENV)
    assert q.returncode == 2, q.stderr[-2000:]
    lines = [ln for ln in q.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: session is being recorded by another run"), q.stderr
    assert f"pid {p.pid} on {socket.gethostname()} since " in lines[0] and "--resume" in lines[0]
    assert "test holder" in lines[0]  # the holder's command
    assert (sdir / "session.yaml").read_bytes() == before  # nothing in the session was written
    # the writer's own lock (not only the CLI's early probe) refuses too
    with pytest.raises(SessionLocked, match=f"pid {p.pid}"):
        SessionLock(sdir).acquire()
    # readers take no lock: the manifest still loads
    assert list(load_manifest(sdir).trials) == TRIALS


@pytest.mark.unit
def test_a_lock_left_by_a_killed_process_is_taken_over_with_a_notice(held):
    sdir, p = held
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    assert read_holder(sdir).pid == p.pid  # the file is left behind, its flock is gone with the process
    check_unlocked(sdir)  # the probe finds no live writer
    lock = SessionLock(sdir).acquire()
    try:
        assert lock.notice is not None and "\n" not in lock.notice
        assert f"pid {p.pid} on {socket.gethostname()}" in lock.notice
        assert "stale" in lock.notice and "process is gone" in lock.notice
        assert read_holder(sdir).pid == os.getpid()
    finally:
        lock.release()
    assert not (sdir / LOCK_NAME).exists()  # a clean release leaves no file behind
    again = SessionLock(sdir).acquire()  # ... so the next run has no notice
    assert again.notice is None
    again.release()


@pytest.mark.unit
def test_run_session_takes_a_stale_lock_before_writing_and_releases_it(tmp_path):
    """The orchestrator's entry takes the lock (notice to the operator) before its
    pre-checks and gives it back when the run ends, here at a failing pre-check."""
    from gaze4hri_acq.orchestrator.session import check_inputs, run_session
    from gaze4hri_acq.session_config import SessionConfig

    sdir = _session(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait(30)
    holder = {"pid": dead.pid, "host": socket.gethostname(), "since": "2026-01-01T00:00:00+00:00"}
    (sdir / LOCK_NAME).write_text(json.dumps(holder))

    class View:
        messages: list[str] = []

        def message(self, text):
            self.messages.append(text)

        def status(self, text):
            pass

    view = View()
    cfg = SessionConfig(subject="S07", backend="sim", out_dir=tmp_path, trial_ids=tuple(TRIALS), resume=True,
                        quiet=True, yes=True, calibration_dir=tmp_path / "no_calibration")
    with pytest.raises(Gaze4HRIError, match="calibration"):  # the missing calibration: after the lock was taken
        run_session(cfg, client=None, inputs=check_inputs(cfg), view=view)
    assert any(f"pid {dead.pid}" in m and "stale" in m for m in view.messages), view.messages
    assert not (sdir / LOCK_NAME).exists()


@pytest.mark.unit
def test_a_new_session_refused_by_a_lock_leaves_no_folder(tmp_path):
    sdir = tmp_path / "S08"
    with SessionLock(sdir):
        with pytest.raises(SessionLocked, match=f"pid {os.getpid()}"):
            SessionLock(sdir).acquire()  # a second writer, even in this process
        assert (sdir / LOCK_NAME).is_file()
    assert not sdir.exists()  # the holder made the folder for its lock only and removed it


@pytest.mark.unit
def test_unknown_trial_id_message_has_balanced_quotes(tmp_path):
    from gaze4hri_acq.orchestrator.session import check_inputs
    from gaze4hri_acq.session_config import SessionConfig

    for kw in ({"trial_ids": ("zzzz",)}, {"redo": ("zzzz",)}):
        with pytest.raises(SessionError) as e:
            check_inputs(SessionConfig(subject="S07", backend="sim", out_dir=tmp_path, **kw))
        # the registry's form, "unknown trial id 'zzzz' (<where>): ... known: ...", not a KeyError's repr
        assert e.value.what.startswith("unknown trial id 'zzzz'"), e.value.line()
        assert e.value.line().count("'") % 2 == 0


@pytest.mark.node
def test_readers_read_a_session_being_recorded(short_session):
    """The benchmark's session reader and replay take no lock: they read a locked session."""
    pytest.importorskip("rclpy")
    from gaze4hri_acq.replay import replay_session
    from gaze4hri_bench.data.backends.session import SessionDataset
    from rclpy.context import Context

    p = _holder(short_session)
    try:
        with pytest.raises(SessionLocked):
            check_unlocked(short_session)
        ds = SessionDataset(short_session)
        refs = ds.trials()
        assert len(refs) == 3 and len(ds.frame_table(refs[0]).t_ns) > 0
        import rclpy

        ctx = Context()
        rclpy.init(context=ctx, args=[])
        try:
            n = replay_session(short_session, trials=["illum010_P1"], rate=50.0, quiet=True, context=ctx,
                               max_messages=20)
            assert n == 20
        finally:
            rclpy.shutdown(context=ctx)
    finally:
        p.stdin.close()  # the holder releases and exits
        p.wait(30)
    assert not (short_session / LOCK_NAME).exists()


@pytest.mark.unit
def test_a_session_created_between_the_check_and_the_lock_is_refused(tmp_path):
    """check_inputs runs once, before the lock; whether the session exists is asked again
    under the lock, so a run that created it meanwhile is not recorded over."""
    from gaze4hri_acq.orchestrator.session import check_inputs, run_session
    from gaze4hri_acq.session_config import SessionConfig

    cfg = SessionConfig(subject="S07", backend="sim", out_dir=tmp_path, trial_ids=tuple(TRIALS), quiet=True, yes=True)
    inputs = check_inputs(cfg)
    assert not inputs.exists
    sdir = _session(tmp_path)  # another run, between the check and the lock
    before = (sdir / "session.yaml").read_bytes()
    with pytest.raises(SessionError, match="session exists already"):
        run_session(cfg, client=None, inputs=inputs)
    assert (sdir / "session.yaml").read_bytes() == before and not (sdir / LOCK_NAME).exists()
