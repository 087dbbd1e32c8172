"""Issue 23, item 2: the study profile's last statistical differences and the tables only
the study's analyser writes, each against its definition in GazeForHRI/Gaze4HRI@main
(file:line in each test), recomputed by hand with pandas/scipy on small synthetic sets.
"""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.stats import analyses as A
from gaze4hri_bench.stats.headline import headline, render
from gaze4hri_bench.stats.load import load_results
from gaze4hri_bench.stats.profiles import REFERENCE, STUDY
from scipy import stats

from gaze4hri_bench import cli

from .test_extended import _videos, _wmean

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def videos():
    return _videos()


# ------------------------------------------------------------ experiment 2 descriptives
def _setting_means(v, method, weighted):
    x = v[(v.method == method) & ((v.experiment == "viewpoint") | ((v.experiment == "illumination") & (v.condition == "100")))]
    x = x.assign(s=np.where(x.experiment == "viewpoint", "arc", "fixed"))
    g = x.groupby(["subject", "s"])
    return (g.apply(_wmean, include_groups=False) if weighted else g["error_mean"].mean()).unstack()


def test_viewpoint_descriptives_every_subject_in_study_profile(videos):
    """camera_viewpoint.py:138-172 writes the descriptives over every subject with a value in the
    (model, condition) cell; :175-240 tests only the subjects with both conditions. S05 lost every
    arc video of L2CS: its fixed mean counts in the study's fixed descriptive (N 8), not in the test (N 7)."""
    v = videos[~((videos.subject == "S05") & (videos.experiment == "viewpoint") & (videos.method == "l2cs_gaze360"))]
    w = _setting_means(v, "l2cs_gaze360", weighted=True)
    a = A.viewpoint(v, profile=STUDY)
    t = a.tables["viewpoint"].set_index("method").loc["l2cs_gaze360"]
    assert t["fixed_mean"] == pytest.approx(w["fixed"].mean()) and t["n_fixed"] == 8
    assert t["fixed_sd"] == pytest.approx(w["fixed"].std(ddof=1))
    assert t["arc_mean"] == pytest.approx(w["arc"].dropna().mean()) and t["n_arc"] == 7
    paired = w.dropna()
    assert t["n"] == 7 and t["p"] == pytest.approx(stats.ttest_rel(paired["arc"], paired["fixed"]).pvalue)
    assert t["mean_diff"] == pytest.approx((paired["arc"] - paired["fixed"]).mean())
    assert t["fixed_mean"] != pytest.approx(paired["fixed"].mean())  # the set tells the two apart
    d = a.tables["viewpoint_descriptives"].set_index(["method", "setting"]).loc[("l2cs_gaze360", "fixed")]
    lo, hi = stats.t.interval(0.95, 7, loc=w["fixed"].mean(), scale=stats.sem(w["fixed"]))
    assert (d["n"], d["mean"], d["se"], d["ci_low"], d["ci_high"]) == pytest.approx((8, w["fixed"].mean(), stats.sem(w["fixed"]), lo, hi))
    # reference: one N per analysis, every descriptive over the 7 complete subjects
    r = A.viewpoint(v, profile=REFERENCE).tables["viewpoint"].set_index("method").loc["l2cs_gaze360"]
    u = _setting_means(v, "l2cs_gaze360", weighted=False).dropna()
    assert (r["n"], r["n_fixed"], r["n_arc"]) == (7, 7, 7) and r["fixed_mean"] == pytest.approx(u["fixed"].mean())


# ------------------------------------------------------------ too few subjects
DOC_PAIR_COLUMNS = ["level", "method_a", "method_b", "t", "dof", "p_unc", "p_holm", "cohen_dz", "display_a", "display_b", "mean_a", "mean_b", "n",
                    "mean_diff", "cohen_dav", "significant"]


def test_two_subjects_write_test_tables_with_empty_p():
    """docs/statistics.md: with fewer than --min-subjects the contract tables keep their columns, p empty."""
    v = _videos(2)
    a = A.illumination(v)
    pw, lp = a.tables["illumination_pairwise"], a.tables["illumination_level_pairs"]
    assert set(DOC_PAIR_COLUMNS) <= set(pw.columns) and len(pw) == 4 * 3
    assert {"method", "display", "level_a", "level_b", "mean_a", "mean_b", "n", "mean_diff", "p_unc", "p_holm", "significant"} <= set(lp.columns) and len(lp) == 3 * 6
    for df in (pw, lp):
        assert df[["t", "p_unc", "p_holm", "cohen_dz"]].isna().all().all() and not df["significant"].any() and (df["n"] == 2).all()
    # the paired mean difference stays, as a descriptive
    wide = A.subject_means(v[(v.experiment == "illumination") & (v.condition == "10")], ["method"]).pivot(index="subject", columns="method", values="error_mean")
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
    df = pd.DataFrame({"subject": "S01", "experiment": "illumination", "condition": "100", "target": "P1", "trial": "illum100_P1", "method": "m", "input": "crop",
                       "valid": [True] * 6 + [False] * 4, "error_deg": [1, 2, np.nan, np.inf, 5, 6, 1, np.nan, 3, 4],
                       "invalid_reason": ["", "", "", "", "", "", "blink", "no_face", "blink", None]})
    df.to_parquet(tmp_path / "a.parquet")
    df.drop(columns="invalid_reason").assign(method="m2").to_parquet(tmp_path / "b.parquet")
    L = load_results([tmp_path])
    inv = L.invalid.set_index(["method", "reason"])["frames"]
    assert inv[("m", "error_not_finite")] == 2 and inv[("m", "blink")] == 2 and inv[("m", "no_face")] == 1 and inv[("m", "(none given)")] == 1
    assert inv[("m2", "error_not_finite")] == 2 and inv[("m2", "(none given)")] == 4
    vid = L.videos.set_index("method")
    for m in ("m", "m2"):  # every frame is either in the mean or counted
        assert vid.loc[m, "n_valid"] + L.invalid[L.invalid.method == m]["frames"].sum() == vid.loc[m, "n_frames"] == n
        assert vid.loc[m, "error_mean"] == pytest.approx(np.mean([1, 2, 5, 6]))


# ------------------------------------------------------------ exclusions naming unknown subjects
def test_exclusions_unknown_subject_one_line_error(small_results, tmp_path, capsys):
    mine = tmp_path / "typo.yaml"
    mine.write_text("name: typo\nsubjects:\n  - {subject: S03, reason: ok}\n  - {subject: S99, reason: typo}\n")
    assert cli.main(["analyze", str(small_results), "--out", str(tmp_path / "o"), "--no-figures", "--exclusions", str(mine)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "S99" in err and "not in the results" in err and "typo.yaml" in err and "Traceback" not in err
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
        won = sum(1 for q in p.itertuples() if q.p_holm < 0.05 and (q.mean_diff < 0 if q.method_a == b.method else q.mean_diff > 0))
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

