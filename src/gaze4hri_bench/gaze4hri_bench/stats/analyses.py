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
from .inference import cv_percent, group_ols2, group_slopes, holm, one_sample_ttest, paired_ttest, pairwise_paired

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

    def skip(self, reason: str) -> Analysis:
        self.status, self.skipped = "skipped", self.skipped + [reason]
        return self

    def partial(self, reason: str) -> None:
        self.skipped.append(reason)
        if self.status == "ran":
            self.status = "partial"


def display_name(method: str) -> str:
    """The study's table name (specs.SPECS[...].table_name, e.g. "PureGaze (E)"); unknown methods keep their name."""
    spec = SPECS.get(str(method))
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


def subject_means(videos: pd.DataFrame, by: list[str], value: str = "error_mean") -> pd.DataFrame:
    """Mean of each subject's video means per ``by`` cell (Sezer et al., aggregation: frame -> video -> subject).

    Returns subject, ``by`` columns, ``value`` and ``n_videos``; videos without valid
    frames do not count.
    """
    v = _valid(videos)
    keys = ["subject"] + [b for b in by if b != "subject"]
    g = v.groupby(keys, observed=True)[value]
    out = pd.DataFrame({value: g.mean(), "n_videos": g.count()}).reset_index()
    for k in keys:
        out[k] = out[k].astype(str)
    return out


