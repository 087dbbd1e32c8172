"""One registry type for every named table (the benchmark's methods, face detectors,
method specs, pipeline profiles, analysis profiles, analyses): names -> values in
registration order, case-insensitive, with aliases, hidden entries and one-line
did-you-mean errors (after lm-evaluation-harness ``Registry`` and timm
``register_model``). A value may be a lazy :class:`Entry` ("module:attribute"), so that
nothing heavy is imported until it is built (:meth:`Registry.create`)."""
from __future__ import annotations

import difflib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from .errors import Gaze4HRIError

__all__ = ["Entry", "Registry", "UnknownName"]

T = TypeVar("T")


@dataclass(frozen=True)
class Entry:
    """One lazily built name. ``target`` is ``"module:factory"``; the factory is called
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


class UnknownName(Gaze4HRIError, KeyError):
    """A name no registry entry has: the one-line error, and a KeyError for mapping-style callers."""

    def __str__(self) -> str:
        return self.line()


class Registry(Generic[T]):
    """Names -> values. ``what`` names the table in errors ("unknown {what} 'x'"),
    ``where`` is the error's place (e.g. the option: "--profile"), ``listing`` follows
    the known names in the fix (e.g. how to list them). Reads like a read-only mapping
    (``in``, ``[name]``, iteration over the visible names, ``items()``); :meth:`get`
    also takes aliases and raises the one-line error for an unknown name."""

    def __init__(self, what: str, where: str | None = None, listing: str = ""):
        self.what = what
        self.where = where or f"{what} registry"
        self.listing = listing
        self._values: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._hidden: set[str] = set()

    # -- filling ------------------------------------------------------------------
    def add(self, name: str, value: T, aliases: tuple[str, ...] = (), hidden: bool = False) -> T:
        """Register ``value`` under ``name`` (and ``aliases``); a taken name raises."""
        key = str(name).lower()
        for k in (key, *(a.lower() for a in aliases)):
            if k in self._values or k in self._aliases:
                raise ValueError(f"{self.what}: {k!r} is already registered")
        self._values[key] = value
        for a in aliases:
            self._aliases[a.lower()] = key
        if hidden:
            self._hidden.add(key)
        return value

    def register(self, name: str, target: str, kind: str, summary: str = "", aliases: tuple[str, ...] = (),
                 hidden: bool = False, **kwargs) -> Entry:
        """Register a lazy :class:`Entry` (``target`` "module:factory")."""
        entry = Entry(str(name).lower(), target, kind, summary, tuple(a.lower() for a in aliases), hidden, dict(kwargs))
        return self.add(name, entry, aliases, hidden)  # type: ignore[arg-type]

    def remove(self, name: str) -> T:
        """Take a name (and its aliases) out again (tests, plugins)."""
        key = self._aliases.get(str(name).lower(), str(name).lower())
        value = self._values.pop(key)
        self._aliases = {a: n for a, n in self._aliases.items() if n != key}
        self._hidden.discard(key)
        return value

    # -- reading ------------------------------------------------------------------
    def names(self, include_hidden: bool = False) -> list[str]:
        return [n for n in self._values if include_hidden or n not in self._hidden]

    def items(self, include_hidden: bool = False) -> list[tuple[str, T]]:
        return [(n, self._values[n]) for n in self.names(include_hidden)]

    def values(self, include_hidden: bool = False) -> list[T]:
        return [self._values[n] for n in self.names(include_hidden)]

    def keys(self) -> list[str]:
        return self.names()

    entries = values  # the lazy-entry tables' word for it

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __contains__(self, name: object) -> bool:
        k = str(name).lower()
        return k in self._values or k in self._aliases

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def get(self, name: str) -> T:
        """Value by name or alias; an unknown name raises a one-line did-you-mean error."""
        k = str(name).lower()
        k = self._aliases.get(k, k)
        if k in self._values:
            return self._values[k]
        visible = self.names()
        near = difflib.get_close_matches(k, visible + [a for a, n in self._aliases.items() if n not in self._hidden], n=3, cutoff=0.5)
        near = list(dict.fromkeys(self._aliases.get(n, n) for n in near))
        hint = f"did you mean {' or '.join(near)}? " if near else ""
        raise UnknownName(f"unknown {self.what} {name!r}", self.where,
                            f"{hint}known: {', '.join(visible)}" + (f" {self.listing}" if self.listing else ""))

    def find(self, name: str) -> T | None:
        """Value by name or alias, or None (for callers that keep unknown names as they are)."""
        k = str(name).lower()
        return self._values.get(self._aliases.get(k, k))

    def create(self, name: str, **kwargs):
        """Import a lazy entry's module and build it: ``factory(name, **kwargs)``."""
        e = self.get(name)
        return e.load()(e.name, **{**e.kwargs, **kwargs})  # type: ignore[attr-defined]
