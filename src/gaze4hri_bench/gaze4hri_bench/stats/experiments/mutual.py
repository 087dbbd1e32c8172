"""Experiment 4.2: mutual gaze while the camera scans (H/V x slow/fast); condition and method tests,
tiers, eccentricity slopes and the study's segment regressions."""

from __future__ import annotations

import pandas as pd

from ..analysis_profiles import REFERENCE, AnalysisProfile
from ..extended import per_video_eccentricity
from ..inference import group_ols2, pairwise_paired
from ..study_tables import SLOPE_COEFS, describe, segment_meta, segment_regressions, slope_meta, tiers
from .shared import (
    DZ_NOTE,
    MIN_SUBJECTS,
    PAIRED_EFFECT,
    Analysis,
    Caption,
    complete_subjects,
    describe_wide,
    display_name,
    mark_significant,
    method_order,
    pairwise_methods,
    subject_means,
    too_few,
    with_display,
)

__all__ = ["mutual_gaze", "MUTUAL_CONDITIONS", "MUTUAL_POOLS", "CAPTIONS"]

MUTUAL_CONDITIONS = ("h_slow", "h_fast", "v_slow", "v_fast")
MUTUAL_POOLS = {"h_slow": ("h_slow",), "h_fast": ("h_fast",), "v_slow": ("v_slow",), "v_fast": ("v_fast",),
                "slow": ("h_slow", "v_slow"), "fast": ("h_fast", "v_fast"), "all": MUTUAL_CONDITIONS}
_EXP = "Experiment 4.2: "
_STUDY = "Experiment 4.2 (the study's "
_POOL_FAMILY = "Holm over the method pairs of one pool"
CAPTIONS = {
    "mutual": Caption(
        _EXP + "mean error (deg), SD and 95 % t CI over subjects per mutual-gaze condition; subjects complete in all "
        "conditions"),
    "mutual_pooled": Caption(
        _EXP + "subject-level mean error (deg), SD, SE and 95 % t CI per method over pooled conditions: slow (h_slow + "
        "v_slow), fast, and all four (the study's 'all' row, line_movement_analysis_paper.py:655-716); a pooled value "
        "aggregates the subject's videos of the pool"),
    "mutual_pairwise": Caption(
        _EXP + "paired two-sided t-tests between the conditions of each method",
        "Holm over the condition pairs of one method", PAIRED_EFFECT),
    "mutual_method_pairs": Caption(
        _EXP + "paired two-sided t-tests between methods per condition and per pooled speed (slow, fast) and overall "
        "(all); pooled values aggregate the subject's videos of the pool", _POOL_FAMILY, PAIRED_EFFECT),
    "mutual_tiers": Caption(
        _EXP + "tiered method ranking per pool (the study's model_ranking files, line_movement_analysis_paper.py:"
        "743-852, 891-993): methods by ascending subject-level mean, a new tier where a method differs significantly "
        "(Holm p < {alpha}) from the last method of the current tier", _POOL_FAMILY,
        "none (decision from the pairwise tests)"),
    "mutual_eccentricity_subjects": Caption(
        _EXP + "per-subject OLS over the valid frames of all mutual-gaze videos, E = a + b_pitch |pitch| + "
        "b_yaw |yaw|"),
    "mutual_eccentricity": Caption(
        _EXP + "eccentricity slopes (deg/deg) from per-subject OLS pooled over frames; mean and SD over subjects",
        "none", "slope mean and SD"),
    "mutual_eccentricity_videos": Caption(
        _EXP + "per-video OLS over valid frames (at least 8), E = a + b_pitch |pitch| + b_yaw |yaw|"),
    "mutual_eccentricity_per_video": Caption(
        _STUDY + "script): per-video slopes averaged over a subject's videos per condition, then over the conditions; "
        "mean, SD and 95 % CI over subjects", "none", "slope mean and 95 % CI"),
    "mutual_slope_meta": Caption(
        _STUDY + "script, line_movement_analysis_paper.py:996-1208): per-video OLS over valid frames (at least 8), "
        "E = a + b_yaw |yaw| + b_pitch |pitch|, raw and z-scored within the video (beta); fixed-effect "
        "inverse-variance meta-analysis of the per-video slopes per condition and method, two-sided z-test",
        "Holm over the methods of one condition and coefficient", "pooled slope (deg/deg; beta: SD/SD)"),
    "mutual_segment_videos": Caption(
        _STUDY + "line_movement__abs_angle_regressions_rows_DB.csv, line_movement_analysis_paper.py:194-403): "
        "the camera path cut at its stops (corners), per video and main segment (the passes along the scan axis) OLS "
        "E = a + b x and Pearson r over the valid frames (at least 3), x = |yaw| on horizontal scans, |pitch| on "
        "vertical ones"),
    "mutual_segment_meta": Caption(
        _STUDY + "line_movement__abs_angle_regressions_agg_DB.csv, line_movement_analysis_paper.py:403-525): "
        "per condition, segment and method the fixed-effect pooled Fisher z of the per-video r (weights n - 3, "
        "videos with at least 4 frames), two-sided z-test; unweighted slope and r mean and SD",
        "Holm over the methods of one condition and segment", "pooled r (tanh of the pooled Fisher z)"),
}


