"""``gaze4hri-bench export`` messages (issue 24, item 5): an unfinished trial is named
once (it was printed twice: by the loop and again by the summary), the export shows
`run`'s overall progress (trials i/N, frames, rate, ETA), and Ctrl-C ends with a resume
hint and exit code 130."""
from __future__ import annotations

import pytest
from gaze4hri_bench.cli import main
from gaze4hri_bench.export.study import export_study

pytestmark = pytest.mark.replay


def test_unfinished_trial_is_named_once_and_progress_has_an_eta(sessions, tmp_path, capsys):
    lines: list[str] = []
    res = export_study(
        sessions, tmp_path / "a", trials=["arc_P1", "conflict_left_H2"], lossless=False, log=lines.append, progress=True
    )
    err = capsys.readouterr().err
    assert len(res.written) == 1 and any("conflict_left_H2" in s for s in res.skipped)
    assert sum("conflict_left_H2" in m for m in lines) == 1, lines
    assert (
        "export trial 1/1" in err and "frames [" in err and "<" in err and "frame/s" in err
    )  # run's overall bar: elapsed<ETA
    assert (
        main(
            [
                "export",
                str(sessions),
                str(tmp_path / "b"),
                "--format",
                "study",
                "--trials",
                "arc_P1",
                "conflict_left_H2",
                "--no-lossless",
            ]
        )
        == 0
    )
    cap = capsys.readouterr()
    assert (cap.out + cap.err).count("S02/conflict_left_H2") == 1, cap.out
    assert "exported 1 trial(s)" in cap.out and "skipped 1 (named above)" in cap.out


def test_ctrl_c_says_how_to_resume(sessions, tmp_path, capsys, monkeypatch):
    from gaze4hri_bench.export import study

    def interrupted(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(study, "export_trial_study", interrupted)
    assert main(["export", str(sessions), str(tmp_path / "c"), "--format", "study", "--trials", "arc_P1"]) == 130
    err = capsys.readouterr().err
    assert "re-run the same command to resume" in err and "exported trials are kept" in err
