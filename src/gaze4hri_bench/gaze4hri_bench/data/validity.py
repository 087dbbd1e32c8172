"""Per-frame validity with reasons, blink detection and human blink annotations.

Reasons (one per invalid frame, the first that applies in this order):
``trial_incomplete`` (the manifest marks the trial incomplete), ``dropped_frame``
(a placeholder row for a frame the camera counted but the bag lacks),
``duplicate_frame`` (a repeated frame number or stamp), ``before_stable_start`` (only
with GTOptions(sync="study"): before the mocap stream's stable start), ``mocap_lost`` (the head band
was not tracked: no pose within ``mocap_lost_s``), ``interp_gap`` (the poses around
the frame are further apart than the interpolation limit), then the face-based
``blink``, ``blink_uncertain`` (the study's annotation code 2, excluded like a blink)
and ``no_face``; last ``not_scored`` (the method's pipeline profile does not score
the frame: profiles.not_scored_mask). The study masks blinked frames out (Sezer et al., Sec. III-B,
as ETH-XGaze).

Blinks: a human annotation file takes precedence for every trial it lists; otherwise
the eye aspect ratio EAR = (|p2 - p6| + |p3 - p5|) / (2 |p1 - p4|) (Soukupova & Cech,
"Real-Time Eye Blink Detection using Facial Landmarks", CVWW 2016, Eq. 1) below
``EAR_RELATIVE`` x the trial's median EAR marks a blink (optionally also an absolute
``threshold``, e.g. ``EAR_THRESHOLD``). Annotation formats: docs/pipeline_data.md.
"""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.errors import SessionError
from gaze4hri_core.fileio import read_yaml

__all__ = [
    "REASONS",
    "DATA_REASONS",
    "FACE_REASONS",
    "PROFILE_REASONS",
    "EAR_THRESHOLD",
    "EAR_RELATIVE",
    "combine_reasons",
    "blink_from_ear",
    "load_blink_annotations",
    "annotation_mask",
    "apply_face_reasons",
    "count_reasons",
    "ANNOTATION_NAMES",
    "mask_to_ranges",
    "save_blink_annotations",
]

# no_ground_truth: a frame whose ground-truth gaze could not be computed (pipeline/run.py)
DATA_REASONS = ("trial_incomplete", "dropped_frame", "duplicate_frame", "before_stable_start", "mocap_lost",
                "interp_gap", "no_ground_truth")
FACE_REASONS = ("blink", "blink_uncertain", "no_face")
# not_scored: a frame the method's pipeline profile does not score (profiles.not_scored_mask)
PROFILE_REASONS = ("not_scored",)
REASONS = DATA_REASONS + FACE_REASONS + PROFILE_REASONS

# Soukupova & Cech (2016) report EAR of open eyes around 0.25-0.35 (subject dependent)
# and near 0.05-0.1 for closed eyes, and use 0.2 as the simple threshold baseline in
# their evaluation (Sec. 3, Fig. 3 / Table 1); MediaPipe face-mesh EAR of open eyes on
# our test photographs lies at 0.25-0.33, so 0.2 leaves a margin for half-closed
# downward gaze (lids lower when looking at the table) while catching closures.
EAR_THRESHOLD = 0.20
# The default rule is relative: EAR is subject dependent (Soukupova & Cech 2016, Sec. 2)
# and, within a trial, the gaze target is fixed, so the trial median is that subject's
# open-eye EAR at that gaze (lids lowered for table targets included); blinks cover
# ~5 % of frames (17/min x 0.15-0.3 s), so the median stays an open-eye value. Measured
# with MediaPipe's face mesh on 20 simulated trials, twice (2,677 and 2,666 frames, 88
# and 78 blinked; benchmarks/ear_blinks.py, docs/pipeline_data.md "Eye aspect ratio"):
# blinked frames 0.53-0.80 x the median (the top end seen from 25-32 deg camera yaw),
# open frames 0.90-1.0 x; 0.85 is the middle of that gap.
EAR_RELATIVE = 0.85

ANNOTATION_NAMES = ("annotations/blinks.yaml", "annotations/blinks.csv")


def combine_reasons(masks: dict[str, np.ndarray], n: int) -> np.ndarray:
    """Per-frame reason strings ('' when valid) from boolean masks, first in REASONS order."""
    out = np.full(n, "", dtype=object)
    for r in REASONS:
        m = masks.get(r)
        if m is None:
            continue
        m = np.asarray(m, bool)
        out[(out == "") & m] = r
    return out


def blink_from_ear(ear, threshold: float | None = None, min_frames: int = 1,
                   relative: float | None = EAR_RELATIVE) -> np.ndarray:
    """Blink mask from per-frame EAR of one trial (NaN: unknown -> not a blink):
    EAR < ``relative`` x the trial's median EAR (default, EAR_RELATIVE), or/and
    EAR < an absolute ``threshold`` (e.g. EAR_THRESHOLD = 0.2, the baseline of
    Soukupova & Cech 2016, Sec. 3). Runs shorter than ``min_frames`` are ignored (at
    30 fps a blink lasts 3-12 frames; default keeps all)."""
    if threshold is None and relative is None:
        raise ValueError("blink_from_ear needs an absolute threshold or a relative factor")
    e = np.asarray(ear, float)
    ok = np.isfinite(e)
    b = np.zeros(e.shape, bool)
    if threshold is not None:
        b |= ok & (e < threshold)
    if relative is not None and ok.any():
        b |= ok & (e < relative * np.nanmedian(e))
    if min_frames > 1 and b.any():
        out = np.zeros_like(b)
        i = 0
        while i < len(b):
            if b[i]:
                j = i
                while j < len(b) and b[j]:
                    j += 1
                if j - i >= min_frames:
                    out[i:j] = True
                i = j
            else:
                i += 1
        b = out
    return b


