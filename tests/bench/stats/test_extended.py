"""The study's further analyses (stats/extended.py and the tables the analyses add) and
the two profiles, each against an independent computation: pingouin, statsmodels,
scipy or numpy by hand, with the R call it stands for quoted (no R needed in CI).

The video table has injected missing data (single videos and whole cells missing) and
known effects (closest row worse, positive conflict slopes, one method best at P5);
the weighting tests use a set where frame-weighted and unweighted means disagree.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
import statsmodels.api as sm
from gaze4hri_bench.stats import analyses as A
from gaze4hri_bench.stats import extended as E
from gaze4hri_bench.stats.analysis_profiles import PROFILES, REFERENCE, STUDY, AnalysisProfile, get_profile
from gaze4hri_bench.stats.inference import group_slopes
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.protocol import trials
from scipy import stats
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.weightstats import ttest_ind as sm_ttest_ind

pytestmark = pytest.mark.unit

METHODS = ("puregaze_eth", "gazetr_eth", "l2cs_gaze360")
P_PITCH_YAW = {
    "P1": (25, 32),
    "P2": (29, 0),
    "P3": (26, 32),
    "P4": (32, 42),
    "P5": (41, 1),
    "P6": (33, 43),
    "P7": (40, 59),
    "P8": (60, 4),
    "P9": (39, 59),
}


def _videos(n_subjects=8, seed=0, methods=METHODS):
    """Whole protocol per subject and method, valid-frame counts that vary a lot, missing data injected."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_subjects):
        su = rng.normal(0, 2)
        slope = 0.2 + rng.normal(0, 0.05)
        for k, m in enumerate(methods):
            for t in trials():
                call = {"left": 30.0, "center": 10.0, "right": 30.0}.get(t.condition, 15.0) + rng.normal(0, 4)
                e = 10 + 2 * k + su + rng.normal(0, 1.5)
                e += 4 if t.target in ("P7", "P8", "P9") else 0  # closest row worse (known effect)
                e += slope * call if t.experiment == "conflict" else 0
                if t.target == "P5" and m == "gazetr_eth":
                    e -= 8  # GazeTR (E) the champion of P5
                if t.experiment == "illumination":
                    e += {"10": 2.0, "25": 1.0, "50": 0.5, "100": 0.0}[t.condition]
                pitch, yaw = P_PITCH_YAW.get(t.target, (20, 20))
                e += 0.05 * pitch + 0.02 * yaw if t.target in P_PITCH_YAW else 0
                rows.append(
                    {
                        "subject": f"S{s:02d}",
                        "method": m,
                        "input": "rectified" if "eth" in m else "crop",
                        "experiment": t.experiment,
                        "condition": t.condition,
                        "target": t.target,
                        "trial": t.trial_id,
                        "error_mean": e,
                        "conflict_mean": call + rng.normal(0, 1),
                        "conflict_all_mean": call,
                        "abs_pitch_mean": pitch + rng.normal(0, 2),
                        "abs_yaw_mean": yaw + rng.normal(0, 2),
                        "n_valid": int(rng.integers(5, 200)),
                        "n_frames": 200,
                    }
                )
    v = pd.DataFrame(rows)
    # injected missing data: one lost video (subject stays), one lost cell (subject leaves that analysis)
    v = v[~((v.subject == "S01") & (v.trial == "illum025_P3"))]
    v = v[~((v.subject == "S02") & (v.trial == "illum100_P5") & (v.method == "l2cs_gaze360"))]
    return v.reset_index(drop=True)


@pytest.fixture(scope="module")
def videos():
    return _videos()


def _wmean(g):
    return np.average(g["error_mean"], weights=g["n_valid"])


