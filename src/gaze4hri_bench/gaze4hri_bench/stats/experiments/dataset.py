"""Whole-dataset analyses beside the experiments: each method's input (Table II), coverage, cropped vs
rectified input (Table S9), subject groups and efficiency (Table S10)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ...specs import SPECS
from ..analysis_profiles import REFERENCE, AnalysisProfile
from ..extended import ci95, group_comparison
from ..inference import holm, paired_ttest
from .shared import (
    DZ_NOTE,
    MIN_SUBJECTS,
    PAIRED_EFFECT,
    Analysis,
    complete_subjects,
    display_name,
    method_order,
    subject_means,
    too_few,
    valid_videos,
    with_display,
)

__all__ = ["select_inputs", "coverage", "crop_vs_rectified", "subject_groups", "efficiency", "TIMING_FIELDS"]


def select_inputs(videos: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Pick each method's input for the main analyses (Sezer et al., Table II).

    Known methods use the study's best input (specs.SPECS[...].input_type:
    rectified for PureGaze and GazeTR, crop for L2CS-Net, MCGaze and GaT) when present;
    otherwise (unknown method, or its Table II input absent) the input with the lower
    whole-dataset mean error (mean over subjects of the mean of their video means).
    Returns the videos of the chosen inputs and a table: method, display, input,
    available, rule, whole_mean.
    """
    v = valid_videos(videos)
    whole = subject_means(v, ["method", "input"]).groupby(["method", "input"])["error_mean"].mean()
    rows, keep = [], []
    for m in method_order(v["method"].unique()):
        avail = sorted(str(i) for (mm, i) in whole.index if mm == m)
        spec = SPECS.find(m)
        if len(avail) == 1:
            choice, rule = avail[0], "only input present"
        elif spec is not None and spec.input_type in avail:
            choice, rule = spec.input_type, "Table II (study's best input)"
        else:
            choice = min(avail, key=lambda i: whole[(m, i)])
            rule = "lower whole-dataset mean error"
        rows.append(
            {
                "method": m,
                "input": choice,
                "available": ", ".join(avail),
                "rule": rule,
                "whole_mean": float(whole[(m, choice)]),
            }
        )
        keep.append((m, choice))
    table = with_display(pd.DataFrame(rows, columns=["method", "input", "available", "rule", "whole_mean"]))
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
    sm = (
        subject_means(videos, ["method", "input"])
        .groupby(["method", "input"])["error_mean"]
        .mean()
        .rename("whole_mean")
        .reset_index()
    )
    out["method"], out["input"] = out["method"].astype(str), out["input"].astype(str)
    out = out.merge(sm, on=["method", "input"], how="left")
    order = {m: i for i, m in enumerate(method_order(out["method"]))}
    out = out.sort_values(["method", "input"], key=lambda s: s.map(order) if s.name == "method" else s).reset_index(
        drop=True
    )
    return with_display(out)


def crop_vs_rectified(
    videos: pd.DataFrame, alpha: float = 0.05, profile: AnalysisProfile = REFERENCE, min_subjects: int = MIN_SUBJECTS
) -> Analysis:
    """Table S9: whole-dataset error with cropped vs rectified input, per method with both.

    Subject value: the subject's video means for that input aggregated as the profile
    says. Table ``crop_vs_rectified``: method, display, n, crop_mean, crop_sd,
    rectified_mean, rectified_sd, mean_diff (crop - rectified), t, dof, p_unc, p_holm
    (across methods), cohen_dz, cohen_dav, better.
    """
    a = Analysis("crop_vs_rectified", "Cropped vs rectified input (Table S9)", profile=profile.name)
    sm = subject_means(videos, ["method", "input"], weighted=profile.weighted)
    both = [
        m
        for m in method_order(sm["method"].unique())
        if {"crop", "rectified"} <= set(sm.loc[sm["method"] == m, "input"])
    ]
    if not both:
        return a.skip("no method has both crop and rectified results")
    rows, excl = [], []
    for m in both:
        w, ex = complete_subjects(
            sm[sm["method"] == m], ["input"], "error_mean", [("crop",), ("rectified",)], videos["subject"].unique()
        )
        if len(ex):
            excl.append(ex.assign(reason=f"{display_name(m)}: " + ex["reason"]))
        c, r = w["crop"].to_numpy(), w["rectified"].to_numpy()
        t = (
            paired_ttest(c, r)
            if len(w) >= min_subjects
            else {
                "mean_diff": c.mean() - r.mean() if len(w) else np.nan,
                "t": np.nan,
                "dof": np.nan,
                "p_unc": np.nan,
                "cohen_dz": np.nan,
                "cohen_dav": np.nan,
            }
        )
        rows.append(
            {
                "method": m,
                "n": len(w),
                "crop_mean": c.mean() if len(w) else np.nan,
                "crop_sd": c.std(ddof=1) if len(w) > 1 else np.nan,
                "rectified_mean": r.mean() if len(w) else np.nan,
                "rectified_sd": r.std(ddof=1) if len(w) > 1 else np.nan,
                "mean_diff": t["mean_diff"],
                "t": t["t"],
                "dof": t["dof"],
                "p_unc": t["p_unc"],
                "cohen_dz": t["cohen_dz"],
                "cohen_dav": t["cohen_dav"],
            }
        )
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p_unc") + 1, "p_holm", holm(out["p_unc"].to_numpy()))
    out["better"] = np.where(
        ~(out["p_holm"] < alpha), "no significant difference", np.where(out["mean_diff"] < 0, "crop", "rectified")
    )
    a.tables["crop_vs_rectified"] = with_display(out)
    a.caption(
        "crop_vs_rectified",
        profile,
        "Table S9: whole-dataset subject-level error, cropped vs rectified input; two-sided paired t-test per method, "
        "crop - rectified",
        "Holm across methods",
        PAIRED_EFFECT,
    )
    a.n = int(out["n"].min())
    a.excluded = pd.concat(excl, ignore_index=True) if excl else a.excluded
    if (out["n"] < min_subjects).any():
        a.partial(f"paired tests skipped where fewer than {min_subjects} subjects (--min-subjects) have both inputs")
    a.notes.append("Two-sided paired t-test crop vs rectified per method, Holm across methods. " + DZ_NOTE)
    return a


