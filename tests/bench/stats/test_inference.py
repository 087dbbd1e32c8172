"""Statistical primitives against R 4.2 (reference calls and outputs quoted; values
hard-coded so CI needs no R), scipy, statsmodels and pingouin."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.stats.inference import (
    cohen_dav,
    cohen_dz,
    cv_percent,
    group_ols2,
    group_slopes,
    holm,
    one_sample_ttest,
    paired_ttest,
    pairwise_paired,
)
from scipy import stats
from statsmodels.stats.multitest import multipletests

pytestmark = pytest.mark.unit

A = np.array([11.2, 13.5, 9.8, 14.1, 12.0, 10.7, 15.3, 12.9])
B = np.array([10.1, 12.2, 10.3, 12.5, 11.1, 9.0, 13.8, 12.4])


def test_paired_ttest_matches_r():
    # R: r <- t.test(a, b, paired=TRUE); r$statistic 3.93437059666613, r$parameter 7, r$p.value 0.00564394099516069
    # R: d <- a-b; mean(d)/sd(d) 1.39101006430179; mean(d)/sqrt((var(a)+var(b))/2) 0.589117061739318
    r = paired_ttest(A, B)
    assert r["t"] == pytest.approx(3.93437059666613, rel=1e-12)
    assert r["dof"] == 7
    assert r["p_unc"] == pytest.approx(0.00564394099516069, rel=1e-10)
    assert r["cohen_dz"] == pytest.approx(1.39101006430179, rel=1e-12)
    assert r["cohen_dav"] == pytest.approx(0.589117061739318, rel=1e-12)
    assert r["mean_diff"] == pytest.approx((A - B).mean())


def test_effect_sizes_match_pingouin():
    """pingouin's paired cohen_d is d_av; its eftype 'cohen_dz' is d_z (stack.md)."""
    pg = pytest.importorskip("pingouin")
    assert cohen_dav(A, B) == pytest.approx(float(pg.ttest(A, B, paired=True)["cohen_d"].iloc[0]), rel=1e-10)
    assert cohen_dz(A, B) == pytest.approx(pg.compute_effsize(A, B, paired=True, eftype="cohen_dz"), rel=1e-10)
    assert cohen_dz(A, B) != pytest.approx(cohen_dav(A, B), rel=0.1)  # the two are different quantities


def test_one_sample_greater_matches_r():
    # R: s <- c(0.12, 0.31, -0.05, 0.22, 0.18, 0.09, 0.27); r <- t.test(s, mu=0, alternative="greater")
    # r$statistic 3.53498993579244; r$p.value 0.00614660633934396
    s = [0.12, 0.31, -0.05, 0.22, 0.18, 0.09, 0.27]
    r = one_sample_ttest(s, 0.0, "greater")
    assert r["t"] == pytest.approx(3.53498993579244, rel=1e-12)
    assert r["p_unc"] == pytest.approx(0.00614660633934396, rel=1e-10)
    assert r["dof"] == 6
    assert one_sample_ttest([-x for x in s], 0.0, "greater")["p_unc"] == pytest.approx(
        1 - 0.00614660633934396, rel=1e-10
    )


def test_holm_matches_r_and_statsmodels():
    # R: p.adjust(c(0.01, 0.04, 0.03, 0.005, 0.5, NA, 0.02), "holm")
    # [1] 0.05 0.09 0.09 0.03 0.50   NA 0.08
    p = np.array([0.01, 0.04, 0.03, 0.005, 0.5, np.nan, 0.02])
    got = holm(p)
    np.testing.assert_allclose(got, [0.05, 0.09, 0.09, 0.03, 0.50, np.nan, 0.08], rtol=1e-12)
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = rng.random(rng.integers(1, 30)) ** 3
        np.testing.assert_allclose(holm(q), multipletests(q, method="holm")[1], rtol=1e-12)
    # statsmodels' *default* is Holm-Sidak, which differs: guard against using it
    assert not np.allclose(multipletests(p[np.isfinite(p)])[1], holm(p[np.isfinite(p)]))


def test_holm_empty_and_all_nan():
    assert holm([]).size == 0
    assert np.isnan(holm([np.nan, np.nan])).all()


TABLE_III = {  # gaze4hri.md, Table III: level means 10/25/50/100 and the published CV (%)
    "PureGaze (E)": ((11.73, 11.52, 12.18, 10.19), 7.50),
    "GazeTR (E)": ((11.50, 11.16, 12.45, 11.50), 4.77),
    "PureGaze (G)": ((16.92, 14.68, 15.13, 17.82), 9.18),
    "GazeTR (G)": ((14.73, 13.81, 15.27, 17.17), 9.30),
    "L2CS-Net (G)": ((19.61, 17.60, 18.95, 18.99), 4.51),
    "MCGaze (G)": ((19.08, 14.33, 13.24, 14.29), 17.15),
    "GaT (G)": ((17.93, 16.74, 15.82, 16.35), 5.36),
}


@pytest.mark.parametrize("name", list(TABLE_III))
def test_cv_reproduces_table_iii(name):
    """The study's CV uses the sample SD (ddof 1): ddof 0 misses every row."""
    means, cv = TABLE_III[name]
    assert round(cv_percent(means), 2) == pytest.approx(cv, abs=1e-9)
    assert round(cv_percent(means, ddof=0), 2) != pytest.approx(cv, abs=0.005)


