"""Runtime devices (issue 22 item 3): I/O binding gives the unbound outputs bit for bit,
``--batch auto``, the warm-up at session creation, and ``--fp16``: a converted copy
cached under a content-hashed name whose parity check against FP32 prints the largest
gaze difference and refuses a model that differs (a swapped-axis "FP16" file included).

Everything runs on the CPU execution provider with tiny gradient models
(gaze4hri_bench.methods.testing); the CUDA variants run only where onnxruntime-gpu sees
a GPU (skipped here with the reason)."""
from __future__ import annotations

import argparse
import dataclasses
import shutil
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import pytest
from gaze4hri_bench.methods.testing import TINY_SPEC, build_gradient_onnx, gradient_angles
from gaze4hri_bench.pipeline import runtime
from gaze4hri_bench.pipeline.runtime import (
    AUTO,
    FP16_ENV,
    FP16_MAX_DEG,
    Runner,
    auto_batch,
    fp16_model,
    max_gaze_difference_deg,
    parse_batch,
    probe_inputs,
)
from gaze4hri_bench.specs import SPECS
from gaze4hri_core.errors import Gaze4HRIError

from .test_decode_once import stub_faces  # noqa: F401 - fixture: a moving face box, no detector model

pytestmark = pytest.mark.replay

HAS_CUDA = "CUDAExecutionProvider" in ort.get_available_providers()


@pytest.fixture
def tiny(tmp_path) -> Path:
    """A private copy of the tiny model (the FP16 cache is written next to it)."""
    return build_gradient_onnx(TINY_SPEC, tmp_path / TINY_SPEC.weights_file)


def _cpu_fp16_or_skip(path: Path) -> None:
    """Skip (with the reason) where the CPU execution provider has no FP16 kernel for an op."""
    try:
        ort.InferenceSession(str(fp16_model(path)), providers=["CPUExecutionProvider"])
    except Exception as e:  # noqa: BLE001 - onnxruntime's NOT_IMPLEMENTED
        pytest.skip(
            f"CPU execution provider of onnxruntime {ort.__version__} cannot run the FP16 model: {str(e)[:120]}"
        )


def test_io_binding_gives_the_unbound_outputs(tiny_models, tmp_path):
    x = np.random.default_rng(0).random((7, 3, 32, 32), dtype=np.float32)
    bound = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cpu", batch=3, io_binding=True)
    plain = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cpu", batch=3, io_binding=False)
    assert bound.io_binding and not plain.io_binding  # CPU default: unbound; bound when asked
    (a,), (b,) = bound.run(x), plain.run(x)  # 3 + 3 + a partial chunk of 1
    assert a.shape == (7, 2) and np.array_equal(a, b)
    pitch, yaw = gradient_angles(x)
    np.testing.assert_allclose(a, np.stack([pitch, yaw], 1), atol=1e-5)  # and they are the model's answer
    (again,) = bound.run(x[::-1].copy())  # the reused device buffers take the new contents
    np.testing.assert_array_equal(again, a[::-1])
    # two inputs (MCGaze's clip and frame sizes)
    spec = SPECS["mcgaze_gaze360"]
    mc = build_gradient_onnx(spec, tmp_path / "mc.onnx")
    xs = probe_inputs(spec, 3, seed=2)
    (g1,) = Runner(mc, spec, "cpu", batch=2, io_binding=True, warmup=False).run(*xs)
    (g2,) = Runner(mc, spec, "cpu", batch=2, io_binding=False, warmup=False).run(*xs)
    assert g1.shape == (3, 7, 3) and np.array_equal(g1, g2)


