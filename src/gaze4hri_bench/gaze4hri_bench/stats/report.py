"""``analyze``: per-frame results -> every analysis of the study -> tables, figures and
a report (Markdown and self-contained HTML) with provenance.

Layout of the output folder::

    REPORT/tables/<name>.csv|.md|.tex   tidy tables (docs/statistics.md) and renders
    REPORT/figures/<name>.png|.svg
    REPORT/report.md, report.html       results section, N, exclusions, provenance
    REPORT/summary.json                 what ran, what was skipped and why
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from ..schema import SCHEMA_VERSION
from . import analyses as A
from . import figures as F
from . import layouts as L
from . import plan as P
from .analysis_profiles import get_profile
from .status import build_status
from .tables import to_html, to_latex, to_markdown

__all__ = ["analyze"]

CAPTIONS = {
    "coverage": "Results per method and input: subjects, videos, frames, valid frames; whole-dataset mean error (deg, mean of subject means).",
    "input_choice": "Input used per method in the main analyses.",
    "illumination": "Experiment 1: subject-level mean angular error (deg) and SD (ddof 1) per method and illumination level.",
    "illumination_cv": "Experiment 1: coefficient of variation CV = 100 sigma/mu of the level means (sigma with ddof 1, as in the study's Table III).",
    "illumination_pairwise": "Experiment 1: paired t-tests between methods per level; Holm over the pairs of a level; effect size Cohen's d_z (also d_av).",
    "viewpoint": "Experiment 2: fixed camera (illumination 100) vs arc, two-sided paired t-test per method; p uncorrected, p (Holm) across methods; effect size Cohen's d_z (also d_av), arc - fixed.",
    "conflict": "Experiment 3: subject mean error (deg) and per-subject slopes of video error on video conflict (deg/deg); one-sided t-test of slopes > 0, Holm across methods.",
    "conflict_slopes": "Experiment 3: per-subject OLS fits error = a + b conflict.",
    "conflict_pairwise": "Experiment 3: paired two-sided t-tests between methods, Holm over all pairs; effect size Cohen's d_z (also d_av).",
    "target": "Experiment 4.1: subject-level mean error (deg) and SD per target point (fixed camera, illumination 100).",
    "target_best": "Experiment 4.1: the method with the lowest mean error per point.",
    "target_tests": "Experiment 4.1: paired tests between rows and between left and right columns per method, Holm per method and factor; effect size Cohen's d_z (also d_av).",
    "mutual": "Experiment 4.2: subject-level mean error (deg) and SD per mutual-gaze condition.",
    "mutual_pairwise": "Experiment 4.2: paired two-sided t-tests between conditions per method, Holm per method; effect size Cohen's d_z (also d_av).",
    "mutual_eccentricity": "Experiment 4.2: per-subject regression E = a + b_pitch |pitch| + b_yaw |yaw| over frames; slopes (deg/deg), mean and SD over subjects.",
    "mutual_eccentricity_subjects": "Experiment 4.2: per-subject eccentricity regressions.",
    "crop_vs_rectified": "Table S9: whole-dataset subject-level error, cropped vs rectified input; two-sided paired t-test, Holm across methods; effect size Cohen's d_z (also d_av), crop - rectified.",
    "efficiency": "Table S10: pipeline timings per results file.",
    "excluded": "Subjects excluded per analysis and why.",
    "invalid_frames": "Frames left out of the evaluation, by method, input and reason (invalid_reason).",
    "camera_sources": "Camera pose sources per trial: forward kinematics x hand-eye vs the camera's motion-capture rigid body "
                      "(position mm, orientation deg; median, 95th percentile, maximum over the frames with both); source: the one the ground truth used.",
    "camera_sources_subjects": "Camera pose sources per subject: forward kinematics x hand-eye vs the camera's rigid body, "
                               "median of the trial medians, largest trial 95th percentile and largest disagreement (mm, deg); "
                               "per trial in tables/camera_sources.csv.",
}
# rendered (md/tex/html) columns per table; CSV keeps all
SHOW = {
    "illumination_pairwise": ["level", "display_a", "display_b", "n", "mean_diff", "t", "dof", "p_unc", "p_holm", "cohen_dz", "cohen_dav", "significant"],
    "conflict": ["display", "n", "mean", "sd", "slope_mean", "slope_sd", "slope_ci_low", "slope_ci_high", "t", "p_holm", "pct_positive", "significant"],
    "conflict_pairwise": ["display_a", "display_b", "n", "mean_diff", "t", "dof", "p_unc", "p_holm", "cohen_dz", "cohen_dav", "significant"],
    "target": ["display", "target", "row", "column", "mean", "sd", "ci_low", "ci_high", "n"],
    "target_tests": ["display", "factor", "a", "b", "n", "mean_a", "mean_b", "t", "p_holm", "cohen_dz", "cohen_dav", "significant"],
    "mutual_pairwise": ["display", "condition_a", "condition_b", "n", "mean_diff", "t", "p_holm", "cohen_dz", "cohen_dav", "significant"],
    "efficiency": ["display", "input", "device", "batch", "frames", "infer_ms_per_frame", "fps", "peak_rss_mb", "peak_vram_mb"],
    "viewpoint": ["display", "n", "fixed_mean", "fixed_sd", "arc_mean", "arc_sd", "t", "dof", "p", "p_holm", "cohen_dz", "cohen_dav", "significant"],
    "crop_vs_rectified": ["display", "n", "crop_mean", "crop_sd", "rectified_mean", "rectified_sd", "t", "p_holm", "cohen_dz", "cohen_dav", "better"],
    "mutual_segment_meta": ["condition", "segment", "display", "subjects", "videos", "fisher_rows", "fisher_z", "fisher_z_se", "r_pooled", "p_unc", "p_holm",
                            "slope_mean", "slope_sd", "r_mean", "r_sd"],
}


#: Human headers for the columns that tables.HEADERS does not name (the CSV files keep
#: the column names); any other snake_case column is humanised by :func:`_human`. A
#: lower-case target is a tables.HEADERS key (its header and integer format apply).
COLUMN_NAMES = {
    "source": "Source", "trials": "Trials", "median_mm": "Median (mm)", "p95_mm": "95th pct. (mm)", "max_mm": "Max (mm)",
    "median_deg": "Median (deg)", "p95_deg": "95th pct. (deg)", "max_deg": "Max (deg)",
    "levels": "Levels (%)", "slope": "Slope", "intercept": "Intercept", "n_subjects": "subjects", "n_points": "Points",
    "delta": "Delta (deg)", "level_a": "Level A (%)", "level_b": "Level B (%)", "setting": "Setting", "se": "SE",
    "subject_left": "Subject's left", "subject_middle": "Middle", "subject_right": "Subject's right",
    "target_a": "Point A", "target_b": "Point B", "column_a": "Column A", "column_b": "Column B", "row_a": "Row A", "row_b": "Row B",
    "n_methods": "Methods", "champion_display": "Best method", "decisive": "Decisive", "lowest": "Lowest",
    "order_by_mean": "Order by mean", "n_a": "N A", "n_b": "N B", "sd_a": "SD A", "sd_b": "SD B", "cohen_d": "d",
    "pool": "Pool", "group": "Group", "group_a": "Group A", "group_b": "Group B", "n_videos": "videos", "n_frames": "frames",
    "correction": "Correction", "p_adj": "p (adjusted)",
    "segment": "Segment", "n_segments": "Segments", "axis": "Predictor", "fisher_rows": "Videos (n >= 4)", "fisher_z": "Fisher z",
    "fisher_z_se": "Fisher z SE", "r_pooled": "Pooled r", "r_mean": "r mean", "r_sd": "r SD", "pooled_mean": "Pooled mean", "pooled_sd": "Pooled SD",
}
#: Statistical symbols kept as they are.
_SYMBOLS = frozenset({"r", "t", "p", "df", "n", "b", "a", "se"})
#: Identifier columns left out of the rendered table when their display twin is shown.
_ID_TWINS = {"champion": "champion_display"}


def _human(df: pd.DataFrame) -> pd.DataFrame:
    """The table with human column headers for rendering (Markdown, LaTeX, HTML): names
    from :data:`COLUMN_NAMES`, any other lower-case name as words ("mocap_lost" ->
    "Mocap lost"), statistical symbols (r, t, p) as they are; columns that tables.HEADERS already names, and the ``*ci_low`` /
    ``*ci_high`` pairs that the renderer joins into one CI cell, keep their names."""
    from .tables import HEADERS

    df = df.drop(columns=[c for c, twin in _ID_TWINS.items() if c in df.columns and twin in df.columns])
    ren, taken = {}, set(df.columns)
    for c in df.columns:
        if not isinstance(c, str) or c in HEADERS or c.endswith(("ci_low", "ci_high")):
            continue
        if c in COLUMN_NAMES:
            new = COLUMN_NAMES[c]
        elif c == c.lower() and " " not in c and c not in _SYMBOLS:
            w = c.replace("_", " ")
            new = w[:1].upper() + w[1:]
        else:
            continue
        if new not in taken:
            ren[c] = new
            taken.add(new)
    return df.rename(columns=ren) if ren else df


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("gaze4hri-bench", "gaze4hri-core", "numpy", "scipy", "pandas", "pyarrow", "matplotlib"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _git() -> str | None:
    import subprocess

    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True, text=True, timeout=5)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _f(x, nd=2) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{nd}f}"


def _ci(r) -> str:
    """", 95 % CI [lo, hi]" of a row with ci_low/ci_high (the figures' error bars), else ""."""
    lo, hi = getattr(r, "ci_low", None), getattr(r, "ci_high", None)
    return f", 95 % CI [{_f(lo)}, {_f(hi)}]" if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi) else ""


