"""The commands gaze4hri-acq prints for the operator to run again (issue 29 item 1): the
resume command after an interrupted session and, with --quiet, the redo command for
failed trials; each alone on the line after what it does, quoted so that an output
folder with a space stays one argument when the line is pasted into a shell."""
from __future__ import annotations

import shlex

import pytest

BASE = ["session", "--subject", "S01", "--backend", "sim", "--resolution", "160x90"]


@pytest.mark.unit
def test_an_interrupted_session_prints_the_resume_command_on_its_own_line(tmp_path, monkeypatch, capsys):
    from gaze4hri_core.errors import SessionError

    from gaze4hri_acq import cli

    out = tmp_path / "lab data [pilot]"

    def interrupted(args, command):
        err = SessionError("session interrupted (SIGINT)", str(out / "S01"),
                           "no trial was recording; continue with --resume")
        err.exit_code = 130
        raise err

    monkeypatch.setattr(cli, "run_session_args", interrupted)
    argv = [*BASE, "--out-dir", str(out), "--trials", "illum010_P1", "arc_P5"]
    assert cli.main(argv) == 130
    lines = capsys.readouterr().err.splitlines()
    assert lines[0].startswith("error: session interrupted (SIGINT)")
    i = lines.index("continue the session:")
    assert shlex.split(lines[i + 1]) == ["gaze4hri-acq", *BASE, "--out-dir", str(out), "--resume"]


@pytest.mark.unit
def test_quiet_prints_the_redo_command_on_its_own_line(tmp_path, monkeypatch, capsys):
    from gaze4hri_core.session import mark, new_manifest, save_manifest

    from gaze4hri_acq import cli

    out = tmp_path / "lab data"
    sdir = out / "S01"
    sdir.mkdir(parents=True)
    m = new_manifest("S01", "sim", ["illum010_P1", "arc_P5"])
    mark(m, "illum010_P1", "done")
    mark(m, "arc_P5", "failed", "protective stop")
    save_manifest(sdir, m)
    monkeypatch.setattr(cli, "run_session_args", lambda args, command: sdir)
    assert cli.main([*BASE, "--out-dir", str(out), "--quiet", "--trials", "illum010_P1", "arc_P5"]) == 1
    lines = capsys.readouterr().out.splitlines()
    i = lines.index("some trials failed; record them again:")
    assert shlex.split(lines[i + 1]) == ["gaze4hri-acq", *BASE, "--out-dir", str(out), "--quiet", "--redo", "arc_P5"]
