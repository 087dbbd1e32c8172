"""Every package's module graph has no import cycle (function-level imports included) and no import that
runs up a floor: across packages (core 1; sim and bench 2, side by side; acq 3), and inside a package
between its first-level parts (subpackages, top-level modules). The analysis is scripts/structure.py's,
the one that prints the structure measures (issue 29)."""
from __future__ import annotations

import importlib.util
import sys
from functools import lru_cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _load_structure():
    spec = importlib.util.spec_from_file_location("gaze4hri_structure", ROOT / "scripts" / "structure.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


structure = _load_structure()
PACKAGES = sorted(structure.FLOORS)


@lru_cache(maxsize=1)
def _edges() -> tuple:
    pkgs = structure.packages(ROOT / "src")
    return pkgs, tuple(structure.imports(pkgs))


def _names(found) -> list[str]:
    return [f"{e.source}:{e.line} imports {e.target}" for e in found]


@pytest.mark.unit
def test_the_graph_sees_the_imports_it_must():
    pkgs, edges = _edges()
    g = structure.graph(list(edges))
    assert all(pkgs[name].modules for name in PACKAGES)
    assert "gaze4hri_acq.session_assembly" in g["gaze4hri_acq.cli"]
    hosts = [m for m in g if m.rpartition(".")[2] in ("host", "node_host")]
    assert hosts and all("gaze4hri_acq.session_assembly" in g[m] for m in hosts)
    # a function-level import is an arrow too (the gaze node loads the benchmark's estimator on demand)
    lazy = [e for e in edges if e.source == "gaze4hri_acq.nodes.gaze_node" and e.target.startswith("gaze4hri_bench.")]
    assert lazy and not any(e.module_level for e in lazy)
    assert {structure.package_of(e.target) for e in edges} == set(PACKAGES)


@pytest.mark.unit
@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_cycle(package):
    _, edges = _edges()
    found = [c for c in structure.cycles(structure.graph(list(edges))) if structure.package_of(c[0]) == package]
    assert found == [], "import cycles: " + "; ".join(" -> ".join(c) for c in found)


@pytest.mark.unit
@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_from_a_higher_package_floor(package):
    _, edges = _edges()
    found = [e for e in structure.cross_package_violations(list(edges)) if structure.package_of(e.source) == package]
    assert found == [], _names(found)


@pytest.mark.unit
@pytest.mark.parametrize("package", PACKAGES)
def test_the_parts_of_a_package_stand_on_floors(package):
    pkgs, edges = _edges()
    found = structure.part_back_arrows(list(edges), pkgs)[package]
    assert found == [], _names(found)


@pytest.mark.unit
def test_the_cycle_finder_finds_a_cycle():
    assert structure.cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
    assert structure.cycles({"a": {"b", "c"}, "b": {"c"}, "c": set()}) == []


def _imp(source: str, target: str, module_level: bool = True):
    return structure.Import(source, target, 1, module_level)


@pytest.mark.unit
def test_a_function_level_import_closes_a_cycle_the_module_level_graph_lacks():
    edges = [_imp("p.a", "p.b"), _imp("p.b", "p.a", module_level=False)]
    assert structure.cycles(structure.graph(edges)) == [["p.a", "p.b", "p.a"]]
    assert structure.cycles(structure.graph(edges, module_level_only=True)) == []


@pytest.mark.unit
def test_cross_package_floors():
    edges = [_imp("gaze4hri_acq.x", "gaze4hri_sim.y"), _imp("gaze4hri_acq.x", "gaze4hri_bench.y"),
             _imp("gaze4hri_sim.y", "gaze4hri_core.z"), _imp("gaze4hri_sim.y", "gaze4hri_bench.y"),
             _imp("gaze4hri_core.z", "gaze4hri_acq.x")]
    assert structure.cross_package_violations(edges) == edges[3:]  # sideways (sim -> bench) and up (core -> acq)


@pytest.mark.unit
def test_the_lighter_arrow_of_a_loop_between_parts_is_the_one_up():
    pkgs = {"p": structure.Package("p")}
    edges = [_imp("p.low.a", "p.high"), _imp("p.high", "p.low.b"), _imp("p.high", "p.low.c"),
             _imp("p.low.a", "p.other"), _imp("p", "p.low.a")]  # the package's __init__ is no part
    assert structure.part_back_arrows(edges, pkgs)["p"] == [edges[0]]
