"""A session folder that holds recordings but no session.yaml is refused before anything
starts (issue 31): one line, exit 2, and the folder byte for byte as it was."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rclpy")

CLI = [sys.executable, "-m", "gaze4hri_acq.cli"]
ENV = {**os.environ, "ROS_AUTOMATIC_DISCOVERY_RANGE": "OFF", "PYTHONUNBUFFERED": "1"}


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every path under ``root`` with its kind, bytes' digest and mtime: what 'unchanged' means."""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for n in dirnames:
            p = Path(dirpath) / n
            snap[str(p.relative_to(root))] = ("dir", p.stat().st_mtime_ns)
        for n in filenames:
            p = Path(dirpath) / n
            snap[str(p.relative_to(root))] = ("file", hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
    return snap


def _orphan_session(root: Path, attempts_only: bool = False) -> Path:
    """A subject folder with bags (as a killed run or a deleted session.yaml leaves it)."""
    sdir = root / "S07"
    if attempts_only:
        b = sdir / "bags" / ".attempts" / "illum010_P1.1"
    else:
        b = sdir / "bags" / "illum010_P1"
    b.mkdir(parents=True)
    (b / "metadata.yaml").write_text("rosbag2_bagfile_information: {}\n")
    (b / "illum010_P1_0.mcap").write_bytes(b"\x89MCAP0\r\n" + bytes(range(64)))
    (sdir / "calibration").mkdir()
    (sdir / "calibration" / "note.txt").write_text("kept\n")
    return sdir


@pytest.mark.parametrize("extra", [(), ("--resume",)], ids=["new", "resume"])
@pytest.mark.parametrize("attempts_only", [False, True], ids=["bags", "attempts"])
def test_bags_without_session_yaml_refused_folder_unchanged(tmp_path, extra, attempts_only):
    sdir = _orphan_session(tmp_path, attempts_only)
    before = _snapshot(tmp_path)
    p = subprocess.run([*CLI, "session", "--subject", "S07", "--backend", "sim", "--out-dir", str(tmp_path),
                        "--quiet", "--trials", "illum010_P1", *extra],
                       capture_output=True, text=True, timeout=120, env=ENV)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), p.stderr
    assert "no session.yaml" in lines[0] and str(sdir) in lines[0] and "restore" in lines[0]
    assert ("earlier attempts" if attempts_only else "illum010_P1") in lines[0]
    assert "Traceback" not in p.stderr
    assert _snapshot(tmp_path) == before


def test_empty_bags_folder_is_a_new_session(tmp_path):
    """An empty bags/ (nothing recorded) is not refused: the check names recordings only."""
    from gaze4hri_acq.orchestrator.session import _refuse_orphan_recordings

    (tmp_path / "S08" / "bags").mkdir(parents=True)
    _refuse_orphan_recordings(tmp_path / "S08")
    _refuse_orphan_recordings(tmp_path / "S09")  # no folder at all
