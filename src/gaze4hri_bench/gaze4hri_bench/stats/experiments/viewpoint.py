"""Experiment 2: the fixed camera (illumination 100) vs the camera moving on the arc; per-method paired
tests and the study's arc model ranking."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..analysis_profiles import REFERENCE, AnalysisProfile
from ..inference import holm, paired_ttest
from ..study_tables import describe, paired_matrix, pooled_mean_sd, tiers
from .shared import (
    DZ_NOTE,
    MIN_SUBJECTS,
    PAIRED_EFFECT,
    Analysis,
    Caption,
    complete_subjects,
    display_name,
    level_of,
    mark_significant,
    method_order,
    pairwise_methods,
    subject_means,
    too_few,
    with_display,
)

__all__ = ["viewpoint", "CAPTIONS"]

_EXP = "Experiment 2: "
#: Over whom the table's means and SDs are taken, by the profile's listwise deletion.
_PAIRED_WHO = "the subjects with both settings for every method"
_CELL_WHO = ("every subject with a value in the cell (the study's descriptives, camera_viewpoint.py:138-172); the test "
             "uses the subjects with both settings")
#: Profile ``study``: the test table describes the subjects it pairs, as the study's own test table does.
_TEST_WHO = ("the n subjects the test pairs (as the study's test table, pingouin's pairwise_tests with return_desc, "
             "camera_viewpoint.py:175-240; n_fixed, n_arc: the subjects with a value in each cell, described in "
             "viewpoint_descriptives)")
CAPTIONS = {
    "viewpoint": Caption(
        _EXP + "fixed camera (illumination 100) vs arc, two-sided paired t-test per method, arc - fixed; "
        "means and SDs over {who}, the test over its n paired subjects", effect=PAIRED_EFFECT),
    "viewpoint_descriptives": Caption(
        _EXP + "subject-level mean error (deg), SD, SE and 95 % t CI per method and camera setting over {who}"),
    "viewpoint_subjects": Caption(
        _EXP + "subject x setting matrix, each subject's value with the fixed camera and on the arc, "
        "subjects with both settings per method (the study's camera_viewpoint_subject_level_matrix.csv, "
        "camera_viewpoint.py:242-272)"),
    "viewpoint_method_pairs": Caption(
        _EXP + "paired two-sided t-tests between methods on the arc, all arc trials (pool arc, the study's "
        "head_yaw_model_ranking.py:154-207) and per arc target", "Holm over the method pairs of one pool",
        PAIRED_EFFECT),
    "viewpoint_tiers": Caption(
        _EXP + "tiered method ranking on the arc per pool (the study's circular_model_tiers.txt, "
        "head_yaw_model_ranking.py:209-264): methods by ascending subject-level mean, a new tier where a method "
        "differs significantly (Holm p < {alpha}) from the last method of the current tier; "
        "pooled_mean/pooled_sd/frames over every valid frame of the pool (head_yaw_model_ranking.py:107-149)",
        "Holm over the method pairs of one pool", "none (decision from the pairwise tests)"),
}
_FAMILY = {
    "holm": "Holm across methods",
    "none": "none: each method tested on its own, uncorrected (the study's camera_viewpoint.py); p_holm given for "
    "reference",
}
_NO_TEST = {"t": np.nan, "dof": np.nan, "p_unc": np.nan, "cohen_dz": np.nan, "cohen_dav": np.nan}


def viewpoint(
    videos: pd.DataFrame, alpha: float = 0.05, profile: AnalysisProfile = REFERENCE, min_subjects: int = MIN_SUBJECTS
) -> Analysis:
    """Experiment 2: fixed camera (illumination 100, P1..P9) vs camera moving on the arc.

    Table ``viewpoint``: method, display, fixed_mean, fixed_sd, arc_mean, arc_sd, n,
    n_fixed, n_arc, mean_diff (arc - fixed), t, dof, p (two-sided paired, uncorrected), p_holm
    (across methods), correction (the profile's: ``holm`` or ``none``), p_adj (the p
    that ``significant`` uses), cohen_dz, cohen_dav. Means and SDs are those of the n
    subjects the test pairs, as the study's test table (pingouin's pairwise_tests with
    return_desc, camera_viewpoint.py:175-240); n_fixed and n_arc count the subjects with a
    value in each cell, whose means ``viewpoint_descriptives`` gives (in profile ``study``
    every subject with a value, camera_viewpoint.py:138-172). The study tests each method on
    its own: profile ``study`` has correction none.
    With two methods or more also ``viewpoint_method_pairs`` and ``viewpoint_tiers``
    (the study's arc model ranking, head_yaw_model_ranking.py:107-264; :func:`_arc_tiers`).
    """
    a = Analysis("viewpoint", "Camera viewpoint (experiment 2)", profile=profile.name)
    exp = videos["experiment"].astype(str)
    fixed = (exp == "illumination") & (videos["condition"].map(level_of) == 100)
    arc = exp == "viewpoint"
    if not arc.any():
        return a.skip("no viewpoint (arc) trials in the results")
    if not fixed.any():
        return a.skip("no fixed-camera baseline (illumination 100) in the results")
    v = videos[fixed | arc].copy()
    v["setting"] = np.where(v["experiment"].astype(str) == "viewpoint", "arc", "fixed")
    sm = subject_means(v, ["method", "setting"], weighted=profile.weighted)
    methods = method_order(sm["method"].unique())
    cells = [(m, s) for m in methods for s in ("fixed", "arc")]
    wide, a.excluded = complete_subjects(
        sm, ["method", "setting"], "error_mean", cells, videos["subject"].unique(), profile.listwise
    )
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has both the fixed and the arc trials for every method")
    run_tests = not too_few(a, "paired tests", min_subjects)
    rows, drows = [], []
    for m in methods:
        row, desc = _method_row(a, wide, m, run_tests, min_subjects, per_cell=profile.listwise == "family")
        rows.append(row)
        drows += desc
    _tables(a, wide, methods, rows, drows, alpha, profile)
    if run_tests:
        a.notes.append(
            "Two-sided paired t-test arc vs fixed per method; p uncorrected, p_holm across methods; significance "
            f"uses p_adj ({profile.viewpoint_correction}). " + DZ_NOTE
        )
        if len(methods) >= 2:
            arc_v = v[(v["setting"] == "arc") & v["subject"].astype(str).isin(wide.index)]
            _arc_tiers(a, arc_v, wide.index, methods, alpha, profile)
    return a


def _method_row(a: Analysis, wide: pd.DataFrame, m: str, run_tests: bool, min_subjects: int,
                per_cell: bool) -> tuple[dict, list[dict]]:
    """One method's test row (means, SDs and test over the paired subjects) and its two descriptives
    rows (over every subject with a value in the cell when ``per_cell``: listwise deletion per family)."""
    f_all, r_all = wide[(m, "fixed")].dropna().to_numpy(), wide[(m, "arc")].dropna().to_numpy()
    f, r = wide[(m, "fixed")].to_numpy(), wide[(m, "arc")].to_numpy()
    ok = np.isfinite(f) & np.isfinite(r)  # all True unless listwise deletion is per family
    f, r = f[ok], r[ok]
    if run_tests and f.size < min_subjects:
        a.partial(f"{display_name(m)}: test skipped, {f.size} subject(s) with both settings (--min-subjects "
                  f"{min_subjects})")
    if run_tests and f.size >= min_subjects:
        t = paired_ttest(r, f)
    else:
        t = {"mean_diff": r.mean() - f.mean() if f.size else np.nan, **_NO_TEST}
    fd, rd = (f_all, r_all) if per_cell else (f, r)
    row = {
        "method": m, "fixed_mean": f.mean() if f.size else np.nan, "fixed_sd": f.std(ddof=1) if f.size > 1 else np.nan,
        "arc_mean": r.mean() if r.size else np.nan, "arc_sd": r.std(ddof=1) if r.size > 1 else np.nan,
        "n": int(f.size), "n_fixed": int(fd.size), "n_arc": int(rd.size), "mean_diff": t["mean_diff"], "t": t["t"],
        "dof": t["dof"], "p": t["p_unc"], "cohen_dz": t["cohen_dz"], "cohen_dav": t["cohen_dav"],
    }
    return row, [{"method": m, "setting": setting, **describe(x)} for setting, x in (("fixed", fd), ("arc", rd))]


def _tables(a: Analysis, wide: pd.DataFrame, methods: list[str], rows: list[dict], drows: list[dict], alpha: float,
            profile: AnalysisProfile) -> None:
    """``viewpoint`` (the tests, the profile's correction), ``viewpoint_descriptives`` and ``viewpoint_subjects``."""
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p") + 1, "p_holm", holm(out["p"].to_numpy()))
    out.insert(out.columns.get_loc("p_holm") + 1, "correction", profile.viewpoint_correction)
    p_adj = out["p_holm"] if profile.viewpoint_correction == "holm" else out["p"]
    out.insert(out.columns.get_loc("correction") + 1, "p_adj", p_adj)
    per_cell = profile.listwise == "family"
    who = _TEST_WHO if per_cell else _PAIRED_WHO + " (n_fixed, n_arc)"
    a.add("viewpoint", mark_significant(with_display(out), "p_adj", alpha), profile,
          Caption(CAPTIONS["viewpoint"].text, _FAMILY[profile.viewpoint_correction], PAIRED_EFFECT), who=who)
    desc = pd.DataFrame(drows, columns=["method", "setting", "n", "mean", "sd", "se", "ci_low", "ci_high"])
    a.add("viewpoint_descriptives", with_display(desc), profile, CAPTIONS["viewpoint_descriptives"],
          who=_CELL_WHO if per_cell else _PAIRED_WHO)
    a.add("viewpoint_subjects", with_display(paired_matrix(wide, methods, "fixed", "arc")), profile,
          CAPTIONS["viewpoint_subjects"])


def _arc_tiers(
    a: Analysis, arc: pd.DataFrame, subjects, methods: list[str], alpha: float, profile: AnalysisProfile
) -> None:
    """``viewpoint_method_pairs`` and ``viewpoint_tiers``: the study's model ranking on the arc
    (head_yaw_model_ranking.py:154-264: paired t-tests between methods on the subject-level
    means, Holm over the pairs, tiers by :func:`.study_tables.tiers`; the frame-pooled mean and
    SD of :107-149) for the whole arc (pool ``arc``, the study's) and for each arc target (ours)."""
    targets = sorted(map(str, arc["target"].unique()))
    pools = [("arc", arc)] + [(t, arc[arc["target"].astype(str) == t]) for t in targets]
    mparts, tparts = [], []
    for pool, x in pools:
        pm = subject_means(x, ["method"], weighted=profile.weighted)
        w = pm.pivot_table(index="subject", columns="method", values="error_mean", aggfunc="first")
        w = w.reindex(index=subjects, columns=methods)
        pw = pairwise_methods(w, methods)
        pw.insert(0, "pool", pool)
        mparts.append(pw)
        mean = w[methods].mean()
        for k, tier in enumerate(tiers(pw, mean, alpha), 1):
            for m in tier:
                pmean, psd, frames = pooled_mean_sd(x[x["method"].astype(str) == m])
                tparts.append({"pool": pool, "tier": k, "method": m, "mean": mean[m], "sd": w[m].std(ddof=1),
                               "n": int(w[m].notna().sum()), "pooled_mean": pmean, "pooled_sd": psd, "frames": frames})
    pairs = mark_significant(pd.concat(mparts, ignore_index=True), "p_holm", alpha)
    a.add("viewpoint_method_pairs", pairs, profile, CAPTIONS["viewpoint_method_pairs"])
    cols = ["pool", "tier", "method", "mean", "sd", "n", "pooled_mean", "pooled_sd", "frames"]
    a.add("viewpoint_tiers", with_display(pd.DataFrame(tparts, columns=cols)), profile, CAPTIONS["viewpoint_tiers"],
          alpha=alpha)
