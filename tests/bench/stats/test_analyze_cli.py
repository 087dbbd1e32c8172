"""``gaze4hri-bench analyze`` end to end on small Parquet results written by the
benchmark's generator: the output contract, an independent recomputation from the
raw frames, and bad input (one-line errors, per-analysis skips, never a traceback)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gaze4hri_bench.schema import METADATA_KEY
from gaze4hri_bench.stats import analyze
from scipy import stats
from statsmodels.stats.multitest import multipletests

from gaze4hri_bench import cli

pytestmark = pytest.mark.replay

CONTRACT = {
    "illumination": ["method", "level", "mean", "sd", "n"],
    "illumination_cv": ["method", "cv_percent"],
    "illumination_pairwise": ["level", "method_a", "method_b", "t", "dof", "p_unc", "p_holm", "cohen_dz"],
    "viewpoint": ["method", "fixed_mean", "fixed_sd", "arc_mean", "arc_sd", "t", "dof", "p"],
    "conflict": ["method", "mean", "sd", "slope_mean", "slope_sd", "p_holm", "pct_positive"],
}


def test_contract_tables_figures_and_report(small_report):
    out, summary = small_report
    for name, cols in CONTRACT.items():
        df = pd.read_csv(out / "tables" / f"{name}.csv")
        assert set(cols) <= set(df.columns), name
        assert len(df) > 0
        for ext in ("md", "tex"):
            assert (out / "tables" / f"{name}.{ext}").stat().st_size > 0
    assert "\\toprule" in (out / "tables" / "viewpoint.tex").read_text()
    for fig in (
        "illumination_levels",
        "target_heatmap",
        "conflict_slopes",
        "eccentricity",
        "viewpoint",
        "crop_vs_rectified",
    ):
        assert (out / "figures" / f"{fig}.png").read_bytes()[:4] == b"\x89PNG"
        assert "<svg" in (out / "figures" / f"{fig}.svg").read_text()[:1000]
    assert {a["status"] for a in summary["analyses"].values()} == {"ran"}
    assert summary["warnings"] == []
    import matplotlib

    assert matplotlib.rcParams["svg.hashsalt"] != "gaze4hri"  # the report's style did not leak into global state
    md = (out / "report.md").read_text()
    for section in (
        "Illumination",
        "Camera viewpoint",
        "Head-gaze conflict",
        "Target position",
        "Mutual gaze",
        "Table S9",
        "Table S10",
        "Provenance",
    ):
        assert section in md
    assert "d_z" in md and "sha256" in md.lower()
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") >= 6 and 'src="http' not in html and "src='http" not in html
    # N reported and exclusions listed: the generator drops S08's conflict and S07's mutual trials
    ex = pd.read_csv(out / "tables" / "excluded.csv")
    assert set(map(tuple, ex[["analysis", "subject"]].to_numpy())) == {("conflict", "S08"), ("mutual", "S07")}
    assert summary["analyses"]["conflict"]["n"] == 7 and summary["analyses"]["illumination"]["n"] == 8
    assert json.loads((out / "summary.json").read_text())["analyses"].keys() == summary["analyses"].keys()


def _frames(results_dir, method, inp, experiment):
    t = pq.read_table(results_dir / f"{method}__{inp}.parquet").to_pandas()
    t = t[(t.experiment == experiment) & t.valid]
    return t


def test_illumination_recomputed_from_raw_frames(small_report, small_results):
    """Independent route: raw frames -> pandas groupby -> scipy ttest_rel -> statsmodels Holm."""
    out, _ = small_report
    subj = {}
    for m, i in (("puregaze_eth", "rectified"), ("gazetr_eth", "rectified"), ("l2cs_gaze360", "crop")):
        f = _frames(small_results, m, i, "illumination")
        f = f[f.condition == "50"]
        subj[m] = f.groupby(["subject", "trial"])["error_deg"].mean().groupby("subject").mean()
    ill = pd.read_csv(out / "tables" / "illumination.csv")
    r = ill[(ill.method == "gazetr_eth") & (ill.level == 50)].iloc[0]
    assert r["mean"] == pytest.approx(subj["gazetr_eth"].mean(), rel=1e-9)
    assert r["sd"] == pytest.approx(subj["gazetr_eth"].std(ddof=1), rel=1e-9)
    pw = pd.read_csv(out / "tables" / "illumination_pairwise.csv")
    pw = pw[pw.level == 50]
    assert len(pw) == 21  # 7 methods
    row = pw[(pw.method_a == "puregaze_eth") & (pw.method_b == "l2cs_gaze360")].iloc[0]
    ref = stats.ttest_rel(subj["puregaze_eth"], subj["l2cs_gaze360"])
    assert row["t"] == pytest.approx(ref.statistic, rel=1e-9) and row["p_unc"] == pytest.approx(ref.pvalue, rel=1e-9)
    np.testing.assert_allclose(pw["p_holm"], multipletests(pw["p_unc"], method="holm")[1], rtol=1e-9)
    d = subj["puregaze_eth"] - subj["l2cs_gaze360"]
    assert row["cohen_dz"] == pytest.approx(d.mean() / d.std(ddof=1), rel=1e-9)


def test_conflict_recomputed_from_raw_frames(small_report, small_results):
    out, _ = small_report
    f = _frames(small_results, "gat_gaze360", "crop", "conflict")
    vid = f.groupby(["subject", "trial"])[["error_deg", "head_gaze_conflict_deg"]].mean().reset_index()
    slopes = [stats.linregress(g["head_gaze_conflict_deg"], g["error_deg"]).slope for _, g in vid.groupby("subject")]
    c = pd.read_csv(out / "tables" / "conflict.csv").set_index("method")
    assert c.loc["gat_gaze360", "slope_mean"] == pytest.approx(np.mean(slopes), rel=1e-9)
    assert c.loc["gat_gaze360", "n"] == len(slopes) == 7


def test_cli_prints_statuses(small_results, tmp_path, capsys):
    files = [str(small_results / f"{m}.parquet") for m in ("puregaze_eth__rectified", "l2cs_gaze360__crop")]
    rc = cli.main(["analyze", *files, "--out", str(tmp_path / "r"), "--no-figures", "--alpha", "0.01"])
    assert rc == 0
    outp = capsys.readouterr().out
    assert "illumination" in outp and "report:" in outp
    assert not list((tmp_path / "r" / "figures").glob("*.png"))


def _copy_some(src, dst, names, edit=None):
    dst.mkdir(parents=True, exist_ok=True)
    for n in names:
        t = pq.read_table(src / n)
        if edit:
            t = edit(n, t)
        pq.write_table(t, dst / n)
    return dst


def test_missing_core_column_in_one_file_is_reported_others_analysed(small_results, tmp_path):
    names = ["puregaze_eth__rectified.parquet", "l2cs_gaze360__crop.parquet", "gat_gaze360__crop.parquet"]
    d = _copy_some(
        small_results, tmp_path / "in", names, lambda n, t: t.drop(["error_deg"]) if n.startswith("gat") else t
    )
    s = analyze([d], tmp_path / "out", figures=False)
    assert any("gat_gaze360__crop.parquet not used" in w and "error_deg" in w for w in s["warnings"])
    assert s["methods"] == ["l2cs_gaze360", "puregaze_eth"]
    assert s["analyses"]["illumination"]["status"] == "ran"
    assert "gat_gaze360" in (tmp_path / "out" / "report.md").read_text()  # provenance lists it with the reason


def test_nothing_usable_is_one_line_error(small_results, tmp_path, capsys):
    d = _copy_some(small_results, tmp_path / "in", ["gat_gaze360__crop.parquet"], lambda n, t: t.drop(["subject"]))
    rc = cli.main(["analyze", str(d), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "subject" in err and "Traceback" not in err


def test_mixed_schema_versions_refused(small_results, tmp_path, capsys):
    def bump(n, t):
        if n.startswith("gat"):
            meta = json.loads(t.schema.metadata[METADATA_KEY])
            meta["schema"] = "gaze4hri.results/2"
            t = t.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})
        return t

    d = _copy_some(small_results, tmp_path / "in", ["gat_gaze360__crop.parquet", "l2cs_gaze360__crop.parquet"], bump)
    rc = cli.main(["analyze", str(d), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert (
        rc == 2 and "mix schema versions" in err and "gaze4hri.results/2" in err and len(err.strip().splitlines()) == 1
    )


def test_missing_paths_and_bad_alpha(tmp_path, capsys):
    assert cli.main(["analyze", str(tmp_path / "nope.parquet"), "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert cli.main(["analyze", str(tmp_path / "empty"), "--out", str(tmp_path / "o")]) == 2
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    assert cli.main(["analyze", str(tmp_path / "junk.parquet"), "--out", str(tmp_path / "o")]) == 2
    assert "not a readable Parquet" in capsys.readouterr().err
    assert cli.main(["analyze", str(tmp_path / "junk.parquet"), "--out", str(tmp_path / "o"), "--alpha", "2"]) == 2


def test_method_without_valid_frames_and_missing_conflict_column(small_results, tmp_path):
    def edit(n, t):
        if n.startswith("gat"):
            t = t.set_column(t.schema.get_field_index("valid"), "valid", pa.array(np.zeros(t.num_rows, bool)))
        if n.startswith("l2cs"):
            t = t.drop(["head_gaze_conflict_deg"])
        return t

    names = [
        "puregaze_eth__rectified.parquet",
        "gazetr_eth__rectified.parquet",
        "l2cs_gaze360__crop.parquet",
        "gat_gaze360__crop.parquet",
    ]
    d = _copy_some(small_results, tmp_path / "in", names, edit)
    s = analyze([d], tmp_path / "out", figures=False)
    assert any("GaT (G) (crop) has no valid frames" in w for w in s["warnings"])
    assert "gat_gaze360" not in s["methods"]
    c = s["analyses"]["conflict"]
    assert c["status"] == "partial" and any("L2CS-Net (G)" in r and "head_gaze_conflict_deg" in r for r in c["reasons"])
    conf = pd.read_csv(tmp_path / "out" / "tables" / "conflict.csv")
    assert set(conf["method"]) == {"puregaze_eth", "gazetr_eth"}
    assert s["analyses"]["illumination"]["status"] == "ran"


def test_two_subjects_descriptives_only(synth, tmp_path):
    synth.make_results(
        tmp_path / "in", subjects=2, frames=6, methods=["puregaze_eth", "newnet"], inputs=("crop", "rectified"), seed=1
    )
    s = analyze([tmp_path / "in"], tmp_path / "out")
    ill = s["analyses"]["illumination"]
    assert ill["status"] == "partial" and "at least 3 subjects" in ill["reasons"][0] and "illumination" in ill["tables"]
    # the test tables are written with their columns and empty p-values (docs: contract tables keep their columns)
    for name in ("illumination_pairwise", "illumination_level_pairs", "conflict_pairwise"):
        t = pd.read_csv(tmp_path / "out" / "tables" / f"{name}.csv")
        assert len(t) and {"p_unc", "p_holm", "n"} <= set(t.columns) and t["p_holm"].isna().all()
    assert pd.read_csv(tmp_path / "out" / "tables" / "conflict.csv")["p_holm"].isna().all()
    choice = pd.read_csv(tmp_path / "out" / "tables" / "input_choice.csv").set_index("method")
    assert choice.loc["newnet", "rule"] == "lower whole-dataset mean error"
    assert "skip" in (tmp_path / "out" / "report.html").read_text()
    assert not [w for w in s["warnings"] if w.startswith("figure")]  # figures survive N = 2 (SD undefined)
    assert (tmp_path / "out" / "figures" / "illumination_levels.svg").exists()


@pytest.mark.slow
def test_console_script_entry_point(small_results, tmp_path):
    """The installed entry point, as a user runs it (one subprocess)."""
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "gaze4hri_bench.cli",
            "analyze",
            str(tmp_path / "missing"),
            "--out",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stderr.startswith("gaze4hri-bench: error:") and "Traceback" not in r.stderr


def test_pipeline_part_files_and_duplicates(small_results, tmp_path):
    """Hidden .parts/ folders (the pipeline's per-trial parts) are not results; a file given twice
    under two names is de-duplicated with a warning."""
    d = _copy_some(small_results, tmp_path / "in", ["l2cs_gaze360__crop.parquet"])
    _copy_some(small_results, d / ".parts" / "l2cs_gaze360__crop", ["gat_gaze360__crop.parquet"])
    s = analyze([d], tmp_path / "out", figures=False)
    assert s["methods"] == ["l2cs_gaze360"] and len(s["inputs"]) == 1
    (d / "copy.parquet").write_bytes((d / "l2cs_gaze360__crop.parquet").read_bytes())
    s = analyze([d], tmp_path / "out2", figures=False)
    assert any("more than one results file" in w for w in s["warnings"])
    assert s["analyses"]["illumination"]["n"] == 8


def test_tiny_demo_like_results(synth, tmp_path):
    """One subject, two methods, a handful of trials, no timing: descriptive tables and figures,
    every test skipped with its reason, nothing fails (what `gaze4hri-bench demo` produces)."""
    import pyarrow.compute as pc

    synth.make_results(
        tmp_path / "full",
        subjects=1,
        frames=8,
        methods=["puregaze_eth", "l2cs_gaze360"],
        inputs=("crop",),
        timing=False,
    )
    keep = pa.array(
        [
            "illum010_P1",
            "illum100_P5",
            "illum100_P8",
            "arc_P5",
            "conflict_left_H1",
            "conflict_center_H2",
            "mutual_h_slow",
        ]
    )
    (tmp_path / "in").mkdir()
    for f in (tmp_path / "full").glob("*.parquet"):
        t = pq.read_table(f)
        pq.write_table(t.filter(pc.is_in(t["trial"], value_set=keep)), tmp_path / "in" / f.name)
    s = analyze([tmp_path / "in"], tmp_path / "out")
    st = {k: v["status"] for k, v in s["analyses"].items()}
    assert st == {
        "illumination": "partial",
        "viewpoint": "partial",
        "conflict": "partial",
        "target": "partial",
        "mutual": "partial",
        "crop_vs_rectified": "skipped",
        "efficiency": "skipped",
        "groups": "partial",
    }
    assert all(
        "at least 3 subjects" in s["analyses"][k]["reasons"][0]
        for k in ("illumination", "viewpoint", "conflict", "target", "mutual", "groups")
    )
    assert s["warnings"] == [
        "only 1 subject(s), fewer than --min-subjects 3: inferential analyses skipped, descriptive tables only"
    ]
    assert len(s["figures"]) >= 8
    ill = pd.read_csv(tmp_path / "out" / "tables" / "illumination.csv")
    assert sorted(ill["level"].unique()) == [10, 100] and (ill["n"] == 1).all() and ill["sd"].isna().all()


def test_out_is_a_file(small_results, tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    assert cli.main(["analyze", str(small_results), "--out", str(tmp_path / "f")]) == 2
    err = capsys.readouterr().err
    assert "is a file" in err and "Traceback" not in err


def test_every_table_and_column_is_documented(small_report, repo_root):
    """docs/statistics.md documents each table the command writes, and each of its columns."""
    out, _ = small_report
    doc = (repo_root / "docs" / "statistics.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line for line in doc.splitlines() if line.startswith("| `")}
    for csv in sorted((out / "tables").glob("*.csv")):
        assert csv.stem in rows, f"table {csv.stem} missing from docs/statistics.md"
        cols = pd.read_csv(csv, nrows=0).columns
        if "as above" in rows[csv.stem] or "as `" in rows[csv.stem]:
            continue
        missing = [c for c in cols if c not in rows[csv.stem]]
        assert not missing, f"{csv.stem}: columns {missing} undocumented"


def test_file_without_metadata_is_analysed(small_results, tmp_path):
    """A lab's own file with the right columns and no provenance metadata is used; S10 says why it is empty."""
    d = _copy_some(
        small_results,
        tmp_path / "in",
        ["l2cs_gaze360__crop.parquet", "gat_gaze360__crop.parquet"],
        lambda n, t: t.replace_schema_metadata(None),
    )
    s = analyze([d], tmp_path / "out", figures=False)
    assert s["analyses"]["illumination"]["status"] == "ran"
    assert s["analyses"]["efficiency"]["status"] == "skipped" and "timing" in s["analyses"]["efficiency"]["reasons"][0]
    assert "(no metadata)" in (tmp_path / "out" / "report.md").read_text()
