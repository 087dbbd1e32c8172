"""The report's narrative: the sentences each analysis' section opens with, written from its
tables (never "the best" for a weight-free baseline; counts that read right for any n)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from . import figures as F
from .experiments.shared import Analysis

__all__ = ["TEXT", "best_grid"]


def _f(x, nd=2) -> str:
    return "n/a" if x is None or not np.isfinite(x) else f"{x:.{nd}f}"


def _ci(r) -> str:
    """ ", 95 % CI [lo, hi]" of a row with ci_low/ci_high (the figures' error bars), else ""."""
    lo, hi = getattr(r, "ci_low", None), getattr(r, "ci_high", None)
    return (
        f", 95 % CI [{_f(lo)}, {_f(hi)}]"
        if lo is not None and hi is not None and np.isfinite(lo) and np.isfinite(hi)
        else ""
    )


def _p(x) -> str:
    return "n/a" if not np.isfinite(x) else ("p < .001" if x < 0.001 else f"p = {x:.3f}")


_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def _count(n: int, what: str, plural: str | None = None) -> str:
    """ "one level", "four levels", "12 levels": a count that reads right for any n."""
    n = int(n)
    word = _WORDS[n] if 0 <= n < len(_WORDS) else str(n)
    return f"{word} {what if n == 1 else (plural or what + 's')}"


def _span(lo: float, hi: float, unit: str, nd: int = 2) -> str:
    """ "3.26 %" when both ends print the same, else "from 3.26 % to 6.11 %" (never "from x to x")."""
    a, b = _f(lo, nd), _f(hi, nd)
    return f"{a}{unit}" if a == b else f"from {a}{unit} to {b}{unit}"


def _nets(df: pd.DataFrame) -> pd.DataFrame:
    """The networks' rows when there are any: a weight-free baseline is never "the best" or "the most stable"."""
    if "method" not in df or not len(df):
        return df
    b = df["method"].astype(str).map(F.is_baseline).to_numpy(bool)
    return df if b.all() else df[~b]


def _among(df: pd.DataFrame) -> str:
    return " among the networks" if len(_nets(df)) < len(df) else ""


def _text_illumination(a: Analysis, alpha: float) -> list[str]:
    t = a.tables.get("illumination")
    if t is None:
        return []
    s = []
    t = _nets(t)
    best = t.loc[t.groupby("level")["mean"].idxmin()]
    s.append(
        f"Across N = {a.n} subjects, the lowest mean error per illumination level{_among(a.tables['illumination'])} "
        "was: "
        + "; ".join(f"{r.level} %: {r.display} ({_f(r.mean)} deg, SD {_f(r.sd)}{_ci(r)})" for r in best.itertuples())
        + "."
    )
    cv = _nets(a.tables["illumination_cv"]).sort_values("cv_percent")
    cv = cv[cv["cv_percent"].notna()]
    if len(cv):
        levels = _count(int(cv["n_levels"].max()), "level")
        lo, hi = cv.iloc[0], cv.iloc[-1]
        if len(cv) == 1:
            s.append(f"The coefficient of variation across the {levels} was {_f(lo.cv_percent)} % ({lo.display}).")
        elif _f(lo.cv_percent) == _f(hi.cv_percent):
            s.append(
                f"The coefficient of variation across the {levels} was {_f(lo.cv_percent)} % for each of the "
                f"{_count(len(cv), 'method')}."
            )
        else:
            s.append(
                f"The coefficient of variation across the {levels} ranged from {_f(lo.cv_percent)} % ({lo.display}, "
                "the most stable) "
                f"to {_f(hi.cv_percent)} % ({hi.display})."
            )
    pw = a.tables.get("illumination_pairwise")
    if pw is not None and len(pw):
        k = int((pw["p_holm"] < alpha).sum())
        nlev = max(1, pw["level"].nunique())
        per = f" ({len(pw) // nlev} per level)" if nlev > 1 else ""
        s.append(
            f"Of {_count(len(pw), 'pairwise method comparison')}{per}, {'none' if k == 0 else k} "
            f"{'was' if k == 1 else 'were'} significant after Holm correction (alpha = {alpha})."
        )
    return s


def _text_viewpoint(a: Analysis, alpha: float) -> list[str]:
    t = a.tables.get("viewpoint")
    if t is None:
        return []
    out = [
        f"N = {a.n} subjects. Mean error with the fixed camera vs on the arc: "
        + "; ".join(f"{r.display} {_f(r.fixed_mean)} vs {_f(r.arc_mean)} deg" for r in t.itertuples())
        + "."
    ]
    if not t["p_holm"].notna().any():
        return out
    pcol = "p_adj" if "p_adj" in t else "p_holm"  # the profile's correction (Holm, or none in profile study)
    how = "Holm" if "correction" not in t or (t["correction"] == "holm").all() else "uncorrected"
    sig = t[t[pcol] < alpha]
    if len(sig):
        out.append(
            f"The moving camera changed the error significantly ({how}) for "
            + "; ".join(
                f"{r.display} ({_f(r.fixed_mean)} -> {_f(r.arc_mean)} deg, t({int(r.dof)}) = {_f(r.t)}, "
                f"{_p(getattr(r, pcol))}, d_z = {_f(r.cohen_dz)})"
                for r in sig.itertuples()
            )
            + "."
        )
    ns = t[~(t[pcol] < alpha)]
    if len(ns):
        out.append("No significant change for " + ", ".join(ns["display"]) + ".")
    return out


def _text_conflict(a: Analysis, alpha: float) -> list[str]:
    t = a.tables.get("conflict")
    if t is None:
        return []
    best = _nets(t).loc[_nets(t)["mean"].idxmin()]
    out = [
        f"N = {a.n} subjects. Lowest mean error under conflict{_among(t)}: {best.display} ({_f(best['mean'])} deg, SD "
        f"{_f(best['sd'])})."
    ]
    if not t["p_holm"].notna().any():
        out.append(
            "Mean subject slopes (deg/deg): "
            + "; ".join(f"{r.display} {_f(r.slope_mean, 3)}" for r in t.itertuples())
            + "."
        )
        return out
    sig = t[t["p_holm"] < alpha]
    out.append(
        (
            "Error rose with head-gaze conflict (slope > 0, one-sided, Holm) for "
            + "; ".join(
                f"{r.display} (slope {_f(r.slope_mean, 3)} +/- {_f(r.slope_sd, 3)} deg/deg, positive in "
                f"{_f(r.pct_positive, 0)} % of subjects, {_p(r.p_holm)})"
                for r in sig.itertuples()
            )
            + "."
        )
        if len(sig)
        else "No method showed a significant positive slope after Holm correction."
    )
    ns = t[~(t["p_holm"] < alpha)]
    if len(sig) and len(ns):
        out.append(
            "Not significant: "
            + ", ".join(f"{r.display} ({_f(r.pct_positive, 0)} % positive)" for r in ns.itertuples())
            + "."
        )
    return out


def _text_target(a: Analysis, alpha: float) -> list[str]:
    t = a.tables.get("target_best")
    if t is None:
        return []
    out = [
        f"N = {a.n} subjects. Best method per point: "
        + "; ".join(f"{r.target} ({r.row}, {r.column}): {r.best_display} {_f(r.best_mean)} deg" for r in t.itertuples())
        + "."
    ]
    tt = a.tables.get("target_tests")
    if tt is not None:
        cf = tt[(tt["factor"] == "row") & (tt["a"] == "closest") & (tt["b"] == "farthest")]
        worse = cf[(cf["p_holm"] < alpha) & (cf["mean_diff"] > 0)]
        if len(cf):
            out.append(
                "The closest row (steepest downward gaze) was significantly worse than the farthest row for "
                f"{_of(len(worse), len(cf))}."
            )
        nc = int((tt["factor"] == "column").sum())
        lr = tt[(tt["factor"] == "column") & (tt["p_holm"] < alpha)]
        if nc:
            out.append(f"Left and right columns differed significantly for {_of(len(lr), nc)}.")
    if tt is None or not len(tt):
        out.append(
            "No row or column test: the results lack the points of a complete row or column pair, or too few subjects."
        )
    return out


def _of(k: int, n: int, what: str = "method") -> str:
    """ "3 of 7 methods", "the one method" / "none of the 2 methods"; never "0 of 0"."""
    if n == 1:
        return f"the one {what}" if k else f"not the one {what} tested"
    return f"{'none' if k == 0 else k} of the {n} {what}s"


def _text_mutual(a: Analysis, alpha: float) -> list[str]:
    t = a.tables.get("mutual")
    if t is None:
        return []
    m = (
        _nets(t)
        .groupby(["method", "display"], sort=False)["mean"]
        .agg(["min", "max", "count"])
        .reset_index()
        .sort_values("min")
    )
    r = m.iloc[0]
    conds = list(dict.fromkeys(t.loc[t["method"] == r.method, "condition"].astype(str)))
    where = (
        f"{_f(r['min'])} deg in the one condition present, {conds[0]}"
        if len(conds) == 1
        else f"{_span(r['min'], r['max'], ' deg')} across the {_count(len(conds), 'condition')}"
    )
    out = [f"N = {a.n} subjects. Lowest mutual-gaze error: {r.display} ({where})."]
    pw = a.tables.get("mutual_pairwise")
    if pw is not None and len(pw):
        out.append(
            "Significant after Holm correction (within method): "
            f"{_of(int((pw['p_holm'] < alpha).sum()), len(pw), 'condition comparison')}."
        )
    e = a.tables.get("mutual_eccentricity")
    if e is not None and len(e):
        out.append(
            "Eccentricity slopes (deg/deg, mean +/- SD over subjects): "
            + "; ".join(
                f"{r.display} b_pitch {_f(r.b_pitch_mean, 3)} +/- {_f(r.b_pitch_sd, 3)}, b_yaw {_f(r.b_yaw_mean, 3)} "
                f"+/- {_f(r.b_yaw_sd, 3)}"
                for r in e.itertuples()
            )
            + "."
        )
    return out


def _text_crop(a: Analysis, alpha: float) -> list[str]:
    t = a.tables.get("crop_vs_rectified")
    if t is None:
        return []
    return [
        "Whole dataset: "
        + "; ".join(
            f"{r.display} crop {_f(r.crop_mean)} vs rectified {_f(r.rectified_mean)} deg"
            + (f" ({r.better}, {_p(r.p_holm)})" if np.isfinite(r.p_holm) else " (not tested)")
            for r in t.itertuples()
        )
        + "."
    ]


def _text_eff(a: Analysis, alpha: float) -> list[str]:
    t = a.tables.get("efficiency")
    if t is None:
        return []
    parts = []
    for r in t.itertuples():
        ms = r.infer_ms_per_frame
        net = (
            "no network (weight-free baseline)"
            if F.is_baseline(r.method) or str(r.input) == "none"
            else f"network {_f(ms)} ms/frame ({_f(1000.0 / ms, 1)} FPS)"
            if ms is not None and np.isfinite(ms) and ms > 0
            else "network time not recorded"
        )
        parts.append(
            f"{r.display} ({r.input}, {r.device}): {net}; pipeline {_f(r.fps, 1)} frames/s (frames / wall time, "
            "decoding and the face pass included)"
        )
    return ["; ".join(parts) + "."]


TEXT = {
    "illumination": _text_illumination,
    "viewpoint": _text_viewpoint,
    "conflict": _text_conflict,
    "target": _text_target,
    "mutual": _text_mutual,
    "crop_vs_rectified": _text_crop,
    "efficiency": _text_eff,
}


def best_grid(a: Analysis) -> pd.DataFrame | None:
    t = a.tables.get("target_best")
    if t is None:
        return None
    g = {(r.row, r.column): f"{r.target}: {r.best_display} ({_f(r.best_mean)})" for r in t.itertuples()}
    # as the subject sees the table (figures.SUBJECT_VIEW_GRID): farthest row on top, the subject's left = the
    # camera's right
    heads = ("subject's left", "middle", "subject's right")
    return pd.DataFrame(
        [
            {"row": row, **{h: g.get((row, c), "") for h, c in zip(heads, cols, strict=True)}}
            for row, cols in F.SUBJECT_VIEW_GRID
        ]
    )
