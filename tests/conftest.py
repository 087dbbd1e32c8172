"""Repository-wide pytest setup. Tiers are pytest markers (pyproject.toml):
unit -> node -> replay -> live. ``live`` needs hardware and is deselected by default.
Each tier's folder conftest adds its own fixtures."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
os.environ.setdefault("YOLO_OFFLINE", "1")
os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def default_calibration_dir() -> Path:
    return REPO / "calibration"


# -- exit without native static destructors ------------------------------------------------
# With rclpy (Fast DDS), mediapipe, onnxruntime and torch all loaded into one pytest
# process, the interpreter can segfault in a library's static destructors at exit, after
# every test has run and the summary is printed (never in a subset of the suite). We
# exit with pytest's own status once pytest is done, skipping those destructors.
# GAZE4HRI_PYTEST_CLEAN_EXIT=1 restores the normal exit, to debug that teardown.
_SESSION: dict[str, int] = {}


def pytest_sessionfinish(session, exitstatus):
    _SESSION["status"] = int(exitstatus)


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    if "status" in _SESSION and os.environ.get("GAZE4HRI_PYTEST_CLEAN_EXIT") != "1":
        import sys

        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(_SESSION["status"])
