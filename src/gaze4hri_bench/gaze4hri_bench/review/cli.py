"""``gaze4hri-bench review RESULTS --trial ID``: a trial's video with the ground-truth
and each method's gaze arrows, errors and validity reasons (MP4 + contact sheet), or
``--extremes``: each method's best and worst trial, linked by the HTML report."""

from __future__ import annotations

import argparse
from pathlib import Path

from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["add_arguments", "main"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = (
        "examples:\n  gaze4hri-bench review results --trial arc_P5 --methods l2cs_gaze360 head_pose\n"
        "  gaze4hri-bench review results --extremes --out report/review"
    )
    p.add_argument("results", type=Path, help="folder of per-frame results (`gaze4hri-bench run --out`)")
    p.add_argument("--trial", help="trial id to render, e.g. arc_P5")
    p.add_argument("--subject", help="subject id, when several subjects recorded the trial")
    p.add_argument(
        "--methods",
        "-m",
        nargs="+",
        metavar="METHOD",
        help="methods (or method__input keys) to draw; default: all in RESULTS",
    )
    p.add_argument(
        "--data", type=Path, help="the sessions the run read (default: the run's --data, from the results metadata)"
    )
    p.add_argument("--out", type=Path, help="output folder (default: RESULTS/review)")
    p.add_argument(
        "--extremes", action="store_true", help="render each method's best and worst trial and write index.json"
    )
    p.add_argument(
        "--arrow-length", type=float, default=0.25, help="arrow length in metres, from the eye midpoint (default 0.25)"
    )
    p.add_argument("--fps", type=float, help="video frame rate (default: the trial's)")


def main(args: argparse.Namespace) -> int:
    if args.arrow_length <= 0:
        raise Gaze4HRIError(
            f"--arrow-length must be positive, got {args.arrow_length}", "--arrow-length", "use e.g. 0.25"
        )
    if args.extremes:
        from .extremes import render_extremes

        idx = render_extremes(args.results, args.out, args.data, tuple(args.methods) if args.methods else None)
        print(f"wrote {idx}")
        return 0
    if not args.trial:
        raise Gaze4HRIError("no trial given", "gaze4hri-bench review", "pass --trial ID (or --extremes)")
    from .render import ReviewConfig, review_trial

    review_trial(
        ReviewConfig(
            args.results,
            args.trial,
            args.subject,
            tuple(args.methods) if args.methods else None,
            args.data,
            args.out,
            args.arrow_length,
            fps=args.fps,
        )
    )
    return 0
