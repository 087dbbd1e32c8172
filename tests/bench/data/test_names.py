"""The reader's and the exporter's named tables (data formats, export formats, trial ids)
answer an unknown name with the registry's one line: what, where, did you mean, known."""
from __future__ import annotations

import pytest
from gaze4hri_bench.cli import main
from gaze4hri_bench.data.reader import BACKENDS, FORMATS, Dataset
from gaze4hri_core.registry import UnknownName

pytestmark = pytest.mark.unit


def test_data_format_table():
    assert FORMATS == ("auto", "session", "study") and BACKENDS.get("Study").name == "study"  # case-insensitive
    with pytest.raises(UnknownName) as e:
        Dataset("/nonexistent", format="sesion")
    assert str(e.value) == ("unknown data format 'sesion' (--format): did you mean session? "
                            "known: session, study (or auto: detect from the folder)")


@pytest.mark.parametrize("fmt", ["session", "study"])
def test_trial_filter_names_the_option(fmt, tmp_path):
    with pytest.raises(UnknownName) as e:
        Dataset(tmp_path, trials=["arc_P11"], format=fmt)
    assert e.value.line().startswith("unknown trial id 'arc_P11' (--trials): did you mean arc_P1")
    assert e.value.line().count("(--trials)") == 1


@pytest.mark.parametrize("args,line", [
    (["--format", "studdy"],
     "unknown export format 'studdy' (--format): did you mean study? known: study, ethxgaze-h5"),
    (["--format", "study", "--data-format", "sesion"],
     "unknown data format 'sesion' (--data-format): did you mean session? known: session, study "
     "(or auto: detect from the folder)"),
])
def test_export_cli_refuses_an_unknown_format_in_one_line(args, line, tmp_path, capsys):
    assert main(["export", str(tmp_path), str(tmp_path / "out"), *args]) == 2
    assert capsys.readouterr().err.strip() == f"gaze4hri-bench: error: {line}"
    assert not (tmp_path / "out").exists()
