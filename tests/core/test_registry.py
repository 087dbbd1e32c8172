"""gaze4hri_core.registry.Registry: the one type behind every named table."""
from __future__ import annotations

import pytest
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.registry import Registry, UnknownName

pytestmark = pytest.mark.unit


def test_names_aliases_hidden_and_the_one_line_error():
    r: Registry[int] = Registry("colour", where="--colour", listing="(see docs/colours.md)")
    r.add("Red", 1, aliases=("rouge",))
    r.add("green", 2)
    r.add("secret", 3, hidden=True)
    assert list(r) == ["red", "green"] and len(r) == 2 and r.names(include_hidden=True) == ["red", "green", "secret"]
    assert r.get("RED") == r["rouge"] == 1 and "Rouge" in r and r.get("secret") == 3
    assert r.items() == [("red", 1), ("green", 2)] and r.values() == [1, 2]
    assert r.find("nope") is None and r.find("rouge") == 1
    with pytest.raises(UnknownName) as e:
        r.get("gren")
    line = str(e.value)
    assert isinstance(e.value, Gaze4HRIError) and isinstance(e.value, KeyError)
    assert (
        line == "unknown colour 'gren' (--colour): did you mean green or red? known: red, green (see docs/colours.md)"
    )
    with pytest.raises(ValueError, match="already registered"):
        r.add("rouge", 4)
    assert r.remove("rouge") == 1 and "red" not in r and "rouge" not in r


def test_lazy_entries_build_on_create():
    r = Registry("thing")
    e = r.register("joiner", "os.path:join", "function", summary="joins", aliases=("j",))
    assert r.get("j") is e and e.kind == "function"
    assert r.create("joiner") == "joiner"  # os.path.join("joiner")


def test_case_sensitive_table_answers_the_right_case_and_the_caller_place():
    r: Registry[int] = Registry("trial id", where="--trials", case_sensitive=True)
    r.add("illum010_P1", 1)
    r.add("arc_P1", 2)
    assert r.get("illum010_P1") == 1 and "illum010_p1" not in r and r.find("ARC_P1") is None
    with pytest.raises(UnknownName) as e:
        r.get("ILLUM010_P1", where="--redo")
    assert (
        str(e.value) == "unknown trial id 'ILLUM010_P1' (--redo): did you mean illum010_P1? known: illum010_P1, arc_P1"
    )
    assert r.unknown("x").line() == "unknown trial id 'x' (--trials): known: illum010_P1, arc_P1"
