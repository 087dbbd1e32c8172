#!/usr/bin/env python3
"""Measure the structure of src/ from its own imports and definitions (stdlib only, nothing is run).

Prints, per package: import cycles (all imports, function-level included, and module-level alone),
imports that run up a floor (package floors below; inside a package, arrows between its first-level
parts that close a loop), the largest file, functions over 80 lines and lines over 120 characters.
`--check` exits 1 when a target is missed (issue 29: cycles 0, imports up a floor 0, largest file
< 600 lines, no function > 80 lines, no line > 120 characters). tests/test_layering.py imports it.
"""
from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"

# A package may import only packages on a lower floor: core is the ground, the simulator and the
# benchmark stand on it side by side (neither imports the other), acquisition on top of all three.
FLOORS = {"gaze4hri_core": 1, "gaze4hri_sim": 2, "gaze4hri_bench": 2, "gaze4hri_acq": 3}

MAX_FILE_LINES = 600  # a file must be shorter
MAX_FUNCTION_LINES = 80
MAX_LINE_CHARS = 120


@dataclass(frozen=True)
class Import:
    """One resolved import of a project module: who, whom, where, and whether it runs at import time."""

    source: str
    target: str
    line: int
    module_level: bool


@dataclass
class Package:
    """The modules of one installable package (src/<name>/<name>/) and the other .py files under src/<name>."""

    name: str
    modules: dict[str, Path] = field(default_factory=dict)  # dotted name -> file
    files: list[Path] = field(default_factory=list)  # every .py under src/<name> (launch files, setup.py)


