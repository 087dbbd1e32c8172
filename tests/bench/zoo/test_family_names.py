"""The model zoo's family table answers an unknown family with the registry's one line."""
from __future__ import annotations

import pytest
from gaze4hri_bench.specs import SPECS
from gaze4hri_bench.zoo import families
from gaze4hri_core.registry import UnknownName

pytestmark = pytest.mark.unit


def test_family_table_lists_methods_in_spec_order():
    for fam, methods in families.FAMILIES.items():
        assert methods == [n for n, s in SPECS.items() if s.family == fam]
    assert set(families.FAMILIES) == {s.family for s in SPECS.values()}


def test_unknown_family_is_the_registry_line():
    with pytest.raises(UnknownName) as e:
        families.load_family("gazetrr")
    assert str(e.value).startswith("unknown model family 'gazetrr' (model zoo): did you mean gazetr")
    assert str(e.value).endswith(", ".join(families.FAMILIES))