def _p(x) -> str:
    return "n/a" if not np.isfinite(x) else ("p < .001" if x < 0.001 else f"p = {x:.3f}")


_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count(n: int, what: str, plural: str | None = None) -> str:
    """"one level", "four levels", "12 levels": a count that reads right for any n."""
    n = int(n)
    word = _WORDS[n] if 0 <= n < len(_WORDS) else str(n)
    return f"{word} {what if n == 1 else (plural or what + 's')}"


def _span(lo: float, hi: float, unit: str, nd: int = 2) -> str:
    """"3.26 %" when both ends print the same, else "from 3.26 % to 6.11 %" (never "from x to x")."""
    a, b = _f(lo, nd), _f(hi, nd)
    return f"{a}{unit}" if a == b else f"from {a}{unit} to {b}{unit}"


# ---------------------------------------------------------------- narrative text
def _nets(df: pd.DataFrame) -> pd.DataFrame:
    """The networks' rows when there are any: a weight-free baseline is never "the best" or "the most stable"."""
    if "method" not in df or not len(df):
        return df
    b = df["method"].astype(str).map(F.is_baseline).to_numpy(bool)
    return df if b.all() else df[~b]


def _among(df: pd.DataFrame) -> str:
    return " among the networks" if len(_nets(df)) < len(df) else ""


def _text_illumination(a: A.Analysis, alpha: float) -> list[str]:
    t = a.tables.get("illumination")
    if t is None:
        return []
    s = []
    t = _nets(t)
    best = t.loc[t.groupby("level")["mean"].idxmin()]
    s.append(f"Across N = {a.n} subjects, the lowest mean error per illumination level{_among(a.tables['illumination'])} was: " + "; ".join(
        f"{r.level} %: {r.display} ({_f(r.mean)} deg, SD {_f(r.sd)}{_ci(r)})" for r in best.itertuples()) + ".")
    cv = _nets(a.tables["illumination_cv"]).sort_values("cv_percent")
    cv = cv[cv["cv_percent"].notna()]
    if len(cv):
        levels = _count(int(cv["n_levels"].max()), "level")
        lo, hi = cv.iloc[0], cv.iloc[-1]
        if len(cv) == 1:
            s.append(f"The coefficient of variation across the {levels} was {_f(lo.cv_percent)} % ({lo.display}).")
        elif _f(lo.cv_percent) == _f(hi.cv_percent):
            s.append(f"The coefficient of variation across the {levels} was {_f(lo.cv_percent)} % for each of the {_count(len(cv), 'method')}.")
        else:
            s.append(f"The coefficient of variation across the {levels} ranged from {_f(lo.cv_percent)} % ({lo.display}, the most stable) "
                     f"to {_f(hi.cv_percent)} % ({hi.display}).")
    pw = a.tables.get("illumination_pairwise")
    if pw is not None and len(pw):
        k = int((pw["p_holm"] < alpha).sum())
        nlev = max(1, pw["level"].nunique())
        per = f" ({len(pw) // nlev} per level)" if nlev > 1 else ""
        s.append(f"Of {_count(len(pw), 'pairwise method comparison')}{per}, {'none' if k == 0 else k} "
                 f"{'was' if k == 1 else 'were'} significant after Holm correction (alpha = {alpha}).")
    return s


