"""Commands printed for a person to run again (gaze4hri_core.commands, issue 29 item 1):
quoted so they run as pasted, and printed on a line of their own that a console never
breaks at its width (rich hard-wrapped a long ``--redo`` command before)."""
from __future__ import annotations

import io
import shlex

import pytest
from gaze4hri_core.commands import command_line, pip_install, print_command

LONG_DIR = "/data/lab sessions/" + "a_very_long_folder_name_" * 6 + "/S01 [pilot]"
ARGV = ["gaze4hri-acq", "session", "--subject", "S01", "--backend", "sim", "--out-dir", LONG_DIR, "--redo",
        "illum010_P1", "arc_P5"]


@pytest.mark.unit
def test_a_command_line_splits_back_into_its_arguments():
    line = command_line(ARGV)
    assert shlex.split(line) == ARGV  # a path with spaces and brackets stays one argument
    assert line.endswith("--redo illum010_P1 arc_P5")
    assert command_line(["gaze4hri-acq", "session", "--subject", "S01"]) == "gaze4hri-acq session --subject S01"


@pytest.mark.unit
def test_an_install_hint_is_not_globbed_by_the_shell():
    hint = pip_install("natnet==0.3.*")
    assert hint == "python -m pip install 'natnet==0.3.*'"
    assert shlex.split(pip_install("mediapipe==0.10.21", "attrs", no_deps=True)) == [
        "python", "-m", "pip", "install", "--no-deps", "mediapipe==0.10.21", "attrs"]


@pytest.mark.unit
@pytest.mark.parametrize("width", [40, 80])
@pytest.mark.parametrize("terminal", [False, True])
def test_a_long_command_stays_on_one_line_at_any_console_width(width, terminal):
    from rich.console import Console

    cmd = command_line(ARGV)
    assert len(cmd) > 2 * width
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=terminal, color_system="standard" if terminal else None)
    print_command(cmd, "record the failed trials again:", console=console, style="bold yellow")
    console.print("next line")
    plain = buf.getvalue()
    if terminal:
        import re

        plain = re.sub(r"\x1b\[[0-9;]*m", "", plain)
    assert plain.split("\n") == ["record the failed trials again:", cmd, "next line", ""]
    # without the helper rich breaks the same text at the width: what the operator copied before
    buf2 = io.StringIO()
    Console(file=buf2, width=width, color_system=None).print(cmd, markup=False, highlight=False)
    assert len(buf2.getvalue().rstrip("\n").split("\n")) > 1


@pytest.mark.unit
def test_without_a_console_the_command_is_written_on_its_own_line():
    buf = io.StringIO()
    print_command("gaze4hri-acq session --resume", "continue the session:", file=buf)
    assert buf.getvalue() == "continue the session:\ngaze4hri-acq session --resume\n"
    buf = io.StringIO()
    print_command("gaze4hri-acq session --resume", file=buf)
    assert buf.getvalue() == "gaze4hri-acq session --resume\n"