def _pg_pairs(long, dv, within, subject="subject"):
    """pingouin pairwise paired t-tests, Holm (R: pairwise.t.test(x, g, paired=TRUE, p.adjust.method="holm"))."""
    r = pg.pairwise_tests(
        data=long, dv=dv, within=within, subject=subject, parametric=True, padjust="holm", effsize="cohen"
    )
    return {
        frozenset((str(a), str(b))): (str(a), t, p, pc, d)
        for a, b, t, p, pc, d in zip(
            r["A"],
            r["B"],
            r["T"],
            r["p_unc"] if "p_unc" in r else r["p-unc"],
            r["p_corr"] if "p_corr" in r else r["p-corr"],
            r["cohen"],
            strict=True,
        )
    }


def _check_pairs(ours: pd.DataFrame, ref: dict, a_col: str, b_col: str):
    assert len(ours) == len(ref)
    for r in ours.itertuples():
        a, t, p, pc, d = ref[frozenset((str(getattr(r, a_col)), str(getattr(r, b_col))))]
        sign = 1 if a == str(getattr(r, a_col)) else -1
        assert r.t == pytest.approx(sign * t, rel=1e-9)
        assert r.p_unc == pytest.approx(p, rel=1e-9)
        assert r.p_holm == pytest.approx(pc, rel=1e-9)
        assert r.cohen_dav == pytest.approx(sign * d, rel=1e-6)


# ---------------------------------------------------------------- profiles
def test_profiles_registry_and_validation():
    assert {"reference", "study"} <= set(PROFILES)
    assert get_profile("study") is STUDY and get_profile(REFERENCE) is REFERENCE
    with pytest.raises(Gaze4HRIError, match="did you mean study"):
        get_profile("studdy")
    with pytest.raises(ValueError, match="aggregation"):
        AnalysisProfile(name="x", description="", aggregation="median")
    with pytest.raises(AttributeError):
        STUDY.aggregation = "video_mean"  # frozen


def test_weighted_and_unweighted_subject_means_disagree():
    v = pd.DataFrame(
        {"subject": ["a", "a", "b"], "method": "m", "error_mean": [10.0, 20.0, 5.0], "n_valid": [100, 10, 3]}
    )
    unw = A.subject_means(v, ["method"]).set_index("subject")["error_mean"]
    w = A.subject_means(v, ["method"], weighted=True).set_index("subject")["error_mean"]
    assert unw["a"] == 15.0 and w["a"] == pytest.approx((10 * 100 + 20 * 10) / 110)  # 10.909
    assert w["b"] == unw["b"] == 5.0


def test_illumination_profiles_weighting(videos):
    """Table III cell under both profiles against pandas by hand; they must differ on this set."""
    cell = videos[
        (videos.experiment == "illumination") & (videos.condition == "10") & (videos.method == "l2cs_gaze360")
    ]
    ref = A.illumination(videos, profile=REFERENCE).tables["illumination"]
    stu = A.illumination(videos, profile=STUDY).tables["illumination"]
    keep = set(A.illumination(videos).excluded["subject"])
    cell = cell[~cell.subject.isin(keep)]
    m_ref = cell.groupby("subject")["error_mean"].mean()
    m_stu = cell.groupby("subject").apply(_wmean, include_groups=False)
    r = ref[(ref.method == "l2cs_gaze360") & (ref.level == 10)].iloc[0]
    s = stu[(stu.method == "l2cs_gaze360") & (stu.level == 10)].iloc[0]
    assert r["mean"] == pytest.approx(m_ref.mean()) and s["mean"] == pytest.approx(m_stu.mean())
    assert s["sd"] == pytest.approx(m_stu.std(ddof=1))
    assert abs(r["mean"] - s["mean"]) > 1e-3
    # CI: R t.test(x)$conf.int
    lo, hi = stats.t.interval(0.95, len(m_stu) - 1, loc=m_stu.mean(), scale=stats.sem(m_stu))
    assert (s["ci_low"], s["ci_high"]) == pytest.approx((lo, hi))


