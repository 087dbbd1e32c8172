"""The study's analyses, each a pure function of the video-level table.

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

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd
from gaze4hri_core.protocol import ILLUMINATION_LEVELS, P_GRID

from ..specs import SPECS
from .analysis_profiles import REFERENCE, AnalysisProfile
from .extended import (
    STUDY_COLUMNS,
    champions,
    ci95,
    eccentricity_ols,
    group_comparison,
    level_pairs,
    pairs_within,
    per_video_eccentricity,
    sensitivity,
    summarize_slopes,
)
from .inference import cv_percent, group_ols2, group_slopes, holm, one_sample_ttest, paired_ttest, pairwise_paired
from .study_tables import (
    SLOPE_COEFS,
    STUDY_ROWS,
    describe,
    group_descriptives,
    paired_matrix,
    pooled_mean_sd,
    segment_meta,
    segment_regressions,
    slope_meta,
    tiers,
    wins_tally,
)

__all__ = [
    "Analysis",
    "MIN_SUBJECTS",
    "display_name",
    "select_inputs",
    "subject_means",
    "complete_subjects",
    "illumination",
    "viewpoint",
    "conflict",
    "target_position",
    "mutual_gaze",
    "crop_vs_rectified",
    "subject_groups",
    "efficiency",
    "coverage",
]

#: Fewest subjects for which a test is run (below it, descriptives only).
MIN_SUBJECTS = 3
ROWS = ("closest", "middle", "farthest")
COLUMNS = ("left", "middle", "right")
MUTUAL_CONDITIONS = ("h_slow", "h_fast", "v_slow", "v_fast")
DZ_NOTE = "Cohen's d_z = mean of the paired differences / their SD (Lakens 2013); d_av = mean difference / mean of the two SDs (pingouin's paired cohen_d)."


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

    def caption(self, table: str, profile: AnalysisProfile, text: str, family: str | None = None, effect: str | None = None) -> None:
        """Record the caption of ``table``: what it shows, aggregation, family and effect size, and the profile."""
        parts = [text.rstrip(". ") + ".", profile.aggregation_text[0].upper() + profile.aggregation_text[1:] + "."]
        parts.append(f"Family: {family}." if family else "Family: none (descriptive).")
        parts.append(f"Effect size: {effect}." if effect else "Effect size: none (descriptive).")
        self.captions[table] = profile.caption(" ".join(parts))

    def skip(self, reason: str) -> Analysis:
        self.status, self.skipped = "skipped", self.skipped + [reason]
        return self

    def partial(self, reason: str) -> None:
        self.skipped.append(reason)
        if self.status == "ran":
            self.status = "partial"


def display_name(method: str) -> str:
    """The study's table name (specs.SPECS[...].table_name, e.g. "PureGaze (E)"); unknown methods keep their name."""
    spec = SPECS.find(str(method))
    return spec.table_name if spec is not None and spec.table_name else str(method)


def _method_order(methods) -> list[str]:
    known = [m for m in SPECS if m in set(map(str, methods))]
    return known + sorted(set(map(str, methods)) - set(known))


def _with_display(df: pd.DataFrame, col: str = "method", name: str = "display") -> pd.DataFrame:
    df = df.copy()
    df.insert(df.columns.get_loc(col) + 1, name, df[col].map(display_name))
    return df


def _valid(videos: pd.DataFrame) -> pd.DataFrame:
    return videos[np.isfinite(videos["error_mean"].to_numpy(dtype=float))]


def subject_means(videos: pd.DataFrame, by: list[str], value: str = "error_mean", weighted: bool = False) -> pd.DataFrame:
    """Each subject's value per ``by`` cell from video means (Sezer et al., aggregation: frame -> video -> subject).

    ``weighted=False``: mean of the video means (the paper's text); ``weighted=True``:
    frame-weighted, sum(video mean x n_valid) / sum(n_valid), as the study's scripts
    (GazeForHRI/Gaze4HRI@main:lighting_analysis.py:798-815). Returns subject, ``by``
    columns, ``value`` and ``n_videos``; videos without valid frames do not count.
    """
    v = _valid(videos)
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


def complete_subjects(long: pd.DataFrame, cells: list[str], value: str, expected: list[tuple], subjects=None,
                      scope: str = "analysis") -> tuple[pd.DataFrame, pd.DataFrame]:
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
    exp_cols = pd.MultiIndex.from_tuples(expected, names=cells) if len(cells) > 1 else pd.Index([e[0] for e in expected], name=cells[0])
    wide = wide.reindex(columns=exp_cols)
    miss = wide.isna()
    rows = []
    for s, m in miss.iterrows():
        if m.all():
            rows.append({"subject": s, "reason": "no valid video in this analysis (missing trials)"})
        elif m.any():
            lost = [("/".join(map(str, c)) if isinstance(c, tuple) else str(c)) for c in m.index[m.to_numpy()]]
            rows.append({"subject": s, "reason": f"no valid video for {len(lost)} cell(s): {', '.join(lost[:4])}{' ...' if len(lost) > 4 else ''}"})
    excluded = pd.DataFrame(rows, columns=["subject", "reason"])
    if scope == "family":
        excluded = excluded[excluded["reason"].str.startswith("no valid video in this analysis")].reset_index(drop=True)
        return wide[~miss.all(axis=1)], excluded
    return wide[~miss.any(axis=1)], excluded


