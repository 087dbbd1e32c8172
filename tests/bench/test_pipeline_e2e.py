"""`gaze4hri-bench run` end to end on real MCAP sessions (gaze4hri_bench.testing.session:
rosbags-written bags, a real face photograph moving across the frame), real face
detection and tracking, tiny ONNX models, both input types, then resume, and the CLI's
bad-input paths (one line, non-zero exit, no traceback)."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest
from gaze4hri_bench.cli import main as cli
from gaze4hri_bench.schema import COLUMNS, METADATA_KEY
from gaze4hri_bench.testing.session import TrialSpec, write_session

pytestmark = [pytest.mark.replay, pytest.mark.slow]


@pytest.fixture(scope="module")
def session_root(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("e2e")
    root = tmp / "sessions"
    write_session(root, "S01", [TrialSpec("illum100_P5", size=(320, 180), seconds=0.5, drop=(5,)),
                                TrialSpec("mutual_h_fast", size=(320, 180), seconds=0.5)], tmp=tmp)
    return root


@pytest.fixture(scope="module")
def run_out(session_root, tiny_models, tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    argv = ["run", "--method", "tiny_test", "-m", "straight", "-m", "head_pose", "--input", "both",
            "--data", str(session_root), "--models-dir", str(tiny_models), "--out", str(out), "--batch", "4",
            "--no-progress"]
    assert cli(argv) == 0
    return out, argv


def test_one_file_per_method_and_input(run_out):
    out, _ = run_out
    names = sorted(p.name for p in out.glob("*.parquet"))
    assert names == ["head_pose__none.parquet", "straight__none.parquet", "tiny_test__crop.parquet",
                     "tiny_test__rectified.parquet"]


@pytest.mark.parametrize("fname", ["tiny_test__crop", "tiny_test__rectified", "straight__none", "head_pose__none"])
def test_rows_and_provenance(run_out, fname):
    out, _ = run_out
    pf = pq.ParquetFile(out / f"{fname}.parquet")
    df = pf.read().to_pandas()
    assert pf.schema_arrow.names == list(COLUMNS)
    assert len(df) == 15 + 15 and not df.duplicated(["trial", "frame"]).any()
    dropped = df[(df["trial"] == "illum100_P5") & (df["frame"] == 5)]
    assert dropped["invalid_reason"].tolist() == ["dropped_frame"] and dropped["error_deg"].isna().all()
    v = df[df["valid"]]
    assert len(v) >= 0.8 * len(df)  # the face is found in (nearly) every frame
    np.testing.assert_allclose(np.linalg.norm(v[["pred_x", "pred_y", "pred_z"]], axis=1), 1.0, atol=1e-9)
    assert v["error_deg"].between(0, 180).all() and df.loc[~df["valid"], "error_deg"].isna().all()
    md = json.loads(pf.schema_arrow.metadata[METADATA_KEY])
    t = md["timing"]
    assert t["frames"] == 14 + 15 and t["device"] == "cpu" and t["batch"] == 4
    assert md["calibration_hashes"]["S01"] and md["git"] and md["command_line"].startswith("gaze4hri-bench")
    if fname.startswith("tiny_test"):
        assert md["spec"]["name"] == "tiny_test" and len(md["weights_sha256"]) == 64 and md["weights"]["random_init"]
        assert t["infer_s"] > 0 and t["preprocess_s"] > 0
        assert (md["detector"] is not None) == fname.endswith("crop")


def test_rerun_resumes_without_work(run_out, capsys):
    out, argv = run_out
    before = {p: p.stat().st_mtime_ns for p in (out / ".parts").rglob("*.parquet")}
    assert cli(argv) == 0
    log = capsys.readouterr().out
    assert "0 trial(s) to run, 2 already done (resumed)" in log
    assert all(p.stat().st_mtime_ns == m for p, m in before.items())


def _cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "gaze4hri_bench.cli", *args], capture_output=True, text=True, timeout=120, env=env
    )


def test_cli_bad_inputs_are_one_line(session_root, tmp_path):
    r = _cli("run", "--method", "l2sc", "--data", str(session_root), "--out", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().count("\n") == 0 and "did you mean l2cs_gaze360" in r.stderr
    r = _cli(
        "run",
        "--method",
        "gazetr_eth",
        "--data",
        str(session_root),
        "--out",
        str(tmp_path),
        "--models-dir",
        str(tmp_path),
    )
    assert r.returncode == 3 and "Traceback" not in r.stderr and r.stderr.strip().count("\n") == 0
    assert "gazetr_eth.onnx" in r.stderr and "gaze4hri-bench models import gazetr_eth CHECKPOINT" in r.stderr
    assert "https://github.com/yihuacheng/GazeTR" in r.stderr
    r = _cli("run", "--method", "straight", "--data", str(tmp_path / "nope"), "--out", str(tmp_path))
    assert r.returncode == 2 and "Traceback" not in r.stderr and "--data" in r.stderr
    r = _cli(
        "run", "--method", "straight", "--ear-relative", "1.5", "--data", str(session_root), "--out", str(tmp_path)
    )
    assert (
        r.returncode == 2
        and "Traceback" not in r.stderr
        and r.stderr.strip().count("\n") == 0
        and "--ear-relative" in r.stderr
    )


def test_methods_command_lists_status(tiny_models, capsys):
    assert cli(["methods", "--models-dir", str(tiny_models)]) == 0
    text = capsys.readouterr().out
    for name in ("puregaze_eth", "gat_gaze360", "head_pose", "straight"):
        assert name in text
    assert "tiny_test" not in text
    assert "verified, RANDOM weights" in text and "ready (no weights needed)" in text
    assert cli(["methods", "--models-dir", str(tiny_models.parent / "empty"), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    missing = [r for r in rows if r["status"] == "missing weights"]
    assert len(missing) == 7 and all("models import" in r["fix"] for r in missing)


def test_profile_study_end_to_end(session_root, tiny_models, tmp_path, run_out):
    """`run --profile study` on the same sessions: the profile and its record in every
    file, the study's face rule cached under its own key, no ray correction / M^-1
    recorded, blinks masking the same frames as under reference; `--profile` typo:
    one line with a did-you-mean."""
    out = tmp_path / "study"
    argv = [
        "run",
        "--profile",
        "study",
        "--method",
        "tiny_test",
        "-m",
        "straight",
        "--input",
        "both",
        "--data",
        str(session_root),
        "--models-dir",
        str(tiny_models),
        "--out",
        str(out),
        "--batch",
        "4",
        "--no-progress",
    ]
    assert cli(argv) == 0
    ref_out = run_out[0]
    for name in ("tiny_test__crop", "tiny_test__rectified", "straight__none"):
        md = json.loads(pq.read_schema(out / f"{name}.parquet").metadata[METADATA_KEY])
        assert md["profile"] == "study"
        if name.startswith("tiny_test"):
            rec = md["profile_settings"]["record"]
            assert (
                rec["ray_correction"] is False
                and rec["denorm"] == "inverse_warp"
                and rec["track_rule"] == "most_frequent"
            )
            assert md["frame_correction"].endswith("(study)")
        a = pq.read_table(out / f"{name}.parquet").to_pandas()
        b = pq.read_table(ref_out / f"{name}.parquet").to_pandas()
        assert ((a["invalid_reason"] == "blink") == (b["invalid_reason"] == "blink")).all()
    assert any("-most_frequent-" in p.name for p in (out / ".cache" / "faces").glob("*.parquet"))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "gaze4hri_bench.cli",
            "run",
            "--profile",
            "studdy",
            "-m",
            "straight",
            "--data",
            str(session_root),
            "--out",
            str(tmp_path / "x"),
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0 and "did you mean study" in r.stderr and "Traceback" not in r.stderr


def test_deviations_command_and_the_reports_pipeline_sensitivity_section(session_root, run_out, tiny_models, tmp_path):
    """`gaze4hri-bench deviations --out REPORT/deviations` on recorded sessions: the oracle
    (a perfect network), then every setting through `run --profile study:SETTING` with the
    networks whose weights are present (here a tiny gradient GazeTR: random weights), then
    `analyze` into REPORT: the report shows the settings, both measurements and the figure.
    A setting the oracle sees (no ray correction on crops) has a non-zero effect, one it
    cannot see (the face box's margin) zero with the oracle and non-zero with a network. Bad input
    is one line."""
    import shutil

    import pandas as pd
    from gaze4hri_bench.stats.report import analyze
    from gaze4hri_bench.zoo import store

    report = tmp_path / "report"
    models = tmp_path / "models"  # weights for gazetr_eth only: the other network is measured by the oracle alone
    models.mkdir()
    shutil.copy2(tiny_models / "gazetr_eth.onnx", models / "gazetr_eth.onnx")
    store.write_record(models, "gazetr_eth", store.read_records(tiny_models)["gazetr_eth"])
    assert (
        cli(
            [
                "deviations",
                "--data",
                str(session_root),
                "-m",
                "l2cs_gaze360",
                "-m",
                "gazetr_eth",
                "--stride",
                "3",
                "--models-dir",
                str(models),
                "--trials",
                "illum100_P5",
                "--out",
                str(report / "deviations"),
            ]
        )
        == 0
    )
    tab = pd.read_parquet(report / "deviations" / "deviations.parquet")
    eff = tab.groupby("setting")["median_deg"].max()
    assert eff["no_ray_correction"] > 0.5 and eff["l2cs_first_head_as_pitch"] > 0.1 and eff["gazetr_eth_rgb"] == 0.0
    org = pd.read_csv(report / "deviations" / "origin.csv")  # face-centre vs eye-midpoint origin
    assert list(org["experiment"]) == ["illumination"] and 0.5 < org["median_deg"].iloc[0] < 10
    assert "### Where rectified predictions start" in (report / "deviations" / "deviations.md").read_text()
    net = pd.read_parquet(report / "deviations" / "network.parquet")
    assert set(net["network"]) == {"random weights"} and set(net["method"]) == {"gazetr_eth"}
    ne = net.groupby(["setting", "method", "input"])["median_deg"].max()
    assert ne["box_margin_10pct", "gazetr_eth", "crop"] > 0.01  # the crop: blind oracle, not a network
    assert ne["no_ray_correction", "gazetr_eth", "crop"] > 0.5
    assert ne["denorm_inverse_warp", "gazetr_eth", "crop"] == 0.0  # a crop is not de-normalized
    assert ne["denorm_inverse_warp", "gazetr_eth", "rectified"] > 0.01
    assert "l2cs_first_head_as_pitch" not in set(net["setting"])  # l2cs has no weights here
    sig = pd.read_parquet(report / "deviations" / "significance.parquet")
    assert sig["note"].str.contains("fewer than 3 subjects").all()  # one subject: no test to change
    runs = sorted(p.name for p in (report / "deviations" / "runs").iterdir())
    assert "reference" in runs and "study" in runs and "study_gazetr_eth_rgb" in runs
    md = json.loads(
        pq.read_schema(
            report / "deviations" / "runs" / "study_gazetr_eth_rgb" / "gazetr_eth__rectified.parquet"
        ).metadata[METADATA_KEY]
    )
    assert md["profile"] == "study:gazetr_eth_rgb" and md["profile_settings"]["settings"] == ["gazetr_eth_rgb"]
    out, _ = run_out
    analyze([out], report, figures=False)
    md = (report / "report.md").read_text()
    sec = md[md.index("## Pipeline sensitivity") : md.index("## Provenance")]
    assert "no_ray_correction" in sec
    assert "deviations/deviations.png" in sec and "perfect network" in sec and "network median deg" in sec
    html = (report / "report.html").read_text()
    assert "Pipeline sensitivity" in html
    assert cli(["deviations", "--data", str(session_root), "--stride", "0", "--out", str(tmp_path / "x")]) == 2
    assert cli(["deviations", "--data", str(session_root), "-m", "straight", "--out", str(tmp_path / "x")]) == 2
    assert cli(["deviations", "--data", str(session_root), "--alpha", "1.5", "--out", str(tmp_path / "x")]) == 2
    assert (
        cli(
            [
                "deviations",
                "--data",
                str(session_root),
                "-m",
                "gat_gaze360",
                "--network",
                "on",
                "--models-dir",
                str(tmp_path / "none"),
                "--out",
                str(tmp_path / "x"),
            ]
        )
        != 0
    )


def _tiny_run(data, models, out, prof, input_type="crop", share_faces=None):
    """tiny_test through run_benchmark with a hand-made profile (jobs=: the loop is the one users run)."""
    import pandas as pd
    from gaze4hri_bench.pipeline.run import RunConfig, plan_job, run_benchmark

    if share_faces is not None:  # the reference run's face tables: detect once (as `deviations` does)
        from gaze4hri_bench.pipeline.deviations_real import share_face_cache

        share_face_cache(share_faces, out)
    cfg = RunConfig(
        methods=("tiny_test",), data=data, out=out, input=input_type, models_dir=models, progress=False, batch=4
    )
    run_benchmark(cfg, log=lambda *_: None, jobs=[plan_job("tiny_test", input_type, prof, models)])
    df = pd.read_parquet(out / f"tiny_test__{input_type}.parquet")
    return df, json.loads(pq.read_schema(out / f"tiny_test__{input_type}.parquet").metadata[METADATA_KEY])


def _one(field, value):
    from gaze4hri_bench.profiles import Setting, make_profile

    return make_profile(
        f"test_{field}",
        "one field",
        (Setting(f"test_{field}", field, value, ("*",), "tests", "deliberate choice", "test"),),
    )


def test_clip_shift_and_smoothing_in_the_run_loop(session_root, tiny_models, run_out, tmp_path):
    """A profile's clip_shift moves each prediction to frame f + shift; its smoothing
    replaces frame f by normalize(a p[f] + (1-a)/2 (p[f-1] + p[f+1])): both checked against
    the reference run of the same network on the same frames."""
    ref = pq.read_table(run_out[0] / "tiny_test__crop.parquet").to_pandas()
    P = ["pred_x", "pred_y", "pred_z"]
    key = ["subject", "trial", "frame"]
    shifted, _ = _tiny_run(session_root, tiny_models, tmp_path / "shift", _one("clip_shift", 2), share_faces=run_out[0])
    j = shifted.merge(ref.assign(frame=ref["frame"] + 2), on=key, suffixes=("", "_r"))
    both = j[P].notna().all(axis=1) & j[[c + "_r" for c in P]].notna().all(axis=1)
    assert both.sum() >= 20
    np.testing.assert_allclose(j.loc[both, P].to_numpy(), j.loc[both, [c + "_r" for c in P]].to_numpy(), atol=1e-9)
    assert shifted.loc[shifted["frame"] < 2, "pred_x"].isna().all()  # nothing to show before the shift
    smooth, _ = _tiny_run(
        session_root, tiny_models, tmp_path / "smooth", _one("smoothing", 0.6), share_faces=run_out[0]
    )
    for (_s, _t), g in ref.groupby(["subject", "trial"]):
        r = g.set_index("frame")[P]
        sm = smooth[(smooth["subject"] == _s) & (smooth["trial"] == _t)].set_index("frame")[P]
        n = 0
        for f in r.index:
            if {f - 1, f, f + 1} <= set(r.dropna().index):
                v = 0.6 * r.loc[f].to_numpy() + 0.2 * (r.loc[f - 1].to_numpy() + r.loc[f + 1].to_numpy())
                np.testing.assert_allclose(sm.loc[f].to_numpy(), v / np.linalg.norm(v), atol=1e-9)
                n += 1
        assert n >= 8
    assert not np.allclose(smooth[P].fillna(0).to_numpy(), ref.sort_values(key)[P].fillna(0).to_numpy())


def test_mcgaze_clips_reach_the_network_at_their_official_padded_size(
    session_root, tiny_models, run_out, tmp_path, monkeypatch
):
    """MCGaze through the run loop (a gradient model with MCGaze's signature): the face
    fills the 180 px frame, so the head square is cut at the image border; every clip
    reaches ONNX Runtime with each frame's image size (long side 448) and cut to the
    official padded size of its frames; every frame with a face gets a prediction."""
    import pandas as pd
    from gaze4hri_bench.faces.crops import clip_pad_size
    from gaze4hri_bench.pipeline import engine
    from gaze4hri_bench.pipeline.deviations_real import share_face_cache
    from gaze4hri_bench.pipeline.run import RunConfig, plan_job, run_benchmark
    from gaze4hri_bench.pipeline.runtime import Runner

    calls = []

    class Recording(Runner):
        def run(self, *xs):
            calls.append((xs[0].shape, np.array(xs[1])))
            return super().run(*xs)

    monkeypatch.setattr(engine, "Runner", Recording)
    share_face_cache(run_out[0], tmp_path)
    cfg = RunConfig(
        methods=("mcgaze_gaze360",),
        data=session_root,
        out=tmp_path,
        input="crop",
        models_dir=tiny_models,
        progress=False,
        batch=4,
    )
    run_benchmark(cfg, log=lambda *_: None, jobs=[plan_job("mcgaze_gaze360", "crop", None, tiny_models)])
    assert calls
    for shape, hw in calls:
        assert hw.shape == (shape[0], 7, 2)
        for k in range(shape[0]):
            assert shape[3:] == clip_pad_size(hw[k], 448)
            present = hw[k][hw[k, :, 0] > 0]
            assert len(present) and (present.max(axis=1) == 448).all()
    assert min(s[3] for s, _ in calls) < 448  # cut at the border: padded to less than 448 rows
    df = pd.read_parquet(tmp_path / "mcgaze_gaze360__crop.parquet")
    ref = pq.read_table(run_out[0] / "tiny_test__crop.parquet").to_pandas()
    key = ["subject", "trial", "frame"]
    assert set(map(tuple, df.dropna(subset=["pred_x"])[key].to_numpy())) == set(
        map(tuple, ref.dropna(subset=["pred_x"])[key].to_numpy())
    )
    assert np.isfinite(df.dropna(subset=["pred_x"])[["pred_x", "pred_y", "pred_z"]].to_numpy()).all()


def test_a_frame_without_a_face_excludes_the_trial_under_the_study_rule(tiny_models, tmp_path):
    """study:trial_needs_every_face drops the whole trial with a reason naming the frame
    (log, provenance excluded_trials, every row no_face); reference loses only that frame."""
    write_session(
        tmp_path / "s", "S01", [TrialSpec("illum100_P5", size=(320, 180), seconds=0.3, no_face=(4,))], tmp=tmp_path
    )
    from gaze4hri_bench.profiles import get_profile

    ref, md_r = _tiny_run(tmp_path / "s", tiny_models, tmp_path / "ref", get_profile("reference"))
    assert ref.loc[ref["frame"] == 4, "invalid_reason"].item() == "no_face"
    assert (ref.loc[ref["frame"] != 4, "valid"]).all() and not md_r["excluded_trials"]
    st, md = _tiny_run(tmp_path / "s", tiny_models, tmp_path / "study", get_profile("study:trial_needs_every_face"))
    assert md["profile"] == "study:trial_needs_every_face"
    assert (st["invalid_reason"] == "no_face").all() and st["pred_x"].isna().all()
    (why,) = md["excluded_trials"].values()
    assert "frame 4" in str(why)
