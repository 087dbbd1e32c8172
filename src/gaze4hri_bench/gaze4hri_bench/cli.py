"""``gaze4hri-bench``: the benchmark's command line.

Subcommands live in their own modules and are imported lazily, so ``--help`` is fast
and a heavy backend (torch, onnxruntime) loads only when its command runs. Each
module exposes ``add_arguments(parser)`` and ``main(args) -> int``.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from gaze4hri_core.errors import Gaze4HRIError

# name -> (module, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "predict": ("gaze4hri_bench.predict",
                "a method on your own video, image folder or camera -> annotated video + per-frame table"),
    "run": ("gaze4hri_bench.pipeline.cli_run", "run gaze methods on recorded sessions -> per-frame Parquet"),
    "methods": ("gaze4hri_bench.pipeline.cli_methods", "list registered methods and whether their weights are present"),
    "models": ("gaze4hri_bench.zoo.cli", "import, export, list and verify ONNX models of the official checkpoints"),
    "analyze": ("gaze4hri_bench.stats.cli",
                "subject-level statistics, tables, figures and report from per-frame results"),
    "demo": ("gaze4hri_bench.demo", "simulate a small session, benchmark it and write the report"),
    "export": ("gaze4hri_bench.export.cli", "write sessions in the study's layout or as ETH-XGaze HDF5 training sets"),
    "deviations": ("gaze4hri_bench.pipeline.deviations",
                   "measure each pipeline-profile setting (study vs reference) with a perfect network"),
    "review": ("gaze4hri_bench.review.cli",
               "render a trial's video with ground-truth and estimated gaze arrows (MP4 + contact sheet)"),
}

#: commands whose interrupted run the same command continues (finished parts, subjects and trials are kept)
RESUMABLE = ("run", "demo", "deviations")

_EPILOG = """\
examples:
  gaze4hri-bench demo                                   # simulated sessions -> benchmark -> report (out/demo)
  gaze4hri-bench predict --video my.mp4 --method head_pose   # a method on your own video (annotated MP4 + table)
  gaze4hri-bench methods                                # methods, weight status, import commands
  gaze4hri-bench run --data sessions --out results      # every method with weights + the baselines
  gaze4hri-bench analyze results --out report           # statistics, tables, figures, report.html
  gaze4hri-bench COMMAND --help                         # a command's options, defaults and examples

exit codes: 0 done (a study-layout trial the release lacks files for is listed and
skipped), 1 run done but a recorded bag is damaged (CRC mismatch; listed at the end,
results written for the others), 2 bad input
or a refusal (one line on stderr), 3 missing weights for a named method, 130 interrupted (Ctrl-C).
"""


def build_parser(load: str | None = None) -> argparse.ArgumentParser:
    from gaze4hri_core import __version__

    p = argparse.ArgumentParser(
        prog="gaze4hri-bench",
        description="Gaze4HRI offline benchmark: recorded sessions -> gaze errors -> statistics.",
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_EPILOG,
    )
    p.add_argument("--version", action="version", version=f"gaze4hri-bench {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for name, (mod, help_) in SUBCOMMANDS.items():
        sp = sub.add_parser(name, help=help_, description=help_)
        if name == load:
            try:
                module = importlib.import_module(mod)
            except ModuleNotFoundError as e:
                if e.name and e.name.startswith("gaze4hri_bench"):
                    raise Gaze4HRIError(f"command '{name}' is not available in this build", mod,
                                        "update gaze4hri") from None
                raise
            module.add_arguments(sp)
            sp.set_defaults(_main=module.main)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    cmd = next((a for a in argv if not a.startswith("-")), None)
    if cmd in SUBCOMMANDS:
        from ._console import setup

        # before the subcommand imports MediaPipe, TFLite, Ultralytics
        setup(native_filter=cmd in ("run", "demo", "predict"))
    try:
        parser = build_parser(load=cmd if cmd in SUBCOMMANDS else None)
        args = parser.parse_args(argv)
        if not getattr(args, "_main", None):
            parser.print_help()
            return 0 if not argv else 2
        return int(args._main(args) or 0)
    except Gaze4HRIError as e:
        print(f"gaze4hri-bench: error: {e.line()}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("gaze4hri-bench: interrupted", file=sys.stderr)
        if cmd in RESUMABLE:  # on a line of its own, quoted: it is copied to run
            from gaze4hri_core.commands import command_line, print_command

            print_command(command_line(["gaze4hri-bench", *argv]), "run the same command again to resume:",
                          file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
