"""Experiment 1 (Table III): error by illumination level; its descriptives, CV, pairwise method tests,
level pairs and sensitivity slopes."""

from __future__ import annotations

import pandas as pd
from gaze4hri_core.protocol import ILLUMINATION_LEVELS

from ..analysis_profiles import REFERENCE, AnalysisProfile
from ..extended import level_pairs, sensitivity
from ..inference import cv_percent
from .shared import (
    DZ_NOTE,
    MIN_SUBJECTS,
    PAIRED_EFFECT,
    Analysis,
    Caption,
    complete_subjects,
    describe_wide,
    level_of,
    mark_significant,
    method_order,
    pairwise_methods,
    subject_means,
    too_few,
    untested_note,
    with_display,
)

__all__ = ["illumination", "CAPTIONS"]

_EXP = "Experiment 1: "
CAPTIONS = {
    "illumination": Caption(
        _EXP + "mean angular error (deg), SD (ddof 1) and 95 % t CI over subjects per method and illumination level"),
    "illumination_cv": Caption(
        _EXP + "coefficient of variation CV = 100 sigma/mu of the level means (sigma ddof 1, as the study's "
        "Table III)"),
    "illumination_pairwise": Caption(
        _EXP + "paired two-sided t-tests between methods per level.{untested}",
        "Holm over the method pairs of one level", PAIRED_EFFECT),
    "illumination_level_pairs": Caption(
        _EXP + "paired two-sided t-tests between illumination levels within each method ({pairs} pairs).{untested}",
        "Holm over the level pairs of one method", PAIRED_EFFECT),
    "illumination_sensitivity": Caption(
        _EXP + "sensitivity slope per method, OLS of subject values on the level (deg per level point) over all "
        "subject x level points; delta = slope x range; r and p of the fit (scipy linregress)",
        "none (one fit per method and range)", "Pearson r of the fit"),
}


def illumination(
    videos: pd.DataFrame, alpha: float = 0.05, profile: AnalysisProfile = REFERENCE, min_subjects: int = MIN_SUBJECTS
) -> Analysis:
    """Experiment 1, Table III: error by illumination level (10, 25, 50, 100 %).

    Tables: ``illumination`` (method, display, level, mean, sd, n, ci_low, ci_high;
    subject-level, SD ddof 1, 95 % t CI), ``illumination_cv`` (method, display,
    cv_percent = 100 sigma/mu of the four level means, sigma with ddof 1 as the study
    computes it, n_levels), ``illumination_pairwise`` (per level all method pairs:
    t, dof, p_unc, p_holm with the level's pairs as the Holm family, cohen_dz,
    cohen_dav), ``illumination_level_pairs`` (per method the 6 level pairs, Holm over
    the 6; lighting_analysis.py:820-874) and ``illumination_sensitivity`` (per method
    OLS of subject values on the level, 10-100 and 10-50; lighting_analysis.py:877-955).
    """
    a = Analysis("illumination", "Illumination (experiment 1, Table III)", profile=profile.name)
    v = videos[videos["experiment"].astype(str) == "illumination"].copy()
    if v.empty:
        return a.skip("no illumination trials in the results")
    v["level"] = v["condition"].astype(str).map(level_of)
    v = v[v["level"].isin(ILLUMINATION_LEVELS)]
    v["level"] = v["level"].astype(int)
    sm = subject_means(v, ["method", "level"], weighted=profile.weighted)
    if sm.empty:
        return a.skip("no valid illumination video")
    methods = method_order(sm["method"].unique())
    levels = [lv for lv in ILLUMINATION_LEVELS if str(lv) in set(sm["level"])]
    cells = [(m, str(lv)) for m in methods for lv in levels]
    wide, a.excluded = complete_subjects(
        sm, ["method", "level"], "error_mean", cells, videos["subject"].unique(), profile.listwise
    )
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has every method at every illumination level")
    desc = describe_wide(wide, ["method", "level"])
    desc["level"] = desc["level"].astype(int)
    a.add("illumination", with_display(desc), profile, CAPTIONS["illumination"])
    cv = desc.groupby("method", sort=False).agg(cv_percent=("mean", cv_percent), n_levels=("level", "count"))
    a.add("illumination_cv", with_display(cv.reset_index()), profile, CAPTIONS["illumination_cv"])
    if len(levels) < len(ILLUMINATION_LEVELS):
        a.notes.append(f"levels present: {', '.join(map(str, levels))}")
    # with too few subjects the test tables are still written, their columns complete and t/p
    # empty (pairwise_paired leaves a family with fewer than min_subjects untested)
    few = too_few(a, "pairwise tests and sensitivity tests", min_subjects)
    untested = untested_note(few, min_subjects, a.n)
    if len(methods) < 2:
        a.partial("pairwise method tests need at least 2 methods")
    else:
        _method_pairs(a, wide, methods, levels, alpha, profile, min_subjects, untested)
        if not few:
            a.notes.append("Holm family: all method pairs at one level. " + DZ_NOTE)
    if len(levels) >= 2:
        lp = level_pairs(wide, methods, [str(lv) for lv in levels], min_subjects)
        lp["level_a"], lp["level_b"] = lp["level_a"].astype(int), lp["level_b"].astype(int)
        a.add("illumination_level_pairs", mark_significant(with_display(lp), "p_holm", alpha), profile,
              CAPTIONS["illumination_level_pairs"], pairs=len(levels) * (len(levels) - 1) // 2, untested=untested)
        if few:
            return a
        long = (
            wide.stack(level="method", future_stack=True)
            .reset_index()
            .melt(id_vars=["subject", "method"], var_name="level", value_name="error_mean")
        )
        long["level"] = long["level"].astype(int)
        long = long.dropna(subset=["error_mean"])
        sens = with_display(sensitivity(long))
        a.add("illumination_sensitivity", sens, profile, CAPTIONS["illumination_sensitivity"])
    return a


def _method_pairs(a: Analysis, wide: pd.DataFrame, methods: list[str], levels: list[int], alpha: float,
                  profile: AnalysisProfile, min_subjects: int, untested: str) -> None:
    """``illumination_pairwise``: every method pair at each level, Holm over the pairs of a level."""
    parts = []
    for lv in levels:
        w = wide.xs(str(lv), axis=1, level="level")
        pw = pairwise_methods(w, methods, min_subjects)
        pw.insert(0, "level", lv)
        parts.append(pw)
    a.add("illumination_pairwise", mark_significant(pd.concat(parts, ignore_index=True), "p_holm", alpha), profile,
          CAPTIONS["illumination_pairwise"], untested=untested)
