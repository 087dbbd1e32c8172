"""The benchmark installs in one pip command from the built wheels (scripts/build_wheels.py)
into a fresh venv, with its face models and tracker and without torch, and its `predict` and
`run` work there: what a lab that wants only the benchmark does (README, "Install the benchmark
alone"). About two minutes (the install unpacks the whole stack): tier `long`."""
from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = [pytest.mark.packaging, pytest.mark.long]


def _run(cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert done.returncode == 0, f"{cmd[:3]} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh venv with `pip install --find-links dist "gaze4hri-bench[faces]"` done; its bin/."""
    tmp = tmp_path_factory.mktemp("wheels")
    _run([sys.executable, str(REPO / "scripts" / "build_wheels.py"), "--out", str(tmp / "dist")], 600)
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    _run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--find-links", str(tmp / "dist"),
          "gaze4hri-bench[faces]"], 900)
    return env_dir / "bin"


def test_one_pip_command_installs_the_face_models_without_torch(installed):
    names = _run([str(installed / "python"), "-m", "pip", "list", "--format", "freeze"], 120).stdout.lower()
    versions = dict(line.split("==", 1) for line in names.split() if "==" in line)
    assert versions.get("mediapipe") == "0.10.21+gaze4hri.1" and versions.get("ai-edge-litert") == "2.3.0"
    assert versions.get("opencv-python-headless") and versions["numpy"].startswith("2.")
    for heavy in ("torch", "torchvision", "ultralytics", "jax", "opencv-python", "opencv-contrib-python"):
        assert heavy not in versions, f"{heavy} was installed"


def test_predict_runs_on_a_generated_video(installed, tmp_path):
    from tests.bench.test_predict import _face_video

    video = _face_video(tmp_path / "face.avi", 8)
    out = _run([str(installed / "gaze4hri-bench"), "predict", "--video", str(video), "-m", "head_pose",
                "--out", str(tmp_path / "out")], 300, cwd=tmp_path).stdout
    assert "face found in 8 (100 %)" in out, out
    table = pd.read_parquet(tmp_path / "out" / "face__head_pose__none.parquet")
    assert len(table) == 8 and table["valid"].all()


def test_run_benchmarks_a_recorded_session_with_blinks(installed, tmp_path):
    """A simulated session (recorded by this checkout) benchmarked by the installed package:
    ground truth, the EAR blink pass (MediaPipe) and a baseline, to the results Parquet."""
    from gaze4hri_acq.simulate import run_sim_session

    run_sim_session(tmp_path / "root", "S01", ["illum100_P5"], resolution=(640, 360), trial_seconds=1.0,
                    real_time_factor=50)
    _run([str(installed / "gaze4hri-bench"), "run", "-m", "head_pose", "--data", str(tmp_path / "root"),
          "--out", str(tmp_path / "res"), "--blinks", "ear", "--no-progress"], 600, cwd=tmp_path)
    parts = list((tmp_path / "res").rglob("*.parquet"))
    assert parts, "no results written"
    rows = pd.concat(pd.read_parquet(p) for p in parts)
    assert len(rows) > 10
