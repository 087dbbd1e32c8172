"""The launch files and the one-process runner start the same nodes (one node table);
every launch argument is described and finite ones have choices; the config YAML
holds exactly the parameters each node declares, with valid values."""
from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
import yaml

pytest.importorskip("rclpy")

from gaze4hri_acq.nodes.table import NODES, node_names  # noqa: E402

PKG = Path(__file__).resolve().parents[2] / "src" / "gaze4hri_acq"
LAUNCH = PKG / "launch"
CONFIG = PKG / "config"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name.replace(".", "_"), LAUNCH / name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # module level imports no launch package: testable here
    return mod


@pytest.mark.unit
@pytest.mark.parametrize("backend", ["real", "sim"])
def test_launch_processes_cover_the_node_table(backend):
    base = _load("acquisition.launch.py")
    procs = base.processes("session", backend)
    launched = sorted(n for p in procs for n in p["nodes"])
    assert launched == sorted(node_names())  # what `gaze4hri-acq session` builds in one process
    if backend == "real":  # camera and recorder share a process: frames stay in-process
        assert any(set(p["nodes"]) == {"camera", "recorder"} for p in procs)


@pytest.mark.unit
def test_one_process_runner_builds_the_same_table():
    from gaze4hri_acq.runner import StackConfig

    assert StackConfig().nodes == tuple(node_names())


@pytest.mark.unit
def test_every_launch_argument_described_with_choices_where_finite():
    base = _load("acquisition.launch.py")
    finite = {"mode", "backend", "experiments", "resume", "robot_model", "resolution", "fps", "compression", "procedure"}
    names = set()
    for d in base.ARGUMENTS:
        names.add(d["name"])
        assert len(d["description"]) > 15, d
        if d["name"] in finite:
            assert d.get("choices") and d["default"] in d["choices"], d
    assert {"backend", "experiments", "out_dir", "robot_ip", "motive_ip", "camera_serial", "resolution"} <= names
    from gaze4hri_acq.cli import BACKENDS, RESOLUTIONS
    from gaze4hri_core.protocol import EXPERIMENTS

    by = {d["name"]: d for d in base.ARGUMENTS}
    assert set(by["backend"]["choices"]) == set(BACKENDS)
    assert set(by["resolution"]["choices"]) == set(RESOLUTIONS)
    assert set(by["experiments"]["choices"]) == {"all", *EXPERIMENTS}


@pytest.mark.unit
@pytest.mark.parametrize("wrapper,mode", [("session.launch.py", "session"), ("calibrate.launch.py", "calibrate"), ("replay.launch.py", "replay")])
def test_wrappers_are_thin(wrapper, mode):
    mod = _load(wrapper)
    assert mod.MODE == mode
    _path, base = mod.load_base()
    assert [d["name"] for d in base.forwarded(mode)] == base.MODE_ARGUMENTS[mode]
    tree = ast.parse((LAUNCH / wrapper).read_text())
    calls = {n.func.id if isinstance(n.func, ast.Name) else getattr(n.func, "attr", "") for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert "Node" not in calls  # nodes come from the base only


@pytest.mark.unit
def test_launch_under_ros2_launch_when_available():
    launch = pytest.importorskip("launch", reason="launch/launch_ros are not on PyPI; checked in the ros:jazzy image (docker/)")
    if not hasattr(launch, "LaunchDescription"):
        pytest.skip("the PyPI 'launch' package is an unrelated project")
    ld = _load("session.launch.py").generate_launch_description()
    assert ld.entities


def _params(spec):
    import importlib

    mod = importlib.import_module(spec.target.split(":")[0])
    return getattr(mod, "PARAMS", None)


@pytest.mark.unit
@pytest.mark.parametrize("spec", [n for n in NODES if n.name != "orchestrator"], ids=lambda n: n.name)
def test_config_yaml_matches_declared_parameters(spec):
    params = _params(spec)
    data = yaml.safe_load((CONFIG / f"{spec.name}.yaml").read_text())
    values = data[spec.name]["ros__parameters"]
    assert set(values) == {p.name for p in params}
    for p in params:
        p.check(spec.name, values[p.name])  # raises on an invalid value
        assert p.description


@pytest.mark.node
def test_invalid_parameter_fails_at_start_up_naming_it():
    from gaze4hri_acq.runner import Stack, StackConfig
    from gaze4hri_core.errors import Gaze4HRIError

    with pytest.raises(Gaze4HRIError, match="parameter 'width'.*allowed range is \\[64, 1920\\]"):
        Stack(StackConfig(backend="sim", params={"camera": {"width": 5000}}))


@pytest.mark.unit
def test_orchestrator_yaml_tunes_the_session_config():
    from dataclasses import fields

    from gaze4hri_acq.orchestrator.session import SessionConfig

    values = yaml.safe_load((CONFIG / "orchestrator.yaml").read_text())["orchestrator"]["ros__parameters"]
    names = {f.name for f in fields(SessionConfig)}
    assert set(values) <= names
    cfg = SessionConfig(subject="S1", **values)
    assert cfg.head_yaw_tolerance_deg == values["head_yaw_tolerance_deg"]
