"""The analyses the study's released scripts run beyond the paper's main tables, as pure
functions of subject-level wide tables (index subject, columns cells) or video tables.

Each restates a script of GazeForHRI/Gaze4HRI@main (cited per function); tests in
tests/bench/stats/test_extended.py check every statistic against an independent computation
(scipy, statsmodels, pingouin).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats as sps

from .inference import group_ols2, holm, pairwise_paired

__all__ = [
    "STUDY_COLUMNS",
    "ci95",
    "level_pairs",
    "sensitivity",
    "pairs_within",
    "champions",
    "eccentricity_ols",
    "per_video_eccentricity",
    "group_comparison",
]

#: The study's target columns C1..C3 (point_analysis.py:351-366): C1 = P1, P4, P7 (the
#: camera's right, the subject's left), C2 = P2, P5, P8, C3 = P3, P6, P9.
STUDY_COLUMNS = {"C1": ("P1", "P4", "P7"), "C2": ("P2", "P5", "P8"), "C3": ("P3", "P6", "P9")}


def ci95(x) -> tuple[float, float]:
    """Two-sided 95 % t confidence interval of the mean over subjects (R ``t.test(x)$conf.int``)."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    n = x.size
    if n < 2:
        return np.nan, np.nan
    h = sps.t.ppf(0.975, n - 1) * x.std(ddof=1) / np.sqrt(n)
    return float(x.mean() - h), float(x.mean() + h)


def pairs_within(
    wide: pd.DataFrame, groups: list, cells: list, group_name: str, a_name: str, b_name: str, min_n: int = 2
) -> pd.DataFrame:
    """All pairs of ``cells`` within each group of a (group, cell) column MultiIndex,
    paired two-sided t-tests, Holm over the pairs of one group (pingouin
    ``pairwise_tests(within=cell, subject=subject, padjust="holm")`` per group).

    Returns group_name, a_name, b_name, mean_a, mean_b, n, mean_diff, t, dof, p_unc,
    p_holm, cohen_dz, cohen_dav. Subjects missing a cell of a group are dropped for
    that group (pingouin's listwise deletion per call).
    """
    parts = []
    for g in groups:
        w = wide[g][[c for c in cells]]
        pw = pairwise_paired(w, min_n=min_n).rename(columns={"a": a_name, "b": b_name})
        pw.insert(0, group_name, g)
        parts.append(pw)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def level_pairs(wide: pd.DataFrame, methods: list[str], levels: list[str], min_n: int = 2) -> pd.DataFrame:
    """Experiment 1: the illumination level pairs within each method (6 for 4 levels),
    Holm over the pairs of one method (lighting_analysis.py:820-874)."""
    return pairs_within(wide, methods, levels, "method", "level_a", "level_b", min_n)


def sensitivity(long: pd.DataFrame, value: str = "error_mean", ranges=((10, 100), (10, 50))) -> pd.DataFrame:
    """Experiment 1 sensitivity slope: per method OLS of the subject values on the level
    over all subject x level points (scipy ``linregress``; lighting_analysis.py:877-955).

    long: method, subject, level (int), ``value``. For each (lo, hi) range the levels
    in [lo, hi] are used. Returns method, levels ("10-100"), slope (deg per level
    point), intercept, r, p, n_subjects, n_points, delta (slope x (hi - lo)).
    """
    rows = []
    for lo, hi in ranges:
        d = long[(long["level"] >= lo) & (long["level"] <= hi)]
        for m, g in d.groupby("method", sort=False):
            x, y = g["level"].to_numpy(float), g[value].to_numpy(float)
            if np.unique(x).size < 2 or x.size < 3:
                r = (np.nan,) * 5
            else:
                lr = sps.linregress(x, y)
                r = (lr.slope, lr.intercept, lr.rvalue, lr.pvalue, lr.stderr)
            rows.append(
                {
                    "method": m,
                    "levels": f"{lo}-{hi}",
                    "slope": r[0],
                    "intercept": r[1],
                    "r": r[2],
                    "p": r[3],
                    "n_subjects": int(g["subject"].nunique()),
                    "n_points": int(len(g)),
                    "delta": r[0] * (hi - lo),
                }
            )
    return pd.DataFrame(
        rows, columns=["method", "levels", "slope", "intercept", "r", "p", "n_subjects", "n_points", "delta"]
    )


