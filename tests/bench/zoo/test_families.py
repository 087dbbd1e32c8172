"""Every family of specs.py, on random weights: the state dict equals the recorded
manifest, forward shapes follow the spec, a checkpoint in the official container layout
imports, and the exported ONNX model has the spec's I/O and matches PyTorch."""
from __future__ import annotations

import re

import numpy as np
import onnx
import pytest
import yaml

torch = pytest.importorskip("torch")

from gaze4hri_bench.zoo import families  # noqa: E402
from gaze4hri_bench.zoo._manifest import load_manifest, shapes_of
from gaze4hri_bench.zoo.export import PARITY_ATOL, TRACE_BATCH, example_inputs, ort_session
from gaze4hri_bench.zoo.manifests import official_layout
from gaze4hri_bench.zoo.store import sha256_file

from .conftest import family_params

CHEAP = pytest.mark.parametrize("family", family_params())
EXPORTS = pytest.mark.parametrize("family", family_params(heavy=True))  # each family's ONNX export (MCGaze: long tier)


def _outputs(model, xs):
    with torch.no_grad():
        out = model(*xs)
    return out if isinstance(out, tuple | list) else (out,)



@pytest.mark.unit
@CHEAP
def test_state_dict_equals_recorded_manifest(family, zoo_model):
    spec, mod, model = zoo_model(family)
    path = families.manifest_path(spec, mod)
    assert path is not None and path.is_file(), f"no manifest for {family} at {path}"
    manifest = load_manifest(path)
    # names, order and shapes, exactly
    assert shapes_of(mod.build().state_dict()) == [(n, tuple(s)) for n, s in manifest.tensors]
    assert set(families.FAMILIES[family]) <= set(manifest.meta.get("methods", families.FAMILIES[family]))


@pytest.mark.unit
@CHEAP
def test_official_layout_is_manifest_plus_dropped(family, zoo_model):
    """What the official container holds = inference tensors + the documented dropped ones."""
    spec, mod, _ = zoo_model(family)
    manifest = load_manifest(families.manifest_path(spec, mod))
    official = {k: tuple(v.shape) for k, v in official_layout(mod).items()}
    expected = dict(manifest.tensors)
    for name, shape in manifest.dropped:
        expected[name] = shape if shape is not None else official.get(name)
    assert official == expected


@pytest.mark.unit
@EXPORTS
def test_forward_shapes_follow_spec(family, zoo_model):
    spec, _, model = zoo_model(family)
    batch = 2 if spec.clip_len == 1 else 1
    outs = _outputs(model, example_inputs(spec, batch, seed=7))
    assert len(outs) == len(spec.onnx_outputs)
    for o, dims in zip(outs, spec.onnx_outputs.values(), strict=True):
        assert tuple(o.shape) == tuple(batch if d == "B" else d for d in dims)
        assert torch.isfinite(o).all()


@pytest.mark.replay
@EXPORTS
def test_import_of_official_container_records_provenance(family, zoo_imported):
    imp = zoo_imported(family)
    assert imp.onnx.is_file()
    doc = yaml.safe_load((imp.models_dir / "manifest.yaml").read_text())
    rec = doc["models"][imp.spec.name]
    assert rec["checkpoint_sha256"] == sha256_file(imp.checkpoint)
    assert rec["onnx_sha256"] == sha256_file(imp.onnx)
    assert rec["random_init"] is False
    assert (rec["source"], rec["licence"], rec["train_set"]) == (
        imp.spec.source_url,
        imp.spec.licence,
        imp.spec.train_set,
    )
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", rec["imported_utc"])
    assert rec["parity"]["max_abs_diff"] < PARITY_ATOL
    assert rec["opset"] == 17


@pytest.mark.replay
@EXPORTS
def test_onnx_io_is_exactly_the_spec(family, zoo_imported):
    imp = zoo_imported(family)
    g = onnx.load(str(imp.onnx), load_external_data=False).graph
    inits = {i.name for i in g.initializer}

    def dims(vi):
        return tuple(d.dim_param or d.dim_value for d in vi.type.tensor_type.shape.dim)

    assert [(v.name, dims(v)) for v in g.input if v.name not in inits] == list(imp.spec.onnx_inputs.items())
    assert [(v.name, dims(v)) for v in g.output] == list(imp.spec.onnx_outputs.items())


@pytest.mark.replay
@EXPORTS
def test_onnx_runtime_matches_the_model_written_into_the_checkpoint(family, zoo_imported):
    """End to end: official layout -> key mapping -> ONNX reproduces the original weights."""
    imp = zoo_imported(family)
    batch = TRACE_BATCH + 1 if imp.spec.clip_len == 1 else 1  # not the traced batch size
    xs = example_inputs(imp.spec, batch, seed=2024)
    got = ort_session(imp.onnx).run(None, {n: x.numpy() for n, x in zip(imp.spec.onnx_inputs, xs, strict=True)})
    ref = _outputs(imp.model, xs)
    for g, r in zip(got, ref, strict=True):
        assert g.shape == tuple(r.shape)
        assert np.max(np.abs(g - r.numpy())) < PARITY_ATOL
    # and the outputs depend on the input (a constant graph would pass the check above):
    # first vs last sample of the batch, or first vs last frame of a single clip
    flat = got[0].reshape(-1, got[0].shape[-1])
    assert not np.allclose(flat[0], flat[-1])


@pytest.mark.replay
@EXPORTS
def test_verify_passes_then_detects_tampering(family, zoo_imported, cli, tmp_path):
    imp = zoo_imported(family)
    res = cli("models", "verify", imp.spec.name, "--models-dir", imp.models_dir)
    assert res.rc == 0 and res.out.startswith("OK"), res.out + res.err
    # a copy of the folder with one byte appended to the ONNX file must fail verification
    copy = tmp_path / "models"
    copy.mkdir()
    (copy / "manifest.yaml").write_bytes((imp.models_dir / "manifest.yaml").read_bytes())
    (copy / imp.onnx.name).write_bytes(imp.onnx.read_bytes() + b"\0")
    res = cli("models", "verify", imp.spec.name, "--models-dir", copy)
    assert res.rc == 1 and "sha256" in res.out
