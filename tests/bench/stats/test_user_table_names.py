"""A user's spec-file method in the report (issue 30, item 3): its spec's ``table_name``,
read from the results' provenance, names it in every table, as the study's names do."""
from __future__ import annotations

from types import SimpleNamespace

import pytest
from gaze4hri_bench.stats.experiments.shared import display_name, set_user_table_names
from gaze4hri_bench.stats.load import FileInfo
from gaze4hri_bench.stats.plan import user_table_names

pytestmark = pytest.mark.unit


def _file(method: str, spec: dict | None, status: str = "used") -> FileInfo:
    return FileInfo(f"{method}.parquet", "0" * 64, 10, "1", [method], ["crop"], {"spec": spec}, status=status)


def test_a_spec_files_table_name_names_the_method():
    loaded = SimpleNamespace(files=[
        _file("mynet", {"name": "mynet", "table_name": "MyNet (G360)"}),
        _file("puregaze_eth", {"name": "puregaze_eth", "table_name": "not this"}),  # the study's own name wins
        _file("other", {"name": "other", "table_name": "Other"}, status="excluded"),
        _file("head_pose", None),
    ])
    names = user_table_names(loaded)
    assert names == {"mynet": "MyNet (G360)"}
    try:
        set_user_table_names(names)
        assert [display_name(m) for m in ("mynet", "puregaze_eth", "other", "head_pose")] == [
            "MyNet (G360)", "PureGaze (E)", "other", "head_pose"]
    finally:
        set_user_table_names({})
    assert display_name("mynet") == "mynet"
