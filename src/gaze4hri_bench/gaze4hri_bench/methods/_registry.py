"""A registry of lazy entries ("module:attribute"), with aliases and did-you-mean
errors (after lm-evaluation-harness ``Registry`` and timm ``register_model``): nothing
heavy is imported until an entry is created."""
from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["Entry", "Registry"]


@dataclass(frozen=True)
class Entry:
    """One registered name. ``target`` is ``"module:factory"``; the factory is called
    as ``factory(name, **kwargs)`` (plus ``kwargs`` fixed at registration)."""

    name: str
    target: str
    kind: str
    summary: str = ""
    aliases: tuple[str, ...] = ()
    hidden: bool = False
    kwargs: dict[str, Any] = field(default_factory=dict)

    def load(self):
        mod, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(mod), attr)


class Registry:
    """Names -> lazy entries. ``what`` names the registry in error messages."""

    def __init__(self, what: str):
        self.what = what
        self._entries: dict[str, Entry] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, target: str, kind: str, summary: str = "", aliases: tuple[str, ...] = (),
                 hidden: bool = False, **kwargs) -> Entry:
        key = name.lower()
        if key in self._entries or key in self._aliases:
            raise ValueError(f"{self.what}: {name!r} is already registered")
        for a in aliases:
            if a.lower() in self._entries or a.lower() in self._aliases:
                raise ValueError(f"{self.what}: alias {a!r} is already taken")
        entry = Entry(key, target, kind, summary, tuple(a.lower() for a in aliases), hidden, dict(kwargs))
        self._entries[key] = entry
        for a in entry.aliases:
            self._aliases[a] = key
        return entry

    def names(self, include_hidden: bool = False) -> list[str]:
        return [n for n, e in self._entries.items() if include_hidden or not e.hidden]

    def entries(self, include_hidden: bool = False) -> Iterator[Entry]:
        return (self._entries[n] for n in self.names(include_hidden))

    def __contains__(self, name: str) -> bool:
        k = str(name).lower()
        return k in self._entries or k in self._aliases

    def get(self, name: str) -> Entry:
        """Entry by name or alias; unknown names raise a one-line did-you-mean error."""
        k = str(name).lower()
        k = self._aliases.get(k, k)
        if k in self._entries:
            return self._entries[k]
        visible = self.names()
        near = difflib.get_close_matches(k, visible + [a for a, n in self._aliases.items() if not self._entries[n].hidden],
                                         n=3, cutoff=0.5)
        near = list(dict.fromkeys(self._aliases.get(n, n) for n in near))
        hint = f"did you mean {' or '.join(near)}? " if near else ""
        raise Gaze4HRIError(f"unknown {self.what} {name!r}", f"{self.what} registry",
                            f"{hint}known: {', '.join(visible)} (list them with `gaze4hri-bench methods`)")

    def create(self, name: str, **kwargs):
        """Import the entry's module and build it."""
        e = self.get(name)
        return e.load()(e.name, **{**e.kwargs, **kwargs})
