"""Each method's best and worst trial (lowest and highest mean angular error over its
valid frames, trials with at least ``min_valid`` valid frames), rendered as review
clips under ``<out>/review/`` with an ``index.json`` that the HTML report links
(``analyze`` reads it when present: stats/review_links.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from ..report_layout import REVIEW_INDEX
from .render import ReviewConfig, result_files, review_trial

__all__ = ["trial_means", "best_worst", "render_extremes", "INDEX"]

INDEX = REVIEW_INDEX


def trial_means(files: dict[str, Path]) -> pd.DataFrame:
    """key, subject, trial, mean_error_deg, valid_frames (valid frames only)."""
    out = []
    for k, p in files.items():
        df = pd.read_parquet(p, columns=["subject", "trial", "valid", "error_deg"])
        v = df[df["valid"]]
        g = v.groupby(["subject", "trial"], observed=True)["error_deg"].agg(["mean", "size"]).reset_index()
        g.columns = ["subject", "trial", "mean_error_deg", "valid_frames"]
        g.insert(0, "key", k)
        out.append(g)
    return (
        pd.concat(out, ignore_index=True)
        if out
        else pd.DataFrame(columns=["key", "subject", "trial", "mean_error_deg", "valid_frames"])
    )


def best_worst(files: dict[str, Path], min_valid: int = 5) -> list[dict]:
    """[{key, which: best|worst, subject, trial, mean_error_deg, valid_frames}]."""
    m = trial_means(files)
    m = m[m["valid_frames"] >= min_valid]
    picks = []
    for k, g in m.groupby("key", sort=True):
        g = g.sort_values(["mean_error_deg", "subject", "trial"])
        for which, r in (("best", g.iloc[0]), ("worst", g.iloc[-1])):
            picks.append(
                {
                    "key": k,
                    "which": which,
                    "subject": str(r["subject"]),
                    "trial": str(r["trial"]),
                    "mean_error_deg": float(r["mean_error_deg"]),
                    "valid_frames": int(r["valid_frames"]),
                }
            )
    return picks


def render_extremes(
    results: Path,
    out: Path | None = None,
    data: Path | None = None,
    methods: tuple[str, ...] | None = None,
    min_valid: int = 5,
    log=print,
    max_frames: int | None = None,
) -> Path:
    """Render each method's best and worst trial; write ``<out>/index.json`` (list of
    picks with ``mp4`` and ``png`` relative to ``out``); returns the index path."""
    files = result_files(results, methods)
    out = Path(out or Path(results) / "review")
    entries = []
    for pick in best_worst(files, min_valid):
        sub = out / pick["key"] / pick["which"]
        r = review_trial(
            ReviewConfig(
                Path(results), pick["trial"], pick["subject"], (pick["key"],), data, sub, max_frames=max_frames
            ),
            log,
        )
        entries.append({**pick, "mp4": os.path.relpath(r.mp4, out), "png": os.path.relpath(r.png, out)})
    out.mkdir(parents=True, exist_ok=True)
    idx = out / INDEX
    tmp = idx.with_name(f".{INDEX}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(entries, indent=1), "utf-8")
    os.replace(tmp, idx)
    return idx
