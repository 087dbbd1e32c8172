"""The report's figures as a table: which analysis' table each figure draws, with which function of
:mod:`.figures` and under which caption. ``draw_figures`` runs the table; a figure that fails is a
warning, never a lost report."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from . import figures as F
from .analysis_profiles import AnalysisProfile
from .experiments.shared import Analysis, display_name

__all__ = ["FigureData", "FIGURES", "draw_figures"]

CI = "error bars: subject-level 95 % t CI"
BASE = "baselines (weight-free) as dashed reference lines"


@dataclass(frozen=True)
class FigureData:
    """What the figures draw beside the analyses' tables."""

    main: pd.DataFrame  # videos of each method's chosen input
    frames: pd.DataFrame  # valid mutual-gaze frames
    choice: pd.DataFrame  # the input of each method
    profile: AnalysisProfile
    alpha: float


#: A figure's recipe: (function, positional arguments, keyword arguments, caption), or None to skip it.
Recipe = tuple[Callable, tuple, dict, str] | None


def _illumination_levels(t: dict, d: FigureData) -> Recipe:
    return (F.illumination_levels, (t["illumination"],), {},
            f"Mean error by illumination level, one colour per method ({CI}; {BASE}).")


def _illumination_significance(t: dict, d: FigureData) -> Recipe:
    return (F.significance_matrix, (t["illumination_pairwise"],),
            {"title": "Experiment 1: pairwise method tests per level", "facet": "level", "alpha": d.alpha},
            "Pairwise method tests per illumination level: colour = mean difference row - column (deg), "
            "stars = Holm-corrected p.")


def _viewpoint(t: dict, d: FigureData) -> Recipe:
    bars = [("fixed_mean", "fixed_sd", "fixed camera"), ("arc_mean", "arc_sd", "arc")]
    return (F.condition_bars, (t["viewpoint"], bars, "Fixed camera vs arc (experiment 2)"), {},
            f"Fixed camera (illumination 100) vs camera on the arc; bars coloured by condition ({CI}; {BASE}).")


def _conflict_slopes(t: dict, d: FigureData) -> Recipe:
    m = d.main
    cv = m[(m["experiment"] == "conflict") & m["subject"].astype(str).isin(set(t["conflict_slopes"]["subject"]))]
    if d.profile.conflict_source == "all_frames":  # the x the profile's slopes were fitted on
        cv = cv.assign(conflict_mean=cv["conflict_all_mean"])
    return (F.conflict_slopes, (cv, t["conflict_slopes"], list(t["conflict"]["display"])), {},
            "Video mean error vs video mean head-gaze conflict; thin lines: subject fits; thick: mean fit.")


def _conflict_significance(t: dict, d: FigureData) -> Recipe:
    return (F.significance_matrix, (t["conflict_pairwise"],),
            {"title": "Experiment 3: pairwise method tests", "alpha": d.alpha},
            "Pairwise method tests under head-gaze conflict: colour = mean difference row - column (deg), "
            "stars = Holm-corrected p.")


def _target_heatmap(t: dict, d: FigureData) -> Recipe:
    return (F.target_heatmap, (t["target"],), {},
            "Mean error per target point as the subject sees the table (top row farthest, the subject's left is the "
            "camera's right); colour scale from the networks only, baselines printed uncoloured.")


def _mutual_conditions(t: dict, d: FigureData) -> Recipe:
    mt = t["mutual"]
    w = mt.pivot(index="method", columns="condition", values="mean")
    sd = mt.pivot(index="method", columns="condition", values="sd").add_suffix("_sd")
    order = list(dict.fromkeys(mt["method"]))
    w2 = pd.concat([w, sd], axis=1).reindex(order).reset_index()
    w2.insert(1, "display", w2["method"].map(display_name))
    w2["n"] = mt.groupby("method")["n"].max().reindex(order).to_numpy()
    bars = [(c, f"{c}_sd", c) for c in mt["condition"].unique()]
    return (F.condition_bars, (w2, bars, "Mutual gaze per condition (experiment 4.2)"), {},
            f"Mutual-gaze error per camera scan; bars coloured by condition ({CI}; {BASE}).")


