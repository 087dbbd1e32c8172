"""``gaze4hri-bench export SESSIONS --format study|ethxgaze-h5 OUT``: our sessions in the
study's released layout (export.study), or any dataset as ETH-XGaze HDF5 training
sets (export.ethxgaze). Formats are a registry, not if/elif on names.

  gaze4hri-bench export sessions/ --format study study_export/
  gaze4hri-bench export sessions/ --format ethxgaze-h5 xgaze/ --test-subjects S02
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.registry import Registry

__all__ = ["add_arguments", "main", "EXPORTERS"]


def _study(args) -> int:
    from .study import export_study

    if args.data_format not in ("auto", "session"):
        raise Gaze4HRIError("--format study exports MCAP sessions", "--data-format", "pass a folder of sessions")
    try:
        res = export_study(args.sessions, args.out, subjects=args.subjects, trials=args.trials,
                           lossless=not args.no_lossless,
                           boxes=args.boxes, log=lambda m: print(m, flush=True), progress=_bars(args),
                           date=args.date)
    except KeyboardInterrupt:
        print("export interrupted: the trial being written was discarded (trials are written whole); re-run the same "
              "command to resume: exported trials are kept and reported as existing", file=sys.stderr, flush=True)
        raise
    # each skipped trial was named once above: the summary only counts them
    skipped = f"; skipped {len(res.skipped)} (named above)" if res.skipped else ""
    print(f"exported {len(res.written)} trial(s) to {args.out}" + skipped)
    return 0 if res.written else 2


def _eth(args) -> int:
    from .ethxgaze import export_ethxgaze

    try:
        res = export_ethxgaze(args.sessions, args.out, subjects=args.subjects, trials=args.trials, stride=args.stride,
                              data_format=args.data_format, val_subjects=tuple(args.val_subjects or ()),
                              test_subjects=tuple(args.test_subjects or ()), log=lambda m: print(m, flush=True),
                              progress=_bars(args))
    except KeyboardInterrupt:
        print("export interrupted: the HDF5 files are incomplete; re-run the same command to write them anew",
              file=sys.stderr, flush=True)
        raise
    for s, n in res.counts.items():
        print(f"{res.files[s]}: {n} patches")
    print(f"split: {res.split}" + (f"; skipped {len(res.skipped)} (named above)" if res.skipped else ""))
    return 0 if sum(res.counts.values()) else 2


def _bars(args) -> bool:
    """`run`'s progress bars: on a terminal unless --no-progress."""
    return not args.no_progress and sys.stderr.isatty()


#: format -> (function, help)
EXPORTERS: Registry[tuple] = Registry("export format", where="--format")
EXPORTERS.add("study", (_study, "the study's released per-trial layout (mp4 + npy; lossless FFV1 .mkv beside the mp4)"))
EXPORTERS.add("ethxgaze-h5", (_eth, "ETH-XGaze HDF5: 224x224 normalized BGR face_patch, face_gaze, face_head_pose, "
                                    "subject splits"))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("sessions", type=Path, metavar="SESSIONS",
                   help="folder of recorded sessions (or, for ethxgaze-h5, a study-layout dataset)")
    p.add_argument("out", type=Path, metavar="OUT", help="output folder")
    # names are checked by the registries in main (one error form for an unknown name)
    p.add_argument("--format", required=True, metavar="{" + ",".join(EXPORTERS) + "}",
                   help="; ".join(f"{k}: {v[1]}" for k, v in EXPORTERS.items()))
    p.add_argument("--data-format", metavar="{auto,session,study}", default="auto",
                   help="layout of SESSIONS (default: detect)")
    p.add_argument("--subjects", nargs="+", metavar="ID", help="only these subjects")
    p.add_argument("--trials", nargs="+", metavar="TRIAL", help="only these trial ids")
    p.add_argument("--no-lossless", action="store_true", help="study: write only the mp4 (no FFV1 rgb_video.mkv)")
    p.add_argument("--boxes", metavar="DETECTOR", default=None,
                   help="study: also write head_bboxes.npy with this face detector (e.g. yolov8_face_onnx as the "
                        "study, mediapipe, opencv_haar); default: none")
    p.add_argument("--date", metavar="YYYY-MM-DD", default=None,
                   help="study: the date folder (default: the first frame's UTC date); the study's dataset-level "
                        "scripts read only 2025-07-28..2025-08-06 (its config.py:417-426)")
    p.add_argument("--stride", type=int, default=1, metavar="N", help="ethxgaze-h5: every N-th frame")
    p.add_argument("--no-progress", action="store_true",
                   help="no progress bars (default: bars with the ETA on a terminal)")
    p.add_argument("--val-subjects", nargs="+", metavar="ID", help="ethxgaze-h5: subjects of the validation split")
    p.add_argument("--test-subjects", nargs="+", metavar="ID", help="ethxgaze-h5: subjects of the test split")


def main(args) -> int:
    from ..data.reader import BACKENDS

    export = EXPORTERS.get(args.format)[0]
    auto = args.data_format.lower() == "auto"
    args.data_format = "auto" if auto else BACKENDS.get(args.data_format, "--data-format").name
    if not Path(args.sessions).is_dir():
        raise Gaze4HRIError("data folder not found", str(args.sessions), "pass a folder of recorded sessions")
    return export(args)
