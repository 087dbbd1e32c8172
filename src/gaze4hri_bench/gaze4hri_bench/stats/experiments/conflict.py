"""Experiment 3: error vs head-gaze conflict; per-subject slopes, their one-sided tests and the
pairwise method tests."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis_profiles import REFERENCE, AnalysisProfile
from ..extended import ci95
from ..inference import group_slopes, holm, one_sample_ttest
from .shared import (
    DZ_NOTE,
    MIN_SUBJECTS,
    PAIRED_EFFECT,
    Analysis,
    Caption,
    complete_subjects,
    display_name,
    mark_significant,
    method_order,
    pairwise_methods,
    subject_means,
    too_few,
    untested_note,
    valid_videos,
    with_display,
)

__all__ = ["conflict", "CAPTIONS"]

_EXP = "Experiment 3: "
CAPTIONS = {
    "conflict": Caption(
        _EXP + "subject mean error (deg) and per-subject slopes (deg/deg, {fit}); one-sided one-sample t-test of "
        "slopes > 0", "Holm across methods", "slope mean and 95 % CI; % of subjects with a positive slope"),
    "conflict_slopes": Caption(_EXP + "per-subject fits error = a + b conflict ({fit})"),
    "conflict_pairwise": Caption(
        _EXP + "paired two-sided t-tests of subject mean errors between methods.{untested}",
        "Holm over all method pairs", PAIRED_EFFECT),
}
#: The video-level table's caption, written whole (not through Analysis.caption).
_VIDEOS_CAPTION = (
    _EXP + "the video-level table the slopes are fitted on (the study's "
    "head_gaze_conflict__video_level_table.csv, head_gaze_conflict_vs_error.py:148-219, 512): "
    "per video its valid frames (n_valid, the WLS weight), mean error of the valid frames and conflict (deg, "
    "averaged over {over}). Family: none (descriptive). Effect size: none (descriptive)."
)
_CONDITIONS = {"left", "center", "right"}


def conflict(
    videos: pd.DataFrame,
    alpha: float = 0.05,
    skip_methods: dict[str, str] | None = None,
    profile: AnalysisProfile = REFERENCE,
    min_subjects: int = MIN_SUBJECTS,
) -> Analysis:
    """Experiment 3: error vs head-gaze conflict.

    Per subject s and method, least squares of video mean error on video mean
    conflict, e = alpha_s + beta_s * gamma (Sezer et al., exp. 3 analysis): OLS over
    the method's valid frames' conflict (profile ``reference``) or WLS with the valid
    frames as weights on the conflict over all frames of the video, subjects complete
    in the three head conditions (profile ``study``, head_gaze_conflict_vs_error.py:
    23-45, 95-127, 221-285); one-sided one-sample t-test of {beta_s} > 0, Holm across
    methods; % of subjects with beta_s > 0; pairwise two-sided paired tests of the
    subject mean errors between methods (Holm across all pairs).
    Tables: ``conflict`` (method, display, n, mean, sd, slope_mean, slope_sd,
    slope_ci_low, slope_ci_high, t, dof, p_unc, p_holm, pct_positive),
    ``conflict_slopes`` (subject, method, intercept, slope, n_videos),
    ``conflict_pairwise``.
    """
    a = Analysis("conflict", "Head-gaze conflict (experiment 3)", profile=profile.name)
    v = videos[videos["experiment"].astype(str) == "conflict"]
    for m, why in (skip_methods or {}).items():
        if m in set(v["method"].astype(str)):
            a.partial(f"{display_name(m)} left out: {why}")
            v = v[v["method"].astype(str) != m]
    if v.empty:
        return a.skip("no conflict trials with head-gaze conflict values" if skip_methods
                      else "no conflict trials in the results")
    xcol = "conflict_all_mean" if profile.conflict_source == "all_frames" else "conflict_mean"
    v = v[np.isfinite(v[xcol].to_numpy(dtype=float))]
    v, excl_pre = _complete_conditions(v) if profile.conflict_complete_conditions else (v, [])
    sm = subject_means(v, ["method"], weighted=profile.weighted)
    if sm.empty:
        return a.skip("no valid conflict video")
    methods = method_order(sm["method"].unique())
    wide, a.excluded = complete_subjects(
        sm, ["method"], "error_mean", [(m,) for m in methods], videos["subject"].unique(), profile.listwise
    )
    if excl_pre:
        pre = pd.DataFrame(excl_pre)
        a.excluded = pd.concat([pre, a.excluded[~a.excluded["subject"].isin(pre["subject"])]], ignore_index=True)
    vv = valid_videos(v)
    over = "all frames of the video" if xcol == "conflict_all_mean" else "the valid frames"
    a.tables["conflict_videos"] = with_display(_video_table(vv, wide.index, methods, xcol))
    wide, sl = _slopes(a, vv, wide, xcol, profile)
    a.n = len(wide)
    if a.n == 0:
        return a.skip(
            "no subject has a defined slope for every method (needs 2 or more conflict videos with different conflict)"
        )
    run_tests = not too_few(a, "slope tests and pairwise tests", min_subjects)
    out = pd.DataFrame([_slope_row(m, wide, sl, run_tests) for m in methods])
    out.insert(out.columns.get_loc("p_unc") + 1, "p_holm", holm(out["p_unc"].to_numpy()))
    w = profile.conflict_fit == "wls"
    fit = (("WLS (weights: valid frames of the video)" if w else "OLS") + " of video error on video conflict averaged "
           "over " + ("all frames of the video" if xcol == "conflict_all_mean" else "the method's valid frames"))
    a.add("conflict", mark_significant(with_display(out), "p_holm", alpha), profile, CAPTIONS["conflict"], fit=fit)
    slopes = with_display(sl[["subject", "method", "intercept", "slope", "n_videos"]].reset_index(drop=True))
    a.add("conflict_slopes", slopes, profile, CAPTIONS["conflict_slopes"], fit=fit)
    a.captions["conflict_videos"] = profile.caption(_VIDEOS_CAPTION.format(over=over))
    if run_tests:
        a.notes.append(f"Slopes in deg of error per deg of conflict ({fit}); one-sided t-test of the subject slopes "
                       "> 0, Holm across methods.")
    if len(methods) >= 2:  # written with empty t/p when too few subjects (pairwise_paired leaves the family untested)
        pairs = mark_significant(pairwise_methods(wide, methods, min_subjects), "p_holm", alpha)
        a.add("conflict_pairwise", pairs, profile, CAPTIONS["conflict_pairwise"],
              untested=untested_note(not run_tests, min_subjects, a.n))
        if run_tests:
            a.notes.append("Pairwise: two-sided paired t-tests of subject mean errors, Holm across all pairs. "
                           + DZ_NOTE)
    return a


def _complete_conditions(v: pd.DataFrame) -> tuple[pd.DataFrame, list[dict]]:
    """Profile ``study``: only subjects with all three head conditions (left, center, right); the others excluded."""
    have = v.groupby("subject", observed=True)["condition"].agg(lambda c: set(map(str, c)))
    bad = [s for s, c in have.items() if not _CONDITIONS <= c]
    excl = [{"subject": str(s), "reason": f"not all head conditions (has {', '.join(sorted(have[s])) or 'none'}; "
             "needs left, center, right)"} for s in bad]
    return v[~v["subject"].astype(str).isin(set(map(str, bad)))], excl


def _video_table(vv: pd.DataFrame, subjects, methods: list[str], xcol: str) -> pd.DataFrame:
    """``conflict_videos``: the video-level table the slopes are fitted on."""
    cv = vv[vv["subject"].astype(str).isin(subjects) & vv["method"].astype(str).isin(methods)]
    cv = pd.DataFrame({
        "subject": cv["subject"].astype(str), "method": cv["method"].astype(str),
        "condition": cv["condition"].astype(str), "target": cv["target"].astype(str), "trial": cv["trial"].astype(str),
        "n_valid": cv["n_valid"] if "n_valid" in cv else np.nan, "error_mean": cv["error_mean"].astype(float),
        "conflict": cv[xcol].astype(float),
    })
    return cv.sort_values(["subject", "method", "trial"]).reset_index(drop=True)


def _slopes(a: Analysis, vv: pd.DataFrame, wide: pd.DataFrame, xcol: str,
            profile: AnalysisProfile) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Per-subject slopes of video error on video conflict; subjects without a defined slope excluded
    (profile ``study``: only that method's slope dropped). Returns the remaining wide table and the slopes."""
    w = "n_valid" if profile.conflict_fit == "wls" else None
    vs = vv.assign(subject=vv["subject"].astype(str), method=vv["method"].astype(str))
    sl = group_slopes(vs, ["subject", "method"], xcol, "error_mean", w=w).rename(columns={"n": "n_videos"})
    sl = sl[sl["subject"].isin(wide.index)]
    bad = sl[~np.isfinite(sl["slope"])]["subject"].unique()
    if profile.listwise == "family":  # a subject's undefined slope for one method drops only that slope
        sl = sl[np.isfinite(sl["slope"])]
        bad = [s for s in bad if s not in set(sl["subject"])]
    if len(bad):
        why = pd.DataFrame({"subject": bad, "reason": "slope undefined (fewer than 2 videos or constant conflict)"})
        a.excluded = pd.concat([a.excluded, why], ignore_index=True)
        wide = wide.drop(index=bad)
        sl = sl[~sl["subject"].isin(bad)]
    return wide, sl


def _slope_row(m: str, wide: pd.DataFrame, sl: pd.DataFrame, run_tests: bool) -> dict:
    """One method's row of ``conflict``: its subject mean errors and the one-sided test of its slopes > 0."""
    e = wide[m].dropna().to_numpy()
    b = sl.loc[sl["method"] == m, "slope"].to_numpy()
    t = one_sample_ttest(b, 0.0, "greater") if run_tests else {"t": np.nan, "dof": np.nan, "p_unc": np.nan}
    lo, hi = ci95(b)
    return {
        "method": m, "n": int(b.size), "mean": e.mean(), "sd": e.std(ddof=1) if e.size > 1 else np.nan,
        "slope_mean": b.mean(), "slope_sd": b.std(ddof=1) if b.size > 1 else np.nan, "slope_ci_low": lo,
        "slope_ci_high": hi, "t": t["t"], "dof": t["dof"], "p_unc": t["p_unc"],
        "pct_positive": 100.0 * float((b > 0).mean()),
    }
