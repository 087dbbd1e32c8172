"""Producing the state-dict manifests of docs/models/ from a family module.

A manifest lists, in order, the names and shapes of the official checkpoint's inference
tensors (our network uses the official names) and the training-only tensors dropped at
import. The dropped set is found through the family's own ``write_official_checkpoint``:
whatever the official layout holds beyond our state dict. The files are committed and
reviewed against the official architecture code (docs/models.md); the tests check that
our networks still match them exactly.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

from gaze4hri_core.errors import Gaze4HRIError

from . import families
from ._checkpoint import _strip, unwrap_state_dict
from ._manifest import Manifest, shapes_of

__all__ = ["build_manifest", "write_manifest", "official_layout"]

KEY_MAPPING = [
    "unwrap nested containers ('state_dict', 'model_state_dict', 'model', 'net', ...)",
    "strip DataParallel 'module.' prefixes",
    "drop the training-only tensors listed under 'dropped'",
    "fill absent BatchNorm num_batches_tracked counters with 0 (unused at inference)",
    "everything else must match 'tensors' exactly (names and shapes), then load_state_dict(strict=True)",
]


def official_layout(module) -> dict:
    """The flat state dict that ``module.write_official_checkpoint`` writes for ``build()``."""
    import torch

    model = module.build()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "official.pt"
        module.write_official_checkpoint(model, path)
        obj = torch.load(path, map_location="cpu", weights_only=False)
    return {_strip(k, ("module.",)): v for k, v in unwrap_state_dict(obj).items()}


def build_manifest(method: str) -> Manifest:
    """Manifest of ``method``'s family derived from our network and its official layout."""
    res = families.resolve(method)
    mod, spec = res.module, res.spec
    ours = mod.build().state_dict()
    official = official_layout(mod)
    missing = [k for k in ours if k not in official]
    if missing:
        raise Gaze4HRIError(f"write_official_checkpoint of {spec.family} omits {missing[:3]}", mod.__name__,
                            "fix the family module")
    dropped = [(k, tuple(v.shape)) for k, v in official.items() if k not in ours]
    meta = {
        "family": spec.family,
        "methods": list(families.FAMILIES[spec.family]),
        "source": spec.source_url,
        "derived_from": getattr(mod, "SOURCE_FILES", ""),
        "container": getattr(mod, "CONTAINER", ""),
        "key_mapping": KEY_MAPPING,
        "n_tensors": len(ours),
        "n_parameters": int(sum(p.numel() for p in mod.build().parameters())),
    }
    return Manifest(tensors=shapes_of(ours), dropped=dropped, meta=meta)


def write_manifest(method: str) -> list[Path]:
    """Rewrite the committed manifest file of ``method``'s family."""
    res = families.resolve(method)
    path = families.manifest_path(res.spec, res.module)
    if path is None:
        raise Gaze4HRIError("docs/models/ not found", "models manifest --write", "run this from a source checkout")
    man = build_manifest(method)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(man.to_json())
    return [path]