def test_captions_name_profile_aggregation_family_effect(videos):
    for prof in (REFERENCE, STUDY):
        a = A.illumination(videos, profile=prof)
        assert set(a.captions) == set(a.tables)
        for c in a.captions.values():
            assert c.startswith(f"[profile {prof.name}]") and "Family:" in c and "Effect size:" in c
            assert ("frame-weighted" in c) == prof.weighted


# ---------------------------------------------------------------- experiment 1
def test_level_pairs_against_pingouin(videos):
    a = A.illumination(videos, profile=STUDY)
    lp = a.tables["illumination_level_pairs"]
    assert len(lp) == 6 * len(METHODS)
    v = videos[(videos.experiment == "illumination") & ~videos.subject.isin(set(a.excluded["subject"]))]
    for m in METHODS:
        d = (
            v[v.method == m]
            .groupby(["subject", "condition"])
            .apply(_wmean, include_groups=False)
            .rename("e")
            .reset_index()
        )
        _check_pairs(
            lp[lp.method == m].assign(level_a=lambda x: x.level_a.astype(str), level_b=lambda x: x.level_b.astype(str)),
            _pg_pairs(d, "e", "condition"),
            "level_a",
            "level_b",
        )
    # known effect: 10 % worse than 100 % (2 deg) for every method
    far = lp[((lp.level_a == 10) & (lp.level_b == 100))]
    assert (far["mean_diff"] > 0).all()


def test_sensitivity_against_statsmodels(videos):
    a = A.illumination(videos)
    sens = a.tables["illumination_sensitivity"]
    wide = A.subject_means(videos[videos.experiment == "illumination"], ["method", "condition"])
    wide = wide[~wide.subject.isin(set(a.excluded["subject"]))]
    for m in METHODS:
        d = wide[wide.method == m].assign(level=lambda x: x.condition.astype(int))
        # R: summary(lm(error_mean ~ level, data = d))
        fit = sm.OLS(d["error_mean"].to_numpy(), sm.add_constant(d["level"].to_numpy(float))).fit()
        r = sens[(sens.method == m) & (sens.levels == "10-100")].iloc[0]
        assert r["slope"] == pytest.approx(fit.params[1]) and r["p"] == pytest.approx(fit.pvalues[1])
        assert r["r"] == pytest.approx(np.corrcoef(d["level"], d["error_mean"])[0, 1])
        assert r["delta"] == pytest.approx(90 * fit.params[1]) and r["n_points"] == len(d)
        assert r["slope"] < 0  # known effect: error falls with light
        d50 = d[d.level <= 50]
        r50 = sens[(sens.method == m) & (sens.levels == "10-50")].iloc[0]
        assert r50["slope"] == pytest.approx(np.polyfit(d50["level"], d50["error_mean"], 1)[0])


# ---------------------------------------------------------------- experiment 2
def test_viewpoint_correction_by_profile(videos):
    ref = A.viewpoint(videos, profile=REFERENCE).tables["viewpoint"]
    stu = A.viewpoint(videos, profile=STUDY).tables["viewpoint"]
    assert (ref["correction"] == "holm").all() and (stu["correction"] == "none").all()
    assert np.allclose(ref["p_adj"], multipletests(ref["p"], method="holm")[1])
    assert np.allclose(stu["p_adj"], stu["p"])
    assert (stu["significant"] == (stu["p"] < 0.05)).all()


# ---------------------------------------------------------------- experiment 3
def test_wls_slopes_against_statsmodels_and_differ_from_ols():
    rng = np.random.default_rng(4)
    d = pd.DataFrame({"g": np.repeat(["a", "b"], 6), "x": rng.uniform(0, 40, 12), "w": rng.integers(1, 300, 12)})
    d["y"] = 5 + 0.3 * d["x"] + rng.normal(0, 4, 12)
    wls = group_slopes(d, ["g"], "x", "y", w="w").set_index("g")
    ols = group_slopes(d, ["g"], "x", "y").set_index("g")
    for g, dd in d.groupby("g"):
        # R: coef(lm(y ~ x, weights = w))
        f = sm.WLS(dd["y"], sm.add_constant(dd["x"]), weights=dd["w"]).fit()
        assert wls.loc[g, "slope"] == pytest.approx(f.params["x"]) and wls.loc[g, "intercept"] == pytest.approx(
            f.params["const"]
        )
        assert abs(wls.loc[g, "slope"] - ols.loc[g, "slope"]) > 1e-3