def load_blink_annotations(path: Path | str) -> dict[str, list[tuple[int, int]]]:
    """Human blink annotations: trial id -> inclusive frame ranges [(first, last), ...].

    YAML: ``{format: gaze4hri/blinks@1, subject: S01, trials: {illum100_P5: [[12, 15]]}}``
    (a trial listed with ``[]`` was annotated and has no blink). CSV: header
    ``trial,first_frame,last_frame``, one range per row. Frames are the ``frame`` column
    of the ground truth (0-based, recording order)."""
    p = Path(path)
    fix = "see docs/pipeline_data.md (blink annotations)"
    out: dict[str, list[tuple[int, int]]] = {}
    if p.suffix.lower() == ".csv":
        if not p.is_file():
            raise SessionError("blink annotation file not found", str(p), fix)
        with p.open(newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        for i, r in enumerate(rows, start=2):
            try:
                a, b = int(r["first_frame"]), int(r["last_frame"])
                trial = r["trial"].strip()
            except (KeyError, TypeError, ValueError):
                raise SessionError("invalid blink annotation row (need trial,first_frame,last_frame integers)",
                                   f"{p}:{i}", fix) from None
            out.setdefault(trial, []).append(_range(a, b, f"{p}:{i}", fix))
        return out
    raw = read_yaml(p, "blink annotation file", SessionError, fix)
    if not isinstance(raw, dict) or raw.get("format") != "gaze4hri/blinks@1" or not isinstance(raw.get("trials"), dict):
        raise SessionError("blink annotation file needs format: gaze4hri/blinks@1 and a trials: mapping", str(p), fix)
    for trial, ranges in raw["trials"].items():
        if ranges is None:
            ranges = []
        if not isinstance(ranges, list):
            raise SessionError(f"blink ranges of {trial} must be a list of [first, last]", str(p), fix)
        out[str(trial)] = []
        for r in ranges:
            if not (isinstance(r, (list, tuple)) and len(r) == 2):
                raise SessionError(f"blink range {r!r} of {trial} must be [first, last]", str(p), fix)
            out[str(trial)].append(_range(r[0], r[1], str(p), fix))
    return out


def _range(a, b, where, fix) -> tuple[int, int]:
    try:
        a, b = int(a), int(b)
    except (TypeError, ValueError):
        raise SessionError(f"blink range [{a}, {b}] must be integers", where, fix) from None
    if a < 0 or b < a:
        raise SessionError(f"blink range [{a}, {b}] must have 0 <= first <= last", where, fix)
    return a, b


def annotation_mask(frames, ranges: list[tuple[int, int]]) -> np.ndarray:
    """Boolean mask of ``frames`` inside any inclusive range."""
    f = np.asarray(frames, np.int64)
    m = np.zeros(len(f), bool)
    for a, b in ranges:
        m |= (f >= a) & (f <= b)
    return m


def apply_face_reasons(gt: pd.DataFrame, blink=None, no_face=None, blink_uncertain=None) -> pd.DataFrame:
    """Copy of the ground-truth table with face-based reasons added to frames that are
    still valid (data reasons win): ``blink``, ``blink_uncertain`` then ``no_face``
    (boolean masks, len(gt))."""
    df = gt.copy()
    reason = np.array(df["invalid_reason"].fillna("").astype(str).to_numpy(), dtype=object)
    for name, m in (("blink", blink), ("blink_uncertain", blink_uncertain), ("no_face", no_face)):
        if m is None:
            continue
        m = np.asarray(m, bool)
        reason[(reason == "") & m] = name
    df["invalid_reason"] = reason
    df["valid"] = reason == ""
    return df


def count_reasons(gt: pd.DataFrame) -> dict[str, int]:
    """How many frames each reason removed (every reason listed, zeros included), plus
    ``valid`` and ``total``."""
    r = gt["invalid_reason"].fillna("").astype(str)
    out = {k: int((r == k).sum()) for k in REASONS}
    out["valid"] = int((r == "").sum())
    out["total"] = len(gt)
    return out


def mask_to_ranges(frames, mask) -> list[tuple[int, int]]:
    """Inclusive (first, last) frame ranges of consecutive True rows (rows in frame order)."""
    f = np.asarray(frames, np.int64)
    m = np.asarray(mask, bool)
    out: list[tuple[int, int]] = []
    start = None
    for i in range(len(f)):
        if m[i] and start is None:
            start = i
        if start is not None and (not m[i] or i == len(f) - 1 or f[i + 1] != f[i] + 1):
            end = i if m[i] else i - 1
            out.append((int(f[start]), int(f[end])))
            start = None
    return out


def save_blink_annotations(path: Path | str, ranges: dict[str, list[tuple[int, int]]], subject: str | None = None,
                           note: str | None = None) -> None:
    """Write a gaze4hri/blinks@1 YAML file (e.g. EAR proposals for a human to review),
    atomically; load_blink_annotations reads it back."""
    from gaze4hri_core.fileio import write_yaml_atomic

    data = {"format": "gaze4hri/blinks@1"}
    if subject:
        data["subject"] = subject
    if note:
        data["note"] = note
    data["trials"] = {t: [[int(a), int(b)] for a, b in r] for t, r in ranges.items()}
    write_yaml_atomic(path, data, header="Blink annotations: inclusive frame ranges per trial (docs/pipeline_data.md)")
