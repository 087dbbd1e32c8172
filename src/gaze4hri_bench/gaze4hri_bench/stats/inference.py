"""Statistical primitives used by the study's analyses, as pure functions.

Subject-level paired and one-sample t-tests, Holm's step-down correction, Cohen's
d in its two paired forms, the coefficient of variation and per-group least squares.
Each is checked in tests/bench/stats against R (values quoted there) and scipy/statsmodels.

References
----------
Sezer et al., "Gaze4HRI", arXiv 2605.04770, analyses (subject as the
unit, Holm-corrected paired tests, alpha 0.05; CV of Table III).
Holm, S. (1979). A simple sequentially rejective multiple test procedure.
Scand. J. Statist. 6, 65-70.
Lakens, D. (2013). Calculating and reporting effect sizes. Front. Psychol. 4:863
(d_z = mean difference / SD of differences; d_av = mean difference / mean SD).
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy.special import stdtr

__all__ = [
    "holm",
    "paired_ttest",
    "one_sample_ttest",
    "cohen_dz",
    "cohen_dav",
    "cv_percent",
    "pairwise_paired",
    "group_slopes",
    "group_ols2",
]


def holm(p) -> np.ndarray:
    """Holm (1979) step-down adjusted p-values (R ``p.adjust(p, "holm")``).

    NaNs are ignored (they neither count in m nor change); same order as ``p``.
    """
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = ok.size
    if m == 0:
        return out
    order = ok[np.argsort(p[ok], kind="mergesort")]
    adj = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adj, 1.0)
    return out


def cohen_dz(a, b=None) -> float:
    """Cohen's d_z of paired samples: mean(a - b) / SD(a - b), SD with ddof 1 (Lakens 2013, eq. 6)."""
    d = np.asarray(a, float) - (0.0 if b is None else np.asarray(b, float))
    sd = d.std(ddof=1) if d.size > 1 else np.nan
    return float(d.mean() / sd) if sd > 0 else np.nan


def cohen_dav(a, b) -> float:
    """Cohen's d_av of paired samples: mean(a - b) / sqrt((SD_a^2 + SD_b^2) / 2) (Lakens 2013, eq. 10).

    This is what pingouin 0.7 reports as ``cohen_d`` for paired t-tests.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.size < 2:
        return np.nan
    s = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2.0)
    return float((a - b).mean() / s) if s > 0 else np.nan


def _t_p(t: float, dof: int, alternative: str) -> float:
    """p-value of Student's t with ``dof`` degrees of freedom (scipy.special.stdtr is its CDF)."""
    if alternative == "two-sided":
        return float(2.0 * stdtr(dof, -abs(t)))
    if alternative == "greater":
        return float(stdtr(dof, -t))
    if alternative == "less":
        return float(stdtr(dof, t))
    raise ValueError(f"alternative must be two-sided, greater or less, not {alternative!r}")


def _one_sample(d: np.ndarray, alternative: str) -> tuple[float, float]:
    """t = mean(d) / (SD(d) / sqrt(n)) and its p; NaN when SD is 0 (Student 1908)."""
    n = d.size
    sd = d.std(ddof=1)
    if n < 2 or not sd > 1e-12 * max(1.0, abs(d.mean())):
        return np.nan, np.nan
    t = float(d.mean() / (sd / np.sqrt(n)))
    return t, _t_p(t, n - 1, alternative)