def test_conflict_study_profile(videos):
    v = videos.copy()
    # S03 lost its right-head trials: the study keeps only subjects complete in all three conditions
    v = v[~((v.subject == "S03") & (v.experiment == "conflict") & (v.condition == "right"))]
    a = A.conflict(v, profile=STUDY)
    assert (
        "S03" in set(a.excluded["subject"])
        and "not all head conditions" in a.excluded.set_index("subject").loc["S03", "reason"]
    )
    sl = a.tables["conflict_slopes"].set_index(["subject", "method"])
    c = v[(v.experiment == "conflict") & (v.subject == "S04") & (v.method == "l2cs_gaze360")]
    f = sm.WLS(c["error_mean"], sm.add_constant(c["conflict_all_mean"]), weights=c["n_valid"]).fit()
    assert sl.loc[("S04", "l2cs_gaze360"), "slope"] == pytest.approx(f.params["conflict_all_mean"])
    ref = A.conflict(v, profile=REFERENCE)
    f2 = np.polyfit(c["conflict_mean"], c["error_mean"], 1)
    assert ref.tables["conflict_slopes"].set_index(["subject", "method"]).loc[
        ("S04", "l2cs_gaze360"), "slope"
    ] == pytest.approx(f2[0])
    t = a.tables["conflict"].set_index("method")
    b = a.tables["conflict_slopes"].query("method == 'l2cs_gaze360'")["slope"]
    # R: t.test(b, mu = 0, alternative = "greater")
    assert t.loc["l2cs_gaze360", "p_unc"] == pytest.approx(stats.ttest_1samp(b, 0, alternative="greater").pvalue)
    assert (t["slope_mean"] > 0).all()  # known effect
    assert "WLS" in a.captions["conflict"] and "all frames" in a.captions["conflict"]


# ---------------------------------------------------------------- experiment 4.1
def _point_means(v, a, weighted):
    x = v[(v.experiment == "illumination") & (v.condition == "100") & ~v.subject.isin(set(a.excluded["subject"]))]
    f = _wmean if weighted else (lambda g: g["error_mean"].mean())
    return x, x.groupby(["method", "subject", "target"]).apply(f, include_groups=False).rename("e").reset_index()


@pytest.mark.parametrize("prof", [REFERENCE, STUDY], ids=["reference", "study"])
def test_target_columns_points_methods_against_pingouin(videos, prof):
    a = A.target_position(videos, profile=prof)
    pp = a.tables["target_point_pairs"]
    if prof is REFERENCE:
        assert "S02" in set(a.excluded["subject"])  # lost its l2cs P5 video: listwise out of exp 4.1
    else:  # the study deletes listwise per test family (pingouin per call): S02 leaves only l2cs's point pairs
        assert "S02" not in set(a.excluded["subject"])
        assert set(pp.loc[pp.method == "l2cs_gaze360", "n"]) == {7} and set(pp.loc[pp.method == "gazetr_eth", "n"]) == {
            8
        }
    x, pm = _point_means(videos, a, prof.weighted)
    f = _wmean if prof.weighted else (lambda g: g["error_mean"].mean())
    col = {p: c for c, ps in E.STUDY_COLUMNS.items() for p in ps}
    cm = (
        x.assign(c=x.target.map(col))
        .groupby(["method", "subject", "c"])
        .apply(f, include_groups=False)
        .rename("e")
        .reset_index()
    )
    tc = a.tables["target_columns"]
    for m in METHODS:
        _check_pairs(tc[tc.method == m], _pg_pairs(cm[cm.method == m], "e", "c"), "column_a", "column_b")
        _check_pairs(pp[pp.method == m], _pg_pairs(pm[pm.method == m], "e", "target"), "target_a", "target_b")
    assert len(a.tables["target_point_pairs"]) == 36 * len(METHODS)
    mp = a.tables["target_method_pairs"]
    assert len(mp) == 9 * len(list(combinations(METHODS, 2)))
    for p in ("P1", "P5", "P9"):
        _check_pairs(mp[mp.target == p], _pg_pairs(pm[pm.target == p], "e", "method"), "method_a", "method_b")


