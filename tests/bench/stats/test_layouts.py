"""The paper's layouts (Table III wide, S9, S10, S11, mutual grid) with the published
values beside ours, the published values themselves, the status box, and the report's
text and numbering."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from gaze4hri_bench.stats import layouts as L
from gaze4hri_bench.stats import paper
from gaze4hri_bench.stats.inference import cv_percent
from gaze4hri_bench.stats.status import build_status, data_kind, weights_text


@pytest.mark.unit
def test_published_values_are_consistent():
    """The restated Table III reproduces its own CV column (sigma ddof 1), Table S10's FPS is 1000 / ms."""
    for m, (cells, cv) in paper.TABLE_III.items():
        assert cv_percent(np.array([c[0] for c in cells])) == pytest.approx(cv, abs=0.01), m
    for fam, (_vram, ms, fps) in paper.TABLE_S10.items():
        assert 1000.0 / ms == pytest.approx(fps, rel=0.02), fam
    assert set(paper.S10_FAMILY.values()) == set(paper.TABLE_S10) and set(paper.TABLE_S9) == set(paper.TABLE_III)
    assert sorted(paper.TABLE_S11) == [f"P{k}" for k in range(1, 10)]
    assert paper.label("III") == "paper (Sezer et al., Table III)"


@pytest.mark.unit
def test_cell_format():
    assert L.cell(10.0, 2.0, 10) == "10.00 ± 2.00 [8.57, 11.43]"  # R: 10 + c(-1, 1) * qt(.975, 9) * 2 / sqrt(10)
    assert L.cell(10.0, 2.0, ci=False) == "10.00 ± 2.00" and L.cell(np.nan) == ""


@pytest.mark.replay
def test_table3_wide_with_paper_rows(small_report):
    out, _ = small_report
    t3 = pd.read_csv(out / "tables" / "table3.csv", keep_default_na=False)
    assert list(t3.columns) == ["Method", "Source", "10 %", "25 %", "50 %", "100 %", "CV (%)"]
    ill = pd.read_csv(out / "tables" / "illumination.csv")
    ours = t3[t3["Source"] == "ours"].set_index("Method")
    pub = t3[t3["Source"] == "paper (Sezer et al., Table III)"].set_index("Method")
    assert len(ours) == 7 and len(pub) == 7
    r = ill[(ill["display"] == "PureGaze (E)") & (ill["level"] == 25)].iloc[0]
    assert (
        ours.loc["PureGaze (E)", "25 %"] == f"{r['mean']:.2f} ± {r['sd']:.2f} [{r['ci_low']:.2f}, {r['ci_high']:.2f}]"
    )
    assert pub.loc["PureGaze (E)", "25 %"] == "11.52 ± 4.95" and pub.loc["MCGaze (G)", "CV (%)"] == 17.15
    tex = (out / "tables" / "table3.tex").read_text()
    assert tex.splitlines()[1] == "\\begin{table*}[t]" and "\\toprule" in tex and "\\bottomrule" in tex
    assert "\\multicolumn{4}{c}{Illumination level (\\%)}" in tex and "\\cmidrule(lr){2-5}" in tex
    assert "$\\pm$" in tex and "paper" not in tex.split("\\midrule")[1]  # paste-ready: ours only
    assert tex.count("\\\\") == 2 + 7  # group row + header + 7 methods


@pytest.mark.replay
def test_s9_s10_s11_and_mutual_grid(small_report, small_results):
    out, _ = small_report
    read = lambda n: pd.read_csv(out / "tables" / f"{n}.csv", keep_default_na=False)  # noqa: E731
    s9 = read("table_s9").set_index("Method")
    assert s9.loc["MCGaze (G)", "Rectified, paper (Sezer et al., Table S9)"] == 57.98
    s10 = read("table_s10")
    assert "FPS, paper (Sezer et al., Table S10)" in s10.columns
    mg = read("mutual_grid")
    assert list(mg.columns) == ["Method", "h_slow", "h_fast", "v_slow", "v_fast"] and len(mg) == 7
    s11 = read("table_s11").set_index("Point")
    assert list(s11.index) == [f"P{k}" for k in range(1, 10)]
    assert s11.loc["P8", "Pitch, paper (Sezer et al., Table S11)"] == -60.29
    # ours recomputed from the raw frames: subject mean per point over the illumination trials, then over subjects
    f = next(iter(sorted(small_results.glob("*.parquet"))))
    df = pq.read_table(f, columns=["subject", "experiment", "target", "gt_pitch_deg", "gt_yaw_deg"]).to_pandas()
    df = df[(df["experiment"] == "illumination") & np.isfinite(df["gt_pitch_deg"])]
    sm = df.groupby(["subject", "target"])[["gt_pitch_deg", "gt_yaw_deg"]].mean().groupby("target").mean()
    for p in ("P1", "P5", "P9"):
        assert s11.loc[p, "Pitch (ours)"].startswith(f"{sm.loc[p, 'gt_pitch_deg']:.2f} ± ")
        assert s11.loc[p, "Yaw (ours)"].startswith(f"{sm.loc[p, 'gt_yaw_deg']:.2f} ± ")