def test_batch_auto_and_parse_batch(tiny_models):
    assert parse_batch("auto") == AUTO and parse_batch("16") == 16
    for bad in ("0", "-2", "many"):
        with pytest.raises(Gaze4HRIError, match="--batch auto"):
            parse_batch(bad)
    r = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cpu", batch=AUTO)
    assert r.batch == runtime.CPU_AUTO_BATCH and "CPU" in r.batch_note  # on the CPU: the given default
    # sizing rule: largest power of two within the memory fraction, capped, at least 1
    assert auto_batch(1000, 10, cap=256, fraction=0.5) == 32  # 50 fit -> 32
    assert auto_batch(1e6, 10, cap=256) == 256
    assert auto_batch(100, 400, cap=256) == 1
    assert auto_batch(1000, 0.0, cap=64) == 64
    # the CLI takes it, and --fp16, into RunConfig
    from gaze4hri_bench.pipeline.cli_run import add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--batch", "auto", "--fp16"])
    assert args.batch == AUTO and args.fp16
    assert p.parse_args([]).batch == 8 and not p.parse_args([]).fp16
    with pytest.raises(SystemExit):
        p.parse_args(["--batch", "0"])


def test_warm_up_runs_at_creation_not_in_run(tiny_models):
    warm = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cpu", batch=4)
    cold = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cpu", batch=4, warmup=False)
    assert warm.warmup_s > 0 and cold.warmup_s == 0.0


def test_max_gaze_difference_is_the_decoded_angle():
    a = [np.array([[0.0, 0.0], [0.2, -0.1]], np.float32)]  # pitch, yaw radians
    b = [np.array([[0.0, 0.1], [0.2, -0.1]], np.float32)]
    assert max_gaze_difference_deg(TINY_SPEC, a, b) == pytest.approx(np.degrees(0.1), abs=1e-4)
    assert max_gaze_difference_deg(TINY_SPEC, a, a) == 0.0
    assert max_gaze_difference_deg(TINY_SPEC, a, [np.full((2, 2), np.nan, np.float32)]) == float("inf")


def test_fp16_copy_is_cached_checked_and_used(tiny, monkeypatch):
    _cpu_fp16_or_skip(tiny)
    said: list[str] = []
    r = Runner(tiny, TINY_SPEC, "cpu", batch=4, fp16=True, log=said.append)
    from gaze4hri_bench.zoo import store

    assert (
        r.fp16_path == tiny.with_name(f"tiny_test.fp16-{store.sha256_file(tiny)[:12]}.onnx") and r.fp16_path.is_file()
    )
    m = onnx.load(str(r.fp16_path))
    assert all(i.type.tensor_type.elem_type == onnx.TensorProto.FLOAT for i in m.graph.input)  # FP32 I/O kept
    assert any(t.data_type == onnx.TensorProto.FLOAT16 for t in m.graph.initializer)  # FP16 inside
    (line,) = said
    assert "max gaze difference" in line and f"limit {FP16_MAX_DEG:g} deg" in line
    assert 0.0 < r.fp16_deviation_deg < FP16_MAX_DEG  # FP16 really runs: not bit-equal to FP32, but close
    x = np.random.default_rng(3).random((6, 3, 32, 32), dtype=np.float32)
    (h,) = r.run(x)
    (f,) = Runner(tiny, TINY_SPEC, "cpu", batch=4).run(x)
    assert not np.array_equal(h, f) and np.degrees(np.abs(h - f).max()) < FP16_MAX_DEG
    # converted once: a second runner reuses the cached file
    mtime = r.fp16_path.stat().st_mtime_ns
    Runner(tiny, TINY_SPEC, "cpu", fp16=True, log=said.append)
    assert r.fp16_path.stat().st_mtime_ns == mtime and len(said) == 2


