"""State-dict manifests: the recorded parameter/buffer names and shapes of an official
checkpoint (docs/models/*.json), and their comparison with a state dict.

File layout (JSON object; unknown fields are kept as metadata)::

    {"schema": "gaze4hri-zoo-manifest/1",
     "family": "puregaze", "methods": ["puregaze_eth", "puregaze_gaze360"],
     "source": "https://github.com/...", "derived_from": "file list @ commit",
     "container": "how the official release wraps the weights",
     "key_mapping": ["steps applied at import"],
     "tensors": [["feature.conv1.weight", [64, 3, 7, 7]], ...],   # inference, in order
     "dropped": [["deconv.deconv.1.0.conv1.weight", [256, 2048, 3, 3]], ...]}  # training-only

For robustness the reader also accepts ``parameters`` / ``state_dict`` for ``tensors``,
``{name: shape}`` objects instead of pair lists, and bare names in ``dropped``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gaze4hri_core.errors import Gaze4HRIError

from ._checkpoint import describe_mismatch

__all__ = ["Manifest", "SCHEMA", "shapes_of", "load_manifest", "compare"]

SCHEMA = "gaze4hri-zoo-manifest/1"
_TENSOR_FIELDS = ("tensors", "parameters", "state_dict", "keys")


@dataclass
class Manifest:
    """Ordered names and shapes of the inference tensors, plus the dropped training-only keys."""

    tensors: list[tuple[str, tuple[int, ...]]]
    dropped: list[tuple[str, tuple[int, ...] | None]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def names(self) -> list[str]:
        return [n for n, _ in self.tensors]

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return dict(self.tensors)

    def n_elements(self) -> int:
        """Total number of scalars in the inference tensors."""
        total = 0
        for _, s in self.tensors:
            n = 1
            for d in s:
                n *= int(d)
            total += n
        return total

    def to_json(self) -> str:
        doc = {"schema": SCHEMA, **self.meta}
        doc["tensors"] = [[n, list(s)] for n, s in self.tensors]
        doc["dropped"] = [[n, list(s) if s is not None else None] for n, s in self.dropped]
        # one tensor per line: readable diffs, still valid JSON
        head = json.dumps({k: v for k, v in doc.items() if k not in ("tensors", "dropped")}, indent=2)[:-2]
        rows = lambda xs: ",\n".join("    " + json.dumps(x) for x in xs)  # noqa: E731
        return (f'{head},\n  "tensors": [\n{rows(doc["tensors"])}\n  ],\n'
                f'  "dropped": [\n{rows(doc["dropped"])}\n  ]\n}}\n')


def shapes_of(state_dict: Mapping[str, Any]) -> list[tuple[str, tuple[int, ...]]]:
    """Ordered (name, shape) pairs of a state dict."""
    return [(str(k), tuple(int(d) for d in v.shape)) for k, v in state_dict.items()]


def _pairs(value: Any) -> list[tuple[str, tuple[int, ...] | None]]:
    if isinstance(value, Mapping):
        return [(str(k), tuple(v) if v is not None else None) for k, v in value.items()]
    out = []
    for item in value or []:
        if isinstance(item, str):
            out.append((item, None))
        elif isinstance(item, Mapping):
            out.append((str(item["name"]), tuple(item["shape"]) if item.get("shape") is not None else None))
        else:
            name, shape = item[0], item[1] if len(item) > 1 else None
            out.append((str(name), tuple(int(d) for d in shape) if shape is not None else None))
    return out


def load_manifest(path: str | Path) -> Manifest:
    """Read a manifest file; a malformed file raises :class:`Gaze4HRIError`."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError) as e:
        raise Gaze4HRIError(f"cannot read state-dict manifest {p}", str(e)[:120], "restore it from git") from None
    key = next((k for k in _TENSOR_FIELDS if k in doc), None)
    if not isinstance(doc, Mapping) or key is None:
        raise Gaze4HRIError(f"state-dict manifest {p} has no tensor list", "manifest",
                            f"expected one of {_TENSOR_FIELDS}")
    tensors = [(n, s if s is not None else ()) for n, s in _pairs(doc[key])]
    meta = {k: v for k, v in doc.items() if k not in (key, "dropped", "schema")}
    return Manifest(tensors=tensors, dropped=_pairs(doc.get("dropped", [])), meta=meta)


def compare(expected: Manifest, state_dict: Mapping[str, Any]) -> tuple[list[str], list[str], list[str]]:
    """(missing, unexpected, wrong-shape) between a manifest and a state dict."""
    have = dict(shapes_of(state_dict))
    want = expected.shapes
    missing = [k for k in want if k not in have]
    unexpected = [k for k in have if k not in want]
    wrong = [f"{k} {list(have[k])} != {list(want[k])}" for k in want if k in have and tuple(have[k]) != tuple(want[k])]
    return missing, unexpected, wrong


def check(expected: Manifest, state_dict: Mapping[str, Any], what: str) -> None:
    """Raise :class:`Gaze4HRIError` when ``state_dict`` differs from the manifest."""
    missing, unexpected, wrong = compare(expected, state_dict)
    if missing or unexpected or wrong:
        raise Gaze4HRIError(
            f"{what} does not match the recorded manifest: {describe_mismatch(missing, unexpected, wrong)}",
            expected.meta.get("family", "manifest"),
            "is this a checkpoint of another method or architecture variant?",
        )