@pytest.mark.unit
def test_s10_baselines_have_no_network_time():
    eff = pd.DataFrame(
        [
            {
                "method": "head_pose",
                "display": "head_pose",
                "input": "none",
                "device": "cpu",
                "infer_ms_per_frame": 0.0,
                "fps": 44.0,
                "peak_rss_mb": 480.0,
                "peak_vram_mb": None,
            },
            {
                "method": "l2cs_gaze360",
                "display": "L2CS-Net (G)",
                "input": "crop",
                "device": "cuda",
                "infer_ms_per_frame": 2.5,
                "fps": 120.0,
                "peak_rss_mb": 900.0,
                "peak_vram_mb": 150.0,
            },
        ]
    )
    t = L.table_s10(eff).frame.set_index("Method")
    assert (
        t.loc["head_pose", "Network ms/frame"] == "n/a (no network)"
        and t.loc["head_pose", "Network FPS"] == "n/a (no network)"
    )
    assert t.loc["head_pose", "Pipeline FPS"] == "44.0" and t.loc["head_pose", "Peak VRAM (MB)"] == "n/a (CPU)"
    assert t.loc["L2CS-Net (G)", "Network ms/frame"] == "2.50" and t.loc["L2CS-Net (G)", "Network FPS"] == "400.0"
    assert t.loc["L2CS-Net (G)", "ms/frame, paper (Sezer et al., Table S10)"] == "1.92"
    assert "0.00" not in t.to_string()


@pytest.mark.unit
def test_status_box_flags_random_weights_and_simulated_data():
    from types import SimpleNamespace as NS

    sim = {
        "method": "l2cs_gaze360",
        "input": "crop",
        "detector": "yolov8n-face",
        "data_source": {"backends": {"S01": "sim"}, "format": "session"},
        "weights": {"file": "l2cs.onnx", "random_init": True},
        "blinks": {"source": "sim", "rule": "simulator truth"},
        "profile": "reference",
    }
    base = {
        "method": "head_pose",
        "input": "none",
        "method_info": {"kind": "baseline"},
        "data_source": {"backends": {"S01": "sim"}},
    }
    st = build_status(
        [
            NS(metadata=sim, methods=["l2cs_gaze360"], inputs=["crop"], status="used"),
            NS(metadata=base, methods=["head_pose"], inputs=["none"], status="used"),
        ],
        ["reference"],
    )
    assert st.simulated is True and st.alarms[0].startswith("SIMULATED DATA")
    assert any(a.startswith("RANDOM WEIGHTS: L2CS-Net (G)") for a in st.alarms)
    assert "yolov8n-face" in st.detectors and st.blinks == ["sim (simulator truth)"]
    assert st.methods.set_index("display").loc["head_pose", "weights"] == "none (weight-free baseline)"
    assert data_kind({"data_source": {"backends": {"S01": "real"}}})[0] == "real"
    assert data_kind({"data_source": {"backends": {"S01": "real", "S02": "sim"}}})[0] == "mixed"
    assert data_kind({"command_line": "gaze4hri-bench demo --out x"})[0] == "simulated"
    assert data_kind({})[0] == "unknown" and "not recorded" in data_kind({})[1]
    assert weights_text(
        {"weights": {"file": "a.onnx", "verified": True, "onnx_sha256": "ab" * 32}}, "l2cs_gaze360"
    ) == ("a.onnx (verified, sha256 abababababab)", False)


