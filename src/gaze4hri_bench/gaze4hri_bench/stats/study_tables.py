"""Tables only the study's released analyser writes (GazeForHRI/Gaze4HRI@main), as pure
functions of subject-level wide tables or of the analyses' own tables. Each restates
one output file of a script (cited per function; no code copied); the analyses in
:mod:`.analyses` add them to their tables, and tests/stats/test_study_tables.py
checks each against its definition recomputed by hand.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.stats import norm

from .extended import ci95
from .inference import holm

__all__ = ["STUDY_ROWS", "describe", "group_descriptives", "wins_tally", "tiers", "paired_matrix", "slope_meta", "SLOPE_COEFS", "SLOPE_META_COLUMNS"]

#: The study's target rows (point_analysis.py:332-349): R1 = P1, P2, P3 (farthest from the
#: subject), R2 = P4, P5, P6, R3 = P7, P8, P9 (closest).
STUDY_ROWS = {"R1": ("P1", "P2", "P3"), "R2": ("P4", "P5", "P6"), "R3": ("P7", "P8", "P9")}

DESC_COLUMNS = ["n", "mean", "sd", "se", "ci_low", "ci_high"]


def describe(x) -> dict:
    """n, mean, SD (ddof 1), SE and the 95 % t CI over the finite values of ``x``: the
    study's subject-level summary (e.g. point_analysis.py:882-914 ``_summ``,
    camera_viewpoint.py:138-172, line_movement_analysis_paper.py:655-716)."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    n = x.size
    sd = float(x.std(ddof=1)) if n > 1 else np.nan
    lo, hi = ci95(x)
    return {"n": int(n), "mean": float(x.mean()) if n else np.nan, "sd": sd, "se": sd / np.sqrt(n) if n > 1 else np.nan, "ci_low": lo, "ci_high": hi}


def group_descriptives(wide: pd.DataFrame, methods: list[str], groups: dict[str, tuple[str, ...]], factor: str) -> pd.DataFrame:
    """Per method and group (a row R1-R3 or a column C1-C3 of the target grid) the subject-level
    descriptives of ``wide`` (index subject, columns (method, group)): the study's
    ``row_subject_level_descriptives`` / ``col_subject_level_descriptives`` files
    (point_analysis.py:332-368 for the groups, :882-914 for the summary, :940-950 for the calls).
    Returns method, factor, group, points, n, mean, sd, se, ci_low, ci_high."""
    rows = []
    for m in methods:
        for g, pts in groups.items():
            x = wide[(m, g)] if (m, g) in wide.columns else pd.Series(dtype=float)
            rows.append({"method": m, "factor": factor, "group": g, "points": ", ".join(pts), **describe(x)})
    return pd.DataFrame(rows, columns=["method", "factor", "group", "points", *DESC_COLUMNS])


def wins_tally(champions: pd.DataFrame, means: pd.DataFrame) -> pd.DataFrame:
    """The study's wins tally over the target points (point_analysis.py:504-620,
    ``pointwise_wins_tally``): per method the points where it is the champion, and, among
    the points without a champion, those where its mean is the lowest (ties within 1e-9 deg
    all count).

    champions: target, champion ("a; b" or ""), decisive. means: target, method, mean.
    Returns method, n_points_won, points_won, n_points_tied_topmean, points_tied_topmean,
    sorted by points won, then points tied at the top (both descending), then method."""
    won: dict[str, list[str]] = {m: [] for m in dict.fromkeys(means["method"].astype(str))}
    tied: dict[str, list[str]] = {m: [] for m in won}
    for r in champions.itertuples(index=False):
        if bool(r.decisive) and str(r.champion):
            for c in str(r.champion).split("; "):
                won.setdefault(c, []).append(str(r.target))
            continue
        g = means[means["target"].astype(str) == str(r.target)]
        if not len(g):
            continue
        best = g["mean"].min()
        for m in g.loc[np.isclose(g["mean"], best, rtol=0.0, atol=1e-9), "method"].astype(str):
            tied.setdefault(m, []).append(str(r.target))

    def key(p: str) -> tuple:
        return (int(p[1:]),) if p[1:].isdigit() else (10**9, p)

    out = pd.DataFrame([{"method": m, "n_points_won": len(won[m]), "points_won": ", ".join(sorted(won[m], key=key)),
                         "n_points_tied_topmean": len(tied.get(m, [])), "points_tied_topmean": ", ".join(sorted(tied.get(m, []), key=key))} for m in won],
                       columns=["method", "n_points_won", "points_won", "n_points_tied_topmean", "points_tied_topmean"])
    return out.sort_values(["n_points_won", "n_points_tied_topmean", "method"], ascending=[False, False, True], kind="stable").reset_index(drop=True)


