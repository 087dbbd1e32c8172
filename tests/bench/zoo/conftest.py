"""Model-zoo fixtures, parametrized over the family registry so that a family is tested
the moment its module exists (families absent from the build are skipped with the
registry's reason).

Expensive work is done once per session and shared by every test file: a random-weight
network per family (:func:`zoo_model`) and one ``models import`` of a checkpoint written
in the official container layout (:func:`zoo_imported`), which exports and verifies the
ONNX model. Tests then check the results independently.
"""
from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")

from gaze4hri_bench.cli import main as cli_main  # noqa: E402
from gaze4hri_bench.specs import SPECS, MethodSpec  # noqa: E402
from gaze4hri_bench.zoo import families  # noqa: E402
from gaze4hri_bench.zoo.export import random_model  # noqa: E402

#: first method of each family (the one whose import is exercised end to end)
FAMILY_METHOD = {fam: methods[0] for fam, methods in families.FAMILIES.items()}


#: families whose ONNX export and parity run take minutes on 2 cores (MCGaze: a 7 x 448 x
#: 448 clip through ResNet-50 + FPN + 4 query stages, ~2 min of the default suite): their
#: import/export tests are in the ``long`` tier (`make test-long`)
HEAVY_EXPORT = frozenset({"mcgaze"})


def family_params(heavy: bool = False) -> list:
    """One pytest param per family in specs.py; unavailable families are skipped.
    ``heavy``: the test exports the family's ONNX model, so HEAVY_EXPORT families go to
    the ``long`` tier."""
    out = []
    for fam in families.FAMILIES:
        status = families.family_status(fam)
        marks = [] if status == "ok" else [pytest.mark.skip(reason=f"{fam}: {status}")]
        if heavy and fam in HEAVY_EXPORT:
            marks.append(pytest.mark.long)
        out.append(pytest.param(fam, id=fam, marks=marks))
    return out


@dataclass
class CliResult:
    rc: int
    out: str
    err: str


def run_cli(*argv: str) -> CliResult:
    """Run ``gaze4hri-bench`` in-process; capture exit code, stdout and stderr."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = cli_main([str(a) for a in argv])
        except SystemExit as e:  # argparse usage errors
            rc = int(e.code or 0)
    return CliResult(rc, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def cli():
    return run_cli


@dataclass
class Imported:
    family: str
    spec: MethodSpec
    module: object
    model: object  # the random-weight network written into the checkpoint
    checkpoint: Path
    models_dir: Path
    onnx: Path
    cli: CliResult


@pytest.fixture(scope="session")
def _zoo_cache():
    return {"model": {}, "imported": {}}


@pytest.fixture(scope="session")
def zoo_model(_zoo_cache):
    """family -> (spec, module, random-weight model, seed 0), built once per session."""

    def get(family: str):
        cache = _zoo_cache["model"]
        if family not in cache:
            spec = SPECS[FAMILY_METHOD[family]]
            mod = families.load_family(family)
            cache[family] = (spec, mod, random_model(mod, spec, seed=0))
        return cache[family]

    return get


@pytest.fixture(scope="session")
def zoo_imported(_zoo_cache, zoo_model, tmp_path_factory):
    """family -> :class:`Imported`: the session's random model written in the official
    container layout and imported with ``gaze4hri-bench models import`` (once)."""

    def get(family: str) -> Imported:
        cache = _zoo_cache["imported"]
        if family not in cache:
            spec, mod, model = zoo_model(family)
            root = tmp_path_factory.mktemp(f"zoo_{family}")
            ckpt = root / f"official_{family}.ckpt"
            mod.write_official_checkpoint(model, ckpt)
            models_dir = root / "models"
            res = run_cli("models", "import", spec.name, ckpt, "--models-dir", models_dir)
            if res.rc != 0 and "--trust-pickle" in res.err:  # containers holding non-tensor objects
                res = run_cli("models", "import", spec.name, ckpt, "--models-dir", models_dir, "--trust-pickle")
            assert res.rc == 0, res.err
            cache[family] = Imported(family, spec, mod, model, ckpt, models_dir, models_dir / f"{spec.name}.onnx", res)
        return cache[family]

    return get