def _mutual_significance(t: dict, d: FigureData) -> Recipe:
    mp = t["mutual_method_pairs"]
    pairs = mp[mp["pool"] == "all"] if "pool" in mp and (mp["pool"] == "all").any() else mp
    return (F.significance_matrix, (pairs,),
            {"title": "Experiment 4.2: pairwise method tests (all scans)", "alpha": d.alpha},
            "Pairwise method tests in mutual gaze (all scans pooled): colour = mean difference row - column (deg), "
            "stars = Holm-corrected p.")


def _eccentricity(t: dict, d: FigureData) -> Recipe:
    if not len(d.frames):
        return None
    frames, choice = d.frames, d.choice
    keep = set(zip(choice["method"], choice["input"], strict=True))
    key = pd.MultiIndex.from_arrays([frames["method"].astype(str), frames["input"].astype(str)])
    f = frames[key.isin(list(keep))]
    order = {m: k for k, m in enumerate(choice["method"])}
    f = f.assign(display=f["method"].astype(str).map(display_name), _o=f["method"].astype(str).map(order))
    return (F.eccentricity, (f.sort_values("_o", kind="stable"),), {},
            "Mutual gaze: error in 2.5 deg bins of |yaw| and |pitch| of the ground-truth gaze, each subject's mean per "
            "bin then the mean over subjects; bands: subject-level 95 % t CI (bins with 20 or more frames and 2 or "
            "more subjects; baselines dashed).")


def _crop_vs_rectified(t: dict, d: FigureData) -> Recipe:
    bars = [("crop_mean", "crop_sd", "crop"), ("rectified_mean", "rectified_sd", "rectified")]
    return (F.condition_bars, (t["crop_vs_rectified"], bars, "Cropped vs rectified input (Table S9)"), {},
            f"Whole-dataset error with cropped vs rectified input; bars coloured by input ({CI}).")


#: (analysis, the table the figure needs, figure key, recipe), in the order the figures are drawn.
FIGURES: tuple[tuple[str, str, str, Callable[[dict, FigureData], Recipe]], ...] = (
    ("illumination", "illumination", "illumination_levels", _illumination_levels),
    ("illumination", "illumination_pairwise", "illumination_significance", _illumination_significance),
    ("viewpoint", "viewpoint", "viewpoint", _viewpoint),
    ("conflict", "conflict_slopes", "conflict_slopes", _conflict_slopes),
    ("conflict", "conflict_pairwise", "conflict_significance", _conflict_significance),
    ("target", "target", "target_heatmap", _target_heatmap),
    ("mutual", "mutual", "mutual_conditions", _mutual_conditions),
    ("mutual", "mutual_method_pairs", "mutual_significance", _mutual_significance),
    ("mutual", "mutual_eccentricity", "eccentricity", _eccentricity),
    ("crop_vs_rectified", "crop_vs_rectified", "crop_vs_rectified", _crop_vs_rectified),
)


def draw_figures(by: dict[str, Analysis], data: FigureData, fdir: Path,
                 warnings: list[str]) -> dict[str, tuple[list[Path], str]]:
    """Every figure of :data:`FIGURES` whose table the analyses produced: key -> (paths, caption).
    A failing figure is added to ``warnings`` and left out."""
    figs: dict[str, tuple[list[Path], str]] = {}
    for analysis, table, key, recipe in FIGURES:
        t = by[analysis].tables
        if table not in t:
            continue
        try:
            r = recipe(t, data)
            if r is not None:
                fn, args, kw, caption = r
                figs[key] = (fn(*args, stem=fdir / key, **kw), caption)
        except Exception as e:  # noqa: BLE001 - a figure must not cost the report
            warnings.append(f"figure {key} failed: {type(e).__name__}: {e}")
    return figs