def _dotted(path: Path, base: Path) -> str:
    parts = list(path.relative_to(base).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def packages(src: Path = SRC) -> dict[str, Package]:
    """The project's packages under `src`, by name (build and install trees of colcon left out)."""
    out = {}
    for name in sorted(FLOORS):
        root = src / name
        pkg = Package(name)
        for p in sorted(root.rglob("*.py")):
            rel = p.relative_to(root).parts
            if rel[0] in ("build", "install", "log") or any(part.startswith(".") for part in rel):
                continue
            pkg.files.append(p)
            if rel[0] == name:
                pkg.modules[_dotted(p, root)] = p
        out[name] = pkg
    return out


def _function_scoped(tree: ast.AST) -> set[int]:
    """ids of the import nodes inside a function body (they run on call, not on import)."""
    inner = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inner.update(id(n) for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return inner


def _targets(node: ast.AST, package: str, modules: dict[str, Path]) -> list[str]:
    """The project modules an import statement depends on: a named submodule when it is one, else the
    module that defines the name (a package's __init__ only when a name is taken from it)."""
    if isinstance(node, ast.Import):
        out = []
        for alias in node.names:
            parts = alias.name.split(".")
            while parts and ".".join(parts) not in modules:
                parts.pop()
            if parts:
                out.append(".".join(parts))
        return out
    assert isinstance(node, ast.ImportFrom)
    if node.level:
        base = package.split(".")
        base = base[: len(base) - (node.level - 1)]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    out = []
    for alias in node.names:
        if f"{module}.{alias.name}" in modules:
            out.append(f"{module}.{alias.name}")
        elif module in modules:
            out.append(module)
    return out


def imports(pkgs: dict[str, Package]) -> list[Import]:
    """Every import of one project module by another, across all packages."""
    modules = {m: p for pkg in pkgs.values() for m, p in pkg.modules.items()}
    out = []
    for name, path in sorted(modules.items()):
        tree = ast.parse(_read(path), filename=str(path))
        inner = _function_scoped(tree)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in _targets(node, package, modules):
                    if target != name:
                        out.append(Import(name, target, node.lineno, id(node) not in inner))
    return sorted(set(out), key=lambda i: (i.source, i.line, i.target))


def graph(edges: list[Import], module_level_only: bool = False) -> dict[str, set[str]]:
    g: dict[str, set[str]] = {}
    for e in edges:
        g.setdefault(e.source, set())
        g.setdefault(e.target, set())
        if e.module_level or not module_level_only:
            g[e.source].add(e.target)
    return g


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """One loop for every arrow that runs back to a module still being walked (depth first, sorted):
    empty exactly when the graph has no cycle."""
    out, state, stack = [], {}, []

    def visit(n: str) -> None:
        state[n] = 1
        stack.append(n)
        for d in sorted(g.get(n, ())):
            if state.get(d) == 1:
                out.append(stack[stack.index(d):] + [d])
            elif d not in state:
                visit(d)
        stack.pop()
        state[n] = 2

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for n in sorted(g):
        if n not in state:
            visit(n)
    return out


def package_of(module: str) -> str:
    return module.split(".", 1)[0]


def cross_package_violations(edges: list[Import]) -> list[Import]:
    """Imports of a package on the same or a higher floor (sim <-> bench, core -> anything, ...)."""
    return [e for e in edges if package_of(e.source) != package_of(e.target)
            and FLOORS[package_of(e.target)] >= FLOORS[package_of(e.source)]]


def part_of(module: str) -> str:
    """A module's first-level part inside its package: the subpackage, or the top-level module itself."""
    return ".".join(module.split(".")[:2])


def part_back_arrows(edges: list[Import], pkgs: dict[str, Package]) -> dict[str, list[Import]]:
    """Per package, the imports that run up a floor between its first-level parts (subpackages, top-level
    modules): the parts are put on floors so that the fewest arrows (part -> part) run back up, and the
    imports along those arrows are returned. None when the parts import each other in no loop."""
    out: dict[str, list[Import]] = {}
    for name in pkgs:
        inside = [e for e in edges if package_of(e.source) == name == package_of(e.target)
                  and part_of(e.source) != part_of(e.target)
                  and e.target != name]  # the package's own __init__ is its face, not a part
        weight: dict[tuple[str, str], int] = {}
        for e in inside:
            pair = (part_of(e.source), part_of(e.target))
            weight[pair] = weight.get(pair, 0) + 1
        up = set()
        for group in _strong_groups(weight):
            up |= _fewest_up_arrows(group, weight)
        out[name] = [e for e in inside if (part_of(e.source), part_of(e.target)) in up]
    return out


def _fewest_up_arrows(group: list[str], weight: dict[tuple[str, str], int]) -> set[tuple[str, str]]:
    """The arrows of one loop-tied group that run up when its members stand in the order with the fewest
    such arrows (then the fewest imports along them): exact, by dynamic programming over subsets."""
    n = len(group)
    if n > 16:
        raise ValueError(f"{n} parts import each other in one loop: too many to put on floors exactly")
    cost = {0: (0, 0)}
    last: dict[int, int] = {}
    for s in range(1 << n):  # s = the members already placed on the lower floors
        if s not in cost:
            continue
        for v in range(n):
            if s & (1 << v):
                continue
            ups = [weight.get((group[u], group[v]), 0) for u in range(n) if s & (1 << u)]
            c = (cost[s][0] + sum(w > 0 for w in ups), cost[s][1] + sum(ups))
            t = s | (1 << v)
            if t not in cost or c < cost[t]:
                cost[t], last[t] = c, v
    order, s = [], (1 << n) - 1
    while s:
        order.append(group[last[s]])
        s &= ~(1 << last[s])
    floor = {m: i for i, m in enumerate(reversed(order))}  # the first placed stands lowest
    return {(a, b) for (a, b) in weight if a in floor and b in floor and floor[a] < floor[b]}


def _strong_groups(weight: dict[tuple[str, str], int]) -> list[list[str]]:
    """Tarjan's strongly connected components of the arrows, those of two or more members, each sorted."""
    g: dict[str, set[str]] = {}
    for a, b in weight:
        g.setdefault(a, set()).add(b)
        g.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on, stack, groups, counter = set(), [], [], [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            members = []
            while True:
                w = stack.pop()
                on.discard(w)
                members.append(w)
                if w == v:
                    break
            if len(members) > 1:
                groups.append(sorted(members))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return groups


@dataclass(frozen=True)
class Function:
    path: Path
    name: str
    line: int
    lines: int


def long_functions(paths: list[Path], limit: int = MAX_FUNCTION_LINES) -> list[Function]:
    out = []
    for p in paths:
        for n in ast.walk(ast.parse(_read(p))):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > limit:
                out.append(Function(p, n.name, n.lineno, n.end_lineno - n.lineno + 1))
    return sorted(out, key=lambda f: -f.lines)


def _read(path: Path) -> str:
    """A file's text; empty when it went away since the tree was listed (a tree being edited)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def line_count(path: Path) -> int:
    return len(_read(path).splitlines())


def long_lines(path: Path, limit: int = MAX_LINE_CHARS) -> int:
    return sum(len(line) > limit for line in _read(path).splitlines())


@dataclass
class Report:
    """Everything the script prints, and what --check and the layering test hold against the targets."""

    cycles_all: dict[str, list[list[str]]]
    cycles_module_level: dict[str, list[list[str]]]
    cross_package: list[Import]
    part_back_arrows: dict[str, list[Import]]
    largest: tuple[Path, int]
    functions: list[Function]
    long_lines: dict[str, int]
    files: dict[str, int]
    lines: dict[str, int]

    def missed(self) -> list[str]:
        out = []
        n = sum(len(c) for c in self.cycles_all.values())
        if n:
            out.append(f"{n} import cycle(s)")
        up = len(self.cross_package) + sum(len(_arrows(v)) for v in self.part_back_arrows.values())
        if up:
            out.append(f"{up} import arrow(s) up a floor")
        if self.largest[1] >= MAX_FILE_LINES:
            out.append(f"largest file {self.largest[1]} lines (target < {MAX_FILE_LINES})")
        if self.functions:
            out.append(f"{len(self.functions)} function(s) over {MAX_FUNCTION_LINES} lines")
        if sum(self.long_lines.values()):
            out.append(f"{sum(self.long_lines.values())} line(s) over {MAX_LINE_CHARS} characters")
        return out


def measure(src: Path = SRC) -> Report:
    pkgs = packages(src)
    edges = imports(pkgs)

    def per_package(module_level_only: bool) -> dict[str, list[list[str]]]:
        g = graph(edges, module_level_only)
        found = cycles(g)
        return {name: [c for c in found if package_of(c[0]) == name] for name in pkgs}

    files = [p for pkg in pkgs.values() for p in pkg.files]
    largest = max(((p, line_count(p)) for p in files), key=lambda t: t[1])
    return Report(
        cycles_all=per_package(False),
        cycles_module_level=per_package(True),
        cross_package=cross_package_violations(edges),
        part_back_arrows=part_back_arrows(edges, pkgs),
        largest=largest,
        functions=long_functions(files),
        long_lines={name: sum(long_lines(p) for p in pkg.files) for name, pkg in pkgs.items()},
        files={name: len(pkg.files) for name, pkg in pkgs.items()},
        lines={name: sum(line_count(p) for p in pkg.files) for name, pkg in pkgs.items()},
    )


def _arrows(found: list[Import]) -> set[tuple[str, str]]:
    """The part -> part arrows that imports run along (one arrow may carry several imports)."""
    return {(part_of(e.source), part_of(e.target)) for e in found}


def _rel(p: Path) -> str:
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


def render(r: Report) -> str:
    out = ["package          floor  files   lines  cycles(all/module-level)  up-floor(cross/inside)  lines>120"]
    for name in sorted(FLOORS, key=lambda n: (FLOORS[n], n)):
        cross = sum(package_of(e.source) == name for e in r.cross_package)
        out.append(f"{name:<16} {FLOORS[name]:>5} {r.files[name]:>6} {r.lines[name]:>7}  "
                   f"{len(r.cycles_all[name]):>10}/{len(r.cycles_module_level[name]):<14} "
                   f"{cross:>9}/{len(_arrows(r.part_back_arrows[name])):<13} {r.long_lines[name]:>9}")
    out.append(f"largest src file: {_rel(r.largest[0])} ({r.largest[1]} lines; target < {MAX_FILE_LINES})")
    for name, found in r.cycles_all.items():
        for c in found:
            level = "module level" if c in r.cycles_module_level[name] else "function-level import in it"
            out.append(f"cycle ({level}): {' -> '.join(c)}")
    for e in r.cross_package:
        out.append(f"up a floor: {e.source}:{e.line} imports {e.target} "
                   f"(floor {FLOORS[package_of(e.source)]} -> {FLOORS[package_of(e.target)]})")
    for name, found in r.part_back_arrows.items():
        for e in found:
            out.append(f"up a floor inside {name}: {e.source}:{e.line} imports {e.target} "
                       f"({part_of(e.source)} stands below {part_of(e.target)}, which imports it back)")
    out.append(f"functions over {MAX_FUNCTION_LINES} lines: {len(r.functions)}")
    out.extend(f"  {f.lines:>4}  {_rel(f.path)}:{f.line} {f.name}" for f in r.functions)
    missed = r.missed()
    out.append("targets: " + ("all met" if not missed else "MISSED: " + "; ".join(missed)))
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a structure target is missed")
    ap.add_argument("--src", type=Path, default=SRC, help="the src/ folder to measure (default: this checkout's)")
    args = ap.parse_args(argv)
    if not args.src.is_dir():
        print(f"structure: error: no folder {args.src}: pass --src <repo>/src", file=sys.stderr)
        return 2
    report = measure(args.src)
    print(render(report))
    return 1 if args.check and report.missed() else 0


if __name__ == "__main__":
    sys.exit(main())
