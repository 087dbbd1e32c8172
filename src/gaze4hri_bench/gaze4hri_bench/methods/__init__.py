"""Gaze methods: a registry of lazy entries with aliases and did-you-mean errors.

One entry per :data:`gaze4hri_bench.specs.SPECS` configuration (an ONNX network behind
:class:`~.network.OnnxMethod`), the weight-free baselines ``head_pose`` and
``straight``, a hidden ``tiny_test`` method that the parametrized tests use (so a
new method is tested the moment it is registered), and the plugins of the entry-point
group ``gaze4hri_bench.methods`` (plugins.py; a user's spec file is registered when a run
names it). Every method's prediction leaves it as a unit vector in the OpenCV camera
frame.

    >>> from gaze4hri_bench.methods import get_method, method_names
    >>> get_method("l2cs").spec.name
    'l2cs_gaze360'
"""
from __future__ import annotations

from gaze4hri_core.registry import Entry, Registry

from ..specs import ALIASES, SPECS, MethodSpec
from .plugins import build_plugin, discover_plugins
from .testing import TINY_SPEC

__all__ = ["METHODS", "get_method", "get_entry", "method_spec", "method_names", "Entry", "Registry"]

METHODS: Registry[Entry] = Registry("method", listing="(list them with `gaze4hri-bench methods`)")

for _name, _spec in SPECS.items():
    METHODS.register(
        _name, "gaze4hri_bench.methods.network:OnnxMethod", "onnx",
        summary=f"{_spec.table_name}: {_spec.family}, trained on {_spec.train_set}, {_spec.input_type} input",
        aliases=tuple(a for a, t in ALIASES.items() if t == _name), spec=_spec,
    )
METHODS.register("head_pose", "gaze4hri_bench.methods.baselines:HeadPose", "baseline",
                 summary="baseline: head-forward direction from motion capture", aliases=("headpose", "head"))
METHODS.register("straight", "gaze4hri_bench.methods.baselines:Straight", "baseline",
                 summary="baseline: always looking into the camera, (0, 0, -1)", aliases=("camera", "straight_ahead"))
METHODS.register("tiny_test", "gaze4hri_bench.methods.testing:tiny_method", "onnx",
                 summary="tiny gradient network for tests (not a gaze estimator)", hidden=True, spec=TINY_SPEC)
discover_plugins(METHODS)  # entry points of gaze4hri_bench.methods, at start-up (imported when built)


def get_entry(name: str) -> Entry:
    """Registry entry by name or alias (did-you-mean error when unknown)."""
    return METHODS.get(name)


def method_spec(name: str) -> MethodSpec | None:
    """The spec a registered method is built from (None: a baseline, which reads no pixels)."""
    return get_entry(name).kwargs.get("spec")


def get_method(name: str, **kwargs):
    """Build a registered method by name or alias: ``factory(name, spec=..., profile=...,
    record=...)`` (every method takes these; a baseline ignores them). A plugin that cannot
    be imported or built is one line (plugins.build_plugin)."""
    entry = METHODS.get(name)
    if entry.kind == "plugin":
        return build_plugin(entry, **kwargs)
    return METHODS.create(name, **kwargs)


def method_names(include_hidden: bool = False) -> list[str]:
    return METHODS.names(include_hidden)
