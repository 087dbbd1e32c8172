"""Messages after a Ctrl-C and while a session runs (issue 24, item 5): the interrupt
hint tells what the manifest says (a trial this run interrupted while recording, or
none: the stop came between trials), and a session line (the eye-head calibration) is
printed once, by the operator view when it runs, else on stdout."""
from __future__ import annotations

import datetime as dt
import io

import pytest
from gaze4hri_core.session import load_manifest, mark, new_manifest, save_manifest

TRIALS = ["illum100_P5", "illum100_P2", "arc_P5"]


def _session(tmp_path):
    sdir = tmp_path / "S01"
    sdir.mkdir()
    m = new_manifest("S01", "sim", TRIALS)
    mark(m, "illum100_P5", "done")
    save_manifest(sdir, m)
    return sdir


@pytest.mark.unit
def test_between_trials_no_trial_was_recording(tmp_path):
    from gaze4hri_acq.session_assembly import interrupt_hint

    sdir = _session(tmp_path)
    since = dt.datetime.now(dt.timezone.utc)
    hint = interrupt_hint(sdir, since)
    assert hint == "no trial was recording; continue with --resume"
    assert "marked incomplete" not in hint


@pytest.mark.unit
def test_a_trial_interrupted_while_recording_is_named(tmp_path):
    from gaze4hri_acq.session_assembly import interrupt_hint

    sdir = _session(tmp_path)
    m = load_manifest(sdir)
    mark(m, "arc_P5", "incomplete", "interrupted: SIGINT")  # an earlier run's interruption
    save_manifest(sdir, m)
    since = dt.datetime.now(dt.timezone.utc) + dt.timedelta(milliseconds=5)
    assert interrupt_hint(sdir, since) == "no trial was recording; continue with --resume"  # not this run's
    m = load_manifest(sdir)
    mark(m, "illum100_P2", "recording")
    mark(m, "illum100_P2", "incomplete", "interrupted: SIGINT")  # as orchestrator.session does on Ctrl-C
    m.trials["illum100_P2"].ended = (since + dt.timedelta(seconds=1)).isoformat(timespec="milliseconds")
    save_manifest(sdir, m)
    assert interrupt_hint(sdir, since) == ("trial illum100_P2 was recording and is marked incomplete; "
                                           "continue with --resume (it is recorded again)")
    assert interrupt_hint(tmp_path / "none", since) == "continue with --resume"  # no manifest: no claim


@pytest.mark.unit
def test_a_session_line_is_printed_once(tmp_path, capsys):
    """With the operator view, the line goes to its console only; without it, to stdout once."""
    from gaze4hri_acq.operator_view import OperatorView
    from gaze4hri_acq.orchestrator.session import _say, _View
    from rich.console import Console

    buf = io.StringIO()
    view = OperatorView(object(), tmp_path, console=Console(file=buf, width=120), keys=None)
    _say(view, "eye-head calibration of S01 (none found): residual 0.4 mm -> x.yaml")
    assert buf.getvalue().count("eye-head calibration of S01") == 1
    assert capsys.readouterr().out == ""
    _say(_View(), "eye-head calibration of S01 (none found)")
    assert capsys.readouterr().out.count("eye-head calibration of S01") == 1