def subject_groups(
    videos: pd.DataFrame,
    subjects: pd.DataFrame,
    alpha: float = 0.05,
    profile: AnalysisProfile = REFERENCE,
    min_subjects: int = MIN_SUBJECTS,
) -> Analysis:
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
            desc.append(
                {
                    "factor": fac,
                    "level": lv,
                    "method": m,
                    "mean": x.mean(),
                    "sd": x.std(ddof=1) if x.size > 1 else np.nan,
                    "n": x.size,
                    "ci_low": lo,
                    "ci_high": hi,
                }
            )
        t = group_comparison(d.rename(columns={"error_mean": "value"}), fac, alpha, min_subjects)
        if len(t):
            tests.append(t)
        if d[fac].nunique() != 2:
            a.notes.append(f"{fac}: {d[fac].nunique()} levels, descriptives only (tests need exactly two)")
    out = pd.DataFrame(desc)
    a.n = int(sm["subject"].nunique())
    too_few(a, "group tests", min_subjects)
    order = {m: i for i, m in enumerate(method_order(out["method"].unique()))}
    a.tables["groups"] = with_display(
        out.sort_values(
            ["factor", "level", "method"], key=lambda s: s.map(order) if s.name == "method" else s
        ).reset_index(drop=True)
    )
    a.caption(
        "groups",
        profile,
        "Whole-dataset mean error (deg), SD and 95 % t CI over subjects per level of a subject attribute",
    )
    if tests:
        tt = pd.concat(tests, ignore_index=True)
        if tt["p_unc"].isna().all() and a.n >= min_subjects:
            a.partial(f"group tests skipped: each group needs at least {min_subjects} subjects (--min-subjects)")
        a.tables["groups_tests"] = with_display(tt)
        a.caption(
            "groups_tests",
            profile,
            "Subject groups: Welch two-sample t-test between the two levels per method, a - b",
            "Holm across methods of one attribute",
            "Cohen's d with the pooled SD",
        )
    return a


#: the timing record's measured numbers, in the table's column order
MEASURED_FIELDS = (
    "decode_s",
    "detect_s",
    "preprocess_s",
    "infer_s",
    "infer_ms_per_frame",
    "fps",
    "peak_rss_mb",
    "peak_vram_mb",
)
TIMING_FIELDS = ("frames", *MEASURED_FIELDS, "device", "batch")


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
        rows.append(
            {
                "method": str(md.get("method")),
                "input": str(md.get("input")),
                **{k: t.get(k) for k in TIMING_FIELDS},
                "file": md.get("file"),
            }
        )
    if absent:
        a.notes.append(
            f"no timing record in {len(absent)} file(s): {', '.join(absent[:4])}{' ...' if len(absent) > 4 else ''}"
        )
    if not rows:
        return a.skip("no results file carries a timing record (Parquet metadata 'gaze4hri' -> 'timing')")
    out = pd.DataFrame(rows)
    out = out[["method", "input", "device", "batch", "frames", *MEASURED_FIELDS, "file"]]
    for c in MEASURED_FIELDS:
        out[c] = pd.to_numeric(out[c], errors="coerce")
    order = {m: i for i, m in enumerate(method_order(out["method"]))}
    out = out.sort_values(["method", "input"], key=lambda s: s.map(order) if s.name == "method" else s).reset_index(
        drop=True
    )
    a.tables["efficiency"] = with_display(out)
    a.n = len(out)
    a.notes.append(
        "Timings as recorded by the pipeline on its machine (device column); the study's figures are for an RTX A4000 "
        "over 1000 runs."
    )
    return a
