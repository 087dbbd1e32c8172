"""What every experiment's analysis shares: the :class:`Analysis` record, subject-level
aggregation (frame -> video -> subject), listwise deletion, descriptives over subjects and
the paired-test helpers, as pure functions of the video-level table.

Input everywhere: ``videos``, one row per (subject, method, input, trial) with
``experiment``, ``condition``, ``target``, ``error_mean`` (mean angular error of the
video's valid frames, deg) and ``conflict_mean`` (deg), as made by
:func:`gaze4hri_bench.stats.load.load_results`. Subject values are means of the
subject's video means and the subject is the unit of inference (Sezer et al., arXiv
2605.04770, "Analyses (all subject-level)"). Each analysis returns an :class:`Analysis`: tidy tables
(columns documented in docs/statistics.md), its N, the subjects it excluded with the
reason, and what it skipped and why.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...specs import SPECS
from ..analysis_profiles import AnalysisProfile
from ..extended import ci95
from ..inference import pairwise_paired

__all__ = [
    "Analysis", "Caption", "MIN_SUBJECTS", "DZ_NOTE", "PAIRED_EFFECT", "display_name", "method_order", "with_display",
    "valid_videos", "subject_means", "complete_subjects", "level_of", "pairwise_methods", "mark_significant",
    "describe_wide", "too_few", "untested_note",
]

#: Fewest subjects for which a test is run (below it, descriptives only).
MIN_SUBJECTS = 3
DZ_NOTE = (
    "Cohen's d_z = mean of the paired differences / their SD (Lakens 2013); "
    "d_av = mean difference / mean of the two SDs (pingouin's paired cohen_d)."
)
PAIRED_EFFECT = "Cohen's d_z (mean paired difference / its SD; d_av alongside)"


@dataclass(frozen=True)
class Caption:
    """A table's caption: what it shows (``str.format`` fields filled per run), its Holm family
    and its effect size (None: descriptive)."""

    text: str
    family: str | None = None
    effect: str | None = None


@dataclass
class Analysis:
    """One analysis: its tables, N, excluded subjects, notes and status."""

    name: str
    title: str
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    n: int = 0
    excluded: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=["subject", "reason"]))
    notes: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    status: str = "ran"  # ran | partial | skipped
    #: table name -> caption naming the profile, aggregation, Holm family and effect size
    captions: dict[str, str] = field(default_factory=dict)
    profile: str = "reference"

    def caption(
        self, table: str, profile: AnalysisProfile, text: str, family: str | None = None, effect: str | None = None
    ) -> None:
        """Record the caption of ``table``: what it shows, aggregation, family and effect size, and the profile."""
        parts = [text.rstrip(". ") + ".", profile.aggregation_text[0].upper() + profile.aggregation_text[1:] + "."]
        parts.append(f"Family: {family}." if family else "Family: none (descriptive).")
        parts.append(f"Effect size: {effect}." if effect else "Effect size: none (descriptive).")
        self.captions[table] = profile.caption(" ".join(parts))

    def add(self, table: str, frame: pd.DataFrame, profile: AnalysisProfile, caption: Caption, **fields) -> None:
        """Record ``frame`` as ``table`` with its caption (``fields`` fill the caption's text)."""
        self.tables[table] = frame
        self.caption(table, profile, caption.text.format(**fields) if fields else caption.text, caption.family,
                     caption.effect)

    def skip(self, reason: str) -> Analysis:
        self.status, self.skipped = "skipped", self.skipped + [reason]
        return self

    def partial(self, reason: str) -> None:
        self.skipped.append(reason)
        if self.status == "ran":
            self.status = "partial"


#: table names of methods outside specs.SPECS (a user's spec file's ``table_name``), read from the
#: provenance of the results being analysed: plan.prepare sets them for each analysis run
_USER_NAMES: ContextVar[dict[str, str] | None] = ContextVar("gaze4hri_user_table_names", default=None)


def set_user_table_names(names: dict[str, str]) -> None:
    """The table names of the user's methods in the results now analysed (method -> name)."""
    _USER_NAMES.set(dict(names))


def display_name(method: str) -> str:
    """The study's table name (specs.SPECS[...].table_name, e.g. "PureGaze (E)"), a user's spec
    file's ``table_name`` from the results' provenance, else the method's name."""
    spec = SPECS.find(str(method))
    if spec is not None and spec.table_name:
        return spec.table_name
    return (_USER_NAMES.get() or {}).get(str(method), str(method))


def method_order(methods) -> list[str]:
    known = [m for m in SPECS if m in set(map(str, methods))]
    return known + sorted(set(map(str, methods)) - set(known))


def with_display(df: pd.DataFrame, col: str = "method", name: str = "display") -> pd.DataFrame:
    df = df.copy()
    df.insert(df.columns.get_loc(col) + 1, name, df[col].map(display_name))
    return df


def valid_videos(videos: pd.DataFrame) -> pd.DataFrame:
    return videos[np.isfinite(videos["error_mean"].to_numpy(dtype=float))]


def subject_means(
    videos: pd.DataFrame, by: list[str], value: str = "error_mean", weighted: bool = False
) -> pd.DataFrame:
    """Each subject's value per ``by`` cell from video means (Sezer et al., aggregation: frame -> video -> subject).

    ``weighted=False``: mean of the video means (the paper's text); ``weighted=True``:
    frame-weighted, sum(video mean x n_valid) / sum(n_valid), as the study's scripts
    (GazeForHRI/Gaze4HRI@main:lighting_analysis.py:798-815). Returns subject, ``by``
    columns, ``value`` and ``n_videos``; videos without valid frames do not count.
    """
    v = valid_videos(videos)
    keys = ["subject"] + [b for b in by if b != "subject"]
    g = v.groupby(keys, observed=True)[value]
    if weighted:
        w = v["n_valid"].astype(float)
        num = (v[value] * w).groupby([v[k] for k in keys], observed=True).sum()
        den = w.groupby([v[k] for k in keys], observed=True).sum()
        mean = num / den.where(den > 0)
    else:
        mean = g.mean()
    out = pd.DataFrame({value: mean, "n_videos": g.count()}).reset_index()
    for k in keys:
        out[k] = out[k].astype(str)
    return out


def complete_subjects(
    long: pd.DataFrame, cells: list[str], value: str, expected: list[tuple], subjects=None, scope: str = "analysis"
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Listwise deletion: keep subjects with a value in every expected cell.

    ``subjects``: every subject of the data set, so that subjects with no video at
    all in this analysis are listed too. Returns the wide table (index subject,
    columns the cells) and the excluded subjects with the missing cells as reason.
    ``scope="family"`` (profile ``study``): keep every subject with at least one
    value (NaN where a cell is missing); each test family then drops the subjects
    missing one of its own cells (inference.pairwise_paired), and only subjects
    without any value are excluded.
    """
    wide = long.pivot_table(index="subject", columns=cells, values=value, aggfunc="first", observed=True)
    if subjects is not None:
        wide = wide.reindex(sorted(set(map(str, subjects)) | set(wide.index)))
    exp_cols = (
        pd.MultiIndex.from_tuples(expected, names=cells)
        if len(cells) > 1
        else pd.Index([e[0] for e in expected], name=cells[0])
    )
    wide = wide.reindex(columns=exp_cols)
    miss = wide.isna()
    rows = []
    for s, m in miss.iterrows():
        if m.all():
            rows.append({"subject": s, "reason": "no valid video in this analysis (missing trials)"})
        elif m.any():
            lost = [("/".join(map(str, c)) if isinstance(c, tuple) else str(c)) for c in m.index[m.to_numpy()]]
            rows.append(
                {
                    "subject": s,
                    "reason": f"no valid video for {len(lost)} cell(s): "
                    f"{', '.join(lost[:4])}{' ...' if len(lost) > 4 else ''}",
                }
            )
    excluded = pd.DataFrame(rows, columns=["subject", "reason"])
    if scope == "family":
        excluded = excluded[excluded["reason"].str.startswith("no valid video in this analysis")].reset_index(drop=True)
        return wide[~miss.all(axis=1)], excluded
    return wide[~miss.any(axis=1)], excluded


def level_of(c) -> int | None:
    try:
        return int(float(str(c)))
    except ValueError:
        return None


def pairwise_methods(wide: pd.DataFrame, methods: list[str], min_n: int = 2) -> pd.DataFrame:
    pw = pairwise_paired(wide[methods], min_n=min_n)
    pw = pw.rename(columns={"a": "method_a", "b": "method_b"})
    pw.insert(1, "display_a", pw["method_a"].map(display_name))
    pw.insert(3, "display_b", pw["method_b"].map(display_name))
    return pw


def mark_significant(df: pd.DataFrame, p: str, alpha: float) -> pd.DataFrame:
    df["significant"] = df[p] < alpha
    return df


def describe_wide(wide: pd.DataFrame, cells: list[str]) -> pd.DataFrame:
    """Mean, SD (ddof 1), n and the 95 % t CI over subjects of every column of a wide table."""
    d = wide.agg(["mean", "std", "count"]).T.reset_index()
    d.columns = [*cells, "mean", "sd", "n"]
    d["n"] = d["n"].astype(int)
    ci = [ci95(wide[c].to_numpy()) for c in wide.columns]
    d["ci_low"], d["ci_high"] = [c[0] for c in ci], [c[1] for c in ci]
    return d


def too_few(a: Analysis, what: str, min_subjects: int) -> bool:
    """Record (and return) that ``what`` is skipped for having fewer than ``min_subjects`` subjects."""
    if a.n < min_subjects:
        a.partial(f"{what} skipped: needs at least {min_subjects} subjects (--min-subjects), N = {a.n}")
        return True
    return False


def untested_note(few: bool, min_subjects: int, n: int) -> str:
    """The sentence a test table's caption carries when too few subjects left its tests empty."""
    if not few:
        return ""
    return f" Not tested: fewer than {min_subjects} subjects (--min-subjects), N = {n}; t, p and d are empty."