def test_cv_matches_r():
    # R: m <- c(11.73, 11.52, 12.18, 10.19); 100*sd(m)/mean(m)  ->  7.50119721946044
    assert cv_percent([11.73, 11.52, 12.18, 10.19]) == pytest.approx(7.50119721946044, rel=1e-12)


def test_group_slopes_match_r_lm():
    # R: x <- c(10, 22, 35, 18, 41, 27); y <- c(12.1, 14.0, 17.2, 13.5, 18.9, 15.0); coef(lm(y ~ x))
    #    (Intercept) 9.50984671343206  x 0.21987529228371
    x = [10, 22, 35, 18, 41, 27]
    y = [12.1, 14.0, 17.2, 13.5, 18.9, 15.0]
    df = pd.DataFrame({"g": ["s1"] * 6 + ["s2"] * 6, "x": x + x, "y": y + [2 * v for v in y]})
    out = group_slopes(df, ["g"], "x", "y").set_index("g")
    assert out.loc["s1", "slope"] == pytest.approx(0.21987529228371, rel=1e-12)
    assert out.loc["s1", "intercept"] == pytest.approx(9.50984671343206, rel=1e-12)
    assert out.loc["s2", "slope"] == pytest.approx(2 * 0.21987529228371, rel=1e-12)
    one = group_slopes(
        pd.DataFrame({"g": ["a", "b", "b"], "x": [1.0, 2.0, 2.0], "y": [1.0, 3.0, 4.0]}), ["g"], "x", "y"
    )
    assert one["slope"].isna().all()  # one point; constant x


def test_group_ols2_matches_r_lm():
    # R: x1 <- c(1, 5, 3, 8, 2, 7, 4, 6, 9); x2 <- c(10, 2, 6, 1, 8, 3, 12, 4, 7)
    #    y2 <- c(5.1, 6.3, 5.9, 8.2, 5.5, 7.4, 7.0, 6.8, 9.1); coef(lm(y2 ~ x1 + x2))
    #    (Intercept) 3.459746493662341  x1 0.536983424585615  x2 0.113170329258232
    df = pd.DataFrame(
        {
            "s": "a",
            "x1": [1, 5, 3, 8, 2, 7, 4, 6, 9],
            "x2": [10, 2, 6, 1, 8, 3, 12, 4, 7],
            "y": [5.1, 6.3, 5.9, 8.2, 5.5, 7.4, 7.0, 6.8, 9.1],
        }
    )
    r = group_ols2(df, ["s"], "x1", "x2", "y").iloc[0]
    assert r["intercept"] == pytest.approx(3.459746493662341, rel=1e-10)
    assert r["b1"] == pytest.approx(0.536983424585615, rel=1e-10)
    assert r["b2"] == pytest.approx(0.113170329258232, rel=1e-10)
    assert r["n"] == 9


def test_group_ols2_many_groups_vs_lstsq():
    rng = np.random.default_rng(0)
    n = 5000
    df = pd.DataFrame(
        {"s": rng.integers(0, 7, n), "m": rng.integers(0, 3, n), "p": rng.random(n) * 30, "q": rng.random(n) * 40}
    )
    df["e"] = 3 + 0.1 * df["p"] + 0.2 * df["q"] + rng.normal(0, 1, n)
    out = group_ols2(df, ["s", "m"], "p", "q", "e")
    assert len(out) == 21
    for r in out.itertuples():
        g = df[(df["s"] == r.s) & (df["m"] == r.m)]
        X = np.column_stack([np.ones(len(g)), g["p"], g["q"]])
        coef = np.linalg.lstsq(X, g["e"], rcond=None)[0]
        np.testing.assert_allclose([r.intercept, r.b1, r.b2], coef, rtol=1e-8, atol=1e-10)


def test_pairwise_paired_holm_family():
    rng = np.random.default_rng(5)
    wide = pd.DataFrame(rng.normal(10, 2, (12, 4)), columns=list("wxyz"))
    wide["x"] += 2
    pw = pairwise_paired(wide)
    assert len(pw) == 6
    p = [stats.ttest_rel(wide[a], wide[b]).pvalue for a, b in zip(pw["a"], pw["b"], strict=True)]
    np.testing.assert_allclose(pw["p_unc"], p, rtol=1e-12)
    np.testing.assert_allclose(pw["p_holm"], multipletests(p, method="holm")[1], rtol=1e-12)
    assert (pw["p_holm"] >= pw["p_unc"]).all()


def test_paired_degenerate_inputs():
    assert np.isnan(paired_ttest([1.0], [2.0])["t"])
    r = paired_ttest([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])  # constant difference
    assert np.isnan(r["t"]) and r["mean_diff"] == 1.0
    assert np.isnan(one_sample_ttest([0.2, 0.2, 0.2])["p_unc"])


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_t_tests_match_scipy(alternative):
    rng = np.random.default_rng(7)
    for n in (3, 8, 52):
        a, b = rng.normal(10, 3, n), rng.normal(10.5, 3, n)
        r, ref = paired_ttest(a, b, alternative), stats.ttest_rel(a, b, alternative=alternative)
        assert r["t"] == pytest.approx(ref.statistic, rel=1e-10) and r["p_unc"] == pytest.approx(ref.pvalue, rel=1e-9)
        o, ref = one_sample_ttest(a - 10, 0.0, alternative), stats.ttest_1samp(a - 10, 0.0, alternative=alternative)
        assert o["t"] == pytest.approx(ref.statistic, rel=1e-10) and o["p_unc"] == pytest.approx(ref.pvalue, rel=1e-9)
    with pytest.raises(ValueError, match="alternative"):
        paired_ttest(a, b, "bigger")