def paired_ttest(a, b, alternative: str = "two-sided") -> dict:
    """Paired t-test of a vs b over subjects (R ``t.test(a, b, paired=TRUE)``; scipy ``ttest_rel``).

    Returns n, mean_diff (a - b), t, dof, p_unc, cohen_dz, cohen_dav.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    n = a.size
    if n < 2:
        return {
            "n": n,
            "mean_diff": np.nan,
            "t": np.nan,
            "dof": np.nan,
            "p_unc": np.nan,
            "cohen_dz": np.nan,
            "cohen_dav": np.nan,
        }
    d = a - b
    t, p = _one_sample(d, alternative)
    return {
        "n": n,
        "mean_diff": float(d.mean()),
        "t": t,
        "dof": n - 1,
        "p_unc": p,
        "cohen_dz": cohen_dz(a, b),
        "cohen_dav": cohen_dav(a, b),
    }


def one_sample_ttest(x, mu: float = 0.0, alternative: str = "greater") -> dict:
    """One-sample t-test of mean(x) against ``mu`` (R ``t.test(x, mu=0, alternative="greater")``).

    Returns n, mean, sd, t, dof, p_unc, cohen_d (= (mean - mu) / SD).
    """
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    n = x.size
    t, p = _one_sample(x - mu, alternative) if n >= 2 else (np.nan, np.nan)
    if not np.isfinite(t):
        return {
            "n": n,
            "mean": float(x.mean()) if n else np.nan,
            "sd": np.nan,
            "t": np.nan,
            "dof": n - 1 if n else np.nan,
            "p_unc": np.nan,
            "cohen_d": np.nan,
        }
    sd = float(x.std(ddof=1))
    return {
        "n": n,
        "mean": float(x.mean()),
        "sd": sd,
        "t": t,
        "dof": n - 1,
        "p_unc": p,
        "cohen_d": float((x.mean() - mu) / sd),
    }


def cv_percent(level_means, ddof: int = 1) -> float:
    """Coefficient of variation 100 * sigma / mu of a method's level means (Sezer et al., Table III).

    ``ddof=1`` (sample SD) reproduces the study's CV column from its own level means
    to two decimals (e.g. PureGaze (E): 11.73, 11.52, 12.18, 10.19 -> 7.50; with
    ddof 0 it would be 6.50); tests/bench/stats/test_inference.py checks all seven rows.
    """
    x = np.asarray(level_means, float)
    x = x[np.isfinite(x)]
    if x.size < 2 or x.mean() == 0:
        return np.nan
    return float(100.0 * x.std(ddof=ddof) / x.mean())


def pairwise_paired(wide: pd.DataFrame, alternative: str = "two-sided", pairs=None, min_n: int = 2) -> pd.DataFrame:
    """All pairwise paired t-tests between the columns of a subject x condition table, Holm-corrected.

    wide: index = subject, one column per condition (or method). Subjects missing any
    column are dropped first (listwise over the family, as pingouin's ``pairwise_tests``
    with ``nan_policy="listwise"``); with fewer than ``min_n`` left, t and p are NaN.
    Returns one row per pair: a, b, n, mean_a, mean_b, mean_diff, t, dof, p_unc,
    p_holm, cohen_dz, cohen_dav. The Holm family is the set of pairs passed.
    """
    wide = wide.dropna()
    few = len(wide) < max(min_n, 2)
    cols = list(wide.columns)
    pairs = list(pairs) if pairs is not None else list(combinations(cols, 2))
    x = {c: wide[c].to_numpy(dtype=float) for c in cols}
    rows = []
    for a, b in pairs:
        r = paired_ttest(x[a][:0] if few else x[a], x[b][:0] if few else x[b], alternative)
        r["n"] = len(wide)
        if few and len(wide):  # untested family: the paired mean difference is still a descriptive
            r["mean_diff"] = float((x[a] - x[b]).mean())
        rows.append(
            {
                "a": a,
                "b": b,
                "mean_a": float(x[a].mean()) if x[a].size else np.nan,
                "mean_b": float(x[b].mean()) if x[b].size else np.nan,
                **r,
            }
        )
    out = pd.DataFrame(
        rows, columns=["a", "b", "mean_a", "mean_b", "n", "mean_diff", "t", "dof", "p_unc", "cohen_dz", "cohen_dav"]
    )
    out.insert(out.columns.get_loc("p_unc") + 1, "p_holm", holm(out["p_unc"].to_numpy()) if len(out) else [])
    return out


def group_slopes(df: pd.DataFrame, by: list[str], x: str, y: str, w: str | None = None) -> pd.DataFrame:
    """Per-group least squares ``y = a + b x``, vectorised: OLS (R ``coef(lm(y ~ x))``)
    or, with ``w``, weighted least squares (R ``coef(lm(y ~ x, weights = w))``; the
    study's conflict slopes, GazeForHRI/Gaze4HRI@main:head_gaze_conflict_vs_error.py:113-127).

    Returns the ``by`` keys with ``intercept``, ``slope`` and ``n``; groups with fewer
    than 2 points or constant x get NaN; rows with a non-positive weight are dropped.
    """
    d = df[by + [x, y] + ([w] if w else [])].dropna()
    if w:
        d = d[d[w] > 0]
    keys = [d[k] for k in by]
    wt = d[w].astype(float) if w else pd.Series(1.0, index=d.index)
    sw = wt.groupby(keys, observed=True).sum()
    n = d[x].groupby(keys, observed=True).count()
    mx = (wt * d[x]).groupby(keys, observed=True).sum() / sw
    my = (wt * d[y]).groupby(keys, observed=True).sum() / sw
    dx = d[x] - (wt * d[x]).groupby(keys, observed=True).transform("sum") / wt.groupby(keys, observed=True).transform(
        "sum"
    )
    dy = d[y] - (wt * d[y]).groupby(keys, observed=True).transform("sum") / wt.groupby(keys, observed=True).transform(
        "sum"
    )
    sxx = (wt * dx * dx).groupby(keys, observed=True).sum()
    sxy = (wt * dx * dy).groupby(keys, observed=True).sum()
    slope = (sxy / sxx.where(sxx > 1e-12 * sw)).where(n >= 2)
    out = pd.DataFrame({"intercept": my - slope * mx, "slope": slope, "n": n})
    return out.reset_index()


def group_ols2(df: pd.DataFrame, by: list[str], x1: str, x2: str, y: str) -> pd.DataFrame:
    """Per-group OLS ``y = a + b1 x1 + b2 x2`` (R ``coef(lm(y ~ x1 + x2))``), vectorised.

    Solves the centred 2x2 normal equations per group from grouped sums, so millions
    of frames need no Python loop. Returns ``by`` keys, intercept, b1, b2, n;
    NaN where the design is singular or n < 3.
    """
    d = df[by + [x1, x2, y]].dropna()
    keys = [d[k] for k in by]
    g = d.groupby(keys, observed=True)
    m = g[[x1, x2, y]].transform("mean")
    c1, c2, cy = d[x1] - m[x1], d[x2] - m[x2], d[y] - m[y]
    s = (
        pd.DataFrame({"s11": c1 * c1, "s22": c2 * c2, "s12": c1 * c2, "s1y": c1 * cy, "s2y": c2 * cy})
        .groupby(keys, observed=True)
        .sum()
    )
    mean = g[[x1, x2, y]].mean()
    n = g[y].count()
    det = s["s11"] * s["s22"] - s["s12"] ** 2
    scale = (s["s11"] * s["s22"]).where(lambda v: v > 0)
    ok = (det > 1e-10 * scale) & (n >= 3)
    b1 = ((s["s22"] * s["s1y"] - s["s12"] * s["s2y"]) / det).where(ok)
    b2 = ((s["s11"] * s["s2y"] - s["s12"] * s["s1y"]) / det).where(ok)
    a = mean[y] - b1 * mean[x1] - b2 * mean[x2]
    return pd.DataFrame({"intercept": a, "b1": b1, "b2": b2, "n": n}).reset_index()
