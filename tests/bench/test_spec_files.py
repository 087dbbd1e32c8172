"""Method spec files (issue 30, item 1): a spec for each output rule and input kind read
into a MethodSpec, checked against its ONNX graph and decoded to the gaze its constant
network encodes; ``methods add`` and ``run --method x.yaml`` end to end; every malformed
field refused in one line naming the file and the field (exit 2, no traceback)."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from gaze4hri_bench.cli import main as cli_main
from gaze4hri_bench.methods import METHODS
from gaze4hri_bench.methods.network import OnnxMethod
from gaze4hri_bench.methods.plugins import _SOURCES
from gaze4hri_bench.pipeline import results
from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
from gaze4hri_bench.spec_file import SpecError, check_onnx, load_spec, spec_hash

from ._spec_files import INPUTS, RULES, spec_dict, write_spec
from ._synth import SynthDataset


@pytest.fixture
def unregister():
    """Names registered by a test are taken out again afterwards (the registry is global)."""
    names: list[str] = []
    yield names
    for n in names:
        if n in METHODS:
            METHODS.remove(n)
        _SOURCES.pop(n, None)


@pytest.mark.parametrize("clip", [1, 4])
@pytest.mark.parametrize("kind", list(INPUTS))
@pytest.mark.parametrize("rule", list(RULES))
def test_each_output_rule_and_input_kind_decodes_to_the_encoded_gaze(tmp_path, rule, kind, clip):
    import onnxruntime as ort

    d = spec_dict(f"net_{clip}", rule, kind, clip)
    spec, aliases = load_spec(write_spec(tmp_path, d, rule))
    assert spec.input_type == kind and spec.clip_len == clip and aliases == ()
    assert Path(spec.weights_file) == (tmp_path / d["weights_file"]).resolve()  # next to the spec file
    if kind == "rectified":  # scale 1: pixel-unit mean/std folded into the pipeline's /255 form
        assert spec.normalization == {"focal_px": 960.0, "distance_mm": 600.0, "size": 32}
        assert spec.mean == (100 / 255, 110 / 255, 120 / 255) and spec.std == (50 / 255, 55 / 255, 60 / 255)
    else:
        assert spec.crop_rule == "l2cs_face_box" and spec.normalization == {}
    check_onnx(spec, spec.weights_file)
    shape = [3 if isinstance(a, str) else a for a in d["onnx"]["inputs"]["face"]]
    outs = ort.InferenceSession(spec.weights_file).run(None, {"face": np.zeros(shape, np.float32)})
    g = OnnxMethod(spec.name, spec).decode(outs)
    assert g.shape == ((3, 3) if clip == 1 else (3, clip, 3))
    np.testing.assert_allclose(g.reshape(-1, 3), np.broadcast_to(RULES[rule][2], (g.size // 3, 3)), atol=1e-6)


def test_scale_one_gives_the_tensor_of_pixel_unit_mean_and_std(tmp_path):
    """(x/1 - m)/s with pixel-unit m, s: the folded spec feeds the network the same values."""
    from gaze4hri_bench.faces.crops import to_tensor

    spec, _ = load_spec(write_spec(tmp_path, spec_dict("scaled", kind="rectified")))
    patch = np.random.default_rng(0).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    want = (patch[..., ::-1].astype(np.float64) - [100, 110, 120]) / [50, 55, 60]  # bgr
    np.testing.assert_allclose(to_tensor(patch, spec), want.transpose(2, 0, 1), atol=1e-4)


@pytest.fixture
def stub_faces(monkeypatch):
    """A face detector that finds one box drifting with the frame count (crops differ)."""
    from gaze4hri_bench.faces.detectors import FaceDetection
    from gaze4hri_bench.pipeline import face_pass

    class Stub:
        name, has_landmarks, calls = "stub", False, 0

        def detect(self, image):
            self.calls += 1
            k = self.calls % 5
            return [FaceDetection(np.array([20.0 + k, 12.0, 70.0 + k, 62.0]), 0.9)]

        def close(self):
            pass

    def detector(self):
        if self._det is None:
            self._det = Stub()
        return self._det

    monkeypatch.setattr(face_pass.FaceModels, "detector", detector)


@pytest.mark.long  # 7 built-in runs; the field-by-field spec test (test_method_specs.py) stays in the default tier
@pytest.mark.replay
@pytest.mark.parametrize("builtin", ["puregaze_eth", "puregaze_gaze360", "gazetr_eth", "gazetr_gaze360",
                                     "l2cs_gaze360", "mcgaze_gaze360", "gat_gaze360"])
def test_a_builtins_spec_file_as_a_users_gives_its_rows(tmp_path, tiny_models, unregister, stub_faces, builtin):
    """One format: a built-in's shipped spec file, copied under another name beside the
    same network and run as a user's spec file, gives the built-in's rows bit for bit
    (both inputs: crops, rectified patches, clips)."""
    import shutil

    from gaze4hri_bench.specs import SPEC_DIR

    mine = f"my_{builtin}"
    data = yaml.safe_load((SPEC_DIR / f"{builtin}.yaml").read_text())
    data.update(name=mine, aliases=[], weights_file=f"{mine}.onnx")
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copyfile(tiny_models / f"{builtin}.onnx", folder / f"{mine}.onnx")
    (folder / f"{mine}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))  # tensor order is meaningful
    unregister.append(mine)
    cfg = dict(data=Path("/synthetic"), models_dir=tiny_models, progress=False, blinks="off", input="both",
               detector="stub", command_line="pytest")
    a = run_benchmark(RunConfig(methods=(builtin,), out=tmp_path / "a", **cfg), log=lambda *_: None,
                      dataset=SynthDataset())
    b = run_benchmark(RunConfig(methods=(str(folder / f"{mine}.yaml"),), out=tmp_path / "b", **cfg),
                      log=lambda *_: None, dataset=SynthDataset())
    assert [p.name.replace(builtin, mine) for p in a] == [p.name for p in b] and len(a) == 2
    cols = ["pred_x", "pred_y", "pred_z", "error_deg", "valid", "invalid_reason"]
    for pa, pb in zip(a, b, strict=True):
        ra, rb = (results.pq.read_table(p).to_pandas() for p in (pa, pb))
        assert ra[cols].equals(rb[cols]) and ra["pred_x"].notna().sum() > 10
        ma, mb = results.read_metadata(pa), results.read_metadata(pb)
        assert ma["spec_sha256"] != mb["spec_sha256"]  # the name differs, so the spec does
        assert mb["spec_sha256"] == spec_hash(load_spec(folder / f"{mine}.yaml")[0])
        assert mb["spec_file"] == str(folder / f"{mine}.yaml") and ma["spec_file"] is None
        assert mb["weights_sha256"] == ma["weights_sha256"] == mb["weights"]["onnx_sha256"]


def _cli(*argv) -> tuple[int, str, str]:
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main([str(a) for a in argv])
        except SystemExit as e:
            rc = int(e.code or 0)
    return rc, out.getvalue(), err.getvalue()


@pytest.mark.replay
def test_methods_add_then_run_by_name(tmp_path, unregister):
    d = spec_dict("mynet", "bins_pitch_yaw", "crop")
    d["aliases"] = ["my"]
    src = write_spec(tmp_path / "src", d, "bins_pitch_yaw")
    models = tmp_path / "models"
    rc, out, err = _cli("methods", "add", src, "--models-dir", models)
    assert rc == 0 and "added mynet" in out, err
    assert (models / "mynet.yaml").is_file() and (models / "mynet.onnx").is_file()
    rc, out, err = _cli("methods", "add", src, "--models-dir", models)  # twice: refused, --force replaces
    assert rc == 2 and "mynet.yaml: name: 'mynet' was added before" in err and "--force" in err
    assert _cli("methods", "add", src, "--models-dir", models, "--force")[0] == 0
    unregister.append("mynet")
    rc, out, err = _cli("methods", "--models-dir", models)
    from gaze4hri_bench.pipeline.cli_run import available_methods

    assert "mynet" in available_methods(models)  # a plain `run` takes it, as any method with weights
    assert rc == 0 and any(line.split()[:4] == ["mynet", "onnx", "crop", "verified"] for line in out.splitlines())
    paths = run_benchmark(RunConfig(methods=("my",), data=Path("/synthetic"), out=tmp_path / "out",
                                    models_dir=models, progress=False, blinks="off", input="rectified"),
                          log=lambda *_: None, dataset=SynthDataset())
    df = results.pq.read_table(paths[0]).to_pandas()
    assert paths[0].name == "mynet__rectified.parquet" and df["pred_x"].notna().any()
    md = results.read_metadata(paths[0])
    assert md["spec_file"] == str(models / "mynet.yaml") and md["weights"]["verified"]


def _bad(d: dict, path: list, value) -> dict:
    """``d`` with the field at ``path`` set to ``value`` (``...``: removed)."""
    node = d
    for k in path[:-1]:
        node = node[k]
    if value is ...:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return d


MALFORMED = [  # (field path, value, field named in the error, words of the message)
    (["name"], ..., "name", "Field required"),
    (["name"], "My Net", "name", "should match pattern"),
    (["format"], 2, "format", "Input should be 1"),
    (["colour_order"], "rgb", "colour_order", "unknown field"),
    (["weights_file"], "mynet.pt", "weights_file", "must name an .onnx file"),
    (["weights_sha256"], "abc", "weights_sha256", "should match pattern"),
    (["input", "kind"], "video", "input.kind", "'crop' or 'rectified'"),
    (["input", "size"], -1, "input.size", "greater than 0"),
    (["input", "crop_rule"], ..., "input.crop_rule", "a crop input needs it"),
    (["input", "crop_rule"], "no_such_rule", "input.crop_rule", "is not a crop rule"),
    (["input", "normalization"], {"focal_px": 960, "distance_mm": 600}, "input.normalization",
     "only rectified inputs"),
    (["input", "colour"], "rbg", "input.colour", "'rgb' or 'bgr'"),
    (["input", "scale"], 0, "input.scale", "greater than 0"),
    (["input", "mean"], [0.5, 0.5], "input.mean", "2 values given, one per channel needed (3)"),
    (["onnx", "inputs"], {"face": ["B", 3.5, 32, 32]}, "onnx.inputs.face", "valid integer"),
    (["input", "std"], [0.2, 0.0, 0.2], "input.std", "every std must be > 0"),
    (["clip"], {"length": 4, "stride": 1, "out_index": 4}, "clip.out_index", "0 <= out_index < 4"),
    (["clip"], {"length": 0}, "clip.length", "greater than or equal to 1"),
    (["onnx", "inputs"], {"face": ["B", 3, 64, 64]}, "onnx.inputs.face", "does not match input.size"),
    (["onnx", "outputs"], {}, "onnx.outputs", "name at least one tensor"),
    (["onnx", "outputs"], {"gaze": ["B", 3]}, "onnx.outputs.gaze", "last axis is 3"),
    (["output", "kind"], "matrix", "output.kind", "'angles', 'vector' or 'bins'"),
    (["output", "unit"], ..., "output.unit", "angles outputs need it"),
    (["output", "frame"], "A", "output.frame", "angles outputs take no frame"),
    (["output", "order"], "roll_pitch", "output.order", "'pitch_yaw' or 'yaw_pitch'"),
]


@pytest.mark.parametrize("path,value,field,words", MALFORMED, ids=[".".join(m[0]) + f"={m[1]!r}" for m in MALFORMED])
def test_each_malformed_field_is_one_line_naming_it(tmp_path, path, value, field, words):
    d = _bad(spec_dict("mynet"), path, value)
    src = write_spec(tmp_path, d, "angles_pitch_yaw_rad", onnx_dict=spec_dict("mynet"))
    rc, out, err = _cli("methods", "add", src, "--models-dir", tmp_path / "models")
    assert rc == 2 and "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith(f"gaze4hri-bench: error: {src}: {field}: "), err
    assert words in err and "; " in err, err  # what is wrong; the fix


def test_bins_range_and_not_yaml_and_no_file(tmp_path):
    d = spec_dict("binned", "bins_pitch_yaw")
    d["output"]["bins"]["range_deg"] = [90, -90]
    with pytest.raises(SpecError) as e:
        load_spec(write_spec(tmp_path, d))
    assert "binned.yaml: output.bins.range_deg: high must be above low" in e.value.line()
    (tmp_path / "broken.yaml").write_text("name: [unclosed\n")
    with pytest.raises(SpecError, match=r"broken.yaml: \(file\): not YAML"):
        load_spec(tmp_path / "broken.yaml")
    with pytest.raises(SpecError, match=r"nothere.yaml: \(file\): no such file"):
        load_spec(tmp_path / "nothere.yaml")


GRAPH_MISMATCH = [  # the spec as written vs the graph's own signature
    ("names", {"outputs": {"yaw_pitch": ["B", 2]}}, "onnx.outputs", "names ['gaze'], the graph has ['yaw_pitch']"),
    ("rank", {"outputs": {"gaze": ["B", 1, 2]}}, "onnx.outputs.gaze", "rank 3, the graph's is 2"),
    ("order", {"outputs": {"head2": ["B", 60], "head1": ["B", 60]}}, "onnx.outputs",
     "names ['head1', 'head2'], the graph has ['head2', 'head1']"),
    ("fixed batch", {"inputs": {"face": [1, 3, 32, 32]}}, "onnx.inputs.face",
     "axis 0 is dynamic (B) here, fixed to 1 in the graph"),
]


@pytest.mark.parametrize("what,graph,field,words", GRAPH_MISMATCH, ids=[g[0] for g in GRAPH_MISMATCH])
def test_spec_checked_against_the_onnx_graph(tmp_path, what, graph, field, words):
    rule = "bins_pitch_yaw" if what == "order" else "angles_pitch_yaw_rad"
    good = spec_dict("mynet", rule)
    if what == "rank":  # the graph as the spec says; the spec then claims another rank
        src = write_spec(tmp_path, good, "angles_pitch_yaw_rad")
        spec, _ = load_spec(src)
        spec = type(spec)(**{**spec.__dict__, "onnx_outputs": graph["outputs"]})
        with pytest.raises(SpecError) as e:
            check_onnx(spec, spec.weights_file, str(src))
        line = e.value.line()
    else:
        g = spec_dict("mynet", rule)
        g["onnx"].update(graph)
        src = write_spec(tmp_path, good, rule, onnx_dict=g)
        rc, out, line = _cli("methods", "add", src, "--models-dir", tmp_path / "models")
        assert rc == 2 and line.count("\n") == 1
    assert f"{src}: {field}: " in line and words in line, line


def test_missing_onnx_file_named(tmp_path):
    src = write_spec(tmp_path, spec_dict("mynet"))  # no ONNX written
    rc, out, err = _cli("methods", "add", src, "--models-dir", tmp_path / "models")
    assert rc == 2 and f"{src}: weights_file: " in err and "does not exist" in err


@pytest.mark.replay
def test_predict_with_a_spec_file_method(tmp_path, unregister, capsys):
    """Issue 30, item 3: `predict --method path/to/mynet.yaml` registers the user's network as
    `run` does; its rows carry the gaze its (constant) network encodes."""
    import pandas as pd
    from gaze4hri_bench.cli import main as bench_main

    from .test_predict import _face_video

    spec = write_spec(tmp_path / "mine", spec_dict("mynet_predict", "angles_pitch_yaw_rad", "crop"),
                      "angles_pitch_yaw_rad")
    unregister.append("mynet_predict")
    video = _face_video(tmp_path / "face.avi", 3)
    rc = bench_main(["predict", "--video", str(video), "--method", str(spec), "--input", "crop",
                     "--out", str(tmp_path / "out")])
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    df = pd.read_parquet(tmp_path / "out" / "face__mynet_predict__crop.parquet")
    ok = df[df["valid"]]
    assert len(ok) == 3, df
    g = ok[["gaze_x", "gaze_y", "gaze_z"]].to_numpy(float)
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), 1.0, atol=1e-6)
    assert np.ptp(g, axis=0).max() < 0.05  # a constant network: the same gaze up to the crop's own ray