def _text_viewpoint(a: A.Analysis, alpha: float) -> list[str]:
    t = a.tables.get("viewpoint")
    if t is None:
        return []
    out = [f"N = {a.n} subjects. Mean error with the fixed camera vs on the arc: " + "; ".join(
        f"{r.display} {_f(r.fixed_mean)} vs {_f(r.arc_mean)} deg" for r in t.itertuples()) + "."]
    if not t["p_holm"].notna().any():
        return out
    pcol = "p_adj" if "p_adj" in t else "p_holm"  # the profile's correction (Holm, or none in profile study)
    how = "Holm" if "correction" not in t or (t["correction"] == "holm").all() else "uncorrected"
    sig = t[t[pcol] < alpha]
    if len(sig):
        out.append(f"The moving camera changed the error significantly ({how}) for " + "; ".join(
            f"{r.display} ({_f(r.fixed_mean)} -> {_f(r.arc_mean)} deg, t({int(r.dof)}) = {_f(r.t)}, {_p(getattr(r, pcol))}, d_z = {_f(r.cohen_dz)})" for r in sig.itertuples()) + ".")
    ns = t[~(t[pcol] < alpha)]
    if len(ns):
        out.append("No significant change for " + ", ".join(ns["display"]) + ".")
    return out


def _text_conflict(a: A.Analysis, alpha: float) -> list[str]:
    t = a.tables.get("conflict")
    if t is None:
        return []
    best = _nets(t).loc[_nets(t)["mean"].idxmin()]
    out = [f"N = {a.n} subjects. Lowest mean error under conflict{_among(t)}: {best.display} ({_f(best['mean'])} deg, SD {_f(best['sd'])})."]
    if not t["p_holm"].notna().any():
        out.append("Mean subject slopes (deg/deg): " + "; ".join(f"{r.display} {_f(r.slope_mean, 3)}" for r in t.itertuples()) + ".")
        return out
    sig = t[t["p_holm"] < alpha]
    out.append(("Error rose with head-gaze conflict (slope > 0, one-sided, Holm) for " + "; ".join(
        f"{r.display} (slope {_f(r.slope_mean, 3)} +/- {_f(r.slope_sd, 3)} deg/deg, positive in {_f(r.pct_positive, 0)} % of subjects, {_p(r.p_holm)})" for r in sig.itertuples()) + ".") if len(sig)
        else "No method showed a significant positive slope after Holm correction.")
    ns = t[~(t["p_holm"] < alpha)]
    if len(sig) and len(ns):
        out.append("Not significant: " + ", ".join(f"{r.display} ({_f(r.pct_positive, 0)} % positive)" for r in ns.itertuples()) + ".")
    return out


def _text_target(a: A.Analysis, alpha: float) -> list[str]:
    t = a.tables.get("target_best")
    if t is None:
        return []
    out = [f"N = {a.n} subjects. Best method per point: " + "; ".join(f"{r.target} ({r.row}, {r.column}): {r.best_display} {_f(r.best_mean)} deg" for r in t.itertuples()) + "."]
    tt = a.tables.get("target_tests")
    if tt is not None:
        cf = tt[(tt["factor"] == "row") & (tt["a"] == "closest") & (tt["b"] == "farthest")]
        worse = cf[(cf["p_holm"] < alpha) & (cf["mean_diff"] > 0)]
        if len(cf):
            out.append(f"The closest row (steepest downward gaze) was significantly worse than the farthest row for {_of(len(worse), len(cf))}.")
        nc = int((tt["factor"] == "column").sum())
        lr = tt[(tt["factor"] == "column") & (tt["p_holm"] < alpha)]
        if nc:
            out.append(f"Left and right columns differed significantly for {_of(len(lr), nc)}.")
    if tt is None or not len(tt):
        out.append("No row or column test: the results lack the points of a complete row or column pair, or too few subjects.")
    return out


def _of(k: int, n: int, what: str = "method") -> str:
    """"3 of 7 methods", "the one method" / "none of the 2 methods"; never "0 of 0"."""
    if n == 1:
        return f"the one {what}" if k else f"not the one {what} tested"
    return f"{'none' if k == 0 else k} of the {n} {what}s"


def _text_mutual(a: A.Analysis, alpha: float) -> list[str]:
    t = a.tables.get("mutual")
    if t is None:
        return []
    m = _nets(t).groupby(["method", "display"], sort=False)["mean"].agg(["min", "max", "count"]).reset_index().sort_values("min")
    r = m.iloc[0]
    conds = list(dict.fromkeys(t.loc[t["method"] == r.method, "condition"].astype(str)))
    where = (f"{_f(r['min'])} deg in the one condition present, {conds[0]}" if len(conds) == 1 else
             f"{_span(r['min'], r['max'], ' deg')} across the {_count(len(conds), 'condition')}")
    out = [f"N = {a.n} subjects. Lowest mutual-gaze error: {r.display} ({where})."]
    pw = a.tables.get("mutual_pairwise")
    if pw is not None and len(pw):
        out.append(f"Significant after Holm correction (within method): {_of(int((pw['p_holm'] < alpha).sum()), len(pw), 'condition comparison')}.")
    e = a.tables.get("mutual_eccentricity")
    if e is not None and len(e):
        out.append("Eccentricity slopes (deg/deg, mean +/- SD over subjects): " + "; ".join(
            f"{r.display} b_pitch {_f(r.b_pitch_mean, 3)} +/- {_f(r.b_pitch_sd, 3)}, b_yaw {_f(r.b_yaw_mean, 3)} +/- {_f(r.b_yaw_sd, 3)}" for r in e.itertuples()) + ".")
    return out


def _text_crop(a: A.Analysis, alpha: float) -> list[str]:
    t = a.tables.get("crop_vs_rectified")
    if t is None:
        return []
    return ["Whole dataset: " + "; ".join(f"{r.display} crop {_f(r.crop_mean)} vs rectified {_f(r.rectified_mean)} deg"
                                         + (f" ({r.better}, {_p(r.p_holm)})" if np.isfinite(r.p_holm) else " (not tested)") for r in t.itertuples()) + "."]


def _text_eff(a: A.Analysis, alpha: float) -> list[str]:
    t = a.tables.get("efficiency")
    if t is None:
        return []
    parts = []
    for r in t.itertuples():
        ms = r.infer_ms_per_frame
        net = ("no network (weight-free baseline)" if F.is_baseline(r.method) or str(r.input) == "none"
               else f"network {_f(ms)} ms/frame ({_f(1000.0 / ms, 1)} FPS)" if ms is not None and np.isfinite(ms) and ms > 0 else "network time not recorded")
        parts.append(f"{r.display} ({r.input}, {r.device}): {net}; pipeline {_f(r.fps, 1)} frames/s (frames / wall time, decoding and the face pass included)")
    return ["; ".join(parts) + "."]


