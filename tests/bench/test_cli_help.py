"""gaze4hri-bench as a newcomer meets it (issue 16): --version, and help text on every
option of every subcommand, with its default where it has one."""
from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

pytestmark = pytest.mark.unit


def test_version_and_exit_codes_in_the_top_help():
    v = subprocess.run(
        [sys.executable, "-m", "gaze4hri_bench.cli", "--version"], capture_output=True, text=True, timeout=60
    )
    assert v.returncode == 0 and v.stdout.startswith("gaze4hri-bench "), v.stderr
    h = subprocess.run(
        [sys.executable, "-m", "gaze4hri_bench.cli", "--help"], capture_output=True, text=True, timeout=60
    )
    assert h.returncode == 0 and "examples:" in h.stdout and "exit codes:" in h.stdout


@pytest.mark.parametrize("command", ["run", "methods", "models", "analyze", "demo", "export", "deviations", "review"])
def test_every_option_of_every_command_has_help(command):
    from gaze4hri_bench.cli import build_parser

    parser = build_parser(load=command)
    sp = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    missing = []
    stack = [(command, sp)]
    while stack:  # nested subcommands (models import/export/list/verify)
        name, p = stack.pop()
        for a in p._actions:
            if isinstance(a, argparse._SubParsersAction):
                stack.extend((f"{name} {n}", q) for n, q in a.choices.items())
            elif a.help is None and not isinstance(a, argparse._HelpAction):
                missing.append(f"{name} {'/'.join(a.option_strings) or a.dest}")
    assert not missing, f"options without help: {missing}"