def test_rows_known_effect_and_champion(videos):
    a = A.target_position(videos, profile=STUDY)
    tt = a.tables["target_tests"]
    cf = tt[(tt.factor == "row") & (tt.a == "closest") & (tt.b == "farthest")]
    assert (cf["mean_diff"] > 0).all() and (cf["p_holm"] < 0.05).all()
    ch = a.tables["target_champion"].set_index("target")
    assert ch.loc["P5", "champion"] == "gazetr_eth" and ch.loc["P5", "decisive"]
    assert ch.loc["P5", "champion_display"] == "GazeTR (E)"
    # champion rule by hand from the method-pair table
    mp = a.tables["target_method_pairs"]
    for p, r in ch.iterrows():
        d = mp[mp.target == p]
        beats = {
            m: sum(
                ((d.method_a == m) & (d.mean_a < d.mean_b) | (d.method_b == m) & (d.mean_b < d.mean_a))
                & (d.p_holm < 0.05)
            )
            for m in METHODS
        }
        assert r["champion"] == "; ".join(m for m in METHODS if beats[m] == len(METHODS) - 1) or (
            r["champion"] and beats[r["champion"]] == 2
        )


def test_target_grid_from_subject_view(videos):
    a = A.target_position(videos)
    g = a.tables["target_grid"]
    t = a.tables["target"].set_index(["method", "target"])["mean"]
    r = g[(g.method == "puregaze_eth")].set_index("row")
    assert list(r.index) == ["farthest", "middle", "closest"]
    # the subject's left is the camera's right: P1, P4, P7
    assert (
        r.loc["farthest", "subject_left"] == t[("puregaze_eth", "P1")]
        and r.loc["closest", "subject_right"] == t[("puregaze_eth", "P9")]
    )


def test_target_eccentricity_over_video_means(videos):
    a = A.target_position(videos)
    subj = a.tables["target_eccentricity_subjects"].set_index(["subject", "method"])
    x = videos[
        (videos.experiment == "illumination")
        & (videos.condition == "100")
        & (videos.subject == "S04")
        & (videos.method == "gazetr_eth")
    ]
    # R: coef(lm(error_mean ~ abs_pitch_mean + abs_yaw_mean))
    f = sm.OLS(x["error_mean"], sm.add_constant(x[["abs_pitch_mean", "abs_yaw_mean"]])).fit()
    assert subj.loc[("S04", "gazetr_eth"), "b_pitch"] == pytest.approx(f.params["abs_pitch_mean"])
    assert subj.loc[("S04", "gazetr_eth"), "b_yaw"] == pytest.approx(f.params["abs_yaw_mean"])
    ecc = a.tables["target_eccentricity"].set_index("method")
    b = a.tables["target_eccentricity_subjects"].query("method == 'gazetr_eth'")["b_pitch"]
    assert ecc.loc["gazetr_eth", "b_pitch_mean"] == pytest.approx(b.mean()) and ecc.loc[
        "gazetr_eth", "b_pitch_sd"
    ] == pytest.approx(b.std(ddof=1))


