"""Runtime: weight resolution and its one-line errors, device choice (no silent
fallback), spec-checked sessions, batching, and the bounded prefetch thread."""
from __future__ import annotations

import dataclasses
import shutil
import threading
import time

import numpy as np
import onnxruntime as ort
import pytest
from gaze4hri_bench.methods import get_method
from gaze4hri_bench.methods.testing import TINY_SPEC, build_gradient_onnx
from gaze4hri_bench.pipeline.runtime import MissingWeightsError, Runner, choose_providers, prefetch, resolve_model
from gaze4hri_bench.specs import SPECS
from gaze4hri_core.errors import Gaze4HRIError

pytestmark = pytest.mark.replay


@pytest.mark.parametrize("name", list(SPECS))
def test_missing_weights_is_one_actionable_line(name, tmp_path):
    spec = SPECS[name]
    with pytest.raises(MissingWeightsError) as ei:
        resolve_model(spec, tmp_path)
    line = ei.value.line()
    assert "\n" not in line
    assert str(tmp_path / spec.weights_file) in line and "sha256" in line
    assert spec.source_url in line and f"gaze4hri-bench models import {name} CHECKPOINT" in line


def test_modified_model_is_refused(tiny_models, tmp_path):
    d = tmp_path / "m"
    shutil.copytree(tiny_models, d)
    mf = resolve_model(TINY_SPEC, d)
    assert mf.verified and mf.random_init
    with open(d / TINY_SPEC.weights_file, "ab") as f:
        f.write(b"\0")
    with pytest.raises(MissingWeightsError, match="re-import"):
        resolve_model(TINY_SPEC, d)


def test_device_choice_never_falls_back_silently():
    assert choose_providers("cpu") == ["CPUExecutionProvider"]
    avail = ort.get_available_providers()
    auto = choose_providers("auto")
    assert auto[-1] == "CPUExecutionProvider"
    assert ("CUDAExecutionProvider" in auto) == ("CUDAExecutionProvider" in avail)
    if "CUDAExecutionProvider" not in avail:
        with pytest.raises(Gaze4HRIError, match="onnxruntime-gpu"):
            choose_providers("cuda")
    with pytest.raises(Gaze4HRIError, match="unknown device"):
        choose_providers("tpu")


def test_runner_batches_and_checks_the_contract(tiny_models, tmp_path):
    r = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cpu", batch=3)
    x = np.random.default_rng(0).random((7, 3, 32, 32), dtype=np.float32)
    (out,) = r.run(x)
    (ref,) = Runner(tiny_models / TINY_SPEC.weights_file, TINY_SPEC, "cpu", batch=64).run(x)
    assert out.shape == (7, 2)
    np.testing.assert_allclose(out, ref, atol=1e-6)
    # a file with another method's signature is refused with a one-line error
    with pytest.raises(Gaze4HRIError, match="input shape|inputs"):
        Runner(tiny_models / SPECS["l2cs_gaze360"].weights_file, TINY_SPEC, "cpu")
    other = build_gradient_onnx(SPECS["mcgaze_gaze360"], tmp_path / "x.onnx")
    with pytest.raises(Gaze4HRIError):
        Runner(other, SPECS["gat_gaze360"], "cpu")
    # two inputs (MCGaze's clip and frame sizes), each batched
    mc = Runner(other, SPECS["mcgaze_gaze360"], "cpu", batch=1)
    clips = np.random.default_rng(1).random((2, 7, 3, 448, 448), dtype=np.float32)
    (g,) = mc.run(clips, np.full((2, 7, 2), 448.0, np.float32))
    assert g.shape == (2, 7, 3)
    with pytest.raises(ValueError, match="inputs"):
        mc.run(clips)
    # an MCGaze export from before the frame_hw input is refused with the re-import command
    old = build_gradient_onnx(dataclasses.replace(SPECS["mcgaze_gaze360"], onnx_inputs={"clip": ("B", 7, 3, 448, 448)}),
                              tmp_path / "old.onnx")
    with pytest.raises(Gaze4HRIError, match="models import mcgaze_gaze360"):
        Runner(old, SPECS["mcgaze_gaze360"], "cpu")
    bad = tmp_path / "bad.onnx"
    bad.write_bytes(b"not onnx")
    with pytest.raises(Gaze4HRIError, match="cannot load"):
        Runner(bad, TINY_SPEC, "cpu")


def test_prefetch_overlaps_is_bounded_and_reraises():
    produced = []

    def gen():
        for i in range(100):
            produced.append(i)
            yield i

    it = prefetch(gen(), maxsize=4)
    assert next(it) == 0
    time.sleep(0.2)
    assert len(produced) <= 4 + 2  # the producer waits: at most maxsize queued + one in hand
    assert list(it) == list(range(1, 100))

    def boom():
        yield 1
        raise RuntimeError("decode failed")

    with pytest.raises(RuntimeError, match="decode failed"):
        list(prefetch(boom()))
    # an abandoned iterator stops its thread
    before = threading.active_count()
    it2 = prefetch(iter(range(10_000)), maxsize=2)
    next(it2)
    it2.close()
    time.sleep(0.3)
    assert threading.active_count() <= before


def test_method_keeps_its_spec_shapes():
    for name in SPECS:
        m = get_method(name)
        assert m.input_names == list(m.spec.onnx_inputs)
