"""The acquisition package's module graph has no import cycle (function-level imports
included): the entry points (cli, nodes/host, simulate) sit on session_assembly, which
imports none of them (issue 20: cli.py <-> nodes/host.py was the package's cycle)."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[2] / "src" / "gaze4hri_acq" / "gaze4hri_acq"


def _module(path: Path) -> str:
    rel = path.relative_to(PKG.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _graph() -> dict[str, set[str]]:
    mods = {_module(p): p for p in PKG.rglob("*.py")}
    g: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        pkg = m if p.name == "__init__.py" else m.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = pkg.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                cands = [target] + [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                cands = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                cands = [a.name for a in node.names]
            else:
                continue
            g[m].update(c for c in cands if c in mods and c != m and not mods[c].name == "__init__.py")
    return g


def _cycles(g: dict[str, set[str]]) -> list[list[str]]:
    out, state, stack = [], {}, []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for d in sorted(g[n]):
            if state.get(d) == 1:
                out.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(g):
        if n not in state:
            visit(n)
    return out


@pytest.mark.unit
def test_no_import_cycle_in_the_acquisition_package():
    g = _graph()
    assert g["gaze4hri_acq.cli"] >= {"gaze4hri_acq.session_assembly"}
    assert "gaze4hri_acq.session_assembly" in g["gaze4hri_acq.nodes.host"]
    assert _cycles(g) == []


@pytest.mark.unit
def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c", "a"]]
