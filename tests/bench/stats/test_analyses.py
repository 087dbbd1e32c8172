"""The study's analyses on small hand-built video-level tables (pure functions),
cross-checked by independent computations with scipy/numpy/statsmodels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.stats import analyses as A
from gaze4hri_core.protocol import P_GRID, trials
from scipy import stats
from statsmodels.stats.multitest import multipletests

pytestmark = pytest.mark.unit


def _videos(n_subjects=5, methods=("puregaze_eth", "l2cs_gaze360"), inputs=None, seed=0, drop=()):
    """One row per (subject, method, input, trial) of the whole protocol, with a known structure."""
    rng = np.random.default_rng(seed)
    inputs = inputs or {m: ["rectified" if m.startswith(("puregaze", "gazetr")) else "crop"] for m in methods}
    rows = []
    for s in range(n_subjects):
        su = rng.normal(0, 2)
        for k, m in enumerate(methods):
            for inp in inputs[m]:
                for t in trials():
                    if (f"S{s}", t.experiment) in drop:
                        continue
                    conflict = {"left": 30.0, "center": 10.0, "right": 30.0}.get(t.condition, 15.0) + rng.normal(0, 5)
                    e = 10 + 3 * k + su + (0.2 * conflict if t.experiment == "conflict" else 0) + rng.normal(0, 1)
                    e += 4 if t.target in ("P7", "P8", "P9") else 0
                    e += 5 if inp == "crop" and m.startswith("puregaze") else 0
                    rows.append(
                        {
                            "subject": f"S{s}",
                            "method": m,
                            "input": inp,
                            "experiment": t.experiment,
                            "condition": t.condition,
                            "target": t.target,
                            "trial": t.trial_id,
                            "error_mean": e,
                            "conflict_mean": conflict,
                            "n_valid": 10,
                            "n_frames": 10,
                        }
                    )
    return pd.DataFrame(rows)


def test_display_name_known_and_unknown():
    assert A.display_name("puregaze_eth") == "PureGaze (E)"
    assert A.display_name("my_new_net") == "my_new_net"


def test_subject_means_are_means_of_video_means():
    v = pd.DataFrame(
        {
            "subject": ["a", "a", "a", "b"],
            "method": "m",
            "trial": ["t1", "t2", "t3", "t1"],
            "error_mean": [1.0, 2.0, np.nan, 5.0],
        }
    )
    sm = A.subject_means(v, ["method"]).set_index("subject")
    assert (
        sm.loc["a", "error_mean"] == 1.5 and sm.loc["a", "n_videos"] == 2
    )  # the NaN video (no valid frame) does not count
    assert sm.loc["b", "error_mean"] == 5.0


def test_illumination_tables_and_independent_check():
    v = _videos(6)
    a = A.illumination(v)
    assert a.status == "ran" and a.n == 6
    t = a.tables["illumination"]
    assert list(t.columns[:6]) == ["method", "display", "level", "mean", "sd", "n"]
    assert sorted(t["level"].unique()) == [10, 25, 50, 100]
    # independent: subject mean of the 9 video means at level 25 for l2cs
    x = (
        v[(v.experiment == "illumination") & (v.condition == "25") & (v.method == "l2cs_gaze360")]
        .groupby("subject")["error_mean"]
        .mean()
    )
    r = t[(t.method == "l2cs_gaze360") & (t.level == 25)].iloc[0]
    assert r["mean"] == pytest.approx(x.mean()) and r["sd"] == pytest.approx(x.std(ddof=1))
    cv = a.tables["illumination_cv"].set_index("method")["cv_percent"]
    lm = t[t.method == "l2cs_gaze360"]["mean"]
    assert cv["l2cs_gaze360"] == pytest.approx(100 * lm.std(ddof=1) / lm.mean())
    pw = a.tables["illumination_pairwise"]
    assert {"level", "method_a", "method_b", "t", "dof", "p_unc", "p_holm", "cohen_dz"} <= set(pw.columns)
    y = (
        v[(v.experiment == "illumination") & (v.condition == "25") & (v.method == "puregaze_eth")]
        .groupby("subject")["error_mean"]
        .mean()
    )
    r = pw[pw.level == 25].iloc[0]
    ref = stats.ttest_rel(y, x)
    assert r["t"] == pytest.approx(ref.statistic) and r["p_unc"] == pytest.approx(ref.pvalue) and r["dof"] == 5


def test_listwise_exclusion_is_reported():
    v = _videos(5)
    v = v[~((v.subject == "S2") & (v.trial == "illum010_P1") & (v.method == "l2cs_gaze360"))]
    v.loc[(v.subject == "S3") & (v.condition == "50") & (v.method == "puregaze_eth"), "error_mean"] = np.nan
    a = A.illumination(v)
    assert a.n == 4
    ex = a.excluded.set_index("subject")["reason"]
    assert list(ex.index) == ["S3"] and "puregaze_eth/50" in ex["S3"]  # S2 lost one video only, still has level 10


def test_fewer_than_three_subjects_keeps_descriptives():
    a = A.illumination(_videos(2))
    assert a.status == "partial" and "at least 3 subjects" in a.skipped[0]
    assert "illumination" in a.tables and a.tables["illumination_pairwise"]["p_holm"].isna().all()
    c = A.conflict(_videos(2))
    assert c.tables["conflict"]["p_holm"].isna().all() and c.status == "partial"


def test_viewpoint_paired_against_fixed_baseline():
    v = _videos(6)
    v.loc[v.experiment == "viewpoint", "error_mean"] += 2.0
    t = A.viewpoint(v).tables["viewpoint"].set_index("method")
    assert set(["fixed_mean", "fixed_sd", "arc_mean", "arc_sd", "t", "dof", "p"]) <= set(t.columns)
    f = (
        v[(v.experiment == "illumination") & (v.condition == "100") & (v.method == "puregaze_eth")]
        .groupby("subject")["error_mean"]
        .mean()
    )
    r = v[(v.experiment == "viewpoint") & (v.method == "puregaze_eth")].groupby("subject")["error_mean"].mean()
    ref = stats.ttest_rel(r, f)
    assert t.loc["puregaze_eth", "t"] == pytest.approx(ref.statistic) and t.loc["puregaze_eth", "p"] == pytest.approx(
        ref.pvalue
    )
    assert t.loc["puregaze_eth", "arc_mean"] - t.loc["puregaze_eth", "fixed_mean"] == pytest.approx(r.mean() - f.mean())


def test_conflict_slopes_independent_polyfit():
    v = _videos(6, methods=("puregaze_eth", "gazetr_eth", "l2cs_gaze360"))
    a = A.conflict(v)
    t = a.tables["conflict"].set_index("method")
    c = v[v.experiment == "conflict"]
    p = []
    for m in t.index:
        slopes = [np.polyfit(g["conflict_mean"], g["error_mean"], 1)[0] for _, g in c[c.method == m].groupby("subject")]
        assert t.loc[m, "slope_mean"] == pytest.approx(np.mean(slopes))
        assert t.loc[m, "slope_sd"] == pytest.approx(np.std(slopes, ddof=1))
        assert t.loc[m, "pct_positive"] == pytest.approx(100 * np.mean(np.array(slopes) > 0))
        p.append(stats.ttest_1samp(slopes, 0, alternative="greater").pvalue)
    np.testing.assert_allclose(t["p_holm"], multipletests(p, method="holm")[1], rtol=1e-10)
    assert (t["slope_mean"] > 0.1).all() and (t["p_holm"] < 0.05).all()  # the built-in 0.2 deg/deg is found
    assert len(a.tables["conflict_pairwise"]) == 3


def test_conflict_subject_without_trials_is_listed():
    v = _videos(5, drop=[("S1", "conflict")])
    a = A.conflict(v)
    assert a.n == 4 and list(a.excluded["subject"]) == ["S1"]


def test_target_position_grid_and_rows():
    v = _videos(6)
    a = A.target_position(v)
    best = a.tables["target_best"].set_index("target")
    for row, cols in P_GRID.items():
        for col, p in cols.items():
            assert best.loc[p, "row"] == row and best.loc[p, "column"] == col
    assert (best["best_method"] == "puregaze_eth").all()  # the method built 3 deg better
    tt = a.tables["target_tests"]
    r = tt[(tt.method == "puregaze_eth") & (tt.factor == "row") & (tt.a == "closest") & (tt.b == "farthest")].iloc[0]
    assert r["mean_diff"] == pytest.approx(4.0, abs=1.0) and r["p_holm"] < 0.05
    assert set(tt[tt.factor == "column"][["a", "b"]].itertuples(index=False, name=None)) == {("left", "right")}
    assert {"cohen_dz", "cohen_dav"} <= set(tt.columns)


def test_mutual_conditions_and_eccentricity():
    v = _videos(5)
    rng = np.random.default_rng(2)
    rows = []
    for s in v.subject.unique():
        for m in v.method.unique():
            inp = v[v.method == m]["input"].iloc[0]
            p, y = rng.random(300) * 20, rng.random(300) * 30
            rows.append(
                pd.DataFrame(
                    {
                        "subject": s,
                        "method": m,
                        "input": inp,
                        "condition": "h_slow",
                        "abs_pitch_deg": p,
                        "abs_yaw_deg": y,
                        "error_deg": 4 + 0.1 * p + 0.2 * y + rng.normal(0, 0.5, 300),
                    }
                )
            )
    a = A.mutual_gaze(v, pd.concat(rows))
    assert set(a.tables["mutual"]["condition"]) == {"h_slow", "h_fast", "v_slow", "v_fast"}
    assert len(a.tables["mutual_pairwise"]) == 2 * 6
    e = a.tables["mutual_eccentricity"].set_index("method")
    assert e["b_pitch_mean"].to_numpy() == pytest.approx([0.1, 0.1], abs=0.02)
    assert e["b_yaw_mean"].to_numpy() == pytest.approx([0.2, 0.2], abs=0.02)
    assert (e["n"] == 5).all()


def test_select_inputs_table_ii_and_unknown_method():
    v = _videos(
        4,
        methods=("puregaze_eth", "newnet"),
        inputs={"puregaze_eth": ["crop", "rectified"], "newnet": ["crop", "rectified"]},
    )
    v.loc[(v.method == "newnet") & (v.input == "rectified"), "error_mean"] += 3  # newnet: crop is better
    main, choice = A.select_inputs(v)
    c = choice.set_index("method")
    assert c.loc["puregaze_eth", "input"] == "rectified" and c.loc["puregaze_eth", "rule"].startswith("Table II")
    assert c.loc["newnet", "input"] == "crop" and c.loc["newnet", "rule"] == "lower whole-dataset mean error"
    assert c.loc["newnet", "display"] == "newnet"
    assert set(map(tuple, main[["method", "input"]].drop_duplicates().to_numpy())) == {
        ("puregaze_eth", "rectified"),
        ("newnet", "crop"),
    }


def test_crop_vs_rectified():
    v = _videos(6, methods=("puregaze_eth",), inputs={"puregaze_eth": ["crop", "rectified"]})
    t = A.crop_vs_rectified(v).tables["crop_vs_rectified"].iloc[0]
    assert t["better"] == "rectified" and t["mean_diff"] == pytest.approx(5.0, abs=0.5)
    assert A.crop_vs_rectified(_videos(3)).status == "skipped"


def test_efficiency_reads_timing_and_reports_absence():
    timing = {
        "frames": 100,
        "decode_s": 1.0,
        "detect_s": 2.0,
        "preprocess_s": 0.5,
        "infer_s": 0.2,
        "infer_ms_per_frame": 2.0,
        "fps": 500.0,
        "peak_rss_mb": 900.0,
        "peak_vram_mb": None,
        "device": "cpu",
        "batch": 16,
    }
    a = A.efficiency(
        [
            {"file": "a.parquet", "method": "gat_gaze360", "input": "crop", "timing": timing},
            {"file": "b.parquet", "method": "l2cs_gaze360", "input": "crop", "timing": None},
        ]
    )
    t = a.tables["efficiency"]
    assert len(t) == 1 and t.iloc[0]["fps"] == 500.0 and t.iloc[0]["display"] == "GaT (G)"
    assert any("b.parquet" in n for n in a.notes)
    assert A.efficiency([{"file": "b", "timing": None}]).status == "skipped"


def _r_dataset():
    """Deterministic video tables, built identically in R (see the R script in the test below)."""
    ms = ["puregaze_eth", "gazetr_eth", "l2cs_gaze360"]
    ill = [t for t in trials() if t.experiment == "illumination" and t.condition in ("10", "100")]
    con = [t for t in trials() if t.experiment == "conflict"]
    rows = []
    for s in range(1, 7):
        for k, m in enumerate(ms):
            for t in ill:
                p, L = int(t.target[1:]), int(t.condition == "100")
                e = 8 + 2 * k + ((s * s * 7 + p * 3 + k * k * 5 + L + s * k * p) % 13) / 4
                rows.append(
                    {
                        "subject": f"S{s}",
                        "method": m,
                        "input": "x",
                        "experiment": t.experiment,
                        "condition": t.condition,
                        "target": t.target,
                        "trial": t.trial_id,
                        "error_mean": e,
                        "conflict_mean": np.nan,
                    }
                )
            for j, t in enumerate(con):
                g = 10 + 3 * j + (s % 3)
                e = 12 + k + (0.1 + 0.05 * k) * g + ((s * 5 + j * 7 + k) % 9) / 5 - 0.04 * s * g * (k == 0)
                rows.append(
                    {
                        "subject": f"S{s}",
                        "method": m,
                        "input": "x",
                        "experiment": t.experiment,
                        "condition": t.condition,
                        "target": t.target,
                        "trial": t.trial_id,
                        "error_mean": e,
                        "conflict_mean": float(g),
                    }
                )
    return pd.DataFrame(rows)


def test_illumination_and_conflict_match_r_end_to_end():
    """Video table -> subject means -> tests, against R 4.2 on the same numbers:

    d <- expand.grid(s=1:6, k=0:2, L=c(0,1), p=1:9)
    d$e <- 8 + 2*d$k + ((d$s*d$s*7 + d$p*3 + d$k*d$k*5 + d$L + d$s*d$k*d$p) %% 13)/4
    sm <- aggregate(e ~ s + k + L, d, mean)      # subject mean of video means
    t.test(x[[a]], x[[b]], paired=TRUE) for the pairs (0,1), (0,2), (1,2) per level; p.adjust(p, "holm")
    L=0: t -52.5012315126493 -12.8150844383326 -6.4027163211323
         holm 1.42197186430910e-07 1.02991684614215e-04 1.37779788039363e-03
         means 9.46296296296296 11.49074074074074 13.25; sds 0.1034388151390295 0.0573775310549247 0.6390096504226936
    L=1: t -21.39490633848718 -16.51935441071528 -8.41057905651877
         holm 1.24096944622809e-05 2.96801782723776e-05 3.89534228445005e-04
    c <- expand.grid(s=1:6, k=0:2, j=0:13); c$g <- 10 + 3*c$j + (c$s %% 3)
    c$e <- 12 + c$k + (0.1 + 0.05*c$k)*c$g + ((c$s*5 + c$j*7 + c$k) %% 9)/5 - 0.04*c$s*c$g*(c$k==0)
    b <- coef(lm(e ~ g)) per subject; t.test(b, mu=0, alternative="greater"); p.adjust(., "holm")
    k=0: mean -0.037948717948718 sd 0.0749476974172413 pos 1/3;  k=1: 0.14985347985348 sd 0.00825625099384534
    k=2: 0.199194139194139 sd 0.00841273208320179; holm 0.865048300169353 1.08681286068694e-07 4.32451290107212e-08
    """
    v = _r_dataset()
    a = A.illumination(v)
    t = a.tables["illumination"]
    lvl10 = t[t.level == 10].set_index("method")
    np.testing.assert_allclose(
        lvl10.loc[["puregaze_eth", "gazetr_eth", "l2cs_gaze360"], "mean"],
        [9.46296296296296, 11.49074074074074, 13.25],
        rtol=1e-12,
    )
    np.testing.assert_allclose(
        lvl10.loc[["puregaze_eth", "gazetr_eth", "l2cs_gaze360"], "sd"],
        [0.1034388151390295, 0.0573775310549247, 0.6390096504226936],
        rtol=1e-10,
    )
    pw = a.tables["illumination_pairwise"]
    p10, p100 = pw[pw.level == 10], pw[pw.level == 100]
    assert list(zip(p10.method_a, p10.method_b, strict=True)) == [
        ("puregaze_eth", "gazetr_eth"),
        ("puregaze_eth", "l2cs_gaze360"),
        ("gazetr_eth", "l2cs_gaze360"),
    ]
    np.testing.assert_allclose(p10["t"], [-52.5012315126493, -12.8150844383326, -6.4027163211323], rtol=1e-10)
    np.testing.assert_allclose(
        p10["p_holm"], [1.42197186430910e-07, 1.02991684614215e-04, 1.37779788039363e-03], rtol=1e-8
    )
    np.testing.assert_allclose(p100["t"], [-21.39490633848718, -16.51935441071528, -8.41057905651877], rtol=1e-10)
    np.testing.assert_allclose(
        p100["p_holm"], [1.24096944622809e-05, 2.96801782723776e-05, 3.89534228445005e-04], rtol=1e-8
    )
    c = A.conflict(v).tables["conflict"].set_index("method").loc[["puregaze_eth", "gazetr_eth", "l2cs_gaze360"]]
    np.testing.assert_allclose(c["slope_mean"], [-0.037948717948718, 0.14985347985348, 0.199194139194139], rtol=1e-10)
    np.testing.assert_allclose(c["slope_sd"], [0.0749476974172413, 0.00825625099384534, 0.00841273208320179], rtol=1e-8)
    np.testing.assert_allclose(c["p_holm"], [0.865048300169353, 1.08681286068694e-07, 4.32451290107212e-08], rtol=1e-8)
    np.testing.assert_allclose(c["pct_positive"], [100 / 3, 100, 100])