@pytest.mark.replay
def test_report_numbering_contents_status_and_text(small_report):
    out, _ = small_report
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    assert "> **Status**" in md and "SIMULATED DATA" in md and "<section class='status alarm' id='status'>" in html
    nums = [int(n) for n in re.findall(r"\*Table (\d+)\. ", md)]
    assert nums == list(range(1, len(nums) + 1)) and len(nums) >= 20
    figs = [int(n) for n in re.findall(r"\*Figure (\d+)\. ", md)]
    assert figs == list(range(1, len(figs) + 1)) and len(figs) >= 8
    toc = md.split("**Contents**")[1].split("\n## ")[0]
    assert "[Table 1." in toc and f"[Figure {figs[-1]}." in toc and "(#illumination-experiment-1-table-iii)" in toc
    for anchor in re.findall(r"\]\(#([a-z0-9-]+)\)", toc):
        assert f'id="{anchor}"' in html or f"id='{anchor}'" in html, anchor
    assert "0 of 0" not in md and "0.00 ms/frame" not in md
    assert "paper (Sezer et al., Table III)" in md and "Table III layout" in md
    assert "illumination_significance.png" in md and "mutual_significance.png" in md


@pytest.mark.replay
def test_any_new_analysis_table_is_rendered_with_its_caption(small_results, tmp_path):
    """An analysis registered later (plan.ANALYSES) shows up in the report, numbered, with the
    caption it recorded (profile, aggregation, family, effect size), without report code."""
    from gaze4hri_bench.stats import analyses as A
    from gaze4hri_bench.stats import analyze, plan
    from gaze4hri_bench.stats.analysis_profiles import REFERENCE

    def extra(c):
        a = A.Analysis("extra", "An extra analysis (test)")
        a.tables["extra_pairs"] = pd.DataFrame(
            {"method": ["puregaze_eth"], "display": ["PureGaze (E)"], "mean": [1.5], "ci_low": [1.0], "ci_high": [2.0]}
        )
        a.caption("extra_pairs", REFERENCE, "Extra: something per method", "Holm over the extras", "Cohen's d_z")
        a.tables["extra_subjects"] = pd.DataFrame({"subject": ["S1"], "value": [1.0]})
        a.n = 3
        return a

    plan.ANALYSES.add("extra", extra)
    try:
        s = analyze([small_results], tmp_path / "r", figures=False)
    finally:
        plan.ANALYSES.remove("extra")
    assert s["analyses"]["extra"]["status"] == "ran"
    md = (tmp_path / "r" / "report.md").read_text()
    assert "## An extra analysis (test)" in md
    m = re.search(
        r"\*Table (\d+)\. \[profile reference\] Extra: something per method\. .*Family: Holm over the extras\. Effect "
        r"size: Cohen's d_z\.\*",
        md,
    )
    assert m, "the extra table's caption is missing"
    assert "| PureGaze (E) | 1.50 | [1.00, 2.00] |" in md
    assert "`tables/extra_subjects.csv`" in md and "extra_subjects.csv" in {p.split("/")[-1] for p in s["tables"]}


@pytest.mark.replay
def test_pipeline_records_the_acquisition_backend_for_the_status_box(tmp_path):
    """run -> part timing -> merged provenance ``data_source.backends`` (session.yaml backend) -> status box."""
    import dataclasses
    from types import SimpleNamespace as NS

    from gaze4hri_bench.pipeline.results import read_metadata
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
    from gaze4hri_core.session import new_manifest, save_manifest

    from tests.bench._synth import SynthDataset

    ds = SynthDataset(subjects=("S01", "S02"), trials=("illum100_P5",))
    for s, backend in (("S01", "sim"), ("S02", "real")):
        save_manifest(tmp_path / "sessions" / s, new_manifest(s, backend, ["illum100_P5"]))
    ds.refs = [dataclasses.replace(r, session_dir=tmp_path / "sessions" / r.subject) for r in ds.refs]
    cfg = RunConfig(
        methods=("straight",),
        data=tmp_path / "sessions",
        out=tmp_path / "out",
        progress=False,
        command_line="pytest run",
        blinks="off",
    )
    (path,) = run_benchmark(cfg, log=lambda *_: None, dataset=ds)
    md = read_metadata(path)
    assert md["data_source"] == {"backends": {"S01": "sim", "S02": "real"}}
    st = build_status([NS(metadata=md, methods=["straight"], inputs=["none"], status="used")], ["reference"])
    assert st.simulated is None and st.data == "MIXED: some results simulated (acquisition backend real, sim)"
    assert st.alarms == ["MIXED DATA: some results come from simulated sessions."] and st.methods["data"].tolist() == [
        "mixed"
    ]
    md["data_source"] = {"backends": {"S01": "sim", "S02": "sim"}}
    assert (
        build_status([NS(metadata=md, methods=["straight"], inputs=["none"], status="used")], ["reference"]).simulated
        is True
    )