def mutual_gaze(
    videos: pd.DataFrame,
    frames: pd.DataFrame | None = None,
    alpha: float = 0.05,
    skip_methods: dict[str, str] | None = None,
    profile: AnalysisProfile = REFERENCE,
    min_subjects: int = MIN_SUBJECTS,
) -> Analysis:
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
    methods = method_order(sm["method"].unique())
    present = set(sm["condition"])
    conds = [c for c in MUTUAL_CONDITIONS if c in present] + sorted(present - set(MUTUAL_CONDITIONS))
    cells = [(m, c) for m in methods for c in conds]
    wide, a.excluded = complete_subjects(sm, ["method", "condition"], "error_mean", cells, videos["subject"].unique())
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has every mutual-gaze condition for every method")
    a.add("mutual", with_display(describe_wide(wide, ["method", "condition"])), profile, CAPTIONS["mutual"])
    vc = v[v["subject"].astype(str).isin(wide.index)]
    pooled = []
    for pool, cs in MUTUAL_POOLS.items():
        if len(cs) < 2 or not set(cs) <= set(conds):
            continue
        w = _pool_wide(vc, cs, wide.index, profile)
        pooled += [{"method": m, "pool": pool, "conditions": ", ".join(cs), **describe(w[m] if m in w else [])}
                   for m in methods]
    if pooled:
        a.add("mutual_pooled", with_display(pd.DataFrame(pooled)), profile, CAPTIONS["mutual_pooled"])
    if too_few(a, "tests and eccentricity slopes", min_subjects):
        return a
    parts = []
    for m in methods:
        pw = pairwise_paired(wide[m][conds]).rename(columns={"a": "condition_a", "b": "condition_b"})
        pw.insert(0, "method", m)
        parts.append(pw)
    pairs = mark_significant(with_display(pd.concat(parts, ignore_index=True)), "p_holm", alpha)
    a.add("mutual_pairwise", pairs, profile, CAPTIONS["mutual_pairwise"])
    a.notes.append("Holm family: the condition pairs of one method. " + DZ_NOTE)
    if len(methods) >= 2:
        _method_tiers(a, vc, wide.index, methods, conds, alpha, profile)
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
    _eccentricity(a, f, methods, profile)
    if "trial" in f.columns:
        _per_video(a, f.assign(trial=f["trial"].astype(str), condition=f["condition"].astype(str)), methods, conds,
                   profile)
        _segments(a, f, methods, conds, profile)
    return a


def _pool_wide(vc: pd.DataFrame, conditions: tuple[str, ...], subjects, profile: AnalysisProfile) -> pd.DataFrame:
    """Subject x method values over the videos of a pool of conditions (a pooled value aggregates them)."""
    pm = subject_means(vc[vc["condition"].astype(str).isin(conditions)], ["method"], weighted=profile.weighted)
    w = pm.pivot_table(index="subject", columns="method", values="error_mean", aggfunc="first")
    return w.reindex(index=subjects)


def _method_tiers(a: Analysis, vc: pd.DataFrame, subjects, methods: list[str], conds: list[str], alpha: float,
                  profile: AnalysisProfile) -> None:
    """``mutual_method_pairs`` and ``mutual_tiers``: method pairs and the tiered ranking per pool."""
    mparts, tparts = [], []
    for pool, cs in MUTUAL_POOLS.items():
        if not set(cs) <= set(conds):
            continue
        pw_w = _pool_wide(vc, cs, subjects, profile)
        pw = pairwise_methods(pw_w, methods)
        pw.insert(0, "pool", pool)
        mparts.append(pw)
        mean = pw_w[methods].mean()
        for k, tier in enumerate(tiers(pw, mean, alpha), 1):
            tparts += [{"pool": pool, "tier": k, "method": m, "mean": mean[m], "sd": pw_w[m].std(ddof=1),
                        "n": int(pw_w[m].notna().sum())} for m in tier]
    if not mparts:
        return
    pairs = mark_significant(pd.concat(mparts, ignore_index=True), "p_holm", alpha)
    a.add("mutual_method_pairs", pairs, profile, CAPTIONS["mutual_method_pairs"])
    ranked = pd.DataFrame(tparts, columns=["pool", "tier", "method", "mean", "sd", "n"])
    a.add("mutual_tiers", with_display(ranked), profile, CAPTIONS["mutual_tiers"], alpha=alpha)


