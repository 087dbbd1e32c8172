"""Methods from outside the package: a user's spec file (one ONNX network; spec_file.py)
and plugins (methods that are not one ONNX file: several networks, a custom decoder)
found through the entry-point group :data:`PLUGIN_GROUP`.

A plugin's entry point names a factory ``factory(name, spec=None, profile=None,
record=None) -> GazeMethod`` (a GazeMethod subclass is one), registered lazily under the
entry point's name at start-up (nothing is imported until the method is built); the
built method answers ``predict(ctx)`` like a baseline, or is an OnnxMethod with its own
``spec``. Every refusal is one line ``<where>: <field>: <what>; <fix>`` (SpecError)."""
from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

from gaze4hri_core.registry import Entry, Registry

from ..spec_file import SpecError, load_spec
from ..specs import MethodSpec

__all__ = ["PLUGIN_GROUP", "PLUGIN_ERRORS", "discover_plugins", "build_plugin", "register_spec", "user_method",
           "spec_source", "is_spec_path", "check_crop_rule"]

PLUGIN_GROUP = "gaze4hri_bench.methods"

#: plugins that could not be registered (name -> one line): `gaze4hri-bench methods` shows them
PLUGIN_ERRORS: dict[str, str] = {}

#: method name -> the spec file it was registered from (provenance, error places)
_SOURCES: dict[str, str] = {}


def _dist(ep) -> str:
    d = getattr(ep, "dist", None)
    return f"{d.name} {d.version}" if d is not None else "unknown distribution"


def discover_plugins(registry: Registry[Entry]) -> list[str]:
    """Register every entry point of :data:`PLUGIN_GROUP` not yet in ``registry``; one
    whose name is taken by another method is left out with its reason in PLUGIN_ERRORS."""
    added = []
    for ep in entry_points(group=PLUGIN_GROUP):
        name = ep.name.lower()
        found = registry.find(name)
        if found is not None:
            if not (found.kind == "plugin" and found.target == ep.value):
                PLUGIN_ERRORS[name] = SpecError(f"entry point {ep.value} ({_dist(ep)})", "name",
                                                f"{name!r} is taken by another method",
                                                "rename the entry point").line()
            continue
        registry.register(name, ep.value, "plugin", summary=f"plugin from {_dist(ep)}: {ep.value}")
        added.append(name)
    return added


def build_plugin(entry: Entry, **kwargs):
    """Import and build a plugin method; any failure is one line, never a traceback."""
    from .base import GazeMethod

    where = f"entry point {entry.target}"
    try:
        factory = entry.load()
    except Exception as e:  # noqa: BLE001 - a broken plugin is one refusal, whatever it raised
        raise SpecError(where, entry.name, f"cannot be imported ({type(e).__name__}: {e})",
                        "install the plugin's package and its dependencies") from None
    try:
        method = factory(entry.name, **kwargs)
    except Exception as e:  # noqa: BLE001
        raise SpecError(where, entry.name, f"could not be built ({type(e).__name__}: {e})",
                        "the factory takes (name, spec=None, profile=None, record=None)") from None
    if not isinstance(method, GazeMethod):
        raise SpecError(where, entry.name, f"built a {type(method).__name__}, not a GazeMethod",
                        "return a gaze4hri_bench.methods.base.GazeMethod subclass")
    if method.kind == "onnx" and not isinstance(method.spec, MethodSpec):
        raise SpecError(where, entry.name, "an ONNX method without a MethodSpec",
                        "give the method a spec (gaze4hri_bench.spec_file.load_spec)")
    if method.kind != "onnx" and not callable(getattr(method, "predict", None)):
        raise SpecError(where, entry.name, "has no predict(ctx)",
                        "implement predict(ctx) -> unit gaze vector in the camera frame")
    return method


def check_crop_rule(spec: MethodSpec, source: str) -> None:
    """A crop input's rule is one faces.crops knows (spec_file cannot import faces)."""
    from ..faces.crops import CROP_RULES

    if spec.input_type == "crop" and spec.crop_rule not in CROP_RULES:
        raise SpecError(source, "input.crop_rule", f"{spec.crop_rule!r} is not a crop rule",
                        f"use one of {', '.join(CROP_RULES)}")


def register_spec(registry: Registry[Entry], spec: MethodSpec, aliases: tuple[str, ...], source: str) -> str:
    """Register a spec file's network as an ONNX method (the same adapter as the
    built-ins); the same spec again is a no-op, another spec under a taken name refused."""
    check_crop_rule(spec, source)
    found = registry.find(spec.name)
    if found is not None:
        if found.kwargs.get("spec") == spec:
            return found.name
        raise SpecError(source, "name", f"{spec.name!r} is taken by another method",
                        "rename the method (`gaze4hri-bench methods` lists the names in use)")
    for a in aliases:
        if a in registry:
            raise SpecError(source, "aliases", f"{a!r} is taken by another method", "choose another alias")
    registry.register(spec.name, "gaze4hri_bench.methods.network:OnnxMethod", "onnx",
                      summary=f"{spec.table_name or spec.name}: {spec.family}, trained on {spec.train_set}, "
                              f"{spec.input_type} input (spec file {source})",
                      aliases=aliases, spec=spec)
    _SOURCES[spec.name] = source
    return spec.name


def is_spec_path(name: str) -> bool:
    """Whether a --method value names a spec file rather than a method."""
    return name.endswith((".yaml", ".yml")) or "/" in name


def user_method(registry: Registry[Entry], name: str, models_dir: Path) -> str:
    """The registered name of a --method value: a spec file path (loaded and registered;
    its ONNX file next to it), a name with ``<models>/<name>.yaml`` (added with
    `gaze4hri-bench methods add`), or a registered name as it is."""
    if is_spec_path(name):
        spec, aliases = load_spec(name)
        return register_spec(registry, spec, aliases, str(name))
    path = Path(models_dir) / f"{name.lower()}.yaml"
    if name not in registry and path.is_file():
        spec, aliases = load_spec(path)
        return register_spec(registry, spec, aliases, str(path))
    return name


def spec_source(name: str) -> str | None:
    """The spec file a user method was registered from (None: built in or a plugin)."""
    return _SOURCES.get(name)