def complete_subjects(long: pd.DataFrame, cells: list[str], value: str, expected: list[tuple], subjects=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Listwise deletion: keep subjects with a value in every expected cell.

    ``subjects``: every subject of the data set, so that subjects with no video at
    all in this analysis are listed too. Returns the wide table (index subject,
    columns the cells) and the excluded subjects with the missing cells as reason.
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
        spec = SPECS.get(m)
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


def _pairwise_methods(wide: pd.DataFrame, methods: list[str]) -> pd.DataFrame:
    pw = pairwise_paired(wide[methods])
    pw = pw.rename(columns={"a": "method_a", "b": "method_b"})
    pw.insert(1, "display_a", pw["method_a"].map(display_name))
    pw.insert(3, "display_b", pw["method_b"].map(display_name))
    return pw


def _sig(df: pd.DataFrame, p: str, alpha: float) -> pd.DataFrame:
    df["significant"] = df[p] < alpha
    return df


def illumination(videos: pd.DataFrame, alpha: float = 0.05) -> Analysis:
    """Experiment 1, Table III: error by illumination level (10, 25, 50, 100 %).

    Tables: ``illumination`` (method, display, level, mean, sd, n; subject-level,
    SD ddof 1), ``illumination_cv`` (method, display, cv_percent = 100 sigma/mu of
    the four level means, sigma with ddof 1 as the study computes it, n_levels) and
    ``illumination_pairwise`` (per level all method pairs: t, dof, p_unc, p_holm
    with the level's pairs as the Holm family, cohen_dz, cohen_dav).
    """
    a = Analysis("illumination", "Illumination (experiment 1, Table III)")
    v = videos[videos["experiment"].astype(str) == "illumination"].copy()
    if v.empty:
        return a.skip("no illumination trials in the results")
    v["level"] = v["condition"].astype(str).map(_level)
    v = v[v["level"].isin(ILLUMINATION_LEVELS)]
    v["level"] = v["level"].astype(int)
    sm = subject_means(v, ["method", "level"])
    if sm.empty:
        return a.skip("no valid illumination video")
    methods = _method_order(sm["method"].unique())
    levels = [lv for lv in ILLUMINATION_LEVELS if str(lv) in set(sm["level"])]
    wide, a.excluded = complete_subjects(sm, ["method", "level"], "error_mean", [(m, str(lv)) for m in methods for lv in levels], videos["subject"].unique())
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has every method at every illumination level")
    desc = wide.agg(["mean", "std", "count"]).T.reset_index()
    desc.columns = ["method", "level", "mean", "sd", "n"]
    desc["level"] = desc["level"].astype(int)
    desc["n"] = desc["n"].astype(int)
    a.tables["illumination"] = _with_display(desc)
    cv = desc.groupby("method", sort=False).agg(cv_percent=("mean", cv_percent), n_levels=("level", "count")).reset_index()
    a.tables["illumination_cv"] = _with_display(cv)
    if len(levels) < len(ILLUMINATION_LEVELS):
        a.notes.append(f"levels present: {', '.join(map(str, levels))}")
    if a.n < MIN_SUBJECTS:
        a.partial(f"pairwise tests need at least {MIN_SUBJECTS} subjects (N = {a.n})")
    elif len(methods) < 2:
        a.partial("pairwise tests need at least 2 methods")
    else:
        parts = []
        for lv in levels:
            w = wide.xs(str(lv), axis=1, level="level")
            pw = _pairwise_methods(w, methods)
            pw.insert(0, "level", lv)
            parts.append(pw)
        a.tables["illumination_pairwise"] = _sig(pd.concat(parts, ignore_index=True), "p_holm", alpha)
        a.notes.append("Holm family: all method pairs at one level. " + DZ_NOTE)
    return a


def viewpoint(videos: pd.DataFrame, alpha: float = 0.05) -> Analysis:
    """Experiment 2: fixed camera (illumination 100, P1..P9) vs camera moving on the arc.

    Table ``viewpoint``: method, display, fixed_mean, fixed_sd, arc_mean, arc_sd, n,
    mean_diff (arc - fixed), t, dof, p (two-sided paired, uncorrected), p_holm
    (across methods), cohen_dz, cohen_dav.
    """
    a = Analysis("viewpoint", "Camera viewpoint (experiment 2)")
    exp = videos["experiment"].astype(str)
    fixed = (exp == "illumination") & (videos["condition"].map(_level) == 100)
    arc = exp == "viewpoint"
    if not arc.any():
        return a.skip("no viewpoint (arc) trials in the results")
    if not fixed.any():
        return a.skip("no fixed-camera baseline (illumination 100) in the results")
    v = videos[fixed | arc].copy()
    v["setting"] = np.where(v["experiment"].astype(str) == "viewpoint", "arc", "fixed")
    sm = subject_means(v, ["method", "setting"])
    methods = _method_order(sm["method"].unique())
    wide, a.excluded = complete_subjects(sm, ["method", "setting"], "error_mean", [(m, s) for m in methods for s in ("fixed", "arc")], videos["subject"].unique())
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has both the fixed and the arc trials for every method")
    rows = []
    run_tests = a.n >= MIN_SUBJECTS
    for m in methods:
        f, r = wide[(m, "fixed")].to_numpy(), wide[(m, "arc")].to_numpy()
        t = paired_ttest(r, f) if run_tests else {"mean_diff": r.mean() - f.mean(), "t": np.nan, "dof": np.nan, "p_unc": np.nan, "cohen_dz": np.nan, "cohen_dav": np.nan}
        rows.append(
            {"method": m, "fixed_mean": f.mean(), "fixed_sd": f.std(ddof=1) if f.size > 1 else np.nan, "arc_mean": r.mean(),
             "arc_sd": r.std(ddof=1) if r.size > 1 else np.nan, "n": a.n, "mean_diff": t["mean_diff"], "t": t["t"], "dof": t["dof"],
             "p": t["p_unc"], "cohen_dz": t["cohen_dz"], "cohen_dav": t["cohen_dav"]}
        )
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p") + 1, "p_holm", holm(out["p"].to_numpy()))
    a.tables["viewpoint"] = _sig(_with_display(out), "p_holm", alpha)
    if not run_tests:
        a.partial(f"paired tests need at least {MIN_SUBJECTS} subjects (N = {a.n})")
    else:
        a.notes.append("Two-sided paired t-test arc vs fixed per method; p uncorrected, p_holm across methods. " + DZ_NOTE)
    return a


def conflict(videos: pd.DataFrame, alpha: float = 0.05, skip_methods: dict[str, str] | None = None) -> Analysis:
    """Experiment 3: error vs head-gaze conflict.

    Per subject s and method, OLS of video mean error on video mean conflict,
    e = alpha_s + beta_s * gamma (Sezer et al., exp. 3 analysis); one-sided one-sample
    t-test of {beta_s} > 0, Holm-corrected across methods; % of subjects with
    beta_s > 0; pairwise two-sided paired tests of the subject mean errors between
    methods (Holm across all pairs).
    Tables: ``conflict`` (method, display, n, mean, sd, slope_mean, slope_sd, t, dof,
    p_unc, p_holm, pct_positive), ``conflict_slopes`` (subject, method, intercept,
    slope, n_videos), ``conflict_pairwise``.
    """
    a = Analysis("conflict", "Head-gaze conflict (experiment 3)")
    v = videos[videos["experiment"].astype(str) == "conflict"]
    for m, why in (skip_methods or {}).items():
        if m in set(v["method"].astype(str)):
            a.partial(f"{display_name(m)} left out: {why}")
            v = v[v["method"].astype(str) != m]
    if v.empty:
        return a.skip("no conflict trials in the results" if not skip_methods else "no conflict trials with head-gaze conflict values")
    v = v[np.isfinite(v["conflict_mean"].to_numpy(dtype=float))]
    sm = subject_means(v, ["method"])
    if sm.empty:
        return a.skip("no valid conflict video")
    methods = _method_order(sm["method"].unique())
    wide, a.excluded = complete_subjects(sm, ["method"], "error_mean", [(m,) for m in methods], videos["subject"].unique())
    vv = _valid(v)
    sl = group_slopes(vv.assign(subject=vv["subject"].astype(str), method=vv["method"].astype(str)), ["subject", "method"], "conflict_mean", "error_mean")
    sl = sl.rename(columns={"n": "n_videos"})
    sl = sl[sl["subject"].isin(wide.index)]
    bad = sl[~np.isfinite(sl["slope"])]["subject"].unique()
    if len(bad):
        a.excluded = pd.concat([a.excluded, pd.DataFrame({"subject": bad, "reason": "slope undefined (fewer than 2 videos or constant conflict)"})], ignore_index=True)
        wide = wide.drop(index=bad)
        sl = sl[~sl["subject"].isin(bad)]
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has a defined slope for every method (needs 2 or more conflict videos with different conflict)")
    rows = []
    run_tests = a.n >= MIN_SUBJECTS
    for m in methods:
        e = wide[m].to_numpy()
        b = sl.loc[sl["method"] == m, "slope"].to_numpy()
        t = one_sample_ttest(b, 0.0, "greater") if run_tests else {"t": np.nan, "dof": np.nan, "p_unc": np.nan}
        rows.append({"method": m, "n": a.n, "mean": e.mean(), "sd": e.std(ddof=1) if e.size > 1 else np.nan, "slope_mean": b.mean(),
                     "slope_sd": b.std(ddof=1) if b.size > 1 else np.nan, "t": t["t"], "dof": t["dof"], "p_unc": t["p_unc"],
                     "pct_positive": 100.0 * float((b > 0).mean())})
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p_unc") + 1, "p_holm", holm(out["p_unc"].to_numpy()))
    a.tables["conflict"] = _sig(_with_display(out), "p_holm", alpha)
    a.tables["conflict_slopes"] = _with_display(sl[["subject", "method", "intercept", "slope", "n_videos"]].reset_index(drop=True))
    if not run_tests:
        a.partial(f"tests need at least {MIN_SUBJECTS} subjects (N = {a.n})")
    else:
        a.notes.append("Slopes in deg of error per deg of conflict; one-sided t-test of the subject slopes > 0, Holm across methods.")
        if len(methods) >= 2:
            a.tables["conflict_pairwise"] = _sig(_pairwise_methods(wide, methods), "p_holm", alpha)
            a.notes.append("Pairwise: two-sided paired t-tests of subject mean errors, Holm across all pairs. " + DZ_NOTE)
    return a


def _grid_position() -> dict[str, tuple[str, str]]:
    return {p: (row, col) for row, cols in P_GRID.items() for col, p in cols.items()}


def target_position(videos: pd.DataFrame, alpha: float = 0.05) -> Analysis:
    """Experiment 4.1: error per target point P1..P9 (fixed camera, illumination 100).

    Tables: ``target`` (method, display, target, row, column, mean, sd, n),
    ``target_best`` (the method with the lowest mean per point, in the study's 3x3
    layout, gaze4hri.md / protocol.P_GRID), ``target_tests`` (per method: pairwise
    paired tests between the three rows and between the left and right columns of
    the subject means over a row's or column's points; Holm family = one factor of
    one method; cohen_dz and cohen_dav).
    """
    a = Analysis("target", "Target position (experiment 4.1)")
    exp = videos["experiment"].astype(str)
    v = videos[(exp == "illumination") & (videos["condition"].map(_level) == 100)]
    pos = _grid_position()
    v = v[v["target"].astype(str).isin(pos)]
    if v.empty:
        return a.skip("no fixed-camera trials at illumination 100 in the results")
    sm = subject_means(v, ["method", "target"])
    methods = _method_order(sm["method"].unique())
    points = [p for p in sorted(pos, key=lambda p: int(p[1:])) if p in set(sm["target"])]
    wide, a.excluded = complete_subjects(sm, ["method", "target"], "error_mean", [(m, p) for m in methods for p in points], videos["subject"].unique())
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has every target point for every method")
    desc = wide.agg(["mean", "std", "count"]).T.reset_index()
    desc.columns = ["method", "target", "mean", "sd", "n"]
    desc["n"] = desc["n"].astype(int)
    desc.insert(2, "row", desc["target"].map(lambda p: pos[p][0]))
    desc.insert(3, "column", desc["target"].map(lambda p: pos[p][1]))
    a.tables["target"] = _with_display(desc)
    best = desc.loc[desc.groupby("target", sort=False)["mean"].idxmin()][["target", "row", "column", "method", "mean"]]
    best = best.rename(columns={"method": "best_method", "mean": "best_mean"})
    best.insert(4, "best_display", best["best_method"].map(display_name))
    a.tables["target_best"] = best.reset_index(drop=True)
    if len(points) < 9:
        a.notes.append(f"points present: {', '.join(points)}")
    if a.n < MIN_SUBJECTS:
        a.partial(f"row/column tests need at least {MIN_SUBJECTS} subjects (N = {a.n})")
        return a
    parts = []
    for m in methods:
        w = wide[m]
        for factor, groups, pairs in (
            ("row", {r: [p for p in points if pos[p][0] == r] for r in ROWS}, list(combinations(ROWS, 2))),
            ("column", {c: [p for p in points if pos[p][1] == c] for c in ("left", "right")}, [("left", "right")]),
        ):
            if any(not g for g in groups.values()):
                continue
            agg = pd.DataFrame({k: w[g].mean(axis=1) for k, g in groups.items()})
            pw = pairwise_paired(agg, pairs=pairs)
            pw.insert(0, "method", m)
            pw.insert(1, "factor", factor)
            parts.append(pw)
    if parts:
        a.tables["target_tests"] = _sig(_with_display(pd.concat(parts, ignore_index=True)), "p_holm", alpha)
        a.notes.append("Row and column values: subject mean over the row's (column's) points. Holm family: the 3 row pairs, resp. the left-right pair, of one method. " + DZ_NOTE)
    return a


def mutual_gaze(videos: pd.DataFrame, frames: pd.DataFrame | None = None, alpha: float = 0.05, skip_methods: dict[str, str] | None = None) -> Analysis:
    """Experiment 4.2: mutual gaze while the camera scans (H/V x slow/fast).

    Tables: ``mutual`` (method, display, condition, mean, sd, n), ``mutual_pairwise``
    (per method the six condition pairs, two-sided paired, Holm within method,
    cohen_dz, cohen_dav), ``mutual_eccentricity`` (per method mean and SD over
    subjects of the per-subject OLS over valid frames E = a + b_pitch |pitch| +
    b_yaw |yaw|, Sezer et al. exp. 4.2 analysis; ground-truth pitch/yaw in deg) and
    ``mutual_eccentricity_subjects``.
    """
    a = Analysis("mutual", "Mutual gaze (experiment 4.2)")
    v = videos[videos["experiment"].astype(str) == "mutual"]
    if v.empty:
        return a.skip("no mutual-gaze trials in the results")
    sm = subject_means(v, ["method", "condition"])
    methods = _method_order(sm["method"].unique())
    conds = [c for c in MUTUAL_CONDITIONS if c in set(sm["condition"])] + sorted(set(sm["condition"]) - set(MUTUAL_CONDITIONS))
    wide, a.excluded = complete_subjects(sm, ["method", "condition"], "error_mean", [(m, c) for m in methods for c in conds], videos["subject"].unique())
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has every mutual-gaze condition for every method")
    desc = wide.agg(["mean", "std", "count"]).T.reset_index()
    desc.columns = ["method", "condition", "mean", "sd", "n"]
    desc["n"] = desc["n"].astype(int)
    a.tables["mutual"] = _with_display(desc)
    if a.n < MIN_SUBJECTS:
        a.partial(f"tests and slopes need at least {MIN_SUBJECTS} subjects (N = {a.n})")
        return a
    parts = []
    for m in methods:
        pw = pairwise_paired(wide[m][conds]).rename(columns={"a": "condition_a", "b": "condition_b"})
        pw.insert(0, "method", m)
        parts.append(pw)
    a.tables["mutual_pairwise"] = _sig(_with_display(pd.concat(parts, ignore_index=True)), "p_holm", alpha)
    a.notes.append("Holm family: the condition pairs of one method. " + DZ_NOTE)
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
    ok = reg.dropna(subset=["b_pitch", "b_yaw"])
    ecc = ok.groupby("method", sort=False).agg(
        n=("subject", "count"), intercept_mean=("intercept", "mean"), b_pitch_mean=("b_pitch", "mean"), b_pitch_sd=("b_pitch", "std"),
        b_yaw_mean=("b_yaw", "mean"), b_yaw_sd=("b_yaw", "std"),
    ).reset_index()
    ecc = ecc.set_index("method").reindex([m for m in methods if m in set(ecc["method"])]).reset_index()
    a.tables["mutual_eccentricity"] = _with_display(ecc)
    a.notes.append("Eccentricity slopes: deg of error per deg of |pitch| or |yaw| of the ground-truth gaze in the camera frame, OLS per subject over valid frames, mean and SD over subjects.")
    return a


def crop_vs_rectified(videos: pd.DataFrame, alpha: float = 0.05) -> Analysis:
    """Table S9: whole-dataset error with cropped vs rectified input, per method with both.

    Subject value: mean of all the subject's video means for that input. Table
    ``crop_vs_rectified``: method, display, n, crop_mean, crop_sd, rectified_mean,
    rectified_sd, mean_diff (crop - rectified), t, dof, p_unc, p_holm (across
    methods), cohen_dz, cohen_dav, better.
    """
    a = Analysis("crop_vs_rectified", "Cropped vs rectified input (Table S9)")
    sm = subject_means(videos, ["method", "input"])
    both = [m for m in _method_order(sm["method"].unique()) if {"crop", "rectified"} <= set(sm.loc[sm["method"] == m, "input"])]
    if not both:
        return a.skip("no method has both crop and rectified results")
    rows, excl = [], []
    for m in both:
        w, ex = complete_subjects(sm[sm["method"] == m], ["input"], "error_mean", [("crop",), ("rectified",)], videos["subject"].unique())
        if len(ex):
            excl.append(ex.assign(reason=f"{display_name(m)}: " + ex["reason"]))
        c, r = w["crop"].to_numpy(), w["rectified"].to_numpy()
        t = paired_ttest(c, r) if len(w) >= MIN_SUBJECTS else {"mean_diff": c.mean() - r.mean() if len(w) else np.nan, "t": np.nan, "dof": np.nan, "p_unc": np.nan, "cohen_dz": np.nan, "cohen_dav": np.nan}
        rows.append({"method": m, "n": len(w), "crop_mean": c.mean() if len(w) else np.nan, "crop_sd": c.std(ddof=1) if len(w) > 1 else np.nan,
                     "rectified_mean": r.mean() if len(w) else np.nan, "rectified_sd": r.std(ddof=1) if len(w) > 1 else np.nan,
                     "mean_diff": t["mean_diff"], "t": t["t"], "dof": t["dof"], "p_unc": t["p_unc"], "cohen_dz": t["cohen_dz"], "cohen_dav": t["cohen_dav"]})
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p_unc") + 1, "p_holm", holm(out["p_unc"].to_numpy()))
    out["better"] = np.where(~(out["p_holm"] < alpha), "no significant difference", np.where(out["mean_diff"] < 0, "crop", "rectified"))
    a.tables["crop_vs_rectified"] = _with_display(out)
    a.n = int(out["n"].min())
    a.excluded = pd.concat(excl, ignore_index=True) if excl else a.excluded
    if (out["n"] < MIN_SUBJECTS).any():
        a.partial(f"paired tests need at least {MIN_SUBJECTS} subjects with both inputs")
    a.notes.append("Two-sided paired t-test crop vs rectified per method, Holm across methods. " + DZ_NOTE)
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
