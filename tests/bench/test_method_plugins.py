"""Method plugins (issue 30, item 2): a test distribution (a dist-info folder on
sys.path) declares methods in the entry-point group ``gaze4hri_bench.methods``; they are
found at start-up, listed by ``gaze4hri-bench methods``, run like any method, and every
broken one is one line (exit 2, no traceback)."""
from __future__ import annotations

import importlib
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gaze4hri_bench.methods import METHODS
from gaze4hri_bench.methods.plugins import PLUGIN_ERRORS, PLUGIN_GROUP, discover_plugins
from gaze4hri_bench.pipeline import results
from gaze4hri_bench.pipeline.run import RunConfig, plan_jobs, run_benchmark
from gaze4hri_core.errors import Gaze4HRIError

from ._spec_files import RULES, spec_dict, write_spec
from ._synth import SynthDataset

PLUGIN_MODULE = '''
from pathlib import Path

import numpy as np
from gaze4hri_bench.methods.base import GazeMethod
from gaze4hri_bench.methods.network import OnnxMethod
from gaze4hri_bench.spec_file import load_spec


class LookDown(GazeMethod):
    """A method of its own kind: reads the face box, answers a fixed downward gaze."""

    kind = "plugin_demo"
    input_types = ("crop",)

    def needs_face(self, input_type):
        return True

    def predict(self, ctx):
        return np.array([0.0, 0.6, -0.8]) if ctx.box is not None else np.full(3, np.nan)


def not_a_method(name, spec=None, profile=None, record=None):
    return object()


class Mirrored(OnnxMethod):
    """A custom decoder: the network's own spec file, its output mirrored left-right."""

    def decode(self, outputs):
        g = super().decode(outputs)
        return g * np.array([-1.0, 1.0, 1.0])


def mirrored(name, spec=None, profile=None, record=None):
    spec, _ = load_spec(Path(__file__).with_name("h30net.yaml"))
    return Mirrored(name, spec, profile, record)
'''

ENTRY_POINTS = f"""[{PLUGIN_GROUP}]
h30_look_down = h30plug:LookDown
h30_missing = h30plug_absent:Nothing
h30_not_a_method = h30plug:not_a_method
h30_mirrored = h30plug:mirrored
straight = h30plug:LookDown
"""


@pytest.fixture
def plugin_dist(tmp_path, monkeypatch):
    """A distribution h30plug 0.1 installed as a dist-info folder on sys.path, its entry
    points registered as at start-up; taken out again afterwards."""
    (tmp_path / "h30plug.py").write_text(PLUGIN_MODULE)
    d = spec_dict("h30net", "angles_pitch_yaw_rad", "rectified")
    write_spec(tmp_path, d, "angles_pitch_yaw_rad")
    info = tmp_path / "h30plug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: h30plug\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    added = discover_plugins(METHODS)
    yield tmp_path, added
    for n in added:
        METHODS.remove(n)
    PLUGIN_ERRORS.pop("straight", None)
    sys.modules.pop("h30plug", None)


