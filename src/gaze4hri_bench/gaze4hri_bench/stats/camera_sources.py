"""The report's camera-pose-source check (issue 13): where a session recorded both the
robot's forward kinematics x hand-eye and a motion-capture rigid body on the camera,
how far the two camera poses disagree, per trial and per subject. The pipeline
summarises each trial (pipeline.run.camera_source_summary) into the results'
provenance (``camera_sources``); nothing here reads frames."""

from __future__ import annotations

import pandas as pd

__all__ = ["camera_source_table", "camera_source_subjects", "TRIAL_COLUMNS", "SUBJECT_COLUMNS"]

TRIAL_COLUMNS = [
    "subject",
    "trial",
    "source",
    "frames",
    "median_mm",
    "p95_mm",
    "max_mm",
    "median_deg",
    "p95_deg",
    "max_deg",
]
SUBJECT_COLUMNS = [
    "subject",
    "source",
    "trials",
    "frames",
    "median_mm",
    "p95_mm",
    "max_mm",
    "median_deg",
    "p95_deg",
    "max_deg",
]


def camera_source_table(files: list) -> pd.DataFrame | None:
    """One row per trial with both camera poses, from the used files' provenance (each
    trial once, whichever method's file carries it); None when no trial has both."""
    rows: dict[str, dict] = {}
    for f in files:
        if getattr(f, "status", "used") != "used":
            continue
        for key, rec in ((f.metadata or {}).get("camera_sources") or {}).items():
            if key in rows or not isinstance(rec, dict):
                continue
            subject, _, trial = str(key).partition("__")
            rows[key] = {"subject": subject, "trial": trial, **{c: rec.get(c) for c in TRIAL_COLUMNS[2:]}}
    if not rows:
        return None
    return (
        pd.DataFrame(list(rows.values()), columns=TRIAL_COLUMNS)
        .sort_values(["subject", "trial"])
        .reset_index(drop=True)
    )


def camera_source_subjects(trials: pd.DataFrame) -> pd.DataFrame:
    """Per subject: the median over trials of the trial medians, the largest trial 95th
    percentile and the largest disagreement (a bumped or slipped camera body shows in
    the maxima first)."""
    g = trials.groupby(["subject", "source"], sort=True)
    out = g.agg(
        trials=("trial", "count"),
        frames=("frames", "sum"),
        median_mm=("median_mm", "median"),
        p95_mm=("p95_mm", "max"),
        max_mm=("max_mm", "max"),
        median_deg=("median_deg", "median"),
        p95_deg=("p95_deg", "max"),
        max_deg=("max_deg", "max"),
    )
    return out.reset_index()[SUBJECT_COLUMNS]
