"""Method registry: every spec is registered, aliases resolve, unknown names fail with a
did-you-mean line, every entry builds and states its kind and inputs."""
from __future__ import annotations

import pytest
from gaze4hri_bench.methods import METHODS, get_method, method_names
from gaze4hri_bench.specs import ALIASES, SPECS
from gaze4hri_core.errors import Gaze4HRIError

from .conftest import all_method_names

pytestmark = pytest.mark.unit


def test_every_spec_and_baseline_is_registered():
    names = method_names()
    assert set(SPECS) <= set(names)
    assert {"head_pose", "straight"} <= set(names)
    assert "tiny_test" not in names and "tiny_test" in method_names(include_hidden=True)


@pytest.mark.parametrize("alias,target", sorted(ALIASES.items()))
def test_spec_aliases_resolve(alias, target):
    assert get_method(alias).name == target
    assert get_method(alias.upper()).name == target


@pytest.mark.parametrize(
    "bad,suggest", [("l2sc", "l2cs_gaze360"), ("puregaze_eht", "puregaze_eth"), ("straigt", "straight")]
)
def test_unknown_name_did_you_mean(bad, suggest):
    with pytest.raises(Gaze4HRIError) as ei:
        get_method(bad)
    line = ei.value.line()
    assert "\n" not in line and f"did you mean {suggest}" in line and "known:" in line
    assert "tiny_test" not in line  # hidden entries are not advertised


def test_duplicate_registration_refused():
    with pytest.raises(ValueError):
        METHODS.register("straight", "x:y", "baseline")
    with pytest.raises(ValueError):
        METHODS.register("new_method", "x:y", "baseline", aliases=("l2cs",))


def test_entries_are_lazy():
    e = METHODS.get("mcgaze")
    assert e.target.count(":") == 1 and e.kind == "onnx"


@pytest.mark.parametrize("name", all_method_names())
def test_every_entry_builds(name):
    m = get_method(name)
    assert m.name == name
    if m.kind == "onnx":
        assert m.spec is not None and m.spec.output in ("pitchyaw_rad", "yawpitch_rad", "l2cs_bins", "vector_b")
        assert set(m.input_types) == {"crop", "rectified"}
        assert m.resolve_input("best") == m.spec.input_type
        assert m.needs_face("crop") and not m.needs_face("rectified")
        with pytest.raises(Gaze4HRIError):
            m.resolve_input("sideways")
    else:
        assert m.resolve_input("crop") == "none" and not m.needs_face("none")
