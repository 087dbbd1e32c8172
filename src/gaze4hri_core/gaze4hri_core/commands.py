"""Commands printed for a person to run again (a redo, a resume, an install): quoted so
they run as pasted (a path with a space stays one argument, ``x==1.*`` is not globbed)
and printed on a line of their own that no console breaks at its width (issue 29: rich
hard-wrapped ``... --redo ID`` at the terminal width, and a copied command lost its trial).
Both halves use it: the acquisition's operator view and CLI, the benchmark's CLIs."""
from __future__ import annotations

import shlex
import sys
from collections.abc import Iterable

__all__ = ["command_line", "pip_install", "print_command"]


def command_line(argv: Iterable[object]) -> str:
    """``argv`` as one shell line that runs as printed: each argument quoted where a POSIX
    shell needs it (``shlex.join``)."""
    return shlex.join(str(a) for a in argv)


def pip_install(*requirements: str, no_deps: bool = False) -> str:
    """The install hint for ``requirements`` (``python -m pip install ...``), quoted."""
    return command_line(["python", "-m", "pip", "install", *(["--no-deps"] if no_deps else []), *requirements])


def print_command(command: str, lead: str | None = None, *, console=None, file=None, style: str | None = None) -> None:
    """``lead`` (what the command does) on one line, then ``command`` alone on the next.

    Through a rich ``console`` (duck-typed: core does not import rich) the command is
    soft-wrapped: no line break is inserted at the console's width, the terminal wraps
    the long line itself and a copy of it is one command; markup and highlighting are
    off, so a path with brackets is printed as is. Without a console both lines are
    written to ``file`` (default stdout), which never breaks lines."""
    if console is not None:
        if lead:
            console.print(lead, style="bold", soft_wrap=True, markup=False, highlight=False)
        console.print(command, style=style, soft_wrap=True, markup=False, highlight=False)
        return
    out = file if file is not None else sys.stdout
    out.write((f"{lead}\n" if lead else "") + f"{command}\n")
    out.flush()