# ---------------------------------------------------------------- experiment 4.2
def _mutual_frames(n_subjects=6, seed=2):
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(n_subjects):
        for m in METHODS:
            for c in ("h_slow", "h_fast", "v_slow", "v_fast"):
                n = 30
                p, y = np.abs(rng.normal(0, 15, n)), np.abs(rng.normal(0, 20, n))
                e = 5 + 0.1 * p + 0.2 * y + rng.normal(0, 1, n)
                rows.append(
                    pd.DataFrame(
                        {
                            "subject": f"S{s:02d}",
                            "method": m,
                            "input": "rectified" if "eth" in m else "crop",
                            "condition": c,
                            "trial": f"mutual_{c}",
                            "error_deg": e,
                            "abs_pitch_deg": p,
                            "abs_yaw_deg": y,
                        }
                    )
                )
    return pd.concat(rows, ignore_index=True)


def test_per_video_eccentricity_by_hand():
    f = _mutual_frames()
    vids, per = E.per_video_eccentricity(f)
    # by hand: np.linalg.lstsq per video, mean over conditions, then over subjects
    by = {}
    for (s, m, _c), g in f.groupby(["subject", "method", "condition"]):
        X = np.column_stack([np.ones(len(g)), g["abs_pitch_deg"], g["abs_yaw_deg"]])
        by.setdefault((m, s), []).append(np.linalg.lstsq(X, g["error_deg"].to_numpy(), rcond=None)[0])
    for m in METHODS:
        subj = np.array([np.mean(v, axis=0) for (mm, s), v in by.items() if mm == m])
        r = per.set_index("method").loc[m]
        assert r["b_pitch_mean"] == pytest.approx(subj[:, 1].mean()) and r["b_yaw_sd"] == pytest.approx(
            subj[:, 2].std(ddof=1)
        )
        assert r["n"] == 6 and 0.15 < r["b_yaw_mean"] < 0.25  # known effect 0.2


def test_mutual_method_pairs_pooled(videos):
    a = A.mutual_gaze(videos, _mutual_frames(8), profile=STUDY)
    mp = a.tables["mutual_method_pairs"]
    assert set(mp["pool"]) == {"h_slow", "h_fast", "v_slow", "v_fast", "slow", "fast", "all"}
    v = videos[(videos.experiment == "mutual") & videos.condition.isin(["h_slow", "v_slow"])]
    d = v.groupby(["subject", "method"]).apply(_wmean, include_groups=False).rename("e").reset_index()
    _check_pairs(mp[mp.pool == "slow"], _pg_pairs(d, "e", "method"), "method_a", "method_b")
    assert "mutual_eccentricity_per_video" in a.tables


# ---------------------------------------------------------------- groups, min subjects
def test_groups_welch_against_statsmodels(videos):
    subj = pd.DataFrame(
        {"subject": [f"S{s:02d}" for s in range(8)], "glasses": [True, False] * 4, "gender": ["f"] * 3 + ["m"] * 5}
    )
    a = A.subject_groups(videos, subj, profile=STUDY)
    tt = a.tables["groups_tests"]
    sm_ = A.subject_means(videos, ["method"], weighted=True).merge(subj, on="subject")
    ps = []
    for m in METHODS:
        d = sm_[sm_.method == m]
        x, y = d.loc[~d.glasses, "error_mean"], d.loc[d.glasses, "error_mean"]
        # R: t.test(x, y)   (Welch)
        t, p, dof = sm_ttest_ind(x, y, usevar="unequal")
        r = tt[(tt.method == m) & (tt.factor == "glasses")].iloc[0]
        assert (r["t"], r["p_unc"], r["dof"]) == pytest.approx((t, p, dof))
        ps.append(p)
    assert np.allclose(tt[tt.factor == "glasses"]["p_holm"], multipletests(ps, method="holm")[1])
    assert set(a.tables["groups"]["factor"]) == {"glasses", "gender"}


def test_min_subjects_skips_inference_keeps_descriptives(videos):
    a = A.illumination(videos, min_subjects=20)
    assert (
        a.status == "partial" and "illumination" in a.tables and a.tables["illumination_pairwise"]["p_unc"].isna().all()
    )
    assert "illumination_sensitivity" not in a.tables
    assert any("at least 20 subjects (--min-subjects)" in r for r in a.skipped)
    b = A.conflict(videos, min_subjects=20)
    assert b.tables["conflict"]["p_unc"].isna().all() and b.status == "partial"


