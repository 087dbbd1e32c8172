"""The methods side's run loop on real MCAP bags read by data.reader (contract check
between the two halves of the benchmark): the head-pose baseline and a tiny ONNX
network on crops (MediaPipe + BYTETracker) and rectified inputs (mocap normalization)
give one row per ground-truth frame with the data-side validity reasons."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.testing.session import TrialSpec, write_session

pytestmark = pytest.mark.replay


def test_run_loop_reads_recorded_sessions(tmp_path):
    pytest.importorskip("mediapipe")
    from gaze4hri_bench.methods import get_method
    from gaze4hri_bench.methods.testing import build_gradient_onnx
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
    from gaze4hri_bench.zoo import store

    root = tmp_path / "root"
    write_session(
        root,
        "S01",
        [TrialSpec("illum100_P5", seconds=0.5, size=(480, 270), drop=(4,), mocap_gap=(0.25, 0.4))],
        tmp=tmp_path,
    )
    models = tmp_path / "models"
    models.mkdir()
    spec = get_method("tiny_test").spec
    p = build_gradient_onnx(spec, models / spec.weights_file)
    store.write_record(
        models,
        "tiny_test",
        {
            "method": "tiny_test",
            "random_init": True,
            "onnx": p.name,
            "onnx_sha256": store.sha256_file(p),
            "note": "tiny gradient test model",
        },
    )
    cfg = RunConfig(
        methods=("head_pose", "tiny_test"),
        data=root,
        out=tmp_path / "out",
        input="both",
        detector="mediapipe",
        models_dir=models,
        progress=False,
        command_line="pytest",
    )
    paths = {Path(x).name: x for x in run_benchmark(cfg, log=lambda *_: None)}
    assert set(paths) == {"head_pose__none.parquet", "tiny_test__crop.parquet", "tiny_test__rectified.parquet"}
    for name, path in paths.items():
        df = pd.read_parquet(path)
        assert len(df) == 15  # 15 camera frames, one of them a dropped placeholder
        r = df["invalid_reason"].value_counts().to_dict()
        assert r.get("dropped_frame") == 1 and r.get("mocap_lost", 0) >= 3, (name, r)
        ok = df[df["valid"]]
        assert len(ok) >= 8 and np.isfinite(ok["error_deg"]).all(), name
        assert (df["subject"] == "S01").all() and (df["target"] == "P5").all()
