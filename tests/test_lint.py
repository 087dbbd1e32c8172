"""Linters run as tests (as ros2/demos' test_flake8): ruff over the whole tree."""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.unit
def test_ruff_clean():
    ruff = Path(sys.executable).with_name("ruff")
    exe = str(ruff) if ruff.exists() else shutil.which("ruff")
    if exe is None:
        pytest.skip("ruff not installed (requirements/base.txt)")
    out = subprocess.run(
        [exe, "check", "src", "tests", "benchmarks", "scripts"], cwd=REPO, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stdout[-3000:]