def champions(method_pairs: pd.DataFrame, means: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """Experiment 4.1: the "champion" of a point, a method significantly better (Holm
    p < alpha and lower mean) than every other method (point_analysis.py:504-598).

    method_pairs: target, method_a, method_b, mean_a, mean_b, p_holm (21 pairs per point).
    means: target, method, mean. Returns target, n_methods, champion ("" if none),
    decisive, lowest (method with the lowest mean), order_by_mean.
    """
    rows = []
    for t, g in means.groupby("target", sort=False):
        ms = g.sort_values("mean")
        k = len(ms)
        wins = {m: 0 for m in ms["method"]}
        for r in method_pairs[method_pairs["target"] == t].itertuples():
            if np.isfinite(r.p_holm) and r.p_holm < alpha:
                if r.mean_a < r.mean_b:
                    wins[r.method_a] += 1
                elif r.mean_b < r.mean_a:
                    wins[r.method_b] += 1
        champ = [m for m, w in wins.items() if w == k - 1 and k > 1]
        rows.append(
            {
                "target": t,
                "n_methods": k,
                "champion": "; ".join(champ),
                "decisive": bool(champ),
                "lowest": ms["method"].iloc[0],
                "order_by_mean": " < ".join(ms["method"]),
            }
        )
    return pd.DataFrame(rows, columns=["target", "n_methods", "champion", "decisive", "lowest", "order_by_mean"])


def eccentricity_ols(df: pd.DataFrame, by: list[str], y: str, pitch: str, yaw: str, min_n: int) -> pd.DataFrame:
    """Per group OLS y = a + b_pitch |pitch| + b_yaw |yaw| (R ``lm(y ~ pitch + yaw)``),
    groups with fewer than ``min_n`` observations dropped. Returns by, intercept,
    b_pitch, b_yaw, n."""
    d = df.dropna(subset=[y, pitch, yaw])
    reg = group_ols2(d, by, pitch, yaw, y).rename(columns={"b1": "b_pitch", "b2": "b_yaw"})
    return reg[reg["n"] >= min_n].reset_index(drop=True)


def summarize_slopes(reg: pd.DataFrame, by: str = "method") -> pd.DataFrame:
    """Mean, SD (ddof 1) and 95 % CI over subjects of per-subject slopes."""
    rows = []
    for m, g in reg.dropna(subset=["b_pitch", "b_yaw"]).groupby(by, sort=False):
        row = {by: m, "n": int(len(g)), "intercept_mean": g["intercept"].mean()}
        for b in ("b_pitch", "b_yaw"):
            x = g[b].to_numpy(float)
            lo, hi = ci95(x)
            row.update(
                {
                    f"{b}_mean": x.mean(),
                    f"{b}_sd": x.std(ddof=1) if x.size > 1 else np.nan,
                    f"{b}_ci_low": lo,
                    f"{b}_ci_high": hi,
                }
            )
        rows.append(row)
    cols = [by, "n", "intercept_mean"] + [
        f"{b}_{s}" for b in ("b_pitch", "b_yaw") for s in ("mean", "sd", "ci_low", "ci_high")
    ]
    return pd.DataFrame(rows, columns=cols)


def per_video_eccentricity(frames: pd.DataFrame, min_frames: int = 8) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Experiment 4.2 as the study's script: OLS per video over its valid frames
    (at least ``min_frames``), slopes averaged over a subject's videos per condition,
    then over the four conditions, then mean/SD/CI over subjects
    (line_movement_analysis_paper.py:996-1110 and :1212-1262).

    frames: subject, method, condition, trial, error_deg, abs_pitch_deg, abs_yaw_deg.
    Returns (per-video fits, per-method summary).
    """
    vids = eccentricity_ols(
        frames, ["subject", "method", "condition", "trial"], "error_deg", "abs_pitch_deg", "abs_yaw_deg", min_frames
    )
    vids = vids.dropna(subset=["b_pitch", "b_yaw"])
    cond = vids.groupby(["method", "subject", "condition"], observed=True, sort=False)[
        ["intercept", "b_pitch", "b_yaw"]
    ].mean()
    subj = cond.groupby(level=["method", "subject"], observed=True, sort=False).mean().reset_index()
    return vids, summarize_slopes(subj)


def group_comparison(values: pd.DataFrame, factor: str, alpha: float, min_subjects: int) -> pd.DataFrame:
    """Subject-level means per method and level of a subject attribute (glasses, gender);
    with exactly two levels of at least ``min_subjects`` subjects each, Welch's
    two-sample t-test per method (R ``t.test(x, y)``; scipy ``ttest_ind(equal_var=False)``),
    Holm across methods, Cohen's d with the pooled SD.

    values: subject, method, ``factor``, value. Returns method, factor, level_a,
    level_b, n_a, n_b, mean_a, mean_b, sd_a, sd_b, mean_diff, t, dof, p_unc, p_holm,
    cohen_d.
    """
    levels = sorted(values[factor].dropna().astype(str).unique())
    rows = []
    for m, g in values.groupby("method", sort=False):
        g = g.dropna(subset=[factor])
        if len(levels) != 2:
            continue
        a = g.loc[g[factor].astype(str) == levels[0], "value"].to_numpy(float)
        b = g.loc[g[factor].astype(str) == levels[1], "value"].to_numpy(float)
        row = {
            "method": m,
            "factor": factor,
            "level_a": levels[0],
            "level_b": levels[1],
            "n_a": a.size,
            "n_b": b.size,
            "mean_a": a.mean() if a.size else np.nan,
            "mean_b": b.mean() if b.size else np.nan,
            "sd_a": a.std(ddof=1) if a.size > 1 else np.nan,
            "sd_b": b.std(ddof=1) if b.size > 1 else np.nan,
        }
        row["mean_diff"] = row["mean_a"] - row["mean_b"]
        if a.size >= min_subjects and b.size >= min_subjects:
            r = sps.ttest_ind(a, b, equal_var=False)
            va, vb = a.var(ddof=1), b.var(ddof=1)
            dof = (va / a.size + vb / b.size) ** 2 / (
                (va / a.size) ** 2 / (a.size - 1) + (vb / b.size) ** 2 / (b.size - 1)
            )
            sp = np.sqrt(((a.size - 1) * va + (b.size - 1) * vb) / (a.size + b.size - 2))
            row.update(
                {
                    "t": float(r.statistic),
                    "dof": float(dof),
                    "p_unc": float(r.pvalue),
                    "cohen_d": float(row["mean_diff"] / sp) if sp > 0 else np.nan,
                }
            )
        else:
            row.update({"t": np.nan, "dof": np.nan, "p_unc": np.nan, "cohen_d": np.nan})
        rows.append(row)
    cols = [
        "method",
        "factor",
        "level_a",
        "level_b",
        "n_a",
        "n_b",
        "mean_a",
        "mean_b",
        "sd_a",
        "sd_b",
        "mean_diff",
        "t",
        "dof",
        "p_unc",
        "p_holm",
        "cohen_d",
    ]
    out = pd.DataFrame(rows, columns=[c for c in cols if c != "p_holm"])
    out.insert(out.columns.get_loc("p_unc") + 1, "p_holm", holm(out["p_unc"].to_numpy()) if len(out) else [])
    out["significant"] = out["p_holm"] < alpha
    return out
