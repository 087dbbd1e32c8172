"""Report figures: one fixed colour per method, conditions in a palette of their own,
baselines as reference lines that never set the scale, subject-level 95 % t CIs (the
same numbers as the tables), the 3x3 grid as the subject sees the table, and the
significance matrix. SVG text is kept as text (svg.fonttype none), so the files can be
searched for what they show."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.specs import SPECS
from gaze4hri_bench.stats import figures as F
from gaze4hri_core.protocol import P_GRID
from scipy import stats

pytestmark = pytest.mark.unit


def _svg(paths) -> str:
    svg = [p for p in paths if p.suffix == ".svg"][0]
    return svg.read_text()


def _colors(svg: str) -> set[str]:
    return {c.lower() for c in re.findall(r"(?:fill|stroke)(?::\s*|=\")(#[0-9a-fA-F]{6})", svg)}


def test_palettes_fixed_distinct_and_disjoint():
    cols = [F.method_color(m) for m in [*SPECS, "head_pose", "straight"]]
    assert len(set(cols)) == len(cols)
    assert F.method_color("puregaze_eth") == F.method_color("puregaze_eth") == F.METHOD_COLORS["puregaze_eth"]
    assert F.method_color("my_new_net") == F.method_color("my_new_net")  # stable for unknown names
    conds = {
        F.condition_color(c)
        for c in ("fixed camera", "arc", "crop", "rectified", "h_slow", "h_fast", "v_slow", "v_fast", "something")
    }
    assert not conds & set(F.METHOD_COLORS.values()), "a condition shares a method's colour"
    assert (
        F.is_baseline("head_pose")
        and F.is_baseline("straight")
        and not F.is_baseline("l2cs_gaze360")
        and not F.is_baseline("unknown_x")
    )


def test_t_ci_is_the_t_interval_over_subjects():
    x = np.random.default_rng(1).normal(15, 4, 9)
    lo, hi = F.t_ci(x.mean(), x.std(ddof=1), x.size)
    ref = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))  # R: t.test(x)$conf.int
    assert np.allclose([lo, hi], ref)
    assert np.isnan(F.t_ci(1.0, 0.5, 1)[0])


def _levels(methods: dict[str, float], n: int = 10) -> pd.DataFrame:
    rows = []
    for m, base in methods.items():
        for k, lv in enumerate((10, 25, 50, 100)):
            rows.append(
                {
                    "method": m,
                    "display": SPECS[m].table_name if m in SPECS else m,
                    "level": lv,
                    "mean": base + k,
                    "sd": 3.0,
                    "n": n,
                }
            )
    return pd.DataFrame(rows)


def test_same_method_same_colour_in_every_figure(tmp_path):
    lv = F.illumination_levels(_levels({"puregaze_eth": 10, "gat_gaze360": 15}), stem=tmp_path / "a")
    lv2 = F.illumination_levels(_levels({"gat_gaze360": 15, "l2cs_gaze360": 18}), stem=tmp_path / "b")
    pe, gat, l2 = (F.METHOD_COLORS[m].lower() for m in ("puregaze_eth", "gat_gaze360", "l2cs_gaze360"))
    ca, cb = _colors(_svg(lv)), _colors(_svg(lv2))
    assert {pe, gat} <= ca and {gat, l2} <= cb and pe not in cb


def test_condition_bars_use_condition_colours_and_baselines_do_not_set_the_scale(tmp_path):
    t = pd.DataFrame(
        {
            "method": ["puregaze_eth", "gazetr_eth", "head_pose"],
            "display": ["PureGaze (E)", "GazeTR (E)", "head_pose"],
            "fixed_mean": [10.0, 12.0, 38.0],
            "fixed_sd": [3.0, 3.0, 5.0],
            "arc_mean": [11.0, 14.0, 39.0],
            "arc_sd": [3.0, 4.0, 5.0],
            "n": [12, 12, 12],
        }
    )
    svg = _svg(
        F.condition_bars(
            t,
            [("fixed_mean", "fixed_sd", "fixed camera"), ("arc_mean", "arc_sd", "arc")],
            "Fixed vs arc",
            stem=tmp_path / "v",
        )
    )
    cols = _colors(svg)
    assert {F.condition_color("fixed camera").lower(), F.condition_color("arc").lower()} <= cols
    assert "off scale (baselines): head_pose (mean over conditions) 38.5" in svg
    # y ticks stop below the baseline: the networks' CI tops (about 16.5) set the scale
    ticks = [float(x) for x in re.findall(r">(\d+(?:\.\d+)?)</text>", svg)]
    assert max(ticks) < 25 and "head_pose" not in re.sub(r"off scale[^<]*", "", svg)


def test_baseline_within_range_is_a_dashed_reference_line():
    from matplotlib.figure import Figure

    ax = Figure().subplots()
    note = F._reference_lines(ax, [("head_pose", 40.0, "#555555"), ("straight", 12.0, "#999999")], top=20.0)
    assert note == "off scale (baselines): head_pose 40.0"
    lines = ax.get_lines()
    assert len(lines) == 1 and lines[0].get_linestyle() == "--" and lines[0].get_ydata()[0] == 12.0


def test_target_grid_as_the_subject_sees_the_table(tmp_path):
    grid = [[P_GRID[r][c] for c in cols] for r, cols in F.SUBJECT_VIEW_GRID]
    # top row farthest (the camera beyond it); the subject's left is the camera's right (P1)
    assert grid == [["P1", "P2", "P3"], ["P4", "P5", "P6"], ["P7", "P8", "P9"]]
    rows = [
        {"method": m, "display": m, "target": p, "mean": base + int(p[1:]), "sd": 1.0, "n": 5}
        for m, base in (("puregaze_eth", 10.0), ("gat_gaze360", 20.0), ("head_pose", 60.0))
        for p in [f"P{k}" for k in range(1, 10)]
    ]
    svg = _svg(F.target_heatmap(pd.DataFrame(rows), stem=tmp_path / "h"))
    assert "head_pose (baseline, not on scale)" in svg and "subject's left" in svg
    ticks = [int(x) for x in re.findall(r">(\d+)</text>", svg)]  # colour-bar ticks (cell values print as 12.0)
    assert ticks and max(ticks) <= 30  # the colour bar spans the networks (11..29), not the baseline (61..69)


def test_significance_matrix_networks_only_with_stars(tmp_path):
    pw = pd.DataFrame(
        {
            "method_a": ["puregaze_eth", "puregaze_eth", "gat_gaze360"],
            "display_a": ["PureGaze (E)", "PureGaze (E)", "GaT (G)"],
            "method_b": ["gat_gaze360", "head_pose", "head_pose"],
            "display_b": ["GaT (G)", "head_pose", "head_pose"],
            "mean_diff": [-4.0, -30.0, -26.0],
            "p_holm": [0.004, 1e-6, 1e-5],
        }
    )
    svg = _svg(F.significance_matrix(pw, stem=tmp_path / "s", title="t"))
    assert "**" in svg and "***" not in svg.split("p &lt; 0.001")[-1] and "head_pose" not in svg.split("</style>")[-1]
