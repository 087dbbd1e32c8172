"""The runtime adapter on the model zoo's own ONNX exports (random weights): each
exported network loads under its spec, runs batched and decodes to unit vectors in the
camera frame. Parametrized over the specs; a family the zoo does not implement yet is
skipped with the zoo's reason. Exports are cached between runs (keyed by the zoo's
source), since tracing ResNet-50 / Swin-3D on two cores takes tens of seconds each."""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np
import pytest
from gaze4hri_bench.methods import get_method
from gaze4hri_bench.pipeline.runtime import Runner
from gaze4hri_bench.specs import SPECS

pytestmark = [pytest.mark.replay, pytest.mark.slow]

zoo_families = pytest.importorskip("gaze4hri_bench.zoo.families", reason="model zoo not in this build")
pytest.importorskip("torch", reason="the zoo needs PyTorch (pip install -e 'src/gaze4hri_bench[zoo]')")


#: families whose first export is too slow for the default suite on a 2-core machine
HEAVY = {"mcgaze"}


def _source_key(spec) -> str:
    import gaze4hri_bench.zoo as zoo

    root = Path(zoo.__file__).parent
    h = hashlib.sha256(repr(spec).encode())
    for p in sorted(root.rglob("*.py")):
        h.update(p.read_bytes())
    return h.hexdigest()[:16]


@pytest.fixture(scope="session")
def zoo_cache() -> Path:
    """Persistent across runs (and across -p no:cacheprovider): $GAZE4HRI_TEST_CACHE or
    ~/.cache/gaze4hri/tests; entries are keyed by the zoo's source, so stale ones are unused."""
    root = Path(os.environ.get("GAZE4HRI_TEST_CACHE", Path.home() / ".cache" / "gaze4hri" / "tests"))
    d = root / "zoo_onnx"
    d.mkdir(parents=True, exist_ok=True)
    return d


@pytest.mark.parametrize("name", list(SPECS))
def test_zoo_export_decodes_to_unit_camera_vectors(name, zoo_cache):
    spec = SPECS[name]
    status = zoo_families.family_status(spec.family)
    if status != "ok":
        pytest.skip(f"zoo family {spec.family}: {status}")
    pytest.importorskip("gaze4hri_bench.faces.crops", reason="faces.crops.to_tensor not in this build")
    from gaze4hri_bench.zoo import export as ex

    path = zoo_cache / f"{name}-{_source_key(spec)}.onnx"
    if not path.is_file() and spec.family in HEAVY and not os.environ.get("GAZE4HRI_TEST_HEAVY"):
        pytest.skip(f"tracing {spec.family} takes ~4 min on 2 cores: run once with GAZE4HRI_TEST_HEAVY=1 "
                    "(the export is then cached)")
    if not path.is_file():
        model = ex.random_model(zoo_families.load_family(spec.family), spec, seed=0)
        tmp = ex.export_onnx(model, spec, path.with_name(f".{path.name}.{os.getpid()}.tmp"))
        tmp.replace(path)
    m = get_method(name)
    runner = Runner(path, spec, "cpu", batch=2)
    rng = np.random.default_rng(1)
    size = spec.size
    patches = (rng.random((3, size, size, 3)) * 255).astype(np.uint8)
    frames = np.stack([m.to_tensor(p) for p in patches])
    x = frames if spec.clip_len == 1 else np.stack([np.stack([frames[i]] * spec.clip_len) for i in range(1)])
    xs = [x] + ([np.full((*x.shape[:2], 2), size, np.float32)] if m.takes_hw else [])  # MCGaze: whole frames
    g = m.decode(runner.run(*xs))
    assert np.isfinite(g).all()
    vecs = g.reshape(-1, 3)
    ray = np.array([0.1, -0.05, 1.0])
    from gaze4hri_bench.methods.network import ray_basis

    cam = m.to_camera(vecs, np.repeat(ray_basis(ray / np.linalg.norm(ray))[None], len(vecs), 0))
    np.testing.assert_allclose(np.linalg.norm(cam, axis=1), 1.0, atol=1e-9)
