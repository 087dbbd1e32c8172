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
