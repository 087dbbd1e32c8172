"""Family registry of the model zoo: method spec -> network module, imported lazily.

Methods and families come from :data:`gaze4hri_bench.specs.SPECS` (the contract with the
pipeline); each family's network lives in ``gaze4hri_bench.zoo.nets.<family>`` (interface
in :mod:`gaze4hri_bench.zoo.nets`). A family whose module is absent from this build is
reported as "not implemented in this build" instead of failing the whole zoo.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType

from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.registry import Registry

from ..specs import SPECS, MethodSpec, get_spec
from ._manifest import Manifest, load_manifest

__all__ = ["FAMILIES", "family_module_name", "load_family", "family_status", "resolve", "manifest_path",
           "load_method_manifest", "repo_root"]

NETS_PACKAGE = "gaze4hri_bench.zoo.nets"

#: family -> methods using it, in SPECS order
FAMILIES: Registry[list[str]] = Registry("model family", where="model zoo")
for _name, _spec in SPECS.items():
    if _spec.family not in FAMILIES:
        FAMILIES.add(_spec.family, [])
    FAMILIES[_spec.family].append(_name)
_REQUIRED = ("build", "convert_checkpoint", "write_official_checkpoint")


def family_module_name(family: str) -> str:
    return f"{NETS_PACKAGE}.{family}"


@cache
def _import(family: str) -> ModuleType | str:
    """The family module, or a one-line reason why it is unavailable."""
    name = family_module_name(family)
    try:
        mod = importlib.import_module(name)
    except ModuleNotFoundError as e:
        if e.name == name:
            return "not implemented in this build"
        return f"unavailable: missing module {e.name}"
    except Exception as e:  # noqa: BLE001 - a broken family must not break `models list`
        return f"unavailable: {type(e).__name__}: {str(e)[:80]}"
    lacking = [a for a in _REQUIRED if not callable(getattr(mod, a, None))]
    if lacking:
        return f"incomplete: {name} lacks {', '.join(lacking)}"
    return mod


def family_status(family: str) -> str:
    """``ok`` or the reason the family cannot be used."""
    got = _import(family)
    return "ok" if isinstance(got, ModuleType) else got


def load_family(family: str) -> ModuleType:
    """Import a family module or raise :class:`Gaze4HRIError` saying why it is unavailable."""
    FAMILIES.get(family)  # an unknown family: the registry's one-line error
    family = family.lower()  # the registry's case rule; module names are lower-case
    got = _import(family)
    if isinstance(got, str):
        raise Gaze4HRIError(f"model family {family!r} is {got}", family_module_name(family),
                            "update gaze4hri or pick another method")
    return got


@dataclass(frozen=True)
class Resolved:
    spec: MethodSpec
    module: ModuleType


def resolve(method: str) -> Resolved:
    """Method name or alias -> spec and family module (errors name the alternatives)."""
    spec = get_spec(method)
    return Resolved(spec, load_family(spec.family))


@cache
def repo_root() -> Path | None:
    """The source checkout holding this package (it owns docs/models/), if any."""
    for parent in Path(__file__).resolve().parents:
        if (parent / "docs" / "models").is_dir() and (parent / "src").is_dir():
            return parent
    return None


def manifest_path(spec: MethodSpec, module: ModuleType | None = None) -> Path | None:
    """Location of the recorded state-dict manifest of ``spec``'s family, when known.

    The family module's ``MANIFEST`` (a path relative to the repository root, or a
    mapping method -> path) wins; else ``docs/models/<method>.json`` then
    ``docs/models/<family>.json``.
    """
    root = repo_root()
    if root is None:
        return None
    declared = getattr(module, "MANIFEST", None) if module is not None else None
    if isinstance(declared, dict):
        declared = declared.get(spec.name)
    candidates = [declared] if declared else []
    candidates += [f"docs/models/{spec.name}.json", f"docs/models/{spec.family}.json"]
    for c in candidates:
        p = root / c
        if p.is_file():
            return p
    return root / candidates[0]


def load_method_manifest(spec: MethodSpec, module: ModuleType | None = None) -> Manifest | None:
    """The recorded manifest, or None when running from an installed package without docs/."""
    p = manifest_path(spec, module)
    if p is None:
        return None
    if not p.is_file():
        raise Gaze4HRIError(f"state-dict manifest missing: {p}", spec.name, "restore docs/models/ from git")
    return load_manifest(p)
