"""``gaze4hri-bench analyze --profile/--exclusions/--min-subjects/--allow-mixed-profiles``
end to end on Parquet results: frame weighting and the all-frames conflict recomputed
from the raw frames with pandas, the study's exclusion list, pipeline-profile mixing
and the bad-input paths (one line, exit 2, never a traceback)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from gaze4hri_bench.schema import METADATA_KEY
from gaze4hri_bench.stats import analyze
from gaze4hri_bench.stats.exclusions import load_exclusions, shipped_lists, subject_key
from gaze4hri_bench.stats.load import load_results
from gaze4hri_core.errors import Gaze4HRIError

from gaze4hri_bench import cli

pytestmark = pytest.mark.replay


def _edit(src, dst, fn):
    dst.mkdir(parents=True, exist_ok=True)
    for f in sorted(src.glob("*.parquet")):
        t = pq.read_table(f)
        pq.write_table(fn(f.name, t), dst / f.name)
    return dst


@pytest.fixture(scope="module")
def weighted_set(synth, tmp_path_factory):
    """6 subjects, 2 methods, 20 frames a video; S02 keeps only 3 valid frames in illum010_P1..P3
    (so frame weights matter) and every invalid frame gets a conflict of 90 deg (so the
    all-frames conflict differs from the valid-frames one)."""
    root = tmp_path_factory.mktemp("weighted")
    synth.make_results(
        root / "raw",
        subjects=6,
        frames=20,
        methods=["puregaze_eth", "l2cs_gaze360"],
        inputs=("crop", "rectified"),
        seed=11,
    )

    def fn(name, t):
        df = t.to_pandas()
        hit = (df.subject == "S02") & df.trial.isin(["illum010_P1", "illum010_P2", "illum010_P3"]) & (df.frame >= 3)
        df.loc[hit, "valid"] = False
        df.loc[hit, "error_deg"] = np.nan
        df.loc[hit, "invalid_reason"] = "blink"
        df.loc[~df.valid, "head_gaze_conflict_deg"] = 90.0
        return pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(t.schema.metadata)

    return _edit(root / "raw", root / "in", fn)


def test_frame_weighted_table_iii_from_raw_frames(weighted_set, tmp_path):
    s = analyze([weighted_set], tmp_path / "out", figures=False, profile="study")
    assert s["profile"] == "study" and s["exclusions"]["name"] == "study"
    df = pd.concat([pd.read_parquet(f) for f in weighted_set.glob("*rectified*")])
    df = df[(df.method == "puregaze_eth") & (df.experiment == "illumination") & (df.condition == "10") & df.valid]
    vid = df.groupby(["subject", "trial"])["error_deg"].agg(["mean", "count"])
    w = vid.groupby("subject").apply(lambda g: np.average(g["mean"], weights=g["count"]))
    u = vid.groupby("subject")["mean"].mean()
    assert abs(w["S02"] - u["S02"]) > 0.05  # the set is built so that the two disagree
    t = pd.read_csv(tmp_path / "out" / "tables" / "illumination.csv")
    r = t[(t.method == "puregaze_eth") & (t.level == 10)].iloc[0]
    assert r["mean"] == pytest.approx(w.mean()) and r["sd"] == pytest.approx(w.std(ddof=1))
    s2 = analyze([weighted_set], tmp_path / "ref", figures=False)
    t2 = pd.read_csv(tmp_path / "ref" / "tables" / "illumination.csv")
    assert t2[(t2.method == "puregaze_eth") & (t2.level == 10)].iloc[0]["mean"] == pytest.approx(u.mean())
    assert s2["profile"] == "reference"
    md = (tmp_path / "out" / "report.md").read_text()
    assert "[profile study]" in md and "frame-weighted" in md and "Exclusions (study)" in md


def test_conflict_all_frames_vs_valid_frames(weighted_set):
    lr = load_results([weighted_set])
    v = lr.videos
    df = pd.read_parquet(next(weighted_set.glob("puregaze_eth__rectified*")))
    d = df[df.trial == "conflict_left_H1"]
    row = v[(v.method == "puregaze_eth") & (v.input == "rectified") & (v.trial == "conflict_left_H1")].set_index(
        "subject"
    )
    for s_, g in d.groupby("subject"):
        assert row.loc[s_, "conflict_all_mean"] == pytest.approx(g["head_gaze_conflict_deg"].mean())
        assert row.loc[s_, "conflict_mean"] == pytest.approx(g.loc[g.valid, "head_gaze_conflict_deg"].mean())
        assert row.loc[s_, "abs_pitch_mean"] == pytest.approx(g["gt_pitch_deg"].abs().mean())


def test_study_exclusions_applied_everywhere(synth, tmp_path):
    synth.make_results(
        tmp_path / "in",
        subjects=30,
        frames=4,
        methods=["puregaze_eth"],
        inputs=("rectified",),
        seed=2,
        timing=False,
        study_drops=False,
    )
    s = analyze([tmp_path / "in"], tmp_path / "out", figures=False, profile="study")
    ap = {(r["subject"], r["experiment"]): r["videos"] for r in s["exclusions"]["applied"]}
    assert ap[("S17", "all")] == 63 and ap[("S21", "all")] == 63 and ap[("S28", "all")] == 63
    assert ap[("S10", "conflict")] == 8 and ap[("S20", "conflict")] == 8  # head left (4) and right (4)
    ill = pd.read_csv(tmp_path / "out" / "tables" / "illumination.csv")
    assert (ill["n"] == 27).all()
    sl = pd.read_csv(tmp_path / "out" / "tables" / "conflict_slopes.csv")
    assert not set(sl["subject"]) & {"S10", "S17", "S20", "S21", "S28"} and sl["subject"].nunique() == 25
    exc = pd.read_csv(tmp_path / "out" / "tables" / "excluded.csv")
    assert set(exc.loc[exc.analysis == "conflict", "subject"]) == {
        "S10",
        "S20",
    }  # incomplete head conditions after the exclusions
    assert (
        "subj_0017" in (tmp_path / "out" / "report.md").read_text()
        or "S17" in (tmp_path / "out" / "report.md").read_text()
    )
    s2 = analyze([tmp_path / "in"], tmp_path / "out2", figures=False, profile="study", exclusions="none")
    assert s2["analyses"]["illumination"]["n"] == 30


def test_exclusion_lists_and_bad_yaml(tmp_path):
    assert {"study", "none"} <= set(shipped_lists())
    st = load_exclusions("study")
    assert [x.subject for x in st.subjects] == ["0017", "0021", "0028"] and all(x.reason for x in st.subjects)
    assert {(e.subject, e.experiment, e.conditions) for e in st.experiments} == {
        ("0010", "conflict", ("left", "right")),
        ("0020", "conflict", ("left", "right")),
    }
    assert subject_key("subj_0017") == subject_key("S17") == subject_key("0017") == "17"
    bad = tmp_path / "bad.yaml"
    bad.write_text("subjects:\n  - {subject: '3'}\n")
    with pytest.raises(Gaze4HRIError, match="no 'reason'"):
        load_exclusions(bad)
    bad.write_text("experiments:\n  - {subject: '3', experiment: lighting, reason: x}\n")
    with pytest.raises(Gaze4HRIError, match="illumination"):
        load_exclusions(bad)
    with pytest.raises(Gaze4HRIError, match="no exclusion list"):
        load_exclusions("nosuch")


def test_cli_profile_exclusions_min_subjects(small_results, tmp_path, capsys):
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: mine\nsubjects:\n  - {subject: S03, reason: test}\n")
    rc = cli.main(
        [
            "analyze",
            str(small_results),
            "--out",
            str(tmp_path / "o"),
            "--no-figures",
            "--profile",
            "study",
            "--exclusions",
            str(mine),
            "--min-subjects",
            "8",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0 and "profile study (--profile), exclusions mine (" in out
    assert "needs at least 8 subjects (--min-subjects), N = 7" in out
    assert (
        "Headline results (profile study" in out and "1 illumination" in out and "not tested (too few subjects)" in out
    )  # ends with the results table
    summ = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summ["min_subjects"] == 8 and summ["analyses"]["illumination"]["status"] == "partial"
    assert (
        cli.main(
            ["analyze", str(small_results), "--out", str(tmp_path / "o2"), "--exclusions", str(tmp_path / "nope.yaml")]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "no exclusion list" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit):
        cli.main(["analyze", str(small_results), "--out", str(tmp_path / "o3"), "--profile", "bogus"])
    assert "invalid choice" in capsys.readouterr().err
    assert cli.main(["analyze", str(small_results), "--out", str(tmp_path / "o4"), "--min-subjects", "1"]) == 2
    assert "--min-subjects 1 is too small" in capsys.readouterr().err


def test_two_subjects_warns_and_skips_inference(synth, tmp_path, capsys):
    synth.make_results(
        tmp_path / "in", subjects=2, frames=4, methods=["puregaze_eth", "l2cs_gaze360"], inputs=("crop",), timing=False
    )
    assert cli.main(["analyze", str(tmp_path / "in"), "--out", str(tmp_path / "o"), "--no-figures"]) == 0
    cap = capsys.readouterr()
    assert "warning: only 2 subject(s), fewer than --min-subjects 3" in cap.err
    assert "skipped: needs at least 3 subjects" in cap.out
    assert (tmp_path / "o" / "tables" / "illumination.csv").exists()
    assert (
        pd.read_csv(tmp_path / "o" / "tables" / "illumination_pairwise.csv")["p_holm"].isna().all()
    )  # columns kept, p empty
    assert "not tested (too few subjects)" in cap.out  # the headline says so


def _with_profile(name, t, prof):
    meta = json.loads(t.schema.metadata[METADATA_KEY])
    if prof is not None:
        meta["profile"] = prof
    return t.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})


def test_mixed_pipeline_profiles_refused_unless_allowed(small_results, tmp_path, capsys):
    names = ["puregaze_eth__rectified.parquet", "l2cs_gaze360__crop.parquet", "gat_gaze360__crop.parquet"]
    d = tmp_path / "in"
    d.mkdir()
    for n, prof in zip(names, ["study", None, {"name": "study"}], strict=True):
        t = pq.read_table(small_results / n)
        pq.write_table(
            _with_profile(n, t.filter(pc.is_in(t["experiment"], value_set=pa.array(["illumination"]))), prof), d / n
        )
    assert cli.main(["analyze", str(d), "--out", str(tmp_path / "o"), "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert (
        "different pipeline profiles" in err
        and "reference: l2cs_gaze360__crop.parquet" in err
        and "--allow-mixed-profiles" in err
    )
    assert len(err.strip().splitlines()) == 1
    s = analyze([d], tmp_path / "o", figures=False, allow_mixed_profiles=True)
    assert s["pipeline_profiles"] == ["reference", "study"] and any("mix pipeline profiles" in w for w in s["warnings"])
    s1 = analyze([d / names[0], d / names[2]], tmp_path / "o1", figures=False)
    assert s1["pipeline_profiles"] == ["study"]
    # --profile auto (the default): results of the study pipeline are analysed with the study profile
    assert s1["profile"] == "study" and s1["profile_source"].startswith("auto") and s1["exclusions"]["name"] == "study"
    assert s["profile"] == "reference"  # mixed: no single pipeline profile