def test_listwise_scope_per_family_in_exp2(videos):
    """S05 lost every arc video of one method: the study drops S05 from that method's test only."""
    v = videos[~((videos.subject == "S05") & (videos.experiment == "viewpoint") & (videos.method == "l2cs_gaze360"))]
    ref = A.viewpoint(v, profile=REFERENCE).tables["viewpoint"].set_index("method")
    stu = A.viewpoint(v, profile=STUDY).tables["viewpoint"].set_index("method")
    assert set(ref["n"]) == {7} and stu.loc["l2cs_gaze360", "n"] == 7 and stu.loc["puregaze_eth", "n"] == 8
    x = v[
        (v.method == "puregaze_eth")
        & ((v.experiment == "viewpoint") | ((v.experiment == "illumination") & (v.condition == "100")))
    ]
    w = (
        x.assign(s=np.where(x.experiment == "viewpoint", "arc", "fixed"))
        .groupby(["subject", "s"])
        .apply(_wmean, include_groups=False)
        .unstack()
    )
    # R: t.test(arc, fixed, paired = TRUE)
    assert stu.loc["puregaze_eth", "p"] == pytest.approx(stats.ttest_rel(w["arc"], w["fixed"]).pvalue)


def test_study_viewpoint_table_describes_the_subjects_its_test_pairs(videos):
    """The study's test table (camera_viewpoint.py:175-240, pingouin pairwise_tests with return_desc on
    the subjects with both settings) gives the paired subjects' means and SDs beside the paired t-test;
    the descriptives of every subject with a value stay in viewpoint_descriptives (:138-172)."""
    pg = pytest.importorskip("pingouin")
    v = videos[~((videos.subject == "S05") & (videos.experiment == "viewpoint") & (videos.method == "l2cs_gaze360"))]
    a = A.viewpoint(v, profile=STUDY)
    row = a.tables["viewpoint"].set_index("method").loc["l2cs_gaze360"]
    x = v[
        (v.method == "l2cs_gaze360")
        & ((v.experiment == "viewpoint") | ((v.experiment == "illumination") & (v.condition == "100")))
    ]
    long = (
        x.assign(condition=np.where(x.experiment == "viewpoint", "arc", "fixed"))
        .groupby(["subject", "condition"])
        .apply(_wmean, include_groups=False)
        .rename("mean_error")
        .reset_index()
    )
    both = long[long.subject.map(long.groupby("subject").condition.nunique()) == 2]
    res = pg.pairwise_tests(
        data=both, dv="mean_error", within="condition", subject="subject", parametric=True, return_desc=True
    ).iloc[0]
    col = (lambda k, g: f"{k}({g})") if "mean(A)" in res.index else (lambda k, g: f"{k}_{g}")  # pingouin < / >= 0.6
    desc = {res[g]: (res[col("mean", g)], res[col("std", g)]) for g in ("A", "B")}
    assert row["n"] == 7 and (row["n_fixed"], row["n_arc"]) == (8, 7)
    assert (row["fixed_mean"], row["fixed_sd"]) == pytest.approx(desc["fixed"], rel=1e-12)
    assert (row["arc_mean"], row["arc_sd"]) == pytest.approx(desc["arc"], rel=1e-12)
    assert abs(row["t"]) == pytest.approx(abs(res["T"]))
    # the descriptives table keeps every subject with a value (8 with the fixed camera)
    d = a.tables["viewpoint_descriptives"].set_index(["method", "setting"]).loc[("l2cs_gaze360", "fixed")]
    allfixed = long[long.condition == "fixed"]["mean_error"]
    assert d["n"] == 8 and d["mean"] == pytest.approx(allfixed.mean()) and d["mean"] != pytest.approx(row["fixed_mean"])
