"""``gaze4hri-bench models`` on bad input (one line, exit 2, no traceback), the registry's
handling of families absent from the build, folder resolution, and docs coverage."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from gaze4hri_bench.specs import SPECS  # noqa: E402
from gaze4hri_bench.zoo import families, store  # noqa: E402
from gaze4hri_bench.zoo.nets import gazetr, l2cs  # noqa: E402

from .conftest import run_cli  # noqa: E402


def one_line_error(res, *needles: str) -> None:
    assert res.rc == 2, (res.rc, res.out, res.err)
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gaze4hri-bench: error: "), res.err
    assert "Traceback" not in res.err
    for n in needles:
        assert n in lines[0], lines[0]


@pytest.fixture(scope="module")
def gazetr_ckpt(tmp_path_factory):
    p = tmp_path_factory.mktemp("ckpt") / "GazeTR-H-ETH.pt"
    torch.manual_seed(0)
    gazetr.write_official_checkpoint(gazetr.build(), p)
    return p


@pytest.mark.unit
def test_unknown_method_suggests_names(tmp_path, gazetr_ckpt):
    res = run_cli("models", "import", "gazetrr", gazetr_ckpt, "--models-dir", tmp_path)
    one_line_error(res, "unknown method 'gazetrr'", "did you mean gazetr")
    assert not any(tmp_path.iterdir())


@pytest.mark.unit
def test_wrong_architecture_names_keys_and_the_matching_method(tmp_path, gazetr_ckpt):
    res = run_cli("models", "import", "l2cs_gaze360", gazetr_ckpt, "--models-dir", tmp_path)
    one_line_error(res, "does not match the l2cs architecture", "missing (conv1.weight", "unexpected (cls_token",
                   "did you mean `models import gazetr_eth")
    assert not any(tmp_path.iterdir())


@pytest.mark.unit
def test_wrong_variant_of_the_same_family_reports_shapes(tmp_path):
    """An L2CS MPIIGaze checkpoint (28 bins) offered as the Gaze360 model."""
    sd = {k: v for k, v in l2cs.L2CSNet(n_bins=28).state_dict().items()}
    p = tmp_path / "L2CSNet_mpiigaze.pkl"
    torch.save(sd, p)
    res = run_cli("models", "import", "l2cs", p, "--models-dir", tmp_path / "m")
    one_line_error(res, "wrong shape", "fc_yaw_gaze.weight [28, 2048] != [90, 2048]")


@pytest.mark.unit
@pytest.mark.parametrize("kind", ["truncated", "empty", "text", "missing"])
def test_unreadable_checkpoints(tmp_path, gazetr_ckpt, kind):
    p = tmp_path / "weights.pt"
    if kind == "truncated":
        p.write_bytes(gazetr_ckpt.read_bytes()[: 2_000_000])
    elif kind == "empty":
        p.write_bytes(b"")
    elif kind == "text":
        p.write_text("<html>Google Drive - virus scan warning</html>")
    res = run_cli("models", "import", "gazetr", p, "--models-dir", tmp_path / "m")
    expect = {"truncated": "truncated", "empty": "empty", "text": "not a PyTorch checkpoint but an HTML page",
              "missing": "not found"}[kind]
    one_line_error(res, expect)


@pytest.mark.unit
def test_pickled_objects_need_trust(tmp_path, gazetr_ckpt):
    import argparse

    obj = {"state_dict": torch.load(gazetr_ckpt, weights_only=True), "hyper_parameters": argparse.Namespace(lr=5e-4)}
    p = tmp_path / "lightning.ckpt"
    torch.save(obj, p)
    one_line_error(run_cli("models", "import", "gazetr", p, "--models-dir", tmp_path / "m"), "--trust-pickle")


@pytest.mark.unit
def test_export_requires_random_init_and_known_method(tmp_path):
    res = run_cli("models", "export", "gazetr", "--models-dir", tmp_path)
    assert res.rc == 2 and "--random-init" in res.err
    one_line_error(run_cli("models", "export", "nosuch", "--random-init", "--models-dir", tmp_path), "unknown method")


@pytest.mark.unit
def test_models_without_action_prints_help():
    res = run_cli("models")
    assert res.rc == 2 and "import" in res.out and "verify" in res.out


@pytest.mark.unit
def test_verify_on_empty_folder_fails(tmp_path):
    res = run_cli("models", "verify", "--models-dir", tmp_path)
    assert res.rc == 1 and "no models" in res.out


@pytest.mark.unit
def test_list_covers_every_spec_and_survives_a_missing_family(tmp_path, monkeypatch):
    monkeypatch.setattr(families, "family_module_name", lambda fam: "gaze4hri_bench.zoo.nets._absent_" + fam
                        if fam == "l2cs" else families.NETS_PACKAGE + "." + fam)
    families._import.cache_clear()
    try:
        res = run_cli("models", "list", "--json", "--models-dir", tmp_path)
        assert res.rc == 0, res.err
        rows = {r["method"]: r for r in json.loads(res.out)}
        assert list(rows) == list(SPECS)
        assert rows["l2cs_gaze360"]["implemented"] == "not implemented in this build"
        assert rows["gazetr_eth"]["implemented"] == "yes"
        assert {r["onnx"] for r in rows.values()} == {"missing"}
        for name, r in rows.items():
            assert (r["licence"], r["source_url"]) == (SPECS[name].licence, SPECS[name].source_url)
        assert rows["puregaze_gaze360"]["expected_sha256"].startswith("none released")
        one_line_error(run_cli("models", "import", "l2cs", tmp_path / "x.pkl", "--models-dir", tmp_path),
                       "not implemented in this build")
        table = run_cli("models", "list", "--models-dir", tmp_path)
        assert table.rc == 0 and "not implemented in this build" in table.out
    finally:
        monkeypatch.undo()
        families._import.cache_clear()


@pytest.mark.unit
def test_models_dir_resolution(tmp_path, monkeypatch):
    monkeypatch.setenv(store.ENV_VAR, str(tmp_path / "env"))
    assert store.models_dir() == tmp_path / "env"
    assert store.models_dir(tmp_path / "flag") == tmp_path / "flag"
    monkeypatch.delenv(store.ENV_VAR)
    root = families.repo_root()
    assert root is not None and store.models_dir() == root / "models"


@pytest.mark.unit
def test_committed_models_folder_holds_no_weights(repo_root):
    models = repo_root / "models"
    assert (models / "README.md").is_file()
    doc = store.read_records(models)
    assert isinstance(doc, dict)
    import subprocess

    tracked = subprocess.run(
        ["git", "ls-files", "models"], cwd=repo_root, capture_output=True, text=True
    ).stdout.split()
    assert tracked and not [t for t in tracked if t.endswith((".onnx", ".pt", ".pth", ".pkl", ".ckpt", ".data"))]


@pytest.mark.unit
def test_docs_cover_every_method_and_family(repo_root):
    text = (repo_root / "docs" / "models.md").read_text()
    for name, spec in SPECS.items():
        assert f"`{name}`" in text, f"docs/models.md does not document {name}"
        assert spec.source_url in text
    for fam in families.FAMILIES:
        assert "docs/models/" in text and fam in text
