"""``gaze4hri-bench analyze RESULTS... --out REPORT [--alpha 0.05]``: every analysis of
the study from per-frame results (docs/statistics.md)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", nargs="+", type=Path, metavar="RESULTS", help="per-frame results Parquet files or folders of them")
    parser.add_argument("--out", type=Path, required=True, metavar="REPORT", help="report folder (tables/, figures/, report.md, report.html)")
    parser.add_argument("--alpha", type=float, default=0.05, help="significance level of the Holm-corrected tests (default 0.05)")
    parser.add_argument("--no-figures", action="store_true", help="tables and report only")


def main(args: argparse.Namespace) -> int:
    from gaze4hri_core.errors import Gaze4HRIError

    from . import analyze

    if args.out.exists() and not args.out.is_dir():
        raise Gaze4HRIError(f"--out {args.out} is a file", "analyze --out", "give a folder for the report")
    try:
        s = analyze(list(args.results), args.out, alpha=args.alpha, figures=not args.no_figures)
    except OSError as e:  # unwritable report folder, full disk, unreadable input
        raise Gaze4HRIError(f"cannot read or write {e.filename or args.out}: {e.strerror or e}", "analyze", "check the paths and permissions") from None
    for w in s["warnings"]:
        print(f"gaze4hri-bench analyze: warning: {w}", file=sys.stderr)
    for name, a in s["analyses"].items():
        why = f" ({'; '.join(a['reasons'])})" if a["reasons"] else ""
        print(f"{name:18s} {a['status']:8s} N={a['n']}{why}")
    print(f"report: {s['report_md']} and {s['report_html']} ({s['seconds']:.1f} s)")
    return 0