def _reorder(df: pd.DataFrame, methods: list[str], col: str = "method") -> pd.DataFrame:
    """``df``'s rows in the order of ``methods`` (methods it lacks left out)."""
    return df.set_index(col).reindex([m for m in methods if m in set(df[col])]).reset_index()


def _eccentricity(a: Analysis, f: pd.DataFrame, methods: list[str], profile: AnalysisProfile) -> None:
    """``mutual_eccentricity_subjects`` and ``mutual_eccentricity``: per-subject OLS over valid frames."""
    reg = group_ols2(f, ["subject", "method"], "abs_pitch_deg", "abs_yaw_deg", "error_deg")
    reg = reg.rename(columns={"b1": "b_pitch", "b2": "b_yaw", "n": "n_frames"})
    a.add("mutual_eccentricity_subjects", with_display(reg), profile, CAPTIONS["mutual_eccentricity_subjects"])
    ok = reg.dropna(subset=["b_pitch", "b_yaw"])
    ecc = ok.groupby("method", sort=False).agg(
        n=("subject", "count"), intercept_mean=("intercept", "mean"), b_pitch_mean=("b_pitch", "mean"),
        b_pitch_sd=("b_pitch", "std"), b_yaw_mean=("b_yaw", "mean"), b_yaw_sd=("b_yaw", "std"),
    ).reset_index()
    a.add("mutual_eccentricity", with_display(_reorder(ecc, methods)), profile, CAPTIONS["mutual_eccentricity"])
    a.notes.append(
        "Eccentricity slopes: deg of error per deg of |pitch| or |yaw| of the ground-truth gaze in the camera frame, "
        "OLS per subject over valid frames, mean and SD over subjects."
    )


def _per_video(a: Analysis, f: pd.DataFrame, methods: list[str], conds: list[str], profile: AnalysisProfile) -> None:
    """The study's per-video slopes: ``mutual_eccentricity_videos``, ``mutual_eccentricity_per_video`` and
    their fixed-effect meta-analysis ``mutual_slope_meta``."""
    vids, per = per_video_eccentricity(f)
    a.add("mutual_eccentricity_videos", with_display(vids.rename(columns={"n": "n_frames"})), profile,
          CAPTIONS["mutual_eccentricity_videos"])
    a.add("mutual_eccentricity_per_video", with_display(_reorder(per, methods)), profile,
          CAPTIONS["mutual_eccentricity_per_video"])
    _, meta = slope_meta(f)
    order = {m: i for i, m in enumerate(methods)}
    meta = meta.assign(
        _c=meta["condition"].map({c: i for i, c in enumerate(conds)}),
        _k=meta["coef"].map({k: i for i, k in enumerate(SLOPE_COEFS)}),
        _m=meta["method"].map(order),
    )
    meta = meta.sort_values(["_c", "_k", "_m"], kind="stable").drop(columns=["_c", "_k", "_m"]).reset_index(drop=True)
    a.add("mutual_slope_meta", with_display(meta), profile, CAPTIONS["mutual_slope_meta"])


def _segments(a: Analysis, f: pd.DataFrame, methods: list[str], conds: list[str], profile: AnalysisProfile) -> None:
    """The study's segment regressions on the raster scans: ``mutual_segment_videos`` and ``mutual_segment_meta``
    (frames labelled with their segment of the camera path; stats.study_tables)."""
    if not ("segment" in f.columns and (f["segment"].fillna(-1) >= 0).any()):
        a.partial("segment regressions skipped: no camera position (cam_world_x/y/z) in the results")
        return
    order = {m: i for i, m in enumerate(methods)}
    labelled = f["segment"].fillna(-1) >= 0
    lost = sorted(set(f["method"]) - set(f.loc[labelled, "method"]), key=order.get)
    if lost:
        a.partial("segment regressions leave out " + ", ".join(map(display_name, lost))
                  + ": no camera position (cam_world_x/y/z) in its results")
    seg = segment_regressions(f[labelled].astype({"segment": "int64", "n_segments": "int64"}))
    cidx = {c: i for i, c in enumerate(conds)}
    seg = seg.assign(_c=seg["condition"].map(cidx), _m=seg["method"].map(order))
    seg = seg.sort_values(["_c", "segment", "_m", "subject", "trial"], kind="stable")
    a.add("mutual_segment_videos", with_display(seg.drop(columns=["_c", "_m"]).reset_index(drop=True)), profile,
          CAPTIONS["mutual_segment_videos"])
    sm_ = segment_meta(seg)
    sm_ = sm_.assign(_c=sm_["condition"].map(cidx), _m=sm_["method"].map(order))
    sm_ = sm_.sort_values(["_c", "segment", "_m"], kind="stable")
    a.add("mutual_segment_meta", with_display(sm_.drop(columns=["_c", "_m"]).reset_index(drop=True)), profile,
          CAPTIONS["mutual_segment_meta"])
