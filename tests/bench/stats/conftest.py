"""Fixtures of the statistics tests: small synthetic results written with the
benchmark's generator (benchmarks/make_synthetic_results.py), so the generator is
tested too, and one shared report run on them."""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="session")
def synth():
    """The generator module (benchmarks/ is not a package)."""
    path = REPO / "benchmarks" / "make_synthetic_results.py"
    spec = importlib.util.spec_from_file_location("make_synthetic_results", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_synthetic_results"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="session")
def small_results(synth, tmp_path_factory) -> Path:
    """8 subjects (one without conflict trials, one without mutual gaze), 7 methods x 2 inputs, 12 frames a video."""
    out = tmp_path_factory.mktemp("results")
    synth.make_results(out, subjects=8, frames=12, seed=3)
    return out


@pytest.fixture(scope="session")
def small_report(small_results, tmp_path_factory):
    from gaze4hri_bench.stats import analyze

    out = tmp_path_factory.mktemp("report")
    summary = analyze([small_results], out)
    return out, summary
