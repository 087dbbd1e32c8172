"""The run loop end to end on a synthetic dataset: one row per frame in the results
schema, provenance metadata, NaN errors where invalid, known baseline errors, resume."""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from gaze4hri_bench.pipeline import results
from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
from gaze4hri_bench.schema import COLUMNS, METADATA_KEY, SCHEMA_VERSION
from gaze4hri_core.gaze import angular_error_deg

from ._synth import SynthDataset

pytestmark = pytest.mark.replay


def _cfg(out: Path, methods, **kw) -> RunConfig:
    return RunConfig(methods=tuple(methods), data=Path("/synthetic"), out=out, progress=False,
                     command_line="pytest run", **kw)


def test_baselines_rows_schema_and_known_errors(tmp_path):
    ds = SynthDataset()
    paths = run_benchmark(_cfg(tmp_path, ["straight", "head"]), log=lambda *_: None, dataset=ds)
    assert sorted(p.name for p in paths) == ["head_pose__none.parquet", "straight__none.parquet"]
    for p in paths:
        pf = pq.ParquetFile(p)
        assert pf.schema_arrow.names == list(COLUMNS)
        df = pf.read().to_pandas()
        assert len(df) == 2 * 2 * ds.n  # one row per frame
        assert df["valid"].sum() == 2 * 2 * (ds.n - 1)
        assert df.loc[~df["valid"], "invalid_reason"].eq("blink").all()
        assert df.loc[~df["valid"], "error_deg"].isna().all() and df.loc[df["valid"], "error_deg"].notna().all()
        pred = df[["pred_x", "pred_y", "pred_z"]].to_numpy()
        np.testing.assert_allclose(np.linalg.norm(pred, axis=1), 1.0, atol=1e-9)
        md = json.loads(pf.schema_arrow.metadata[METADATA_KEY])
        assert md["schema"] == SCHEMA_VERSION and md["input"] == "none" and md["command_line"] == "pytest run"
        t = md["timing"]
        assert t["frames"] == 2 * 2 * ds.n and t["fps"] > 0 and t["peak_rss_mb"] > 10 and t["peak_vram_mb"] is None
        assert set(t) >= {"decode_s", "detect_s", "preprocess_s", "infer_s", "infer_ms_per_frame", "device", "batch"}
        assert md["calibration_hashes"]["S01"] == {"camera_info.yaml": "ab" * 32}
        assert md["weights_sha256"] is None and md["spec"] is None
        v = df[df["valid"]]
        gt = v[["gt_x", "gt_y", "gt_z"]].to_numpy()
        if md["method"] == "straight":
            np.testing.assert_allclose(v["error_deg"], angular_error_deg(gt, [0, 0, -1]), atol=1e-9)
        else:  # head_pose's error is the head-gaze conflict by definition
            np.testing.assert_allclose(v["error_deg"], v["head_gaze_conflict_deg"], atol=1e-6)
        assert set(df["experiment"]) == {"illumination", "mutual"}
        assert set(df["condition"]) == {"100", "h_fast"}


def test_resume_skips_finished_trials(tmp_path):
    ds = SynthDataset()
    cfg = _cfg(tmp_path, ["straight"])
    run_benchmark(cfg, log=lambda *_: None, dataset=ds)
    first = ds.decoded
    parts = sorted((tmp_path / ".parts" / "straight__none").glob("*.parquet"))
    assert len(parts) == 4
    mtimes = {p: p.stat().st_mtime_ns for p in parts}
    run_benchmark(cfg, log=lambda *_: None, dataset=ds)
    assert ds.decoded == first  # nothing decoded again
    assert all(p.stat().st_mtime_ns == m for p, m in mtimes.items())
    os.remove(parts[0])
    run_benchmark(cfg, log=lambda *_: None, dataset=ds)
    assert ds.decoded == first + ds.n  # only the missing trial
    df = pq.read_table(results.result_path(tmp_path, "straight", "none")).to_pandas()
    assert len(df) == 4 * ds.n and not df.duplicated(["subject", "trial", "frame"]).any()


def test_statistics_read_the_results(tmp_path):
    from gaze4hri_bench.stats.load import load_results

    paths = run_benchmark(_cfg(tmp_path, ["straight", "head_pose"]), log=lambda *_: None, dataset=SynthDataset())
    loaded = load_results(paths)
    assert all(f.status == "used" for f in loaded.files)
    assert set(loaded.videos["method"].astype(str)) == {"straight", "head_pose"}
    assert (loaded.videos["n_valid"] == SynthDataset().n - 1).all()