def select_inputs(videos: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pick each method's input for the main analyses (Sezer et al., Table II).

    Known methods use the study's best input (specs.SPECS[...].input_type:
    rectified for PureGaze and GazeTR, crop for L2CS-Net, MCGaze and GaT) when present;
    otherwise (unknown method, or its Table II input absent) the input with the lower
    whole-dataset mean error (mean over subjects of the mean of their video means).
    Returns the videos of the chosen inputs and a table: method, display, input,
    available, rule, whole_mean.
    """
    v = _valid(videos)
    whole = subject_means(v, ["method", "input"]).groupby(["method", "input"])["error_mean"].mean()
    rows, keep = [], []
    for m in _method_order(v["method"].unique()):
        avail = sorted(str(i) for (mm, i) in whole.index if mm == m)
        spec = SPECS.find(m)
        if len(avail) == 1:
            choice, rule = avail[0], "only input present"
        elif spec is not None and spec.input_type in avail:
            choice, rule = spec.input_type, "Table II (study's best input)"
        else:
            choice = min(avail, key=lambda i: whole[(m, i)])
            rule = "lower whole-dataset mean error"
        rows.append({"method": m, "input": choice, "available": ", ".join(avail), "rule": rule, "whole_mean": float(whole[(m, choice)])})
        keep.append((m, choice))
    table = _with_display(pd.DataFrame(rows, columns=["method", "input", "available", "rule", "whole_mean"]))
    key = pd.MultiIndex.from_frame(videos[["method", "input"]].astype(str))
    main = videos[key.isin(keep)].copy()
    for c in ("method", "input"):
        main[c] = main[c].astype(str)
    return main, table


def coverage(videos: pd.DataFrame) -> pd.DataFrame:
    """Per method and input: subjects, videos, frames, valid frames and the whole-dataset mean (deg)."""
    g = videos.groupby(["method", "input"], observed=True)
    out = pd.DataFrame(
        {
            "subjects": g["subject"].nunique(),
            "videos": g["trial"].count(),
            "frames": g["n_frames"].sum(),
            "valid_frames": g["n_valid"].sum(),
        }
    ).reset_index()
    out["valid_pct"] = 100.0 * out["valid_frames"] / out["frames"].where(out["frames"] > 0)
    sm = subject_means(videos, ["method", "input"]).groupby(["method", "input"])["error_mean"].mean().rename("whole_mean").reset_index()
    out["method"], out["input"] = out["method"].astype(str), out["input"].astype(str)
    out = out.merge(sm, on=["method", "input"], how="left")
    order = {m: i for i, m in enumerate(_method_order(out["method"]))}
    out = out.sort_values(["method", "input"], key=lambda s: s.map(order) if s.name == "method" else s).reset_index(drop=True)
    return _with_display(out)


def _level(c) -> int | None:
    try:
        return int(float(str(c)))
    except ValueError:
        return None


def _pairwise_methods(wide: pd.DataFrame, methods: list[str], min_n: int = 2) -> pd.DataFrame:
    pw = pairwise_paired(wide[methods], min_n=min_n)
    pw = pw.rename(columns={"a": "method_a", "b": "method_b"})
    pw.insert(1, "display_a", pw["method_a"].map(display_name))
    pw.insert(3, "display_b", pw["method_b"].map(display_name))
    return pw


def _sig(df: pd.DataFrame, p: str, alpha: float) -> pd.DataFrame:
    df["significant"] = df[p] < alpha
    return df


def _desc(wide: pd.DataFrame, cells: list[str]) -> pd.DataFrame:
    """Mean, SD (ddof 1), n and the 95 % t CI over subjects of every column of a wide table."""
    d = wide.agg(["mean", "std", "count"]).T.reset_index()
    d.columns = [*cells, "mean", "sd", "n"]
    d["n"] = d["n"].astype(int)
    ci = [ci95(wide[c].to_numpy()) for c in wide.columns]
    d["ci_low"], d["ci_high"] = [c[0] for c in ci], [c[1] for c in ci]
    return d


def _too_few(a: Analysis, what: str, min_subjects: int) -> bool:
    """Record (and return) that ``what`` is skipped for having fewer than ``min_subjects`` subjects."""
    if a.n < min_subjects:
        a.partial(f"{what} skipped: needs at least {min_subjects} subjects (--min-subjects), N = {a.n}")
        return True
    return False


PAIRED_EFFECT = "Cohen's d_z (mean paired difference / its SD; d_av alongside)"


def illumination(videos: pd.DataFrame, alpha: float = 0.05, profile: AnalysisProfile = REFERENCE, min_subjects: int = MIN_SUBJECTS) -> Analysis:
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
    v["level"] = v["condition"].astype(str).map(_level)
    v = v[v["level"].isin(ILLUMINATION_LEVELS)]
    v["level"] = v["level"].astype(int)
    sm = subject_means(v, ["method", "level"], weighted=profile.weighted)
    if sm.empty:
        return a.skip("no valid illumination video")
    methods = _method_order(sm["method"].unique())
    levels = [lv for lv in ILLUMINATION_LEVELS if str(lv) in set(sm["level"])]
    wide, a.excluded = complete_subjects(sm, ["method", "level"], "error_mean", [(m, str(lv)) for m in methods for lv in levels], videos["subject"].unique(), profile.listwise)
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has every method at every illumination level")
    desc = _desc(wide, ["method", "level"])
    desc["level"] = desc["level"].astype(int)
    a.tables["illumination"] = _with_display(desc)
    a.caption("illumination", profile, "Experiment 1: mean angular error (deg), SD (ddof 1) and 95 % t CI over subjects per method and illumination level")
    cv = desc.groupby("method", sort=False).agg(cv_percent=("mean", cv_percent), n_levels=("level", "count")).reset_index()
    a.tables["illumination_cv"] = _with_display(cv)
    a.caption("illumination_cv", profile, "Experiment 1: coefficient of variation CV = 100 sigma/mu of the level means (sigma ddof 1, as the study's Table III)")
    if len(levels) < len(ILLUMINATION_LEVELS):
        a.notes.append(f"levels present: {', '.join(map(str, levels))}")
    # with too few subjects the test tables are still written, their columns complete and t/p
    # empty (pairwise_paired leaves a family with fewer than min_subjects untested)
    few = _too_few(a, "pairwise tests and sensitivity tests", min_subjects)
    untested = f" Not tested: fewer than {min_subjects} subjects (--min-subjects), N = {a.n}; t, p and d are empty." if few else ""
    if len(methods) < 2:
        a.partial("pairwise method tests need at least 2 methods")
    else:
        parts = []
        for lv in levels:
            w = wide.xs(str(lv), axis=1, level="level")
            pw = _pairwise_methods(w, methods, min_subjects)
            pw.insert(0, "level", lv)
            parts.append(pw)
        a.tables["illumination_pairwise"] = _sig(pd.concat(parts, ignore_index=True), "p_holm", alpha)
        a.caption("illumination_pairwise", profile, "Experiment 1: paired two-sided t-tests between methods per level." + untested, "Holm over the method pairs of one level", PAIRED_EFFECT)
        if not few:
            a.notes.append("Holm family: all method pairs at one level. " + DZ_NOTE)
    if len(levels) >= 2:
        lp = level_pairs(wide, methods, [str(lv) for lv in levels], min_subjects)
        lp["level_a"], lp["level_b"] = lp["level_a"].astype(int), lp["level_b"].astype(int)
        a.tables["illumination_level_pairs"] = _sig(_with_display(lp), "p_holm", alpha)
        a.caption("illumination_level_pairs", profile, f"Experiment 1: paired two-sided t-tests between illumination levels within each method ({len(levels) * (len(levels) - 1) // 2} pairs)."
                  + untested, "Holm over the level pairs of one method", PAIRED_EFFECT)
        if few:
            return a
        long = wide.stack(level="method", future_stack=True).reset_index().melt(id_vars=["subject", "method"], var_name="level", value_name="error_mean")
        long["level"] = long["level"].astype(int)
        long = long.dropna(subset=["error_mean"])
        a.tables["illumination_sensitivity"] = _with_display(sensitivity(long))
        a.caption("illumination_sensitivity", profile, "Experiment 1: sensitivity slope per method, OLS of subject values on the level (deg per level point) over all subject x level points; "
                  "delta = slope x range; r and p of the fit (scipy linregress)", "none (one fit per method and range)", "Pearson r of the fit")
    return a


def viewpoint(videos: pd.DataFrame, alpha: float = 0.05, profile: AnalysisProfile = REFERENCE, min_subjects: int = MIN_SUBJECTS) -> Analysis:
    """Experiment 2: fixed camera (illumination 100, P1..P9) vs camera moving on the arc.

    Table ``viewpoint``: method, display, fixed_mean, fixed_sd, arc_mean, arc_sd, n,
    mean_diff (arc - fixed), t, dof, p (two-sided paired, uncorrected), p_holm
    (across methods), correction (the profile's: ``holm`` or ``none``), p_adj (the p
    that ``significant`` uses), cohen_dz, cohen_dav. The study tests each method on
    its own (camera_viewpoint.py:175-240): profile ``study`` has correction none.
    With two methods or more also ``viewpoint_method_pairs`` and ``viewpoint_tiers``
    (the study's arc model ranking, head_yaw_model_ranking.py:107-264; :func:`_arc_tiers`).
    """
    a = Analysis("viewpoint", "Camera viewpoint (experiment 2)", profile=profile.name)
    exp = videos["experiment"].astype(str)
    fixed = (exp == "illumination") & (videos["condition"].map(_level) == 100)
    arc = exp == "viewpoint"
    if not arc.any():
        return a.skip("no viewpoint (arc) trials in the results")
    if not fixed.any():
        return a.skip("no fixed-camera baseline (illumination 100) in the results")
    v = videos[fixed | arc].copy()
    v["setting"] = np.where(v["experiment"].astype(str) == "viewpoint", "arc", "fixed")
    sm = subject_means(v, ["method", "setting"], weighted=profile.weighted)
    methods = _method_order(sm["method"].unique())
    wide, a.excluded = complete_subjects(sm, ["method", "setting"], "error_mean", [(m, s) for m in methods for s in ("fixed", "arc")], videos["subject"].unique(), profile.listwise)
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has both the fixed and the arc trials for every method")
    rows, drows = [], []
    run_tests = not _too_few(a, "paired tests", min_subjects)
    for m in methods:
        f_all, r_all = wide[(m, "fixed")].dropna().to_numpy(), wide[(m, "arc")].dropna().to_numpy()
        f, r = wide[(m, "fixed")].to_numpy(), wide[(m, "arc")].to_numpy()
        ok = np.isfinite(f) & np.isfinite(r)  # all True unless listwise deletion is per family
        f, r = f[ok], r[ok]
        if run_tests and f.size < min_subjects:
            a.partial(f"{display_name(m)}: test skipped, {f.size} subject(s) with both settings (--min-subjects {min_subjects})")
        t = paired_ttest(r, f) if run_tests and f.size >= min_subjects else {"mean_diff": r.mean() - f.mean() if f.size else np.nan, "t": np.nan, "dof": np.nan, "p_unc": np.nan, "cohen_dz": np.nan, "cohen_dav": np.nan}
        # descriptives: profile ``study`` (listwise per family) over every subject with a value in the
        # cell, as the study's descriptives file (camera_viewpoint.py:138-172); the test stays paired
        fd, rd = (f_all, r_all) if profile.listwise == "family" else (f, r)
        rows.append(
            {"method": m, "fixed_mean": fd.mean() if fd.size else np.nan, "fixed_sd": fd.std(ddof=1) if fd.size > 1 else np.nan,
             "arc_mean": rd.mean() if rd.size else np.nan, "arc_sd": rd.std(ddof=1) if rd.size > 1 else np.nan, "n": int(f.size),
             "n_fixed": int(fd.size), "n_arc": int(rd.size), "mean_diff": t["mean_diff"], "t": t["t"], "dof": t["dof"],
             "p": t["p_unc"], "cohen_dz": t["cohen_dz"], "cohen_dav": t["cohen_dav"]}
        )
        drows += [{"method": m, "setting": setting, **describe(x)} for setting, x in (("fixed", fd), ("arc", rd))]
    desc_who = ("every subject with a value in the cell (the study's descriptives, camera_viewpoint.py:138-172); the test uses the subjects with both settings"
                if profile.listwise == "family" else "the subjects with both settings for every method")
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p") + 1, "p_holm", holm(out["p"].to_numpy()))
    out.insert(out.columns.get_loc("p_holm") + 1, "correction", profile.viewpoint_correction)
    out.insert(out.columns.get_loc("correction") + 1, "p_adj", out["p_holm"] if profile.viewpoint_correction == "holm" else out["p"])
    a.tables["viewpoint"] = _sig(_with_display(out), "p_adj", alpha)
    fam = "Holm across methods" if profile.viewpoint_correction == "holm" else "none: each method tested on its own, uncorrected (the study's camera_viewpoint.py); p_holm given for reference"
    a.caption("viewpoint", profile, "Experiment 2: fixed camera (illumination 100) vs arc, two-sided paired t-test per method, arc - fixed; "
              f"means and SDs over {desc_who} (n_fixed, n_arc), the test over its n paired subjects", fam, PAIRED_EFFECT)
    a.tables["viewpoint_descriptives"] = _with_display(pd.DataFrame(drows, columns=["method", "setting", "n", "mean", "sd", "se", "ci_low", "ci_high"]))
    a.caption("viewpoint_descriptives", profile, f"Experiment 2: subject-level mean error (deg), SD, SE and 95 % t CI per method and camera setting over {desc_who}")
    a.tables["viewpoint_subjects"] = _with_display(paired_matrix(wide, methods, "fixed", "arc"))
    a.caption("viewpoint_subjects", profile, "Experiment 2: subject x setting matrix, each subject's value with the fixed camera and on the arc, "
              "subjects with both settings per method (the study's camera_viewpoint_subject_level_matrix.csv, camera_viewpoint.py:242-272)")
    if run_tests:
        a.notes.append(f"Two-sided paired t-test arc vs fixed per method; p uncorrected, p_holm across methods; significance uses p_adj ({profile.viewpoint_correction}). " + DZ_NOTE)
        if len(methods) >= 2:
            _arc_tiers(a, v[(v["setting"] == "arc") & v["subject"].astype(str).isin(wide.index)], wide.index, methods, alpha, profile)
    return a


def _arc_tiers(a: Analysis, arc: pd.DataFrame, subjects, methods: list[str], alpha: float, profile: AnalysisProfile) -> None:
    """``viewpoint_method_pairs`` and ``viewpoint_tiers``: the study's model ranking on the arc
    (head_yaw_model_ranking.py:154-264: paired t-tests between methods on the subject-level
    means, Holm over the pairs, tiers by :func:`.study_tables.tiers`; the frame-pooled mean and
    SD of :107-149) for the whole arc (pool ``arc``, the study's) and for each arc target (ours)."""
    pools = [("arc", arc)] + [(str(t), arc[arc["target"].astype(str) == str(t)]) for t in sorted(map(str, arc["target"].unique()))]
    mparts, tparts = [], []
    for pool, x in pools:
        pm = subject_means(x, ["method"], weighted=profile.weighted)
        w = pm.pivot_table(index="subject", columns="method", values="error_mean", aggfunc="first").reindex(index=subjects, columns=methods)
        pw = _pairwise_methods(w, methods)
        pw.insert(0, "pool", pool)
        mparts.append(pw)
        mean = w[methods].mean()
        for k, tier in enumerate(tiers(pw, mean, alpha), 1):
            for m in tier:
                pmean, psd, frames = pooled_mean_sd(x[x["method"].astype(str) == m])
                tparts.append({"pool": pool, "tier": k, "method": m, "mean": mean[m], "sd": w[m].std(ddof=1), "n": int(w[m].notna().sum()),
                               "pooled_mean": pmean, "pooled_sd": psd, "frames": frames})
    a.tables["viewpoint_method_pairs"] = _sig(pd.concat(mparts, ignore_index=True), "p_holm", alpha)
    a.caption("viewpoint_method_pairs", profile, "Experiment 2: paired two-sided t-tests between methods on the arc, all arc trials (pool arc, the study's "
              "head_yaw_model_ranking.py:154-207) and per arc target", "Holm over the method pairs of one pool", PAIRED_EFFECT)
    a.tables["viewpoint_tiers"] = _with_display(pd.DataFrame(tparts, columns=["pool", "tier", "method", "mean", "sd", "n", "pooled_mean", "pooled_sd", "frames"]))
    a.caption("viewpoint_tiers", profile, "Experiment 2: tiered method ranking on the arc per pool (the study's circular_model_tiers.txt, head_yaw_model_ranking.py:209-264): "
              f"methods by ascending subject-level mean, a new tier where a method differs significantly (Holm p < {alpha}) from the last method of the current tier; "
              "pooled_mean/pooled_sd/frames over every valid frame of the pool (head_yaw_model_ranking.py:107-149)",
              "Holm over the method pairs of one pool", "none (decision from the pairwise tests)")


def conflict(videos: pd.DataFrame, alpha: float = 0.05, skip_methods: dict[str, str] | None = None, profile: AnalysisProfile = REFERENCE,
             min_subjects: int = MIN_SUBJECTS) -> Analysis:
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
        return a.skip("no conflict trials in the results" if not skip_methods else "no conflict trials with head-gaze conflict values")
    xcol = "conflict_all_mean" if profile.conflict_source == "all_frames" else "conflict_mean"
    v = v[np.isfinite(v[xcol].to_numpy(dtype=float))]
    excl_pre = []
    if profile.conflict_complete_conditions:
        have = v.groupby("subject", observed=True)["condition"].agg(lambda c: set(map(str, c)))
        need = {"left", "center", "right"}
        bad = [s for s, c in have.items() if not need <= c]
        for s in bad:
            excl_pre.append({"subject": str(s), "reason": f"not all head conditions (has {', '.join(sorted(have[s])) or 'none'}; needs left, center, right)"})
        v = v[~v["subject"].astype(str).isin(set(map(str, bad)))]
    sm = subject_means(v, ["method"], weighted=profile.weighted)
    if sm.empty:
        return a.skip("no valid conflict video")
    methods = _method_order(sm["method"].unique())
    wide, a.excluded = complete_subjects(sm, ["method"], "error_mean", [(m,) for m in methods], videos["subject"].unique(), profile.listwise)
    if excl_pre:
        pre = pd.DataFrame(excl_pre)
        a.excluded = pd.concat([pre, a.excluded[~a.excluded["subject"].isin(pre["subject"])]], ignore_index=True)
    vv = _valid(v)
    w = "n_valid" if profile.conflict_fit == "wls" else None
    cv = vv[vv["subject"].astype(str).isin(wide.index) & vv["method"].astype(str).isin(methods)]
    cv = pd.DataFrame({"subject": cv["subject"].astype(str), "method": cv["method"].astype(str), "condition": cv["condition"].astype(str),
                       "target": cv["target"].astype(str), "trial": cv["trial"].astype(str), "n_valid": cv["n_valid"] if "n_valid" in cv else np.nan,
                       "error_mean": cv["error_mean"].astype(float), "conflict": cv[xcol].astype(float)})
    a.tables["conflict_videos"] = _with_display(cv.sort_values(["subject", "method", "trial"]).reset_index(drop=True))
    sl = group_slopes(vv.assign(subject=vv["subject"].astype(str), method=vv["method"].astype(str)), ["subject", "method"], xcol, "error_mean", w=w)
    sl = sl.rename(columns={"n": "n_videos"})
    sl = sl[sl["subject"].isin(wide.index)]
    bad = sl[~np.isfinite(sl["slope"])]["subject"].unique()
    if profile.listwise == "family":  # a subject's undefined slope for one method drops only that slope
        sl = sl[np.isfinite(sl["slope"])]
        bad = [s for s in bad if s not in set(sl["subject"])]
    if len(bad):
        a.excluded = pd.concat([a.excluded, pd.DataFrame({"subject": bad, "reason": "slope undefined (fewer than 2 videos or constant conflict)"})], ignore_index=True)
        wide = wide.drop(index=bad)
        sl = sl[~sl["subject"].isin(bad)]
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has a defined slope for every method (needs 2 or more conflict videos with different conflict)")
    rows = []
    run_tests = not _too_few(a, "slope tests and pairwise tests", min_subjects)
    for m in methods:
        e = wide[m].dropna().to_numpy()
        b = sl.loc[sl["method"] == m, "slope"].to_numpy()
        t = one_sample_ttest(b, 0.0, "greater") if run_tests else {"t": np.nan, "dof": np.nan, "p_unc": np.nan}
        lo, hi = ci95(b)
        rows.append({"method": m, "n": int(b.size), "mean": e.mean(), "sd": e.std(ddof=1) if e.size > 1 else np.nan, "slope_mean": b.mean(),
                     "slope_sd": b.std(ddof=1) if b.size > 1 else np.nan, "slope_ci_low": lo, "slope_ci_high": hi, "t": t["t"], "dof": t["dof"],
                     "p_unc": t["p_unc"], "pct_positive": 100.0 * float((b > 0).mean())})
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p_unc") + 1, "p_holm", holm(out["p_unc"].to_numpy()))
    a.tables["conflict"] = _sig(_with_display(out), "p_holm", alpha)
    fit = ("WLS (weights: valid frames of the video)" if w else "OLS") + " of video error on video conflict averaged over " + (
        "all frames of the video" if xcol == "conflict_all_mean" else "the method's valid frames")
    a.caption("conflict", profile, f"Experiment 3: subject mean error (deg) and per-subject slopes (deg/deg, {fit}); one-sided one-sample t-test of slopes > 0",
              "Holm across methods", "slope mean and 95 % CI; % of subjects with a positive slope")
    a.tables["conflict_slopes"] = _with_display(sl[["subject", "method", "intercept", "slope", "n_videos"]].reset_index(drop=True))
    a.caption("conflict_slopes", profile, f"Experiment 3: per-subject fits error = a + b conflict ({fit})")
    a.captions["conflict_videos"] = profile.caption(
        f"Experiment 3: the video-level table the slopes are fitted on (the study's head_gaze_conflict__video_level_table.csv, head_gaze_conflict_vs_error.py:148-219, 512): "
        f"per video its valid frames (n_valid, the WLS weight), mean error of the valid frames and conflict (deg, averaged over {'all frames of the video' if xcol == 'conflict_all_mean' else 'the valid frames'}). "
        "Family: none (descriptive). Effect size: none (descriptive).")
    if run_tests:
        a.notes.append(f"Slopes in deg of error per deg of conflict ({fit}); one-sided t-test of the subject slopes > 0, Holm across methods.")
    if len(methods) >= 2:  # written with empty t/p when too few subjects (pairwise_paired leaves the family untested)
        untested = "" if run_tests else f" Not tested: fewer than {min_subjects} subjects (--min-subjects), N = {a.n}; t, p and d are empty."
        a.tables["conflict_pairwise"] = _sig(_pairwise_methods(wide, methods, min_subjects), "p_holm", alpha)
        a.caption("conflict_pairwise", profile, "Experiment 3: paired two-sided t-tests of subject mean errors between methods." + untested, "Holm over all method pairs", PAIRED_EFFECT)
        if run_tests:
            a.notes.append("Pairwise: two-sided paired t-tests of subject mean errors, Holm across all pairs. " + DZ_NOTE)
    return a


def _grid_position() -> dict[str, tuple[str, str]]:
    return {p: (row, col) for row, cols in P_GRID.items() for col, p in cols.items()}


#: Columns of the 3x3 grid as seen by the subject, who faces the camera: the
#: subject's left is the camera's right (protocol.P_GRID names columns from the camera).
SUBJECT_VIEW = {"subject_left": "right", "subject_middle": "middle", "subject_right": "left"}


def _group_means(v: pd.DataFrame, mapping: dict[str, str], col: str, wide_index, profile: AnalysisProfile) -> pd.DataFrame:
    """Subject x (method, group) values of the videos whose target maps to a group (rows, columns)."""
    g = v.assign(**{col: v["target"].astype(str).map(mapping)}).dropna(subset=[col])
    sm = subject_means(g, ["method", col], weighted=profile.weighted)
    wide = sm.pivot_table(index="subject", columns=["method", col], values="error_mean", aggfunc="first", observed=True)
    return wide.reindex(index=wide_index)


def target_position(videos: pd.DataFrame, alpha: float = 0.05, profile: AnalysisProfile = REFERENCE, min_subjects: int = MIN_SUBJECTS) -> Analysis:
    """Experiment 4.1: error per target point P1..P9 (fixed camera, illumination 100).

    Tables: ``target`` (method, display, target, row, column, mean, sd, n, ci_low,
    ci_high), ``target_grid`` (per method the 3x3 means laid out as the subject sees
    the table: rows farthest..closest, columns subject_left..subject_right),
    ``target_best`` (the method with the lowest mean per point), ``target_tests``
    (per method: the three row pairs and the left-right column pair; Holm family = one
    factor of one method), ``target_columns`` (per method the study's columns C1/C2/C3,
    3 pairs, Holm; point_analysis.py:351-431), ``target_point_pairs`` (per method all
    36 point pairs, Holm over 36; :257-330), ``target_method_pairs`` (per point the 21
    method pairs, Holm over 21; :433-501), ``target_champion`` (:504-598) and
    ``target_eccentricity`` / ``target_eccentricity_subjects`` (per subject OLS over
    the point videos of video mean error on mean |pitch| and |yaw|, at least 5
    videos, mean/SD/CI over subjects; :684-880).
    """
    a = Analysis("target", "Target position (experiment 4.1)", profile=profile.name)
    exp = videos["experiment"].astype(str)
    v = videos[(exp == "illumination") & (videos["condition"].map(_level) == 100)]
    pos = _grid_position()
    v = v[v["target"].astype(str).isin(pos)]
    if v.empty:
        return a.skip("no fixed-camera trials at illumination 100 in the results")
    sm = subject_means(v, ["method", "target"], weighted=profile.weighted)
    methods = _method_order(sm["method"].unique())
    points = [p for p in sorted(pos, key=lambda p: int(p[1:])) if p in set(sm["target"])]
    wide, a.excluded = complete_subjects(sm, ["method", "target"], "error_mean", [(m, p) for m in methods for p in points], videos["subject"].unique(), profile.listwise)
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has every target point for every method")
    desc = _desc(wide, ["method", "target"])
    desc.insert(2, "row", desc["target"].map(lambda p: pos[p][0]))
    desc.insert(3, "column", desc["target"].map(lambda p: pos[p][1]))
    a.tables["target"] = _with_display(desc)
    a.caption("target", profile, "Experiment 4.1: mean error (deg), SD and 95 % t CI over subjects per target point (fixed camera, illumination 100)")
    cell = {(r.method, r.row, r.column): r.mean for r in desc.itertuples()}
    grid = [{"method": m, "row": row, **{k: cell.get((m, row, c), np.nan) for k, c in SUBJECT_VIEW.items()}} for m in methods for row in reversed(ROWS)]
    a.tables["target_grid"] = _with_display(pd.DataFrame(grid))
    a.caption("target_grid", profile, "Experiment 4.1: mean error (deg) per point in the 3x3 grid as the subject sees the table (top row farthest; the subject's left is the camera's right)")
    best = desc.loc[desc.groupby("target", sort=False)["mean"].idxmin()][["target", "row", "column", "method", "mean"]]
    best = best.rename(columns={"method": "best_method", "mean": "best_mean"})
    best.insert(4, "best_display", best["best_method"].map(display_name))
    a.tables["target_best"] = best.reset_index(drop=True)
    a.caption("target_best", profile, "Experiment 4.1: the method with the lowest mean error per point")
    if len(points) < 9:
        a.notes.append(f"points present: {', '.join(points)}")
    vc = v[v["subject"].astype(str).isin(wide.index)]
    groups = [("row", {g: tuple(p for p in ps if p in points) for g, ps in STUDY_ROWS.items()}),
              ("column", {g: tuple(p for p in ps if p in points) for g, ps in STUDY_COLUMNS.items()})]
    rc = [group_descriptives(_group_means(vc, {p: g for g, ps in gs.items() for p in ps}, "grp", wide.index, profile), methods, gs, factor) for factor, gs in groups]
    a.tables["target_rows_columns"] = _with_display(pd.concat(rc, ignore_index=True))
    a.caption("target_rows_columns", profile, "Experiment 4.1: subject-level mean error (deg), SD, SE and 95 % t CI per method for the study's rows R1 (P1-P3, farthest), R2 (P4-P6), "
              "R3 (P7-P9, closest) and columns C1 (P1, P4, P7), C2, C3; a row's (column's) subject value aggregates the subject's videos of its points "
              "(point_analysis.py:332-368, 882-914)")
    if _too_few(a, "row, column, point and method tests and eccentricity fits", min_subjects):
        return a
    rows_w = _group_means(vc, {p: pos[p][0] for p in points}, "row", wide.index, profile)
    cols_w = _group_means(vc, {p: pos[p][1] for p in points}, "column", wide.index, profile)
    study_w = _group_means(vc, {p: c for c, ps in STUDY_COLUMNS.items() for p in ps if p in points}, "scol", wide.index, profile)
    parts, cparts = [], []
    for m in methods:
        for factor, w, pairs in (("row", rows_w, list(combinations(ROWS, 2))), ("column", cols_w, [("left", "right")])):
            need = {x for pr in pairs for x in pr}
            if m not in w.columns.get_level_values(0) or not need <= set(w[m].columns):
                continue
            pw = pairwise_paired(w[m], pairs=pairs, min_n=min_subjects)
            pw.insert(0, "method", m)
            pw.insert(1, "factor", factor)
            parts.append(pw)
        if m in study_w.columns.get_level_values(0) and set(STUDY_COLUMNS) <= set(study_w[m].columns):
            pw = pairwise_paired(study_w[m][list(STUDY_COLUMNS)], min_n=min_subjects).rename(columns={"a": "column_a", "b": "column_b"})
            pw.insert(0, "method", m)
            cparts.append(pw)
    if parts:
        a.tables["target_tests"] = _sig(_with_display(pd.concat(parts, ignore_index=True)), "p_holm", alpha)
        a.caption("target_tests", profile, "Experiment 4.1: paired two-sided t-tests between the rows and between the left and right columns (camera's view) per method; "
                  "a row's (column's) subject value aggregates the videos of its points", "Holm over the 3 row pairs, resp. the 1 column pair, of one method", PAIRED_EFFECT)
        a.notes.append("Row and column values aggregate the subject's videos of the row's (column's) points. Holm family: the 3 row pairs, resp. the left-right pair, of one method. " + DZ_NOTE)
    if cparts:
        a.tables["target_columns"] = _sig(_with_display(pd.concat(cparts, ignore_index=True)), "p_holm", alpha)
        a.caption("target_columns", profile, "Experiment 4.1: the study's columns C1 (P1, P4, P7), C2 (P2, P5, P8), C3 (P3, P6, P9), paired two-sided t-tests per method",
                  "Holm over the 3 column pairs of one method", PAIRED_EFFECT)
    if len(points) >= 2:
        pp = pairs_within(wide, methods, points, "method", "target_a", "target_b", min_subjects)
        a.tables["target_point_pairs"] = _sig(_with_display(pp), "p_holm", alpha)
        a.caption("target_point_pairs", profile, f"Experiment 4.1: all {len(points) * (len(points) - 1) // 2} point pairs per method, paired two-sided t-tests",
                  "Holm over the point pairs of one method", PAIRED_EFFECT)
    if len(methods) >= 2:
        sw = wide.swaplevel(axis=1)
        mp = pairs_within(sw, points, methods, "target", "method_a", "method_b", min_subjects)
        mp.insert(2, "display_a", mp["method_a"].map(display_name))
        mp.insert(4, "display_b", mp["method_b"].map(display_name))
        a.tables["target_method_pairs"] = _sig(mp, "p_holm", alpha)
        a.caption("target_method_pairs", profile, f"Experiment 4.1: the {len(methods) * (len(methods) - 1) // 2} method pairs per point, paired two-sided t-tests",
                  "Holm over the method pairs of one point", PAIRED_EFFECT)
        ch = champions(mp, desc[["target", "method", "mean"]], alpha)
        ch.insert(1, "row", ch["target"].map(lambda p: pos[p][0]))
        ch.insert(2, "column", ch["target"].map(lambda p: pos[p][1]))
        ch.insert(ch.columns.get_loc("champion") + 1, "champion_display", ch["champion"].map(lambda s: "; ".join(display_name(x) for x in s.split("; ")) if s else ""))
        a.tables["target_champion"] = ch
        a.caption("target_champion", profile, f"Experiment 4.1: a point's champion is significantly better (lower mean, Holm p < {alpha}) than every other method; "
                  "empty when no method is", "Holm over the method pairs of one point", "none (decision from the pairwise tests)")
        a.tables["target_wins_tally"] = _with_display(wins_tally(ch, desc[["target", "method", "mean"]]))
        a.caption("target_wins_tally", profile, "Experiment 4.1: per method the points it is champion of, and among the points without a champion those where its mean is the lowest "
                  "(the study's pointwise_wins_tally, point_analysis.py:504-620)", "Holm over the method pairs of one point", "none (decision from the pairwise tests)")
    if {"abs_pitch_mean", "abs_yaw_mean"} <= set(vc.columns) and vc["abs_pitch_mean"].notna().any():
        ev = _valid(vc).assign(subject=lambda d: d["subject"].astype(str), method=lambda d: d["method"].astype(str))
        reg = eccentricity_ols(ev, ["subject", "method"], "error_mean", "abs_pitch_mean", "abs_yaw_mean", min_n=5).rename(columns={"n": "n_videos"})
        a.tables["target_eccentricity_subjects"] = _with_display(reg)
        a.caption("target_eccentricity_subjects", profile, "Experiment 4.1: per-subject OLS over the point videos, video mean error = a + b_pitch mean|pitch| + b_yaw mean|yaw| (at least 5 videos)")
        lost = [m for m in methods if m not in set(reg["method"])]
        if lost:
            a.partial("eccentricity fit leaves out " + ", ".join(map(display_name, lost)) + ": no ground-truth pitch/yaw in its results or fewer than 5 videos per subject")
        ecc = summarize_slopes(reg)
        a.tables["target_eccentricity"] = _with_display(ecc.set_index("method").reindex([m for m in methods if m in set(ecc["method"])]).reset_index())
        a.caption("target_eccentricity", profile, "Experiment 4.1: eccentricity slopes (deg/deg) from per-subject least squares over video means; mean, SD and 95 % CI over subjects",
                  "none", "slope mean and 95 % CI")
    else:
        a.partial("eccentricity fit skipped: no ground-truth pitch/yaw in the results")
    return a


MUTUAL_POOLS = {"h_slow": ("h_slow",), "h_fast": ("h_fast",), "v_slow": ("v_slow",), "v_fast": ("v_fast",),
                "slow": ("h_slow", "v_slow"), "fast": ("h_fast", "v_fast"), "all": MUTUAL_CONDITIONS}


def mutual_gaze(videos: pd.DataFrame, frames: pd.DataFrame | None = None, alpha: float = 0.05, skip_methods: dict[str, str] | None = None,
                profile: AnalysisProfile = REFERENCE, min_subjects: int = MIN_SUBJECTS) -> Analysis:
    """Experiment 4.2: mutual gaze while the camera scans (H/V x slow/fast).

    Tables: ``mutual`` (method, display, condition, mean, sd, n, ci_low, ci_high),
    ``mutual_pairwise`` (per method the six condition pairs, two-sided paired, Holm
    within method, cohen_dz, cohen_dav), ``mutual_method_pairs`` (per pool h_slow,
    h_fast, v_slow, v_fast, slow, fast, all: the method pairs, Holm within the pool;
    line_movement_analysis_paper.py:891-993), ``mutual_eccentricity`` (per method mean
    and SD over subjects of the per-subject OLS over valid frames E = a + b_pitch
    |pitch| + b_yaw |yaw|, Sezer et al. exp. 4.2 analysis), ``mutual_eccentricity_subjects``,
    and ``mutual_eccentricity_videos`` / ``mutual_eccentricity_per_video`` (the study's
    per-video OLS averaged over videos, conditions and subjects; :996-1262), and
    ``mutual_slope_meta`` (the study's fixed-effect meta-analysis of the per-video slopes,
    :996-1208; :func:`.study_tables.slope_meta`), and, when the frames carry their segment
    of the camera path (results ``cam_world_*``), ``mutual_segment_videos`` /
    ``mutual_segment_meta`` (the study's segment regressions, :194-525;
    :func:`.study_tables.segment_regressions`, :func:`.study_tables.segment_meta`).
    """
    a = Analysis("mutual", "Mutual gaze (experiment 4.2)", profile=profile.name)
    v = videos[videos["experiment"].astype(str) == "mutual"]
    if v.empty:
        return a.skip("no mutual-gaze trials in the results")
    sm = subject_means(v, ["method", "condition"], weighted=profile.weighted)
    methods = _method_order(sm["method"].unique())
    conds = [c for c in MUTUAL_CONDITIONS if c in set(sm["condition"])] + sorted(set(sm["condition"]) - set(MUTUAL_CONDITIONS))
    wide, a.excluded = complete_subjects(sm, ["method", "condition"], "error_mean", [(m, c) for m in methods for c in conds], videos["subject"].unique())
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has every mutual-gaze condition for every method")
    a.tables["mutual"] = _with_display(_desc(wide, ["method", "condition"]))
    a.caption("mutual", profile, "Experiment 4.2: mean error (deg), SD and 95 % t CI over subjects per mutual-gaze condition; subjects complete in all conditions")
    vc = v[v["subject"].astype(str).isin(wide.index)]
    pooled, pool_wide = [], {}
    for pool, cs in MUTUAL_POOLS.items():
        if len(cs) < 2 or not set(cs) <= set(conds):
            continue
        pm = subject_means(vc[vc["condition"].astype(str).isin(cs)], ["method"], weighted=profile.weighted)
        pool_wide[pool] = pm.pivot_table(index="subject", columns="method", values="error_mean", aggfunc="first").reindex(index=wide.index)
        pooled += [{"method": m, "pool": pool, "conditions": ", ".join(cs), **describe(pool_wide[pool][m] if m in pool_wide[pool] else [])} for m in methods]
    if pooled:
        a.tables["mutual_pooled"] = _with_display(pd.DataFrame(pooled))
        a.caption("mutual_pooled", profile, "Experiment 4.2: subject-level mean error (deg), SD, SE and 95 % t CI per method over pooled conditions: slow (h_slow + v_slow), fast, "
                  "and all four (the study's 'all' row, line_movement_analysis_paper.py:655-716); a pooled value aggregates the subject's videos of the pool")
    if _too_few(a, "tests and eccentricity slopes", min_subjects):
        return a
    parts = []
    for m in methods:
        pw = pairwise_paired(wide[m][conds]).rename(columns={"a": "condition_a", "b": "condition_b"})
        pw.insert(0, "method", m)
        parts.append(pw)
    a.tables["mutual_pairwise"] = _sig(_with_display(pd.concat(parts, ignore_index=True)), "p_holm", alpha)
    a.caption("mutual_pairwise", profile, "Experiment 4.2: paired two-sided t-tests between the conditions of each method", "Holm over the condition pairs of one method", PAIRED_EFFECT)
    a.notes.append("Holm family: the condition pairs of one method. " + DZ_NOTE)
    if len(methods) >= 2:
        mparts, tparts = [], []
        for pool, cs in MUTUAL_POOLS.items():
            if not set(cs) <= set(conds):
                continue
            pm = subject_means(vc[vc["condition"].astype(str).isin(cs)], ["method"], weighted=profile.weighted)
            pw_w = pm.pivot_table(index="subject", columns="method", values="error_mean", aggfunc="first").reindex(index=wide.index)
            pw = _pairwise_methods(pw_w, methods)
            pw.insert(0, "pool", pool)
            mparts.append(pw)
            mean = pw_w[methods].mean()
            for k, tier in enumerate(tiers(pw, mean, alpha), 1):
                tparts += [{"pool": pool, "tier": k, "method": m, "mean": mean[m], "sd": pw_w[m].std(ddof=1), "n": int(pw_w[m].notna().sum())} for m in tier]
        if mparts:
            a.tables["mutual_method_pairs"] = _sig(pd.concat(mparts, ignore_index=True), "p_holm", alpha)
            a.caption("mutual_method_pairs", profile, "Experiment 4.2: paired two-sided t-tests between methods per condition and per pooled speed (slow, fast) and overall (all); "
                      "pooled values aggregate the subject's videos of the pool", "Holm over the method pairs of one pool", PAIRED_EFFECT)
            a.tables["mutual_tiers"] = _with_display(pd.DataFrame(tparts, columns=["pool", "tier", "method", "mean", "sd", "n"]))
            a.caption("mutual_tiers", profile, f"Experiment 4.2: tiered method ranking per pool (the study's model_ranking files, line_movement_analysis_paper.py:743-852, 891-993): "
                      f"methods by ascending subject-level mean, a new tier where a method differs significantly (Holm p < {alpha}) from the last method of the current tier",
                      "Holm over the method pairs of one pool", "none (decision from the pairwise tests)")
    if frames is None or frames.empty:
        a.partial("eccentricity regression skipped: no ground-truth pitch/yaw per frame")
        return a
    f = frames[frames["subject"].astype(str).isin(wide.index) & frames["method"].astype(str).isin(methods)]
    for m, why in (skip_methods or {}).items():
        if m in methods:
            a.partial(f"eccentricity regression leaves out {display_name(m)}: {why}")
    f = f.assign(subject=f["subject"].astype(str), method=f["method"].astype(str))
    if "input" in f:
        keep = set(map(tuple, videos[["method", "input"]].astype(str).drop_duplicates().to_numpy()))
        f = f[pd.MultiIndex.from_arrays([f["method"], f["input"].astype(str)]).isin(keep)]
    reg = group_ols2(f, ["subject", "method"], "abs_pitch_deg", "abs_yaw_deg", "error_deg")
    reg = reg.rename(columns={"b1": "b_pitch", "b2": "b_yaw", "n": "n_frames"})
    a.tables["mutual_eccentricity_subjects"] = _with_display(reg)
    a.caption("mutual_eccentricity_subjects", profile, "Experiment 4.2: per-subject OLS over the valid frames of all mutual-gaze videos, E = a + b_pitch |pitch| + b_yaw |yaw|")
    ok = reg.dropna(subset=["b_pitch", "b_yaw"])
    ecc = ok.groupby("method", sort=False).agg(
        n=("subject", "count"), intercept_mean=("intercept", "mean"), b_pitch_mean=("b_pitch", "mean"), b_pitch_sd=("b_pitch", "std"),
        b_yaw_mean=("b_yaw", "mean"), b_yaw_sd=("b_yaw", "std"),
    ).reset_index()
    ecc = ecc.set_index("method").reindex([m for m in methods if m in set(ecc["method"])]).reset_index()
    a.tables["mutual_eccentricity"] = _with_display(ecc)
    a.caption("mutual_eccentricity", profile, "Experiment 4.2: eccentricity slopes (deg/deg) from per-subject OLS pooled over frames; mean and SD over subjects", "none", "slope mean and SD")
    a.notes.append("Eccentricity slopes: deg of error per deg of |pitch| or |yaw| of the ground-truth gaze in the camera frame, OLS per subject over valid frames, mean and SD over subjects.")
    if "trial" in f.columns:
        vids, per = per_video_eccentricity(f.assign(trial=f["trial"].astype(str), condition=f["condition"].astype(str)))
        a.tables["mutual_eccentricity_videos"] = _with_display(vids.rename(columns={"n": "n_frames"}))
        a.caption("mutual_eccentricity_videos", profile, "Experiment 4.2: per-video OLS over valid frames (at least 8), E = a + b_pitch |pitch| + b_yaw |yaw|")
        a.tables["mutual_eccentricity_per_video"] = _with_display(per.set_index("method").reindex([m for m in methods if m in set(per["method"])]).reset_index())
        a.caption("mutual_eccentricity_per_video", profile, "Experiment 4.2 (the study's script): per-video slopes averaged over a subject's videos per condition, then over the conditions; "
                  "mean, SD and 95 % CI over subjects", "none", "slope mean and 95 % CI")
        _, meta = slope_meta(f.assign(trial=f["trial"].astype(str), condition=f["condition"].astype(str)))
        order = {m: i for i, m in enumerate(methods)}
        meta = meta.assign(_c=meta["condition"].map({c: i for i, c in enumerate(conds)}), _k=meta["coef"].map({k: i for i, k in enumerate(SLOPE_COEFS)}),
                           _m=meta["method"].map(order))
        meta = meta.sort_values(["_c", "_k", "_m"], kind="stable").drop(columns=["_c", "_k", "_m"]).reset_index(drop=True)
        a.tables["mutual_slope_meta"] = _with_display(meta)
        a.caption("mutual_slope_meta", profile, "Experiment 4.2 (the study's script, line_movement_analysis_paper.py:996-1208): per-video OLS over valid frames (at least 8), "
                  "E = a + b_yaw |yaw| + b_pitch |pitch|, raw and z-scored within the video (beta); fixed-effect inverse-variance meta-analysis of the per-video "
                  "slopes per condition and method, two-sided z-test", "Holm over the methods of one condition and coefficient", "pooled slope (deg/deg; beta: SD/SD)")
        if "segment" in f.columns and (f["segment"].fillna(-1) >= 0).any():
            lost = sorted(set(f["method"]) - set(f.loc[f["segment"].fillna(-1) >= 0, "method"]), key=order.get)
            if lost:
                a.partial("segment regressions leave out " + ", ".join(map(display_name, lost)) + ": no camera position (cam_world_x/y/z) in its results")
            seg = segment_regressions(f[f["segment"].fillna(-1) >= 0].astype({"segment": "int64", "n_segments": "int64"}))
            cidx = {c: i for i, c in enumerate(conds)}
            seg = seg.assign(_c=seg["condition"].map(cidx), _m=seg["method"].map(order)).sort_values(["_c", "segment", "_m", "subject", "trial"], kind="stable")
            a.tables["mutual_segment_videos"] = _with_display(seg.drop(columns=["_c", "_m"]).reset_index(drop=True))
            a.caption("mutual_segment_videos", profile, "Experiment 4.2 (the study's line_movement__abs_angle_regressions_rows_DB.csv, line_movement_analysis_paper.py:194-403): "
                      "the camera path cut at its stops (corners), per video and main segment (the passes along the scan axis) OLS E = a + b x and Pearson r "
                      "over the valid frames (at least 3), x = |yaw| on horizontal scans, |pitch| on vertical ones")
            sm_ = segment_meta(seg)
            sm_ = sm_.assign(_c=sm_["condition"].map(cidx), _m=sm_["method"].map(order)).sort_values(["_c", "segment", "_m"], kind="stable")
            a.tables["mutual_segment_meta"] = _with_display(sm_.drop(columns=["_c", "_m"]).reset_index(drop=True))
            a.caption("mutual_segment_meta", profile, "Experiment 4.2 (the study's line_movement__abs_angle_regressions_agg_DB.csv, line_movement_analysis_paper.py:403-525): "
                      "per condition, segment and method the fixed-effect pooled Fisher z of the per-video r (weights n - 3, videos with at least 4 frames), "
                      "two-sided z-test; unweighted slope and r mean and SD", "Holm over the methods of one condition and segment", "pooled r (tanh of the pooled Fisher z)")
        else:
            a.partial("segment regressions skipped: no camera position (cam_world_x/y/z) in the results")
    return a


def crop_vs_rectified(videos: pd.DataFrame, alpha: float = 0.05, profile: AnalysisProfile = REFERENCE, min_subjects: int = MIN_SUBJECTS) -> Analysis:
    """Table S9: whole-dataset error with cropped vs rectified input, per method with both.

    Subject value: the subject's video means for that input aggregated as the profile
    says. Table ``crop_vs_rectified``: method, display, n, crop_mean, crop_sd,
    rectified_mean, rectified_sd, mean_diff (crop - rectified), t, dof, p_unc, p_holm
    (across methods), cohen_dz, cohen_dav, better.
    """
    a = Analysis("crop_vs_rectified", "Cropped vs rectified input (Table S9)", profile=profile.name)
    sm = subject_means(videos, ["method", "input"], weighted=profile.weighted)
    both = [m for m in _method_order(sm["method"].unique()) if {"crop", "rectified"} <= set(sm.loc[sm["method"] == m, "input"])]
    if not both:
        return a.skip("no method has both crop and rectified results")
    rows, excl = [], []
    for m in both:
        w, ex = complete_subjects(sm[sm["method"] == m], ["input"], "error_mean", [("crop",), ("rectified",)], videos["subject"].unique())
        if len(ex):
            excl.append(ex.assign(reason=f"{display_name(m)}: " + ex["reason"]))
        c, r = w["crop"].to_numpy(), w["rectified"].to_numpy()
        t = paired_ttest(c, r) if len(w) >= min_subjects else {"mean_diff": c.mean() - r.mean() if len(w) else np.nan, "t": np.nan, "dof": np.nan, "p_unc": np.nan, "cohen_dz": np.nan, "cohen_dav": np.nan}
        rows.append({"method": m, "n": len(w), "crop_mean": c.mean() if len(w) else np.nan, "crop_sd": c.std(ddof=1) if len(w) > 1 else np.nan,
                     "rectified_mean": r.mean() if len(w) else np.nan, "rectified_sd": r.std(ddof=1) if len(w) > 1 else np.nan,
                     "mean_diff": t["mean_diff"], "t": t["t"], "dof": t["dof"], "p_unc": t["p_unc"], "cohen_dz": t["cohen_dz"], "cohen_dav": t["cohen_dav"]})
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p_unc") + 1, "p_holm", holm(out["p_unc"].to_numpy()))
    out["better"] = np.where(~(out["p_holm"] < alpha), "no significant difference", np.where(out["mean_diff"] < 0, "crop", "rectified"))
    a.tables["crop_vs_rectified"] = _with_display(out)
    a.caption("crop_vs_rectified", profile, "Table S9: whole-dataset subject-level error, cropped vs rectified input; two-sided paired t-test per method, crop - rectified",
              "Holm across methods", PAIRED_EFFECT)
    a.n = int(out["n"].min())
    a.excluded = pd.concat(excl, ignore_index=True) if excl else a.excluded
    if (out["n"] < min_subjects).any():
        a.partial(f"paired tests skipped where fewer than {min_subjects} subjects (--min-subjects) have both inputs")
    a.notes.append("Two-sided paired t-test crop vs rectified per method, Holm across methods. " + DZ_NOTE)
    return a


def subject_groups(videos: pd.DataFrame, subjects: pd.DataFrame, alpha: float = 0.05, profile: AnalysisProfile = REFERENCE,
                   min_subjects: int = MIN_SUBJECTS) -> Analysis:
    """Whole-dataset error by subject attribute (glasses, gender) when the results carry it.

    Subject value: all of the subject's videos of the chosen input, aggregated as the
    profile says. Tables ``groups`` (factor, level, method, display, mean, sd, n,
    ci_low, ci_high) and ``groups_tests`` (two levels: Welch's t-test per method,
    Holm across methods, Cohen's d with the pooled SD).
    """
    a = Analysis("groups", "Subject groups (glasses, gender)", profile=profile.name)
    factors = [c for c in subjects.columns if c != "subject" and subjects[c].notna().any()]
    if not factors:
        return a.skip("no subject metadata (glasses, gender) in the results")
    sm = subject_means(videos, ["method"], weighted=profile.weighted)
    meta = subjects.assign(subject=subjects["subject"].astype(str))
    desc, tests = [], []
    for fac in factors:
        d = sm.merge(meta[["subject", fac]], on="subject", how="inner").dropna(subset=[fac])
        d[fac] = d[fac].astype(str)
        for (lv, m), g in d.groupby([fac, "method"], sort=True):
            x = g["error_mean"].to_numpy(float)
            lo, hi = ci95(x)
            desc.append({"factor": fac, "level": lv, "method": m, "mean": x.mean(), "sd": x.std(ddof=1) if x.size > 1 else np.nan, "n": x.size, "ci_low": lo, "ci_high": hi})
        t = group_comparison(d.rename(columns={"error_mean": "value"}), fac, alpha, min_subjects)
        if len(t):
            tests.append(t)
        if d[fac].nunique() != 2:
            a.notes.append(f"{fac}: {d[fac].nunique()} levels, descriptives only (tests need exactly two)")
    out = pd.DataFrame(desc)
    a.n = int(sm["subject"].nunique())
    _too_few(a, "group tests", min_subjects)
    order = {m: i for i, m in enumerate(_method_order(out["method"].unique()))}
    a.tables["groups"] = _with_display(out.sort_values(["factor", "level", "method"], key=lambda s: s.map(order) if s.name == "method" else s).reset_index(drop=True))
    a.caption("groups", profile, "Whole-dataset mean error (deg), SD and 95 % t CI over subjects per level of a subject attribute")
    if tests:
        tt = pd.concat(tests, ignore_index=True)
        if tt["p_unc"].isna().all() and a.n >= min_subjects:
            a.partial(f"group tests skipped: each group needs at least {min_subjects} subjects (--min-subjects)")
        a.tables["groups_tests"] = _with_display(tt)
        a.caption("groups_tests", profile, "Subject groups: Welch two-sample t-test between the two levels per method, a - b", "Holm across methods of one attribute",
                  "Cohen's d with the pooled SD")
    return a


TIMING_FIELDS = ("frames", "decode_s", "detect_s", "preprocess_s", "infer_s", "infer_ms_per_frame", "fps", "peak_rss_mb", "peak_vram_mb", "device", "batch")


def efficiency(metadata: list[dict]) -> Analysis:
    """Table S10: peak memory, ms per frame and FPS from the pipeline's timing records.

    ``metadata``: one dict per results file with keys ``file``, ``method``, ``input``
    and ``timing`` (the "timing" object of the file's Parquet metadata, or None).
    Table ``efficiency``: method, display, input, device, batch, frames, decode_s,
    detect_s, preprocess_s, infer_s, infer_ms_per_frame, fps, peak_rss_mb,
    peak_vram_mb, file.
    """
    a = Analysis("efficiency", "Efficiency (Table S10)")
    rows, absent = [], []
    for md in metadata:
        t = md.get("timing")
        if not isinstance(t, dict):
            absent.append(md.get("file", "?"))
            continue
        rows.append({"method": str(md.get("method")), "input": str(md.get("input")), **{k: t.get(k) for k in TIMING_FIELDS}, "file": md.get("file")})
    if absent:
        a.notes.append(f"no timing record in {len(absent)} file(s): {', '.join(absent[:4])}{' ...' if len(absent) > 4 else ''}")
    if not rows:
        return a.skip("no results file carries a timing record (Parquet metadata 'gaze4hri' -> 'timing')")
    out = pd.DataFrame(rows)
    out = out[["method", "input", "device", "batch", "frames", "decode_s", "detect_s", "preprocess_s", "infer_s", "infer_ms_per_frame", "fps", "peak_rss_mb", "peak_vram_mb", "file"]]
    for c in ("decode_s", "detect_s", "preprocess_s", "infer_s", "infer_ms_per_frame", "fps", "peak_rss_mb", "peak_vram_mb"):
        out[c] = pd.to_numeric(out[c], errors="coerce")
    order = {m: i for i, m in enumerate(_method_order(out["method"]))}
    out = out.sort_values(["method", "input"], key=lambda s: s.map(order) if s.name == "method" else s).reset_index(drop=True)
    a.tables["efficiency"] = _with_display(out)
    a.n = len(out)
    a.notes.append("Timings as recorded by the pipeline on its machine (device column); the study's figures are for an RTX A4000 over 1000 runs.")
    return a
