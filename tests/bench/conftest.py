"""Fixtures of the benchmark tests: tiny ONNX models with each registered method's exact
I/O signature (gaze4hri_bench.methods.testing), built once per session."""
from __future__ import annotations

from pathlib import Path

import pytest
from gaze4hri_bench.methods import METHODS, get_method


def onnx_method_names() -> list[str]:
    """Every registered network, hidden test methods included (parametrize over this)."""
    return [e.name for e in METHODS.entries(include_hidden=True) if e.kind == "onnx"]


def all_method_names() -> list[str]:
    return [e.name for e in METHODS.entries(include_hidden=True)]


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory) -> Path:
    """A models folder holding a gradient network per registered ONNX method, recorded
    in manifest.yaml like an imported model (random_init: the outputs are not gaze)."""
    from gaze4hri_bench.methods.testing import build_gradient_onnx
    from gaze4hri_bench.zoo import store

    d = tmp_path_factory.mktemp("tiny_models")
    for name in onnx_method_names():
        spec = get_method(name).spec
        p = build_gradient_onnx(spec, d / spec.weights_file)
        store.write_record(d, name, {"method": name, "random_init": True, "onnx": p.name,
                                     "onnx_sha256": store.sha256_file(p), "note": "tiny gradient test model"})
    return d