def test_fp16_parity_check_refuses_a_model_that_differs(tiny, monkeypatch):
    _cpu_fp16_or_skip(tiny)
    # a tight limit (argument, then $GAZE4HRI_FP16_MAX_DEG) refuses the real FP16 copy
    with pytest.raises(Gaze4HRIError) as ei:
        Runner(tiny, TINY_SPEC, "cpu", fp16=True, fp16_max_deg=1e-9, log=lambda _m: None)
    line = ei.value.line()
    assert "\n" not in line and "differs from FP32" in line and FP16_ENV in line and "without --fp16" in line
    monkeypatch.setenv(FP16_ENV, "0")
    with pytest.raises(Gaze4HRIError, match="differs from FP32"):
        Runner(tiny, TINY_SPEC, "cpu", fp16=True, log=lambda _m: None)
    monkeypatch.setenv(FP16_ENV, "lots")
    with pytest.raises(Gaze4HRIError, match="not a number"):
        Runner(tiny, TINY_SPEC, "cpu", fp16=True, log=lambda _m: None)
    monkeypatch.delenv(FP16_ENV)
    # a cached "FP16" file that answers yaw for pitch (same names and shapes) is caught
    cached = fp16_model(tiny)
    build_gradient_onnx(dataclasses.replace(TINY_SPEC, output="yawpitch_rad"), cached)
    said: list[str] = []
    with pytest.raises(Gaze4HRIError, match=r"differs from FP32 by up to \d+\.\d+ deg") as ei:
        Runner(tiny, TINY_SPEC, "cpu", fp16=True, log=said.append)
    assert "max gaze difference" in said[0]
    worst = float(said[0].split("max gaze difference ")[1].split(" deg")[0])
    # the printed figure is the largest angle between (pitch, yaw) and (yaw, pitch) on the parity batch
    from gaze4hri_core.gaze import angular_error_deg, pitchyaw_to_vector

    (x,) = probe_inputs(TINY_SPEC, runtime.PARITY_BATCH, seed=runtime.PARITY_SEED)
    pitch, yaw = gradient_angles(x)
    want = angular_error_deg(pitchyaw_to_vector(pitch, yaw, "A"), pitchyaw_to_vector(yaw, pitch, "A")).max()
    assert worst == pytest.approx(want, abs=2e-3) and worst > FP16_MAX_DEG


def test_run_with_fp16_passes_through_and_stays_close(tmp_path, tiny_models, stub_faces):  # noqa: F811
    from gaze4hri_bench.pipeline.run import RunConfig, plan_jobs, run_benchmark

    from ._synth import SynthDataset

    models = tmp_path / "models"
    shutil.copytree(tiny_models, models)
    _cpu_fp16_or_skip(models / TINY_SPEC.weights_file)
    frames = {}
    said: list[str] = []
    for fp16 in (False, True):
        cfg = RunConfig(
            methods=("tiny_test",),
            data=Path("/synthetic"),
            out=tmp_path / f"out{int(fp16)}",
            models_dir=models,
            progress=False,
            blinks="off",
            batch=5,
            detector="stub",
            input="rectified",
            fp16=fp16,
        )
        (path,) = run_benchmark(cfg, log=said.append, jobs=plan_jobs(cfg), dataset=SynthDataset(subjects=("S01",)))
        frames[fp16] = pd.read_parquet(path)
    a, b = frames[False], frames[True]
    assert a["valid"].sum() > 0 and (a["valid"] == b["valid"]).all()
    va, vb = a[a["valid"]], b[b["valid"]]
    from gaze4hri_core.gaze import angular_error_deg

    diff = angular_error_deg(
        va[["pred_x", "pred_y", "pred_z"]].to_numpy(), vb[["pred_x", "pred_y", "pred_z"]].to_numpy()
    )
    assert 0.0 < diff.max() < FP16_MAX_DEG  # the FP16 model ran (not bit-equal) and agrees
    assert any("FP16 vs FP32" in s for s in said)