def test_plugins_found_listed_and_a_taken_name_refused(plugin_dist, capsys):
    from gaze4hri_bench.cli import main

    _, added = plugin_dist
    assert sorted(added) == ["h30_look_down", "h30_mirrored", "h30_missing", "h30_not_a_method"]
    assert METHODS.get("straight").kind == "baseline"  # the built-in keeps its name
    assert "straight" in PLUGIN_ERRORS and "'straight' is taken by another method" in PLUGIN_ERRORS["straight"]
    assert main(["methods"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("h30_look_down"))
    assert row.split()[1] == "plugin" and "built when a run names it" in row
    assert "straight: entry point h30plug:LookDown (h30plug 0.1): name: 'straight' is taken" in out
    from gaze4hri_bench.pipeline.cli_run import available_methods

    assert not {"h30_look_down", "h30_missing"} & set(available_methods())  # plugins run when named


@pytest.mark.replay
def test_plugin_network_with_a_custom_decoder(plugin_dist, tmp_path):
    """An OnnxMethod subclass with its own spec: planned with its spec, record and model
    file (ONNX check included), decoded by its own rule, spec hash in the provenance."""
    from gaze4hri_bench.methods.network import OnnxMethod
    from gaze4hri_bench.spec_file import spec_hash

    folder, _ = plugin_dist
    cfg = RunConfig(methods=("h30_mirrored",), data=Path("/synthetic"), out=tmp_path / "out", progress=False,
                    blinks="off", input="rectified", command_line="pytest plugin")
    (job,) = plan_jobs(cfg)
    assert job.spec.name == "h30net" and job.record.output == "pitchyaw_rad"
    assert job.model.path == (folder / "h30net.onnx").resolve()
    (p,) = run_benchmark(cfg, log=lambda *_: None, dataset=SynthDataset(), jobs=[job])
    df = results.pq.read_table(p).to_pandas()
    assert p.name == "h30_mirrored__rectified.parquet" and df["pred_x"].notna().all()
    # the network's Frame A output, mirrored, then taken to the camera frame by R_norm^T: check one frame
    want = RULES["angles_pitch_yaw_rad"][2] * [-1, 1, 1]
    assert not np.allclose(want, RULES["angles_pitch_yaw_rad"][2])
    assert isinstance(job.method, OnnxMethod) and type(job.method).__name__ == "Mirrored"
    np.testing.assert_allclose(job.method.decode([np.array([[0.2, -0.3]], np.float32)])[0], want, atol=1e-6)
    assert results.read_metadata(p)["spec_sha256"] == spec_hash(job.spec)


@pytest.mark.replay
def test_plugin_method_runs_like_any_method(plugin_dist, tmp_path):
    cfg = RunConfig(methods=("h30_look_down", "straight"), data=Path("/synthetic"), out=tmp_path / "out",
                    progress=False, blinks="off", detector="stub", command_line="pytest plugin")
    from gaze4hri_bench.faces.detectors import FaceDetection
    from gaze4hri_bench.pipeline import face_pass

    class Stub:
        name, has_landmarks = "stub", False

        def detect(self, image):
            return [FaceDetection(np.array([20.0, 12.0, 70.0, 62.0]), 0.9)]

        def close(self):
            pass

    orig = face_pass.FaceModels.detector
    face_pass.FaceModels.detector = lambda self: Stub()
    try:
        paths = run_benchmark(cfg, log=lambda *_: None, dataset=SynthDataset())
    finally:
        face_pass.FaceModels.detector = orig
    (p,) = [p for p in paths if p.name.startswith("h30_look_down")]
    assert p.name == "h30_look_down__crop.parquet"
    df = results.pq.read_table(p).to_pandas()
    np.testing.assert_allclose(df[["pred_x", "pred_y", "pred_z"]].to_numpy(), [[0.0, 0.6, -0.8]] * len(df))
    md = results.read_metadata(p)
    assert md["method_info"]["kind"] == "plugin_demo" and md["spec"] is None and md["spec_sha256"] is None


@pytest.mark.parametrize("name,words", [
    ("h30_missing", "entry point h30plug_absent:Nothing: h30_missing: cannot be imported (ModuleNotFoundError"),
    ("h30_not_a_method", "entry point h30plug:not_a_method: h30_not_a_method: built a object, not a GazeMethod"),
])
def test_broken_plugin_is_one_line(plugin_dist, tmp_path, name, words):
    cfg = RunConfig(methods=(name,), data=Path("/synthetic"), out=tmp_path, progress=False)
    with pytest.raises(Gaze4HRIError) as e:
        plan_jobs(cfg)
    assert e.value.exit_code == 2 and words in e.value.line() and "\n" not in e.value.line()


def test_plugins_discovered_at_start_up(plugin_dist):
    """A fresh interpreter with the distribution on its path lists the plugin, having imported nothing of it."""
    folder, _ = plugin_dist
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
    code = ("import sys; from gaze4hri_bench.methods import METHODS; "
            "print(METHODS.get('h30_look_down').kind, 'h30plug' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["plugin", "False"]
