"""Experiment 4.1: error per target point P1..P9 (fixed camera, illumination 100); the grid, rows and
columns, point and method pairs, champions and eccentricity fits."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from gaze4hri_core.protocol import P_GRID

from ..analysis_profiles import REFERENCE, AnalysisProfile
from ..extended import STUDY_COLUMNS, champions, eccentricity_ols, pairs_within, summarize_slopes
from ..inference import pairwise_paired
from ..study_tables import STUDY_ROWS, group_descriptives, wins_tally
from .shared import (
    DZ_NOTE,
    MIN_SUBJECTS,
    PAIRED_EFFECT,
    Analysis,
    Caption,
    complete_subjects,
    describe_wide,
    display_name,
    level_of,
    mark_significant,
    method_order,
    subject_means,
    too_few,
    valid_videos,
    with_display,
)

__all__ = ["target_position", "SUBJECT_VIEW", "ROWS", "COLUMNS", "CAPTIONS"]

ROWS = ("closest", "middle", "farthest")
COLUMNS = ("left", "middle", "right")
_EXP = "Experiment 4.1: "
_DECISION = "none (decision from the pairwise tests)"
CAPTIONS = {
    "target": Caption(
        _EXP + "mean error (deg), SD and 95 % t CI over subjects per target point (fixed camera, illumination 100)"),
    "target_grid": Caption(
        _EXP + "mean error (deg) per point in the 3x3 grid as the subject sees the table (top row farthest; "
        "the subject's left is the camera's right)"),
    "target_best": Caption(_EXP + "the method with the lowest mean error per point"),
    "target_rows_columns": Caption(
        _EXP + "subject-level mean error (deg), SD, SE and 95 % t CI per method for the study's rows R1 "
        "(P1-P3, farthest), R2 (P4-P6), R3 (P7-P9, closest) and columns C1 (P1, P4, P7), C2, C3; a row's (column's) "
        "subject value aggregates the subject's videos of its points (point_analysis.py:332-368, 882-914)"),
    "target_tests": Caption(
        _EXP + "paired two-sided t-tests between the rows and between the left and right columns (camera's view) per "
        "method; a row's (column's) subject value aggregates the videos of its points",
        "Holm over the 3 row pairs, resp. the 1 column pair, of one method", PAIRED_EFFECT),
    "target_columns": Caption(
        _EXP + "the study's columns C1 (P1, P4, P7), C2 (P2, P5, P8), C3 (P3, P6, P9), paired two-sided t-tests per "
        "method", "Holm over the 3 column pairs of one method", PAIRED_EFFECT),
    "target_point_pairs": Caption(
        _EXP + "all {pairs} point pairs per method, paired two-sided t-tests",
        "Holm over the point pairs of one method", PAIRED_EFFECT),
    "target_method_pairs": Caption(
        _EXP + "the {pairs} method pairs per point, paired two-sided t-tests",
        "Holm over the method pairs of one point", PAIRED_EFFECT),
    "target_champion": Caption(
        _EXP + "a point's champion is significantly better (lower mean, Holm p < {alpha}) than every other method; "
        "empty when no method is", "Holm over the method pairs of one point", _DECISION),
    "target_wins_tally": Caption(
        _EXP + "per method the points it is champion of, and among the points without a champion those where its "
        "mean is the lowest (the study's pointwise_wins_tally, point_analysis.py:504-620)",
        "Holm over the method pairs of one point", _DECISION),
    "target_eccentricity_subjects": Caption(
        _EXP + "per-subject OLS over the point videos, video mean error = a + b_pitch mean|pitch| + b_yaw mean|yaw| "
        "(at least 5 videos)"),
    "target_eccentricity": Caption(
        _EXP + "eccentricity slopes (deg/deg) from per-subject least squares over video means; mean, SD and 95 % CI "
        "over subjects", "none", "slope mean and 95 % CI"),
}


def _grid_position() -> dict[str, tuple[str, str]]:
    return {p: (row, col) for row, cols in P_GRID.items() for col, p in cols.items()}


#: Columns of the 3x3 grid as seen by the subject, who faces the camera: the
#: subject's left is the camera's right (protocol.P_GRID names columns from the camera).
SUBJECT_VIEW = {"subject_left": "right", "subject_middle": "middle", "subject_right": "left"}


def _group_means(
    v: pd.DataFrame, mapping: dict[str, str], col: str, wide_index, profile: AnalysisProfile
) -> pd.DataFrame:
    """Subject x (method, group) values of the videos whose target maps to a group (rows, columns)."""
    g = v.assign(**{col: v["target"].astype(str).map(mapping)}).dropna(subset=[col])
    sm = subject_means(g, ["method", col], weighted=profile.weighted)
    wide = sm.pivot_table(index="subject", columns=["method", col], values="error_mean", aggfunc="first", observed=True)
    return wide.reindex(index=wide_index)


def target_position(
    videos: pd.DataFrame, alpha: float = 0.05, profile: AnalysisProfile = REFERENCE, min_subjects: int = MIN_SUBJECTS
) -> Analysis:
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
    v = videos[(exp == "illumination") & (videos["condition"].map(level_of) == 100)]
    pos = _grid_position()
    v = v[v["target"].astype(str).isin(pos)]
    if v.empty:
        return a.skip("no fixed-camera trials at illumination 100 in the results")
    sm = subject_means(v, ["method", "target"], weighted=profile.weighted)
    methods = method_order(sm["method"].unique())
    points = [p for p in sorted(pos, key=lambda p: int(p[1:])) if p in set(sm["target"])]
    cells = [(m, p) for m in methods for p in points]
    wide, a.excluded = complete_subjects(
        sm, ["method", "target"], "error_mean", cells, videos["subject"].unique(), profile.listwise
    )
    a.n = len(wide)
    if a.n == 0:
        return a.skip("no subject has every target point for every method")
    desc = describe_wide(wide, ["method", "target"])
    desc.insert(2, "row", desc["target"].map(lambda p: pos[p][0]))
    desc.insert(3, "column", desc["target"].map(lambda p: pos[p][1]))
    a.add("target", with_display(desc), profile, CAPTIONS["target"])
    cell = {(r.method, r.row, r.column): r.mean for r in desc.itertuples()}
    grid = [{"method": m, "row": row, **{k: cell.get((m, row, c), np.nan) for k, c in SUBJECT_VIEW.items()}}
            for m in methods for row in reversed(ROWS)]
    a.add("target_grid", with_display(pd.DataFrame(grid)), profile, CAPTIONS["target_grid"])
    best = desc.loc[desc.groupby("target", sort=False)["mean"].idxmin()][["target", "row", "column", "method", "mean"]]
    best = best.rename(columns={"method": "best_method", "mean": "best_mean"})
    best.insert(4, "best_display", best["best_method"].map(display_name))
    a.add("target_best", best.reset_index(drop=True), profile, CAPTIONS["target_best"])
    if len(points) < 9:
        a.notes.append(f"points present: {', '.join(points)}")
    vc = v[v["subject"].astype(str).isin(wide.index)]
    rc = []
    for factor, study_groups in (("row", STUDY_ROWS), ("column", STUDY_COLUMNS)):
        gs = {g: tuple(p for p in ps if p in points) for g, ps in study_groups.items()}
        gw = _group_means(vc, {p: g for g, ps in gs.items() for p in ps}, "grp", wide.index, profile)
        rc.append(group_descriptives(gw, methods, gs, factor))
    a.add("target_rows_columns", with_display(pd.concat(rc, ignore_index=True)), profile,
          CAPTIONS["target_rows_columns"])
    if too_few(a, "row, column, point and method tests and eccentricity fits", min_subjects):
        return a
    _group_tests(a, vc, wide.index, methods, points, alpha, profile, min_subjects)
    _pair_tables(a, wide, desc, methods, points, alpha, profile, min_subjects)
    _eccentricity(a, vc, methods, profile)
    return a


def _group_tests(a: Analysis, vc: pd.DataFrame, subjects, methods: list[str], points: list[str], alpha: float,
                 profile: AnalysisProfile, min_subjects: int) -> None:
    """``target_tests`` (row pairs and the left-right column pair per method) and ``target_columns``
    (the study's columns C1/C2/C3 per method)."""
    pos = _grid_position()
    rows_w = _group_means(vc, {p: pos[p][0] for p in points}, "row", subjects, profile)
    cols_w = _group_means(vc, {p: pos[p][1] for p in points}, "column", subjects, profile)
    scol = {p: c for c, ps in STUDY_COLUMNS.items() for p in ps if p in points}
    study_w = _group_means(vc, scol, "scol", subjects, profile)
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
            pw = pairwise_paired(study_w[m][list(STUDY_COLUMNS)], min_n=min_subjects)
            pw = pw.rename(columns={"a": "column_a", "b": "column_b"})
            pw.insert(0, "method", m)
            cparts.append(pw)
    if parts:
        tests = mark_significant(with_display(pd.concat(parts, ignore_index=True)), "p_holm", alpha)
        a.add("target_tests", tests, profile, CAPTIONS["target_tests"])
        a.notes.append(
            "Row and column values aggregate the subject's videos of the row's (column's) points. Holm family: the 3 "
            "row pairs, resp. the left-right pair, of one method. " + DZ_NOTE
        )
    if cparts:
        cols = mark_significant(with_display(pd.concat(cparts, ignore_index=True)), "p_holm", alpha)
        a.add("target_columns", cols, profile, CAPTIONS["target_columns"])


def _pair_tables(a: Analysis, wide: pd.DataFrame, desc: pd.DataFrame, methods: list[str], points: list[str],
                 alpha: float, profile: AnalysisProfile, min_subjects: int) -> None:
    """``target_point_pairs`` (per method), ``target_method_pairs`` (per point), ``target_champion`` and
    ``target_wins_tally``."""
    pos = _grid_position()
    if len(points) >= 2:
        pp = pairs_within(wide, methods, points, "method", "target_a", "target_b", min_subjects)
        a.add("target_point_pairs", mark_significant(with_display(pp), "p_holm", alpha), profile,
              CAPTIONS["target_point_pairs"], pairs=len(points) * (len(points) - 1) // 2)
    if len(methods) < 2:
        return
    sw = wide.swaplevel(axis=1)
    mp = pairs_within(sw, points, methods, "target", "method_a", "method_b", min_subjects)
    mp.insert(2, "display_a", mp["method_a"].map(display_name))
    mp.insert(4, "display_b", mp["method_b"].map(display_name))
    a.add("target_method_pairs", mark_significant(mp, "p_holm", alpha), profile, CAPTIONS["target_method_pairs"],
          pairs=len(methods) * (len(methods) - 1) // 2)
    ch = champions(mp, desc[["target", "method", "mean"]], alpha)
    ch.insert(1, "row", ch["target"].map(lambda p: pos[p][0]))
    ch.insert(2, "column", ch["target"].map(lambda p: pos[p][1]))
    names = ch["champion"].map(lambda s: "; ".join(display_name(x) for x in s.split("; ")) if s else "")
    ch.insert(ch.columns.get_loc("champion") + 1, "champion_display", names)
    a.add("target_champion", ch, profile, CAPTIONS["target_champion"], alpha=alpha)
    tally = with_display(wins_tally(ch, desc[["target", "method", "mean"]]))
    a.add("target_wins_tally", tally, profile, CAPTIONS["target_wins_tally"])


def _eccentricity(a: Analysis, vc: pd.DataFrame, methods: list[str], profile: AnalysisProfile) -> None:
    """``target_eccentricity_subjects`` and ``target_eccentricity``: per-subject OLS of video mean error
    on mean |pitch| and |yaw| over the point videos (point_analysis.py:684-880)."""
    if not ({"abs_pitch_mean", "abs_yaw_mean"} <= set(vc.columns) and vc["abs_pitch_mean"].notna().any()):
        a.partial("eccentricity fit skipped: no ground-truth pitch/yaw in the results")
        return
    ev = valid_videos(vc).assign(subject=lambda d: d["subject"].astype(str), method=lambda d: d["method"].astype(str))
    reg = eccentricity_ols(ev, ["subject", "method"], "error_mean", "abs_pitch_mean", "abs_yaw_mean", min_n=5)
    reg = reg.rename(columns={"n": "n_videos"})
    a.add("target_eccentricity_subjects", with_display(reg), profile, CAPTIONS["target_eccentricity_subjects"])
    lost = [m for m in methods if m not in set(reg["method"])]
    if lost:
        a.partial("eccentricity fit leaves out " + ", ".join(map(display_name, lost))
                  + ": no ground-truth pitch/yaw in its results or fewer than 5 videos per subject")
    ecc = summarize_slopes(reg)
    ecc = ecc.set_index("method").reindex([m for m in methods if m in set(ecc["method"])]).reset_index()
    a.add("target_eccentricity", with_display(ecc), profile, CAPTIONS["target_eccentricity"])
