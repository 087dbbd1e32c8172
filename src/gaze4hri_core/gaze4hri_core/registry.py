"""One registry type for every named table (the benchmark's methods, face detectors,
method specs, pipeline profiles, analysis profiles, analyses, data formats, exporters,
model families; the protocol's trial ids, robot models, UR controller series, the
acquisition drivers): names -> values in registration order, with aliases, hidden
entries and one error for an unknown name (after lm-evaluation-harness ``Registry`` and
timm ``register_model``). A value may be a lazy :class:`Entry` ("module:attribute"), so
that nothing heavy is imported until it is built (:meth:`Registry.create`).

The one error, :class:`UnknownName` (a Gaze4HRIError and a KeyError), reads
``unknown <what> 'x' (<where>): did you mean y? known: a, b, c <listing>``.

Case rule, for every table: names and aliases are case-insensitive, stored and listed
lower-case, unless the table is built with ``case_sensitive=True`` (only where the case
is part of the name: the protocol's trial ids, ``illum025_P3``); there a name must be
given in its own case, and a wrong case is answered with the right one as the
did-you-mean."""
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

    def __init__(self, what: str, where: str | None = None, listing: str = "", case_sensitive: bool = False):
        self.what = what
        self.where = where or f"{what} registry"
        self.listing = listing
        self.case_sensitive = case_sensitive
        self._values: dict[str, T] = {}
        self._aliases: dict[str, str] = {}
        self._hidden: set[str] = set()

    def _key(self, name: object) -> str:
        """The stored form of a name (the module docstring's case rule)."""
        return str(name) if self.case_sensitive else str(name).lower()

    # -- filling ------------------------------------------------------------------
    def add(self, name: str, value: T, aliases: tuple[str, ...] = (), hidden: bool = False) -> T:
        """Register ``value`` under ``name`` (and ``aliases``); a taken name raises."""
        key = self._key(name)
        for k in (key, *(self._key(a) for a in aliases)):
            if k in self._values or k in self._aliases:
                raise ValueError(f"{self.what}: {k!r} is already registered")
        self._values[key] = value
        for a in aliases:
            self._aliases[self._key(a)] = key
        if hidden:
            self._hidden.add(key)
        return value

    def register(self, name: str, target: str, kind: str, summary: str = "", aliases: tuple[str, ...] = (),
                 hidden: bool = False, **kwargs) -> Entry:
        """Register a lazy :class:`Entry` (``target`` "module:factory")."""
        entry = Entry(self._key(name), target, kind, summary, tuple(self._key(a) for a in aliases), hidden,
                      dict(kwargs))
        return self.add(name, entry, aliases, hidden)  # type: ignore[arg-type]

    def remove(self, name: str) -> T:
        """Take a name (and its aliases) out again (tests, plugins)."""
        key = self._aliases.get(self._key(name), self._key(name))
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
        k = self._key(name)
        return k in self._values or k in self._aliases

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def get(self, name: str, where: str | None = None) -> T:
        """Value by name or alias; an unknown name raises :class:`UnknownName`, placed at
        ``where`` (e.g. the option or file the name came from) or the table's own place."""
        k = self._key(name)
        k = self._aliases.get(k, k)
        if k in self._values:
            return self._values[k]
        raise self.unknown(name, where)

    def unknown(self, name: object, where: str | None = None) -> UnknownName:
        """The one-line error for ``name`` (for callers that check membership first)."""
        visible = self.names()
        # near matches compare lower-case forms, so that a wrong case finds its name
        pool = visible + [a for a, n in self._aliases.items() if n not in self._hidden]
        by_low = {p.lower(): p for p in reversed(pool)}
        near = difflib.get_close_matches(str(name).lower(), list(by_low), n=3, cutoff=0.5)
        near = list(dict.fromkeys(self._aliases.get(by_low[n], by_low[n]) for n in near))
        hint = f"did you mean {' or '.join(near)}? " if near else ""
        return UnknownName(f"unknown {self.what} {name!r}", where or self.where,
                           f"{hint}known: {', '.join(visible)}" + (f" {self.listing}" if self.listing else ""))

    def find(self, name: str) -> T | None:
        """Value by name or alias, or None (for callers that keep unknown names as they are)."""
        k = self._key(name)
        return self._values.get(self._aliases.get(k, k))

    def create(self, name: str, **kwargs):
        """Import a lazy entry's module and build it: ``factory(name, **kwargs)``."""
        e = self.get(name)
        return e.load()(e.name, **{**e.kwargs, **kwargs})  # type: ignore[attr-defined]
