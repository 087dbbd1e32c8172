"""Issue 23, item 2: the study profile's last statistical differences and the tables only
the study's analyser writes, each against its definition in GazeForHRI/Gaze4HRI@main
(file:line in each test), recomputed by hand with pandas/scipy on small synthetic sets.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.stats import analyses as A
from gaze4hri_bench.stats.analysis_profiles import REFERENCE, STUDY
from gaze4hri_bench.stats.headline import headline, render
from gaze4hri_bench.stats.load import load_results
from scipy import stats

from gaze4hri_bench import cli

from .test_extended import _videos, _wmean

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def videos():
    return _videos()


# ------------------------------------------------------------ experiment 2 descriptives
def _setting_means(v, method, weighted):
    x = v[
        (v.method == method)
        & ((v.experiment == "viewpoint") | ((v.experiment == "illumination") & (v.condition == "100")))
    ]
    x = x.assign(s=np.where(x.experiment == "viewpoint", "arc", "fixed"))
    g = x.groupby(["subject", "s"])
    return (g.apply(_wmean, include_groups=False) if weighted else g["error_mean"].mean()).unstack()


def test_viewpoint_descriptives_every_subject_in_study_profile(videos):
    """camera_viewpoint.py:138-172 writes the descriptives over every subject with a value in the
    (model, condition) cell; :175-240 tests only the subjects with both conditions and its test table
    (pingouin's return_desc) describes those. S05 lost every arc video of L2CS: its fixed mean counts in
    the study's fixed descriptive (N 8), not in the test table (N 7)."""
    v = videos[~((videos.subject == "S05") & (videos.experiment == "viewpoint") & (videos.method == "l2cs_gaze360"))]
    w = _setting_means(v, "l2cs_gaze360", weighted=True)
    a = A.viewpoint(v, profile=STUDY)
    t = a.tables["viewpoint"].set_index("method").loc["l2cs_gaze360"]
    paired = w.dropna()
    assert t["fixed_mean"] == pytest.approx(paired["fixed"].mean()) and t["n_fixed"] == 8
    assert t["fixed_sd"] == pytest.approx(paired["fixed"].std(ddof=1))
    assert t["arc_mean"] == pytest.approx(paired["arc"].mean()) and t["n_arc"] == 7
    assert t["n"] == 7 and t["p"] == pytest.approx(stats.ttest_rel(paired["arc"], paired["fixed"]).pvalue)
    assert t["mean_diff"] == pytest.approx(t["arc_mean"] - t["fixed_mean"])  # the columns describe the test's pairs
    assert t["fixed_mean"] != pytest.approx(w["fixed"].mean())  # the set tells the two apart
    d = a.tables["viewpoint_descriptives"].set_index(["method", "setting"]).loc[("l2cs_gaze360", "fixed")]
    lo, hi = stats.t.interval(0.95, 7, loc=w["fixed"].mean(), scale=stats.sem(w["fixed"]))
    assert (d["n"], d["mean"], d["se"], d["ci_low"], d["ci_high"]) == pytest.approx(
        (8, w["fixed"].mean(), stats.sem(w["fixed"]), lo, hi)
    )
    # reference: one N per analysis, every descriptive over the 7 complete subjects
    r = A.viewpoint(v, profile=REFERENCE).tables["viewpoint"].set_index("method").loc["l2cs_gaze360"]
    u = _setting_means(v, "l2cs_gaze360", weighted=False).dropna()
    assert (r["n"], r["n_fixed"], r["n_arc"]) == (7, 7, 7) and r["fixed_mean"] == pytest.approx(u["fixed"].mean())


# ------------------------------------------------------------ too few subjects
DOC_PAIR_COLUMNS = [
    "level",
    "method_a",
    "method_b",
    "t",
    "dof",
    "p_unc",
    "p_holm",
    "cohen_dz",
    "display_a",
    "display_b",
    "mean_a",
    "mean_b",
    "n",
    "mean_diff",
    "cohen_dav",
    "significant",
]


def test_two_subjects_write_test_tables_with_empty_p():
    """docs/statistics.md: with fewer than --min-subjects the contract tables keep their columns, p empty."""
    v = _videos(2)
    a = A.illumination(v)
    pw, lp = a.tables["illumination_pairwise"], a.tables["illumination_level_pairs"]
    assert set(DOC_PAIR_COLUMNS) <= set(pw.columns) and len(pw) == 4 * 3
    assert {
        "method",
        "display",
        "level_a",
        "level_b",
        "mean_a",
        "mean_b",
        "n",
        "mean_diff",
        "p_unc",
        "p_holm",
        "significant",
    } <= set(lp.columns) and len(lp) == 3 * 6
    for df in (pw, lp):
        assert (
            df[["t", "p_unc", "p_holm", "cohen_dz"]].isna().all().all()
            and not df["significant"].any()
            and (df["n"] == 2).all()
        )
    # the paired mean difference stays, as a descriptive
    wide = A.subject_means(v[(v.experiment == "illumination") & (v.condition == "10")], ["method"]).pivot(
        index="subject", columns="method", values="error_mean"
    )
    r = pw[(pw.level == 10) & (pw.method_a == "puregaze_eth") & (pw.method_b == "gazetr_eth")].iloc[0]
    assert r["mean_diff"] == pytest.approx((wide["puregaze_eth"] - wide["gazetr_eth"]).mean())
    assert "Not tested: fewer than 3 subjects" in a.captions["illumination_pairwise"] and a.status == "partial"
    c = A.conflict(v)
    cp = c.tables["conflict_pairwise"]
    assert len(cp) == 3 and cp["p_holm"].isna().all() and "Not tested" in c.captions["conflict_pairwise"]


# ------------------------------------------------------------ NaN errors counted
def test_nan_error_frames_counted_with_reason(tmp_path):
    """Frames marked valid with a NaN/inf error enter no mean and are counted as error_not_finite;
    invalid frames without a reason column count as '(none given)'."""
    n = 10
    df = pd.DataFrame(
        {
            "subject": "S01",
            "experiment": "illumination",
            "condition": "100",
            "target": "P1",
            "trial": "illum100_P1",
            "method": "m",
            "input": "crop",
            "valid": [True] * 6 + [False] * 4,
            "error_deg": [1, 2, np.nan, np.inf, 5, 6, 1, np.nan, 3, 4],
            "invalid_reason": ["", "", "", "", "", "", "blink", "no_face", "blink", None],
        }
    )
    df.to_parquet(tmp_path / "a.parquet")
    df.drop(columns="invalid_reason").assign(method="m2").to_parquet(tmp_path / "b.parquet")
    L = load_results([tmp_path])
    inv = L.invalid.set_index(["method", "reason"])["frames"]
    assert (
        inv[("m", "error_not_finite")] == 2
        and inv[("m", "blink")] == 2
        and inv[("m", "no_face")] == 1
        and inv[("m", "(none given)")] == 1
    )
    assert inv[("m2", "error_not_finite")] == 2 and inv[("m2", "(none given)")] == 4
    vid = L.videos.set_index("method")
    for m in ("m", "m2"):  # every frame is either in the mean or counted
        assert vid.loc[m, "n_valid"] + L.invalid[L.invalid.method == m]["frames"].sum() == vid.loc[m, "n_frames"] == n
        assert vid.loc[m, "error_mean"] == pytest.approx(np.mean([1, 2, 5, 6]))


# ------------------------------------------------------------ exclusions naming unknown subjects
def test_exclusions_unknown_subject_one_line_error(small_results, tmp_path, capsys):
    mine = tmp_path / "typo.yaml"
    mine.write_text("name: typo\nsubjects:\n  - {subject: S03, reason: ok}\n  - {subject: S99, reason: typo}\n")
    assert (
        cli.main(
            ["analyze", str(small_results), "--out", str(tmp_path / "o"), "--no-figures", "--exclusions", str(mine)]
        )
        == 2
    )
    err = capsys.readouterr().err.strip()
    assert (
        len(err.splitlines()) == 1
        and "S99" in err
        and "not in the results" in err
        and "typo.yaml" in err
        and "Traceback" not in err
    )
    assert "S03" not in err.split("names subject(s)")[1].split("that are")[0]


# ------------------------------------------------------------ headline on the console
def test_headline_from_report_tables(small_report):
    out, _ = small_report
    h = headline(out / "tables")
    ill = pd.read_csv(out / "tables" / "illumination.csv")
    pw = pd.read_csv(out / "tables" / "illumination_pairwise.csv")
    from gaze4hri_bench.stats.figures import is_baseline

    for r in h[h.experiment == "1 illumination"].itertuples():
        lv = int(r.condition.split()[0])
        g = ill[(ill.level == lv) & ~ill.method.map(is_baseline)]
        b = g.loc[g["mean"].idxmin()]
        assert (r.best, r.mean, r.ci_low, r.n) == (b.display, pytest.approx(b["mean"]), pytest.approx(b.ci_low), b.n)
        p = pw[(pw.level == lv) & ((pw.method_a == b.method) | (pw.method_b == b.method))]
        won = sum(
            1
            for q in p.itertuples()
            if q.p_holm < 0.05 and (q.mean_diff < 0 if q.method_a == b.method else q.mean_diff > 0)
        )
        assert r.significant == f"lower than {won} of {len(p)} others (Holm)"
    assert set(h.experiment) == {"1 illumination", "2 viewpoint", "3 conflict", "4.1 target", "4.2 mutual gaze"}
    cf = pd.read_csv(out / "tables" / "conflict.csv")
    c = h[h.experiment == "3 conflict"].iloc[0]
    b = cf[~cf.method.map(is_baseline)].sort_values("mean").iloc[0]
    assert (c.ci_low, c.ci_high) == pytest.approx(ci95_from(b["mean"], b.sd, b.n))
    text = render(h)
    assert "Headline results" in text and str(h.best.iloc[0]) in text and "Holm" in text


def ci95_from(mean, sd, n):
    h = stats.t.ppf(0.975, n - 1) * sd / np.sqrt(n)
    return mean - h, mean + h


# ------------------------------------------------------------ study-only tables
def _describe_ref(x):
    x = pd.Series(x).dropna()
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    return len(x), x.mean(), x.std(ddof=1), stats.sem(x), lo, hi


def test_viewpoint_matrix_and_conflict_video_table(videos):
    """camera_viewpoint.py:242-272 (subjects with both settings per model) and the video table of
    head_gaze_conflict_vs_error.py:148-219, 512 (one row per video: valid frames, error, conflict)."""
    v = videos[~((videos.subject == "S05") & (videos.experiment == "viewpoint") & (videos.method == "l2cs_gaze360"))]
    mx = A.viewpoint(v, profile=STUDY).tables["viewpoint_subjects"]
    w = _setting_means(v, "l2cs_gaze360", weighted=True).dropna()
    got = mx[mx.method == "l2cs_gaze360"].set_index("subject")
    assert list(got.index) == list(w.index) and "S05" not in got.index
    assert np.allclose(got["fixed"], w["fixed"]) and np.allclose(got["arc"], w["arc"])
    c = A.conflict(videos, profile=STUDY)
    cv = c.tables["conflict_videos"]
    ref = videos[(videos.experiment == "conflict") & videos.subject.isin(c.tables["conflict_slopes"].subject)]
    assert len(cv) == len(ref)
    m = cv.merge(ref, on=["subject", "method", "trial"])
    assert np.allclose(m["conflict"], m["conflict_all_mean"]) and (m["n_valid_x"] == m["n_valid_y"]).all()


def test_target_rows_columns_descriptives(videos):
    """point_analysis.py:332-368 (row R1 = P1-P3 ... and column C1 = P1, P4, P7 subject values,
    frame-weighted) and :882-914 (n, mean, SD, SE, 95 % t CI over subjects)."""
    t = A.target_position(videos, profile=STUDY).tables["target_rows_columns"].set_index(["method", "factor", "group"])
    x = videos[(videos.experiment == "illumination") & (videos.condition == "100") & (videos.method == "gazetr_eth")]
    for factor, group, pts in (("row", "R3", ("P7", "P8", "P9")), ("column", "C1", ("P1", "P4", "P7"))):
        sv = x[x.target.isin(pts)].groupby("subject").apply(_wmean, include_groups=False)
        r = t.loc[("gazetr_eth", factor, group)]
        assert (r["n"], r["mean"], r["sd"], r["se"], r["ci_low"], r["ci_high"]) == pytest.approx(_describe_ref(sv))
    assert (
        t.loc[("gazetr_eth", "row", "R3"), "mean"] > t.loc[("gazetr_eth", "row", "R1"), "mean"]
    )  # closest row worse (known effect)


def test_wins_tally_from_champions(videos):
    """point_analysis.py:504-620: a champion's points, and, at points without one, the lowest-mean method(s)."""
    a = A.target_position(videos, profile=STUDY)
    ch, desc, tally = a.tables["target_champion"], a.tables["target"], a.tables["target_wins_tally"].set_index("method")
    assert "P5" in tally.loc["gazetr_eth", "points_won"].split(", ")  # the injected champion
    for m in tally.index:
        won = [r.target for r in ch.itertuples() if r.decisive and m in r.champion.split("; ")]
        low = [
            r.target
            for r in ch.itertuples()
            if not r.decisive and desc[desc.target == r.target].sort_values("mean").method.iloc[0] == m
        ]
        assert (tally.loc[m, "n_points_won"], tally.loc[m, "n_points_tied_topmean"]) == (len(won), len(low))
    assert sum(tally["n_points_won"]) + sum(tally["n_points_tied_topmean"]) == len(ch)  # no ties in this set
    assert list(tally["n_points_won"]) == sorted(tally["n_points_won"], reverse=True)


def test_tiers_compare_with_the_tiers_last_method():
    """line_movement_analysis_paper.py:794-852: a method opens a new tier only if it differs
    significantly from the LAST method of the current tier (not its first)."""
    from gaze4hri_bench.stats.study_tables import tiers

    pairs = pd.DataFrame(
        {"method_a": ["a", "a", "b", "c"], "method_b": ["b", "c", "c", "d"], "p_holm": [0.5, 0.01, 0.2, 0.001]}
    )
    means = pd.Series({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0})
    assert tiers(pairs, means, 0.05) == [["a", "b", "c"], ["d"]]
    assert tiers(pairs, means, 0.0005) == [["a", "b", "c", "d"]]


def test_mutual_pooled_all_row_and_tiers(videos):
    """The 'all' row of line_movement_analysis_paper.py:655-716 (every mutual-gaze video of the
    subject, frame-weighted) and the tiers of :891-993 from the pool's Holm-corrected pairs."""
    from gaze4hri_bench.stats.study_tables import tiers

    a = A.mutual_gaze(videos, profile=STUDY)
    pooled = a.tables["mutual_pooled"].set_index(["method", "pool"])
    keep = a.n  # subjects complete in all four conditions for every method
    x = videos[(videos.experiment == "mutual") & (videos.method == "l2cs_gaze360")]
    sv = x.groupby("subject").apply(_wmean, include_groups=False)
    sv = sv[sv.index.isin(set(videos.subject) - set(a.excluded.subject))]
    assert len(sv) == keep
    r = pooled.loc[("l2cs_gaze360", "all")]
    assert (r["n"], r["mean"], r["sd"], r["se"], r["ci_low"], r["ci_high"]) == pytest.approx(_describe_ref(sv))
    tt = a.tables["mutual_tiers"]
    pw = a.tables["mutual_method_pairs"]
    for pool in ("all", "h_slow"):
        g = tt[tt.pool == pool]
        got = [list(t.method) for _, t in g.groupby("tier", sort=True)]
        means = g.set_index("method")["mean"]
        assert got == tiers(pw[pw.pool == pool], means, 0.05)
        assert list(g.sort_values(["tier", "mean"]).method) == list(means.sort_values().index)


def _ols_ref(y, x1, x2):
    """Slopes and classical SEs of y = a + b1 x1 + b2 x2 by the normal equations."""
    X = np.column_stack([np.ones(y.size), x1, x2])
    inv = np.linalg.inv(X.T @ X)
    b = inv @ X.T @ y
    s2 = ((y - X @ b) ** 2).sum() / (y.size - 3)
    return b[1:], np.sqrt(np.diag(inv)[1:] * s2)


def test_slope_meta_fixed_effect_by_hand():
    """line_movement_analysis_paper.py:996-1208: per-video OLS of error on |yaw| and |pitch| (raw and
    z-scored with the population SD), videos under 8 frames dropped, fixed-effect inverse-variance
    pooling per (condition, method), normal two-sided z-test, Holm across methods."""
    from gaze4hri_bench.stats.study_tables import slope_meta

    rng = np.random.default_rng(7)
    rows = []
    for s in range(5):
        for m, by in (("m1", 0.2), ("m2", 0.0), ("m3", -0.1)):
            for c in ("h_slow", "v_fast"):
                n = 7 if (s == 0 and m == "m1" and c == "h_slow") else 20 + 5 * s
                p, y = np.abs(rng.normal(0, 15, n)), np.abs(rng.normal(0, 20, n))
                rows.append(
                    pd.DataFrame(
                        {
                            "subject": f"S{s}",
                            "method": m,
                            "condition": c,
                            "trial": f"mutual_{c}",
                            "error_deg": 5 + 0.05 * p + by * y + rng.normal(0, 1 + s, n),
                            "abs_pitch_deg": p,
                            "abs_yaw_deg": y,
                        }
                    )
                )
    f = pd.concat(rows, ignore_index=True)
    vids, meta = slope_meta(f)
    assert len(vids) == 5 * 3 * 2 - 1  # the 7-frame video is left out
    z = lambda x: (x - x.mean()) / x.std(ddof=0)  # noqa: E731
    ref = {}
    for (_s, m, c), g in f.groupby(["subject", "method", "condition"]):
        if len(g) < 8:
            continue
        e, yaw, pitch = g.error_deg.to_numpy(), g.abs_yaw_deg.to_numpy(), g.abs_pitch_deg.to_numpy()
        b, se = _ols_ref(e, yaw, pitch)
        bs, ses = _ols_ref(z(e), z(yaw), z(pitch))
        for coef, th, sd in (
            ("b_yaw", b[0], se[0]),
            ("b_pitch", b[1], se[1]),
            ("beta_yaw", bs[0], ses[0]),
            ("beta_pitch", bs[1], ses[1]),
        ):
            ref.setdefault((c, coef, m), []).append((th, sd, len(g)))
    assert len(meta) == 2 * 4 * 3
    for (c, coef, m), v in ref.items():
        th, se, n = map(np.array, zip(*v, strict=True))
        w = 1 / se**2
        est, s_ = (w * th).sum() / w.sum(), w.sum() ** -0.5
        r = meta.set_index(["condition", "coef", "method"]).loc[(c, coef, m)]
        assert (r.videos, r.frames) == (len(th), n.sum())
        assert (r.estimate, r.se, r.z) == pytest.approx((est, s_, est / s_), rel=1e-9)
        assert r.p_unc == pytest.approx(2 * stats.norm.sf(abs(est / s_)), rel=1e-9, abs=1e-300)
        assert (r["mean"], r.sd, r.prop_pos) == pytest.approx((th.mean(), th.std(ddof=1), (th > 0).mean()))
    for _, g in meta.groupby(["condition", "coef"]):  # Holm by hand over the 3 methods
        p = g.p_unc.to_numpy()
        o = np.argsort(p)
        adj = np.minimum(np.maximum.accumulate(p[o] * np.array([3, 2, 1])), 1)
        assert g.p_holm.to_numpy()[o] == pytest.approx(adj)
    est = meta.set_index(["condition", "coef", "method"]).estimate
    assert 0.15 < est[("h_slow", "b_yaw", "m1")] < 0.25 and abs(est[("v_fast", "b_yaw", "m2")]) < 0.05


def test_mutual_slope_meta_in_analysis(videos):
    """The analysis writes the table for the subjects complete in all conditions, methods in order."""
    from gaze4hri_bench.stats.study_tables import SLOPE_META_COLUMNS, slope_meta

    from .test_extended import _mutual_frames

    f = _mutual_frames(8)
    a = A.mutual_gaze(videos, f, profile=STUDY)
    t = a.tables["mutual_slope_meta"]
    assert set(SLOPE_META_COLUMNS) | {"display"} == set(t.columns)
    keep = f[f.subject.isin(set(videos.subject) - set(a.excluded.subject))]
    _, ref = slope_meta(keep)
    got = t.set_index(["condition", "coef", "method"]).sort_index()
    ref = ref.set_index(["condition", "coef", "method"]).sort_index()
    assert got.estimate.to_numpy() == pytest.approx(ref.estimate.to_numpy()) and got.p_holm.to_numpy() == pytest.approx(
        ref.p_holm.to_numpy()
    )
    assert list(t.condition.unique()) == ["h_slow", "h_fast", "v_slow", "v_fast"]
    assert list(t[t.condition == "h_slow"].coef.unique()) == ["b_yaw", "b_pitch", "beta_yaw", "beta_pitch"]
