"""The seven built-in configurations as spec files (issue 30, item 1): each loads into the
MethodSpec the Python literal of specs.py held before the move, field for field and
type for type (tests/bench/method_specs_python_literals.json, written from the literals
at the move), in the same registry order with the same aliases; each passes the ONNX
check against a network with its signature; the files ship as package data."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from gaze4hri_bench.spec_file import check_onnx, load_spec, spec_hash
from gaze4hri_bench.specs import ALIASES, BUILTIN_ORDER, SPEC_DIR, SPECS

LITERALS = json.loads((Path(__file__).with_name("method_specs_python_literals.json")).read_text())


def test_registry_order_and_aliases_as_before():
    assert list(SPECS.names()) == list(LITERALS["specs"]) == list(BUILTIN_ORDER)
    assert ALIASES == LITERALS["aliases"]
    assert sorted(p.stem for p in SPEC_DIR.glob("*.yaml")) == sorted(BUILTIN_ORDER)


@pytest.mark.parametrize("name", list(LITERALS["specs"]))
def test_builtin_spec_file_is_the_python_literal(name):
    spec, aliases = load_spec(SPEC_DIR / f"{name}.yaml", relative_weights=False)
    assert spec == SPECS[name]
    old = LITERALS["specs"][name]
    for f in dataclasses.fields(spec):
        v = getattr(spec, f.name)
        assert json.loads(json.dumps(v)) == old[f.name], f.name  # floats: repr round trip, exact
        if isinstance(v, (tuple, list)):  # the literals held tuples (dict keys and hashes depend on it)
            assert isinstance(v, tuple), f.name
    assert all(isinstance(d, tuple) for d in (*spec.onnx_inputs.values(), *spec.onnx_outputs.values()))
    assert aliases == tuple(a for a, t in LITERALS["aliases"].items() if t == name)


def test_mcgaze_pixel_unit_mean_is_the_literal_division():
    """MCGaze's spec gives mmdet's pixel-unit mean/std with scale 1 (its own config);
    folded, they are the very floats 123.675 / 255 ... the literal held."""
    s = SPECS["mcgaze_gaze360"]
    assert s.mean == (123.675 / 255, 116.28 / 255, 103.53 / 255)
    assert s.std == (58.395 / 255, 57.12 / 255, 57.375 / 255)


@pytest.mark.parametrize("name", list(BUILTIN_ORDER))
def test_builtin_specs_pass_the_onnx_check(name, tiny_models):
    check_onnx(SPECS[name], tiny_models / SPECS[name].weights_file)


def test_spec_hash_follows_every_field():
    a = SPECS["l2cs_gaze360"]
    assert spec_hash(a) == spec_hash(dataclasses.replace(a))
    assert spec_hash(a) != spec_hash(dataclasses.replace(a, output="l2cs_bins_first_as_pitch"))
    assert len({spec_hash(s) for s in SPECS.values()}) == len(SPECS)


def test_spec_files_are_package_data():
    text = (Path(__file__).parents[2] / "src/gaze4hri_bench/pyproject.toml").read_text()
    assert '"gaze4hri_bench" = ["specs/*.yaml"]' in text
