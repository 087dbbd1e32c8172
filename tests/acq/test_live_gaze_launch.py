"""live_gaze.launch.py: every argument described (choices where finite and equal to
the node's), its overrides are declared parameters of the gaze node, and the process
it starts (``gaze4hri-acq node gaze``: the one-process host) brings the node up
configured and active by itself (autostart)."""
from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
from gaze4hri_acq.nodes.gaze_node import PARAMS  # noqa: E402

LAUNCH = Path(__file__).resolve().parents[2] / "src" / "gaze4hri_acq" / "launch" / "live_gaze.launch.py"


def _load():
    spec = importlib.util.spec_from_file_location("live_gaze_launch", LAUNCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.unit
def test_arguments_described_and_match_the_node():
    mod = _load()
    by_name = {p.name: p for p in PARAMS}
    for d in mod.ARGUMENTS:
        assert len(d["description"]) > 15, d
        p = by_name[d["name"]]
        if p.choices:
            assert tuple(d["choices"]) == p.choices and d["default"] in d["choices"], d
        assert str(d["default"]) == str(p.default) or d["name"] in ("method",), d
    over = mod.overrides({d["name"]: d["default"] for d in mod.ARGUMENTS})
    assert set(over) <= set(by_name) and over["autostart"] is True
    for k, v in over.items():
        by_name[k].check("gaze", v)


@pytest.mark.node
def test_node_host_autostarts_the_gaze_node(tmp_path):
    from gaze4hri_acq.runner import Stack, StackConfig

    mod = _load()
    params = {
        **mod.overrides({d["name"]: d["default"] for d in mod.ARGUMENTS}),
        "method": "straight",
        "head_pose": "landmarks",
    }
    with Stack(StackConfig(backend="real", nodes=("gaze",), params={"gaze": params})) as st:
        node = st.nodes["gaze"]
        deadline = time.monotonic() + 60  # MediaPipe's models load in seconds, in tens of them on a loaded machine
        while time.monotonic() < deadline and node._state_machine.current_state[1] != "active":
            time.sleep(0.05)
        assert node._state_machine.current_state[1] == "active", node.last_error
        assert node.estimator is not None and node.estimator.method.name == "straight"
