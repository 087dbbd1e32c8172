"""A disk that fills between trials (issue 20, item 6): one error line with the fix, the
trial that could not start and every later one stay pending (they were all marked
failed, with no error line), non-zero exit. A real ENOSPC on a small tmpfs (root only),
holding a copy of the shared short session, resumed with one trial more."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
from gaze4hri_core.errors import SessionError  # noqa: E402
from gaze4hri_core.session import load_manifest  # noqa: E402

from .conftest import SHORT_TRIALS  # noqa: E402

pytestmark = [pytest.mark.node, pytest.mark.slow]
CLI = [sys.executable, "-m", "gaze4hri_acq.cli"]
ENV = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF", "PYTHONUNBUFFERED": "1"}
MORE = ["illum010_P2", "illum010_P3"]  # after illum010_P1 in protocol order


@pytest.fixture
def full_disk(short_session, tmp_path):
    """The short session on a tmpfs whose free space is below one trial's need."""
    mnt = tmp_path / "small"
    mnt.mkdir()
    used = sum(f.stat().st_size for f in short_session.rglob("*") if f.is_file())
    size_mb = used // 2**20 + 16  # the session's copy, then room for the filler below
    if (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(mnt)], capture_output=True
        ).returncode
        != 0
    ):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        shutil.copytree(short_session, mnt / "S01")
        st = os.statvfs(mnt)
        with open(mnt / "filler", "wb") as f:  # leave 200 kB: less than a 0.5 s trial's 3.3 MB estimate
            f.write(b"\0" * (st.f_bavail * st.f_frsize - 200_000))
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def _statuses(sdir: Path) -> dict[str, str]:
    return {t: r.status for t, r in load_manifest(sdir).trials.items()}


def test_disk_full_between_trials_leaves_the_rest_pending(full_disk, monkeypatch):
    from gaze4hri_acq.cli import SessionArgs, run_session_args
    from gaze4hri_acq.orchestrator import session as orch

    args = [
        "--subject",
        "S01",
        "--backend",
        "sim",
        "--out-dir",
        str(full_disk),
        "--quiet",
        "--resume",
        "--trials",
        *SHORT_TRIALS,
        *MORE,
        "--resolution",
        "320x180",
        "--trial-seconds",
        "0.5",
        "--real-time-factor",
        "50",
    ]
    # the CLI: the orchestrator's check before the trial stops the session in one line
    p = subprocess.run([*CLI, "session", *args], capture_output=True, text=True, timeout=120, env=ENV)
    assert p.returncode == 2, p.stderr[-2000:]
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1 and "disk full before trial illum010_P2" in lines[0], p.stderr[-2000:]
    assert "free disk space" in lines[0] and "--out-dir" in lines[0] and "--resume" in lines[0]
    want = {**dict.fromkeys(SHORT_TRIALS, "done"), **dict.fromkeys(MORE, "pending")}
    assert _statuses(full_disk / "S01") == want
    assert load_manifest(full_disk / "S01").trials["illum010_P2"].attempts == 0
    # the disk fills after that check (another writer): the recorder refuses to start,
    # and the trial goes back to pending instead of failed
    monkeypatch.setattr(orch, "check_trial_disk", lambda *a: None)
    with pytest.raises(SessionError, match="disk full before trial illum010_P2.*--resume"):
        run_session_args(
            SessionArgs(
                subject="S01",
                backend="sim",
                out_dir=full_disk,
                resume=True,
                trial_ids=(*SHORT_TRIALS, *MORE),
                resolution=(320, 180),
                trial_seconds=0.5,
                real_time_factor=50.0,
                quiet=True,
                yes=True,
            )
        )
    m = load_manifest(full_disk / "S01")
    assert _statuses(full_disk / "S01") == want
    assert m.trials["illum010_P2"].attempts == 0 and m.trials["illum010_P2"].started is None