def tiers(pairs: pd.DataFrame, means: pd.Series, alpha: float) -> list[list[str]]:
    """The study's tiered model ranking (line_movement_analysis_paper.py:743-852
    ``_induce_preference_tiers``; the same rule in head_yaw_model_ranking.py:209-260):
    methods walked by ascending subject-level mean; a method joins the current tier unless
    it and the tier's last method differ significantly (Holm p < alpha, the higher mean
    the worse), then it opens the next tier.

    pairs: method_a, method_b, p_holm. means: method -> subject-level mean."""
    p = {frozenset((str(a), str(b))): float(q) for a, b, q in zip(pairs["method_a"], pairs["method_b"], pairs["p_holm"], strict=True)}
    order = [str(m) for m in means.dropna().sort_values(kind="stable").index]
    out: list[list[str]] = []
    for m in order:
        if out:
            prev = out[-1][-1]
            q = p.get(frozenset((prev, m)), np.nan)
            if not (np.isfinite(q) and q < alpha and means[m] != means[prev]):
                out[-1].append(m)
                continue
        out.append([m])
    return out


def paired_matrix(wide: pd.DataFrame, methods: list[str], a: str, b: str) -> pd.DataFrame:
    """Subject x condition matrix of the subjects with both conditions per method: the
    study's ``camera_viewpoint_subject_level_matrix.csv`` (camera_viewpoint.py:242-272).
    wide: index subject, columns (method, condition). Returns method, subject, a, b."""
    parts = []
    for m in methods:
        w = wide[m][[a, b]].dropna()
        parts.append(pd.DataFrame({"method": m, "subject": w.index.astype(str), a: w[a].to_numpy(), b: w[b].to_numpy()}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["method", "subject", a, b])


#: The four coefficients of the study's per-video two-predictor fits: raw slopes (deg of error
#: per deg of abs(yaw) / abs(pitch)) and standardized betas (every variable z-scored within the video).
SLOPE_COEFS = ("b_yaw", "b_pitch", "beta_yaw", "beta_pitch")
SLOPE_META_COLUMNS = ["condition", "coef", "method", "videos", "frames", "estimate", "se", "z", "p_unc", "p_holm",
                      "ci_low", "ci_high", "mean", "sd", "prop_pos"]


def _zscore(x: np.ndarray) -> np.ndarray:
    s = x.std()  # population SD (ddof 0), as the study's _standardize
    return (x - x.mean()) / s if np.isfinite(s) and s > 0 else np.full_like(x, np.nan)


def _fit2(y: np.ndarray, yaw: np.ndarray, pitch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS y = a + b_yaw yaw + b_pitch pitch (statsmodels); (slopes, their SEs), NaN when degenerate."""
    X = np.column_stack([np.ones(y.size), yaw, pitch])
    if not (np.isfinite(X).all() and np.isfinite(y).all()) or y.size <= 3 or np.linalg.matrix_rank(X) < 3:
        return np.full(2, np.nan), np.full(2, np.nan)
    r = sm.OLS(y, X).fit()
    return np.asarray(r.params[1:], float), np.asarray(r.bse[1:], float)


def slope_meta(frames: pd.DataFrame, min_frames: int = 8) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The study's meta-analysis of per-video slopes in experiment 4.2
    (GazeForHRI/Gaze4HRI line_movement_analysis_paper.py:996-1208,
    ``run_twovar_abs_pitch_yaw_regressions_from_dbs``):

    - per video (subject, method, condition, trial) with at least ``min_frames`` valid frames
      (:1076-1078), OLS error = a + b_yaw abs(yaw) + b_pitch abs(pitch) of the ground-truth gaze
      (:1080-1084, ``_ols_2pred`` :88-142: classical SEs, s^2 (X'X)^-1 with n - 3 df), and the
      same fit on the variables z-scored within the video with the population SD (:1086-1090,
      ``_standardize`` :144-150), giving the standardized betas;
    - per (condition, method) and coefficient, the fixed-effect inverse-variance meta-analysis
      over the videos with a finite slope and SE > 0 (:1135-1175, ``_meta_one_coef``): weights
      1/SE^2, pooled estimate sum(w b)/sum(w), SE 1/sqrt(sum(w)), two-sided z-test against 0
      with the normal distribution; also the unweighted mean and SD (ddof 1) of the slopes and
      the share of positive slopes;
    - Holm across the methods of one (condition, coefficient) (:1190-1200).

    The study restricts subjects to those with all four conditions for every method
    (:1044-1047); the caller passes those subjects' frames. ``ci_low``/``ci_high`` are the
    normal 95 % interval estimate +- 1.96 SE (not in the study's file).

    frames: subject, method, condition, trial, error_deg, abs_pitch_deg, abs_yaw_deg (valid frames).
    Returns (per-video fits: subject, method, condition, trial, n_frames and per coefficient the
    value and ``se_<coef>``; the meta table with :data:`SLOPE_META_COLUMNS`).
    """
    keys = ["subject", "method", "condition", "trial"]
    d = frames.dropna(subset=["error_deg", "abs_pitch_deg", "abs_yaw_deg"])
    rows = []
    for k, g in d.groupby(keys, sort=False, observed=True):
        if len(g) < min_frames:
            continue
        y, yaw, pitch = (g[c].to_numpy(float) for c in ("error_deg", "abs_yaw_deg", "abs_pitch_deg"))
        b, se = _fit2(y, yaw, pitch)
        bs, ses = _fit2(_zscore(y), _zscore(yaw), _zscore(pitch))
        rows.append({**dict(zip(keys, k, strict=True)), "n_frames": len(g), "b_yaw": b[0], "se_b_yaw": se[0], "b_pitch": b[1], "se_b_pitch": se[1],
                     "beta_yaw": bs[0], "se_beta_yaw": ses[0], "beta_pitch": bs[1], "se_beta_pitch": ses[1]})
    vids = pd.DataFrame(rows, columns=[*keys, "n_frames"] + [c for b in SLOPE_COEFS for c in (b, f"se_{b}")])
    meta = []
    for (cond, m), g in vids.groupby(["condition", "method"], sort=False):
        for coef in SLOPE_COEFS:
            th, se = g[coef].to_numpy(float), g[f"se_{coef}"].to_numpy(float)
            ok = np.isfinite(th) & np.isfinite(se) & (se > 0)
            th, se, n = th[ok], se[ok], g["n_frames"].to_numpy()[ok]
            r = {"condition": cond, "coef": coef, "method": m, "videos": int(th.size), "frames": int(n.sum())}
            if th.size:
                w = 1.0 / se**2
                est, s = float((w * th).sum() / w.sum()), float(1.0 / np.sqrt(w.sum()))
                z = est / s
                r.update({"estimate": est, "se": s, "z": z, "p_unc": float(2.0 * norm.sf(abs(z))), "ci_low": est - norm.ppf(0.975) * s,
                          "ci_high": est + norm.ppf(0.975) * s, "mean": float(th.mean()), "sd": float(th.std(ddof=1)) if th.size > 1 else np.nan,
                          "prop_pos": float((th > 0).mean())})
            meta.append(r)
    out = pd.DataFrame(meta, columns=SLOPE_META_COLUMNS)
    for _, idx in out.groupby(["condition", "coef"], sort=False).groups.items():
        out.loc[idx, "p_holm"] = holm(out.loc[idx, "p_unc"].to_numpy(float))
    return vids, out