def test_batch_auto_records_the_batch_it_chose(tmp_path, tiny_models, stub_faces):  # noqa: F811
    """--batch auto (0) is provenance only as the size the runner chose, never 0."""
    from gaze4hri_bench.pipeline import results
    from gaze4hri_bench.pipeline.run import RunConfig, plan_jobs, run_benchmark
    from gaze4hri_bench.pipeline.runtime import AUTO, CPU_AUTO_BATCH

    from ._synth import SynthDataset

    cfg = RunConfig(
        methods=("tiny_test",),
        data=Path("/synthetic"),
        out=tmp_path / "out",
        models_dir=tiny_models,
        progress=False,
        blinks="off",
        batch=AUTO,
        detector="stub",
        input="rectified",
    )
    (path,) = run_benchmark(cfg, log=lambda *_: None, jobs=plan_jobs(cfg), dataset=SynthDataset(subjects=("S01",)))
    assert results.read_metadata(path)["timing"]["batch"] == CPU_AUTO_BATCH != AUTO


@pytest.mark.skipif(not HAS_CUDA, reason="onnxruntime-gpu with a visible GPU needed (CPU-only onnxruntime here)")
def test_cuda_bound_runner_matches_cpu(tiny_models):
    x = np.random.default_rng(4).random((11, 3, 32, 32), dtype=np.float32)
    gpu = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cuda", batch=4)
    assert gpu.device == "cuda" and gpu.io_binding and gpu.warmup_s > 0
    (g,) = gpu.run(x)  # 4 + 4 + 3 padded to 4
    (c,) = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cpu", batch=4).run(x)
    assert g.shape == (11, 2)
    np.testing.assert_allclose(g, c, atol=1e-4)
    auto = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cuda", batch=AUTO)
    assert auto.batch >= 1 and "batch auto" in auto.batch_note


def test_nvidia_smi_memory_is_read_for_this_process_or_the_whole_gpu():
    from gaze4hri_bench.pipeline.runtime import parse_nvidia_smi

    gpus = "GPU-aaa, 80000, 81559, NVIDIA H100 80GB HBM3\nGPU-bbb, 40000, 81559, NVIDIA H100 80GB HBM3\n"
    apps = "111, GPU-aaa, 500\n4242, GPU-bbb, 1234\n4242, GPU-bbb, 66\n"
    m = parse_nvidia_smi(gpus, apps, 4242)  # our process on the second GPU, two contexts
    assert m == {"used": 1300.0, "free": 40000.0, "total": 81559.0, "name": "NVIDIA H100 80GB HBM3", "scope": "process"}
    m = parse_nvidia_smi(gpus, apps, 9)  # not listed (own PID namespace): the first GPU, total - free
    assert m["scope"] == "device" and m["used"] == 1559.0 and m["free"] == 80000.0
    assert parse_nvidia_smi("", apps, 9) is None


@pytest.mark.skipif(HAS_CUDA, reason="the no-GPU report; with a GPU the script measures (minutes)")
def test_gpu_table_without_a_gpu_writes_not_measured_rows(tmp_path):
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_table_s10.py"
    out = tmp_path / "gpu.md"
    res = subprocess.run([sys.executable, str(script), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and res.stdout.count("\n") == 1 and res.stdout.startswith("not measured: no GPU")
    text = out.read_text()
    rows = [ln for ln in text.splitlines() if ln.startswith("| ") and "`" in ln.split("|")[1]]
    assert len(rows) == 5 and all("not measured (no GPU: CUDA execution provider not available)" in r for r in rows)
    assert "| 142.25 | 1.93 | 518 |" in rows[0]  # the study's PureGaze figures beside it, never ours
    # a report with measured figures is kept, not overwritten by a machine without a GPU
    from importlib.util import module_from_spec, spec_from_file_location

    sys.path.insert(0, str(script.parent))
    try:
        spec = spec_from_file_location("gpu_table_s10", script)
        mod = module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.path.remove(str(script.parent))
    out.write_text(f"{mod.MARK}\nmeasured\n")
    res = subprocess.run([sys.executable, str(script), "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "keeps its measured figures" in res.stdout and out.read_text().endswith("measured\n")