TEXT = {"illumination": _text_illumination, "viewpoint": _text_viewpoint, "conflict": _text_conflict, "target": _text_target,
        "mutual": _text_mutual, "crop_vs_rectified": _text_crop, "efficiency": _text_eff}


# ---------------------------------------------------------------- presentation views
def _best_grid(a: A.Analysis) -> pd.DataFrame | None:
    t = a.tables.get("target_best")
    if t is None:
        return None
    g = {(r.row, r.column): f"{r.target}: {r.best_display} ({_f(r.best_mean)})" for r in t.itertuples()}
    # as the subject sees the table (figures.SUBJECT_VIEW_GRID): farthest row on top, the subject's left = the camera's right
    heads = ("subject's left", "middle", "subject's right")
    return pd.DataFrame([{"row": row, **{h: g.get((row, c), "") for h, c in zip(heads, cols, strict=True)}} for row, cols in F.SUBJECT_VIEW_GRID])


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


CSS = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
       "table{border-collapse:collapse;margin:0;font-size:13px}caption{text-align:left;font-style:italic;padding:4px 0;caption-side:top}"
       "th,td{border-bottom:1px solid #ccc;padding:3px 8px;vertical-align:top}td.num{text-align:right}th{border-bottom:2px solid #444}"
       "td.wrap{overflow-wrap:anywhere;min-width:8em}.tw{overflow-x:auto;max-width:100%;margin:1em 0}"
       "tr.paper td{color:#555;font-style:italic;background:#f6f6f6}"
       "img,video{max-width:100%;height:auto}figure{margin:1em 0}figcaption{font-style:italic;font-size:13px;overflow-wrap:break-word}"
       ".tcap{font-style:italic;font-size:13px;margin:1em 0 4px;overflow-wrap:break-word}.tcap+.tw{margin-top:0}"
       "h1,h2,h3{overflow-wrap:break-word}"
       "code{background:#f4f4f4;overflow-wrap:anywhere}.skip{color:#a33}p,li{overflow-wrap:anywhere}"
       ".status{border:2px solid #444;border-radius:6px;padding:.5em 1em;margin:1em 0;background:#fafafa}"
       ".status.alarm{border-color:#c00;background:#fff3f3}.status .alarm{color:#c00;font-weight:bold}"
       "nav.toc{font-size:14px}nav.toc ul{margin:.1em 0;padding-left:1.4em}nav.toc li{line-height:1.35}details{margin:1em 0}summary{cursor:pointer;font-style:italic}")


def _html_table(df: pd.DataFrame, caption: str, anchor: str, row_class: list[str] | None = None) -> str:
    """tables.to_html with the caption lifted out of the table into a paragraph above its
    scroll container (``p.tcap``, which carries the anchor): a caption inside a table
    that is wider than a phone's screen is as wide as the table and is cut off at the
    container's edge, mid-word; above it, it wraps at the page width."""
    import re

    t = to_html(df, caption, row_class=row_class)
    m = re.search(r"<caption>(.*?)</caption>", t, re.S)
    if not m:
        return t
    t = t.replace(m.group(0), "", 1).replace("<table", f"<table aria-labelledby='{anchor}'", 1)
    return f"<p class='tcap' id='{anchor}'>{m.group(1)}</p>{t}"


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "s"


