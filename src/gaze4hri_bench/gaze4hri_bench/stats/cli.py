"""``gaze4hri-bench analyze RESULTS... --out REPORT [--alpha 0.05] [--profile reference|study]
[--exclusions NAME|YAML] [--min-subjects 3] [--allow-mixed-profiles]``: every analysis of
the study from per-frame results (docs/statistics.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_arguments", "main"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "results", nargs="+", type=Path, metavar="RESULTS", help="per-frame results Parquet files or folders of them"
    )
    parser.add_argument(
        "--out",
        type=Path,
        required=True,
        metavar="REPORT",
        help="report folder (tables/, figures/, report.md, report.html)",
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level of the Holm-corrected tests (default 0.05)"
    )
    parser.add_argument("--no-figures", action="store_true", help="tables and report only")
    from .analysis_profiles import PROFILES

    parser.add_argument(
        "--profile",
        default="auto",
        choices=["auto", *sorted(PROFILES)],
        help="analysis profile: "
        + "; ".join(f"{n}: {p.description}" for n, p in sorted(PROFILES.items()))
        + "; auto (default): the results' pipeline profile when an analysis profile has its name, else reference",
    )
    parser.add_argument(
        "--exclusions",
        default=None,
        metavar="NAME|YAML",
        help="exclusion list applied before every analysis: a shipped list (study, none) or a YAML file (default: the "
        "profile's; reference: none, study: study)",
    )
    parser.add_argument(
        "--min-subjects",
        type=int,
        default=3,
        metavar="N",
        help="fewest subjects for an inferential analysis; with fewer it is skipped with the reason, descriptive "
        "tables stay (default 3)",
    )
    parser.add_argument(
        "--allow-mixed-profiles",
        action="store_true",
        help="analyse results of different pipeline profiles together (refused by default; files without a profile "
        "count as reference)",
    )


def main(args: argparse.Namespace) -> int:
    from gaze4hri_core.errors import Gaze4HRIError

    from . import analyze

    if args.out.exists() and not args.out.is_dir():
        raise Gaze4HRIError(f"--out {args.out} is a file", "analyze --out", "give a folder for the report")
    try:
        s = analyze(
            list(args.results),
            args.out,
            alpha=args.alpha,
            figures=not args.no_figures,
            profile=args.profile,
            exclusions=args.exclusions,
            min_subjects=args.min_subjects,
            allow_mixed_profiles=args.allow_mixed_profiles,
        )
    except OSError as e:  # unwritable report folder, full disk, unreadable input
        raise Gaze4HRIError(
            f"cannot read or write {e.filename or args.out}: {e.strerror or e}",
            "analyze",
            "check the paths and permissions",
        ) from None
    for w in s["warnings"]:
        print(f"gaze4hri-bench analyze: warning: {w}", file=sys.stderr)
    for name, a in s["analyses"].items():
        why = f" ({'; '.join(a['reasons'])})" if a["reasons"] else ""
        print(f"{name:18s} {a['status']:8s} N={a['n']}{why}")
    removed = sum(r["videos"] for r in s["exclusions"]["applied"])
    print(
        f"profile {s['profile']} ({s['profile_source']}), exclusions {s['exclusions']['name']} ({removed} video x "
        "method rows removed)"
    )
    print(f"report: {s['report_md']} and {s['report_html']} ({s['seconds']:.1f} s)")
    from .headline import headline, render

    try:
        rows = headline(args.out / "tables", args.alpha)
    except Exception as e:  # noqa: BLE001 - the report is written; a summary that fails must not fail the run
        print(
            f"gaze4hri-bench analyze: warning: headline results not printed ({type(e).__name__}: {e})", file=sys.stderr
        )
    else:
        if len(rows):
            import shutil

            width = shutil.get_terminal_size((140, 24)).columns if sys.stdout.isatty() else 140
            print(
                render(
                    rows,
                    f"Headline results (profile {s['profile']}, alpha {args.alpha}; best = lowest subject-level mean "
                    "error among the networks)",
                    width,
                ),
                end="",
            )
    return 0