class _Doc:
    """The report as blocks rendered to Markdown and HTML from one source.

    Tables and figures are numbered in order of appearance ("Table 3.", "Figure 2.");
    ``toc()`` marks where the contents list (sections, tables, figures, with links) goes.
    Tables longer than ``LONG`` rows are folded (HTML ``<details>``; Markdown: a link to
    the table's file) so that the pairwise families do not bury the text.
    """

    LONG = 40

    def __init__(self) -> None:
        self.blocks: list[tuple] = []
        self.profile = ""  # every caption names the analysis profile

    def h(self, level: int, text: str) -> None:
        self.blocks.append(("h", level, text))

    def p(self, text: str, cls: str = "") -> None:
        self.blocks.append(("p", text, cls))

    def ul(self, items: list[str]) -> None:
        if items:
            self.blocks.append(("ul", items))

    def toc(self) -> None:
        self.blocks.append(("toc",))

    def status(self, lines: list[str], alarms: list[str], table: pd.DataFrame | None) -> None:
        self.blocks.append(("status", lines, alarms, table))

    def table(self, df: pd.DataFrame, caption: str, *, file: str | None = None, row_class: list[str] | None = None,
              empty: str | None = None, human: bool = True) -> None:
        """A numbered table; ``file``: the table's CSV under tables/ (linked from a folded long table).

        A table without rows is never printed as a bare header: a sentence names it and
        says why it is empty (``empty``, else a generic reason). ``human``: headers
        through :func:`_human` (the paper's layouts name their own columns)."""
        if not len(df):
            why = (empty or "the results hold none of the data it needs").rstrip(".")
            self.blocks.append(("p", f"Not tabulated ({self._short(caption)}): {why}.", "skip"))
            return
        if self.profile and not caption.startswith("[profile"):
            caption = f"[profile {self.profile}] {caption}"
        self.blocks.append(("table", _human(df) if human else df, caption, file, row_class))

    def fig(self, path: Path, caption: str) -> None:
        self.blocks.append(("fig", path, caption))

    def _numbered(self) -> list[tuple]:
        """Blocks with their number (tables and figures) and anchor."""
        out, nt, nf = [], 0, 0
        for b in self.blocks:
            if b[0] == "table":
                nt += 1
                out.append((b, f"Table {nt}", f"table-{nt}"))
            elif b[0] == "fig":
                nf += 1
                out.append((b, f"Figure {nf}", f"figure-{nf}"))
            elif b[0] == "h":
                out.append((b, "", _slug(b[2])))
            else:
                out.append((b, "", ""))
        return out

    @staticmethod
    def _short(caption: str) -> str:
        c = caption.split("] ", 1)[-1] if caption.startswith("[profile") else caption
        c = c.split(". ")[0].split("; ")[0].rstrip(".")
        return c if len(c) <= 80 else c[:80].rsplit(" ", 1)[0] + " …"

    def _toc_items(self, nb) -> list[tuple[int, str, str]]:
        """(depth, text, anchor): sections (h2) with their tables and figures."""
        items = []
        for b, num, anchor in nb:
            if b[0] == "h" and b[1] == 2:
                items.append((0, b[2], anchor))
            elif num:
                items.append((1, f"{num}. {self._short(b[2])}", anchor))
        return items

    def markdown(self, root: Path) -> str:
        out = []
        nb = self._numbered()
        for b, num, anchor in nb:
            if b[0] == "h":
                out.append((f'<a id="{anchor}"></a>\n\n' if b[1] == 2 else "") + "#" * b[1] + " " + b[2] + "\n")
            elif b[0] == "p":
                out.append(b[1] + "\n")
            elif b[0] == "ul":
                out.append("\n".join(f"- {x}" for x in b[1]) + "\n")
            elif b[0] == "toc":
                out.append("**Contents**\n\n" + "\n".join(("  " * d) + f"- [{t}](#{a})" for d, t, a in self._toc_items(nb)) + "\n")
            elif b[0] == "status":
                lines = [f"> **{x}**" for x in b[2]] + [f"> {x}" for x in b[1]]
                out.append("> **Status**\n>\n" + "\n>\n".join(lines) + "\n")
                if b[3] is not None and len(b[3]):
                    out.append(to_markdown(_human(b[3]), "Weights and inputs per results file."))
            elif b[0] == "table":
                df, cap, file = b[1], b[2], b[3]
                out.append(f'<a id="{anchor}"></a>\n')
                if len(df) > self.LONG and file:
                    out.append(f"*{num}. {cap}* ({len(df)} rows: [`{file}`]({file}))\n")
                else:
                    out.append(to_markdown(df, f"{num}. {cap}"))
            elif b[0] == "fig":
                out.append(f'<a id="{anchor}"></a>\n\n![{num}. {b[2]}]({b[1].relative_to(root).as_posix()})\n\n*{num}. {b[2]}*\n')
            elif b[0] == "raw":  # pre-rendered (markdown, html), e.g. review clip links
                out.append(b[1])
        return "\n".join(out)

    def html(self, title: str) -> str:
        out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><meta name='viewport' content='width=device-width, initial-scale=1'>"
               f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"]
        esc = lambda x: html.escape(x).replace("`", "")  # noqa: E731
        nb = self._numbered()
        for b, num, anchor in nb:
            if b[0] == "h":
                out.append(f"<h{b[1]} id='{anchor}'>{html.escape(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                out.append(f"<p class='{b[2]}'>{esc(b[1])}</p>")
            elif b[0] == "ul":
                out.append("<ul>" + "".join(f"<li>{esc(x)}</li>" for x in b[1]) + "</ul>")
            elif b[0] == "toc":
                items, html_toc, depth = self._toc_items(nb), ["<nav class='toc'><strong>Contents</strong><ul>"], 0
                for d, t, a in items:
                    if d > depth:
                        html_toc.append("<ul>")
                    elif d < depth:
                        html_toc.append("</ul>")
                    depth = d
                    html_toc.append(f"<li><a href='#{a}'>{html.escape(t)}</a></li>")
                html_toc.append("</ul>" * (depth + 1) + "</nav>")
                out.append("".join(html_toc))
            elif b[0] == "status":
                cls = "status alarm" if b[2] else "status"
                body = "".join(f"<p class='alarm'>{esc(x)}</p>" for x in b[2]) + "<ul>" + "".join(f"<li>{esc(x)}</li>" for x in b[1]) + "</ul>"
                if b[3] is not None and len(b[3]):
                    body += _html_table(_human(b[3]), "Weights and inputs per results file.", "status-table")
                out.append(f"<section class='{cls}' id='status'><strong>Status</strong>{body}</section>")
            elif b[0] == "table":
                df, cap, rc = b[1], b[2], b[4]
                t = _html_table(df, f"{num}. {cap}", anchor, rc)
                if len(df) > self.LONG:
                    t = f"<details id='{anchor}-fold'><summary>{html.escape(num)}. {html.escape(self._short(cap))} ({len(df)} rows; click to show)</summary>{t}</details>"
                out.append(t)
            elif b[0] == "fig":
                out.append(f"<figure id='{anchor}'><img alt='{html.escape(b[2])}' src='data:image/png;base64,{_b64(b[1])}'>"
                           f"<figcaption>{html.escape(num)}. {html.escape(b[2])}</figcaption></figure>")
            elif b[0] == "raw":
                out.append(b[2])
        out.append("</body></html>")
        return "\n".join(out)


def _write_table(name: str, df: pd.DataFrame, tdir: Path, caption: str | None = None) -> list[Path]:
    csv = tdir / f"{name}.csv"
    df.to_csv(csv, index=False, float_format="%.10g")
    view = _human(df[[c for c in SHOW[name] if c in df.columns]] if name in SHOW else df)
    cap = caption or CAPTIONS.get(name, name)
    (tdir / f"{name}.md").write_text(to_markdown(view, cap))
    (tdir / f"{name}.tex").write_text(to_latex(view, cap, label=f"tab:{name}"))
    return [csv, tdir / f"{name}.md", tdir / f"{name}.tex"]


#: Tables of one row per subject or video: linked, not printed (the CSV holds them).
DETAIL_SUFFIXES = ("_subjects", "_videos", "_slopes")


def _why_empty(a: A.Analysis, tn: str) -> str:
    """Why table ``tn`` of analysis ``a`` has no rows, in words: the conditions or
    methods present when a comparison needs two, else the analysis' own skip reasons
    that name the table's subject, else a generic reason."""
    t = a.tables
    if tn.endswith("_pairwise") and "condition" in t.get(a.name, pd.DataFrame()).columns:
        conds = list(dict.fromkeys(t[a.name]["condition"].astype(str)))
        if len(conds) < 2:
            return f"only {_count(len(conds), 'condition')} ({', '.join(conds) or 'none'}) in the results; a comparison needs two"
    main = t.get(a.name)
    if tn.endswith("_pairwise") and main is not None and "method" in main.columns and main["method"].nunique() < 2:
        return f"only {_count(main['method'].nunique(), 'method')} in the results; a comparison needs two"
    words = [w for w in tn.split("_") if len(w) > 3 and w != a.name]
    hits = [x for x in a.skipped if any(w in x for w in words)]
    if hits:
        return "; ".join(hits)
    return "no method had the subjects, conditions or videos it needs"


def _table_block(doc: _Doc, a: A.Analysis, tn: str) -> None:
    """Render one table of an analysis with its caption (generic: any table an analysis carries);
    an empty one as a sentence that says why. The CI columns travel with the columns
    SHOW picks, so that a caption that promises a CI has one."""
    df = a.tables[tn]
    if tn in SHOW:
        cols = [c for c in SHOW[tn] if c in df.columns]
        cols += [c for c in df.columns if c.endswith(("ci_low", "ci_high")) and c not in cols]
        df = df[cols]
    doc.table(df, a.captions.get(tn) or CAPTIONS.get(tn, tn), file=f"tables/{tn}.csv", empty=_why_empty(a, tn))


def _layouts(name: str, a: A.Analysis, gt: pd.DataFrame | None) -> list[tuple[L.Layout, set[str]]]:
    """The paper's layouts of one analysis and the tidy tables each one replaces in the text."""
    t = a.tables
    out = []
    if name == "illumination":
        out.append((L.table3(t.get("illumination"), t.get("illumination_cv")), {"illumination", "illumination_cv"}))
    elif name == "target":
        out.append((L.table_s11(gt), set()))
    elif name == "mutual":
        out.append((L.mutual_grid(t.get("mutual")), {"mutual"}))
    elif name == "crop_vs_rectified":
        out.append((L.table_s9(t.get("crop_vs_rectified")), set()))
    elif name == "efficiency":
        out.append((L.table_s10(t.get("efficiency")), {"efficiency"}))
    return [(lay, covers) for lay, covers in out if lay is not None]


def _write_layout(lay: L.Layout, tdir: Path) -> list[Path]:
    """tables/<name>.csv (the text cells), .md and the paste-ready .tex (table*, booktabs)."""
    paths = [tdir / f"{lay.name}.csv", tdir / f"{lay.name}.md", tdir / f"{lay.name}.tex"]
    lay.frame.to_csv(paths[0], index=False)
    paths[1].write_text(to_markdown(lay.frame, lay.caption))
    paths[2].write_text(lay.latex)
    return paths


def analyze(inputs: list[Path], out: Path, alpha: float = 0.05, *, figures: bool = True, profile: str = "auto",
            exclusions: str | None = None, min_subjects: int = A.MIN_SUBJECTS, allow_mixed_profiles: bool = False) -> dict:
    """Run every analysis of the study on per-frame results and write the report.

    Parameters
    ----------
    inputs : per-frame results Parquet files (schema.py) or folders holding them.
    out : report folder (created); tables/, figures/, report.md, report.html,
        summary.json.
    alpha : significance level for the Holm-corrected tests (Sezer et al.: 0.05).
    figures : write figures (PNG and SVG).
    profile : analysis profile (stats/analysis_profiles.py: ``reference``, ``study``), or ``auto``:
        the results' pipeline profile when it names one, else ``reference``.
    exclusions : exclusion list name or YAML path (default: the profile's).
    min_subjects : fewest subjects for an inferential analysis (fewer: skipped, descriptives stay).
    allow_mixed_profiles : analyse results of different pipeline profiles together.

    Returns
    -------
    dict: ``analyses`` (name -> status ran|partial|skipped|failed, reasons, n,
    tables), ``report_md``, ``report_html``, ``tables``, ``figures``, ``warnings``,
    ``seconds``.

    Raises
    ------
    Gaze4HRIError : nothing can be analysed (no usable file, mixed schema versions).
    """
    t0 = time.perf_counter()
    if not 0 < alpha < 1:
        from gaze4hri_core.errors import Gaze4HRIError

        raise Gaze4HRIError(f"alpha {alpha} out of range", "analyze --alpha", "give a significance level between 0 and 1, e.g. 0.05")
    out = Path(out)
    tdir, fdir = out / "tables", out / "figures"
    tdir.mkdir(parents=True, exist_ok=True)
    fdir.mkdir(parents=True, exist_ok=True)
    if profile != "auto":
        get_profile(profile)  # an unknown name fails before any file is read
    if min_subjects < 2:
        from gaze4hri_core.errors import Gaze4HRIError

        raise Gaze4HRIError(f"--min-subjects {min_subjects} is too small", "analyze --min-subjects", "give 2 or more (a paired t-test needs 2 subjects; default 3)")
    pre = P.prepare([Path(p) for p in inputs], alpha, profile, exclusions, min_subjects, allow_mixed_profiles)
    loaded, pipeline_profiles, warnings = pre.loaded, pre.pipeline_profiles, pre.warnings
    prof, profile_source, excl_list, excl_applied = pre.profile, pre.profile_source, pre.exclusions, pre.exclusions_applied
    videos, cov, main, choice, frames = pre.ctx.videos, pre.coverage, pre.ctx.main, pre.ctx.choice, pre.ctx.frames
    results = P.run_analyses(pre.ctx)
    # ---- tables
    written: list[Path] = []
    written += _write_table("coverage", cov, tdir, prof.caption(CAPTIONS["coverage"]))
    written += _write_table("input_choice", choice, tdir, prof.caption(CAPTIONS["input_choice"]))
    excl = []
    for a in results:
        for name, df in a.tables.items():
            written += _write_table(name, df, tdir, a.captions.get(name) or prof.caption(CAPTIONS.get(name, name)))
        if len(a.excluded):
            excl.append(a.excluded.assign(analysis=a.name)[["analysis", "subject", "reason"]])
    excluded = pd.concat(excl, ignore_index=True) if excl else pd.DataFrame(columns=["analysis", "subject", "reason"])
    written += _write_table("excluded", excluded, tdir, prof.caption(CAPTIONS["excluded"]))
    written += _write_table("exclusions", excl_applied, tdir, prof.caption(f"Exclusion list {excl_list.name!r} applied before every analysis: videos = video x method rows removed."))
    # ---- figures
    figs: dict[str, tuple[list[Path], str]] = {}
    by = {a.name: a for a in results}
    if figures:
        def fig(key, fn, *args, caption, **kw):
            try:
                figs[key] = (fn(*args, stem=fdir / key, **kw), caption)
            except Exception as e:  # noqa: BLE001 - a figure must not cost the report
                warnings.append(f"figure {key} failed: {type(e).__name__}: {e}")

        CI = "error bars: subject-level 95 % t CI"
        BASE = "baselines (weight-free) as dashed reference lines"
        t = by["illumination"].tables
        if "illumination" in t:
            fig("illumination_levels", F.illumination_levels, t["illumination"], caption=f"Mean error by illumination level, one colour per method ({CI}; {BASE}).")
        if "illumination_pairwise" in t:
            fig("illumination_significance", F.significance_matrix, t["illumination_pairwise"], title="Experiment 1: pairwise method tests per level", facet="level", alpha=alpha,
                caption="Pairwise method tests per illumination level: colour = mean difference row - column (deg), stars = Holm-corrected p.")
        t = by["viewpoint"].tables
        if "viewpoint" in t:
            fig("viewpoint", F.condition_bars, t["viewpoint"], [("fixed_mean", "fixed_sd", "fixed camera"), ("arc_mean", "arc_sd", "arc")], "Fixed camera vs arc (experiment 2)",
                caption=f"Fixed camera (illumination 100) vs camera on the arc; bars coloured by condition ({CI}; {BASE}).")
        t = by["conflict"].tables
        if "conflict_slopes" in t:
            cv = main[(main["experiment"] == "conflict") & main["subject"].astype(str).isin(set(t["conflict_slopes"]["subject"]))]
            if prof.conflict_source == "all_frames":  # the x the profile's slopes were fitted on
                cv = cv.assign(conflict_mean=cv["conflict_all_mean"])
            fig("conflict_slopes", F.conflict_slopes, cv, t["conflict_slopes"], list(t["conflict"]["display"]), caption="Video mean error vs video mean head-gaze conflict; thin lines: subject fits; thick: mean fit.")
        if "conflict_pairwise" in t:
            fig("conflict_significance", F.significance_matrix, t["conflict_pairwise"], title="Experiment 3: pairwise method tests", alpha=alpha,
                caption="Pairwise method tests under head-gaze conflict: colour = mean difference row - column (deg), stars = Holm-corrected p.")
        t = by["target"].tables
        if "target" in t:
            fig("target_heatmap", F.target_heatmap, t["target"], caption="Mean error per target point as the subject sees the table (top row farthest, the subject's left is the camera's right); "
                "colour scale from the networks only, baselines printed uncoloured.")
        t = by["mutual"].tables
        if "mutual" in t:
            mt = t["mutual"]
            w = mt.pivot(index="method", columns="condition", values="mean")
            sd = mt.pivot(index="method", columns="condition", values="sd").add_suffix("_sd")
            order = list(dict.fromkeys(mt["method"]))
            w2 = pd.concat([w, sd], axis=1).reindex(order).reset_index()
            w2.insert(1, "display", w2["method"].map(A.display_name))
            w2["n"] = mt.groupby("method")["n"].max().reindex(order).to_numpy()
            conds = [c for c in mt["condition"].unique()]
            fig("mutual_conditions", F.condition_bars, w2, [(c, f"{c}_sd", c) for c in conds], "Mutual gaze per condition (experiment 4.2)",
                caption=f"Mutual-gaze error per camera scan; bars coloured by condition ({CI}; {BASE}).")
        if "mutual_method_pairs" in t:
            mp = t["mutual_method_pairs"]
            fig("mutual_significance", F.significance_matrix, mp[mp["pool"] == "all"] if "pool" in mp and (mp["pool"] == "all").any() else mp,
                title="Experiment 4.2: pairwise method tests (all scans)", alpha=alpha,
                caption="Pairwise method tests in mutual gaze (all scans pooled): colour = mean difference row - column (deg), stars = Holm-corrected p.")
        if "mutual_eccentricity" in t and len(frames):
            keep = set(zip(choice["method"], choice["input"], strict=True))
            f = frames[pd.MultiIndex.from_arrays([frames["method"].astype(str), frames["input"].astype(str)]).isin(list(keep))]
            order = {m: k for k, m in enumerate(choice["method"])}
            f = f.assign(display=f["method"].astype(str).map(A.display_name), _o=f["method"].astype(str).map(order)).sort_values("_o", kind="stable")
            fig("eccentricity", F.eccentricity, f, caption="Mutual gaze: error in 2.5 deg bins of |yaw| and |pitch| of the ground-truth gaze, each subject's mean per bin then the mean over subjects; "
                "bands: subject-level 95 % t CI (bins with 20 or more frames and 2 or more subjects; baselines dashed).")
        t = by["crop_vs_rectified"].tables
        if "crop_vs_rectified" in t:
            fig("crop_vs_rectified", F.condition_bars, t["crop_vs_rectified"], [("crop_mean", "crop_sd", "crop"), ("rectified_mean", "rectified_sd", "rectified")],
                "Cropped vs rectified input (Table S9)", caption=f"Whole-dataset error with cropped vs rectified input; bars coloured by input ({CI}).")
    # ---- report
    doc = _Doc()
    doc.profile = prof.name
    subjects = videos["subject"].nunique()
    doc.h(1, "Gaze4HRI benchmark: results")
    doc.p(f"Generated {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by gaze4hri-bench analyze. "
          f"{len(loaded.files)} results file(s), {subjects} subjects, {main['method'].nunique()} methods, "
          f"{int(loaded.videos['n_frames'].sum()):,} frame rows. Analysis profile {prof.name!r} ({prof.description}). Frames -> video mean over valid frames -> {prof.aggregation_text}; "
          f"the subject is the unit of inference (Sezer et al., analyses: all subject-level); alpha = {alpha}; multiple comparisons Holm-corrected; "
          "SDs with ddof 1; angles in degrees. Effect sizes: Cohen's d_z (paired differences) is the primary effect size; d_av is given alongside.")
    st = build_status(loaded.files, pipeline_profiles)
    doc.status(st.lines(), st.alarms, st.methods)
    if warnings:
        doc.p("Warnings:", "skip")
        doc.ul(warnings)
    doc.toc()
    doc.h(2, "Data")
    doc.table(cov, CAPTIONS["coverage"])
    doc.table(choice[["display", "input", "available", "rule", "whole_mean"]], CAPTIONS["input_choice"])
    inv = loaded.invalid
    if len(inv):
        rank = {m: k for k, m in enumerate(dict.fromkeys(cov["method"]))}
        inv = inv.sort_values(["method", "input", "reason"], key=lambda c: c.map(rank) if c.name == "method" else c).reset_index(drop=True)
        w = inv.pivot_table(index=["method", "input"], columns="reason", values="frames", aggfunc="sum", fill_value=0, sort=False).reset_index()
        w.columns.name = None
        w.insert(1, "display", w["method"].map(A.display_name))
        written.extend(_write_table("invalid_frames", inv.assign(display=inv["method"].map(A.display_name))[["method", "display", "input", "reason", "frames"]], tdir, prof.caption(CAPTIONS["invalid_frames"])))
        doc.table(w, CAPTIONS["invalid_frames"])
    from .camera_sources import camera_source_subjects, camera_source_table

    cams = camera_source_table(loaded.files)
    if cams is not None:  # issue 13: forward kinematics vs the camera's rigid body, where both were recorded
        written.extend(_write_table("camera_sources", cams, tdir, CAPTIONS["camera_sources"]))
        doc.table(camera_source_subjects(cams), CAPTIONS["camera_sources_subjects"], file="tables/camera_sources.csv")
    doc.h(3, f"Exclusions ({excl_list.name})")
    doc.p(f"Exclusion list {excl_list.name!r}{' (' + excl_list.source + ')' if excl_list.source else ''}, applied before every analysis; "
          f"{int(excl_applied['videos'].sum())} video x method rows removed.")
    if len(excl_applied):
        doc.table(excl_applied, prof.caption("Excluded subjects and subject x experiment pairs, with reasons."))
    sections = [("illumination", ["illumination_sensitivity"], ["illumination_levels", "illumination_significance"]),
                ("viewpoint", ["viewpoint"], ["viewpoint"]),
                ("conflict", ["conflict"], ["conflict_slopes", "conflict_significance"]),
                ("target", ["target_tests", "target_columns", "target_champion", "target_eccentricity"], ["target_heatmap"]),
                ("mutual", ["mutual_eccentricity", "mutual_eccentricity_per_video"], ["mutual_conditions", "mutual_significance", "eccentricity"]),
                ("crop_vs_rectified", ["crop_vs_rectified"], ["crop_vs_rectified"]),
                ("efficiency", [], []), ("groups", ["groups", "groups_tests"], [])]
    sections += [(a.name, [], []) for a in results if a.name not in {s[0] for s in sections}]  # analyses added later render generically
    gt = L.gt_per_target([Path(i.path) for i in loaded.files if i.status == "used"]) if "target" in by else None
    for name, tabs, figkeys in sections:
        a = by[name]
        doc.h(2, a.title)
        if a.status in ("skipped", "failed"):
            doc.p(f"{a.status.capitalize()}: " + "; ".join(a.skipped) + ".", "skip")
            continue
        for s in TEXT.get(name, lambda a, alpha: [])(a, alpha):
            doc.p(s)
        if a.skipped:
            doc.p("Partly skipped: " + "; ".join(a.skipped) + ".", "skip")
        shown = set(tabs)
        for lay, covers in _layouts(name, a, gt):
            doc.table(lay.frame, lay.caption, file=f"tables/{lay.name}.csv", row_class=lay.row_class, human=False)
            written.extend(_write_layout(lay, tdir))
            shown |= covers
        if name == "target":
            g = _best_grid(a)
            if g is not None:
                doc.table(g, "Best method per point (mean deg) as the subject sees the table: farthest row on top, the subject's left is the camera's right.")
                shown.add("target_best")
        for tn in tabs:
            if tn in a.tables:
                _table_block(doc, a, tn)
        for fk in figkeys:
            if fk in figs:
                doc.fig(figs[fk][0][0], figs[fk][1])
        for tn in a.tables:  # every further table, with its own caption (profile, aggregation, family, effect size)
            if tn not in shown and not tn.endswith(DETAIL_SUFFIXES):
                _table_block(doc, a, tn)
        if len(a.excluded):
            doc.p(f"Excluded subjects ({len(a.excluded)}): " + "; ".join(f"{r.subject} ({r.reason})" for r in a.excluded.itertuples()))
        for n in a.notes:
            doc.p(n)
        detail = [t for t in a.tables if t.endswith(DETAIL_SUFFIXES) and t not in shown]
        if detail:
            doc.p("Per-subject and per-video tables: " + ", ".join(f"`tables/{t}.csv`" for t in detail) + ".")
    # review clips (issue 15), written by `gaze4hri-bench review RESULTS --extremes --out REPORT/review`
    from ..review.extremes import report_links

    clips = report_links(out)
    if clips is not None:
        doc.h(2, "Review clips")
        doc.p(clips[0])
        doc.blocks.append(("raw", clips[1], clips[2]))
    # pipeline sensitivity (issue 10), written by `gaze4hri-bench deviations --out REPORT/deviations`
    from ..pipeline.deviations import report_section

    sens = report_section(out)
    if sens is not None:
        doc.h(2, "Pipeline sensitivity")
        doc.p(sens[0])
        doc.table(sens[1], "Effect of each study-profile setting on a perfect network (deg; median and 95th percentile over frames, "
                  "worst method and experiment).")
        if sens[2] is not None:
            doc.fig(sens[2], "Effect of each study-profile setting on a perfect network, per setting and input (deg).")
    doc.h(2, "Provenance")
    doc.p(f"Results schema {SCHEMA_VERSION}. Analysis software: " + ", ".join(f"{k} {v}" for k, v in _versions().items()) + (f"; git {_git()}" if _git() else "") + ".")
    prov = pd.DataFrame([
        {"File": i.path, "SHA256": i.sha256, "Rows": i.rows, "Schema": i.schema or "(no metadata)", "Methods": ", ".join(i.methods),
         "Inputs": ", ".join(i.inputs), "Written by": json.dumps((i.metadata or {}).get("software")) if (i.metadata or {}).get("software") else "",
         "Git": str((i.metadata or {}).get("git") or ""), "Status": i.status + (f": {i.reason}" if i.reason else "")}
        for i in loaded.files
    ])
    doc.table(prov, "Inputs and their SHA-256.")
    seconds = time.perf_counter() - t0
    doc.p(f"Analysis time {seconds:.1f} s.")
    md = out / "report.md"
    md.write_text(doc.markdown(out))
    hp = out / "report.html"
    hp.write_text(doc.html("Gaze4HRI results"))
    summary = {
        "analyses": {a.name: {"status": a.status, "reasons": a.skipped, "n": a.n, "excluded": len(a.excluded), "tables": sorted(a.tables)} for a in results},
        "report_md": str(md), "report_html": str(hp), "tables": [str(p) for p in written if p.suffix == ".csv"],
        "figures": [str(p) for v in figs.values() for p in v[0]], "warnings": warnings, "subjects": int(subjects),
        "methods": sorted(main["method"].unique()), "seconds": round(time.perf_counter() - t0, 3),
        "profile": prof.name, "profile_source": profile_source, "pipeline_profiles": pipeline_profiles, "min_subjects": min_subjects,
        "status": {"data": st.data, "simulated": st.simulated, "alarms": st.alarms, "detectors": st.detectors, "blinks": st.blinks},
        "exclusions": {"name": excl_list.name, "source": excl_list.source, "applied": excl_applied.to_dict("records")},
        "inputs": [{"path": i.path, "sha256": i.sha256, "status": i.status, "reason": i.reason} for i in loaded.files],
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(analyze([Path(p) for p in sys.argv[1:-1]], Path(sys.argv[-1])), indent=2))
