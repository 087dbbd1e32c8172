"""Two demo outputs, compared: the results Parquet frames and the report's tables, bit for bit.

A refactor that must not change behaviour is checked by running the benchmark and the
statistics of two checkouts on the same recorded sessions and comparing what they wrote:

    git worktree add /tmp/before <rev>          # the checkout before the change
    B=/tmp/before/src; P=$B/gaze4hri_core:$B/gaze4hri_sim:$B/gaze4hri_acq:$B/gaze4hri_bench   # not exported
    PYTHONPATH=$P .venv/bin/gaze4hri-bench demo --out /tmp/demo_before
    mkdir -p /tmp/demo_after && cp -r /tmp/demo_before/sessions /tmp/demo_after/
    .venv/bin/gaze4hri-bench demo --out /tmp/demo_after   # keeps the sessions, reruns run + stats
    .venv/bin/python benchmarks/demo_parity.py /tmp/demo_before /tmp/demo_after

Results: every Parquet file under results/ is read with pandas and compared column by
column (values, dtypes, order); the file-level provenance is compared key by key, where
keys that record the run itself (timings, memory, host, start time, command line, code version)
are listed but not counted. Report: every table file (.md, .tex, .csv) under report/tables/
must be byte-identical, except the compute-cost tables (efficiency, table_s10), whose measured
columns (seconds, frames/s, memory) are left out and the rest compared as CSV. Exit 0 when
all agree, 1 otherwise (each difference one line).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

#: provenance keys that describe the run, not its results (timing, machine, code version)
RUN_KEYS = (
    "timing",
    "host",
    "started",
    "finished",
    "command_line",
    "code",
    "git",
    "version",
    "elapsed",
    "python",
    "created",
    "wall",
    "rss",
    "vram",
)
#: the report's compute-cost tables: their measured columns change from run to run
COST_TABLES = ("efficiency", "table_s10")
TABLE_SUFFIXES = (".md", ".tex", ".csv")


def _files(root: Path, sub: str, suffixes: tuple[str, ...]) -> dict[str, Path]:
    base = root / sub
    return {str(p.relative_to(base)): p for p in sorted(base.rglob("*")) if p.is_file() and p.suffix in suffixes}


def _run_key(key: str) -> bool:
    k = key.lower()
    return any(r in k for r in RUN_KEYS) or k.endswith("_s")


def _measured(column: str) -> bool:
    c = column.lower()
    return _run_key(c) or any(m in c for m in ("fps", "ms/frame", "ms_per_frame", "(mb)"))


def compare_cost_table(a: Path, b: Path) -> list[str]:
    """A compute-cost table's CSV without its measured columns (times, rates, memory)."""
    import pandas as pd

    fa, fb = pd.read_csv(a), pd.read_csv(b)
    keep = [c for c in fa.columns if not _measured(c)]
    if list(fa.columns) != list(fb.columns) or not fa[keep].equals(fb[keep]):
        return [f"report/tables/{a.name}: differs outside its measured columns"]
    return []


def _flatten(d, prefix=""):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from _flatten(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, d


def compare_parquet(a: Path, b: Path) -> tuple[list[str], list[str]]:
    """(differences, run-only differences) between two results files."""
    import pandas as pd
    import pyarrow.parquet as pq

    diffs: list[str] = []
    fa, fb = pd.read_parquet(a), pd.read_parquet(b)
    if list(fa.columns) != list(fb.columns):
        diffs.append(f"{b.name}: columns differ: {sorted(set(fa.columns) ^ set(fb.columns))}")
    elif len(fa) != len(fb):
        diffs.append(f"{b.name}: {len(fa)} vs {len(fb)} rows")
    else:
        for c in fa.columns:
            if fa[c].dtype != fb[c].dtype:
                diffs.append(f"{b.name}: column {c}: dtype {fa[c].dtype} vs {fb[c].dtype}")
            elif not fa[c].equals(fb[c]):
                n = int((fa[c].astype(object) != fb[c].astype(object)).sum())
                diffs.append(f"{b.name}: column {c}: {n} of {len(fa)} values differ")
    run_only: list[str] = []
    ma, mb = pq.read_schema(a).metadata or {}, pq.read_schema(b).metadata or {}
    for key in sorted(set(ma) | set(mb)):
        va, vb = ma.get(key), mb.get(key)
        if va == vb:
            continue
        try:
            ja, jb = dict(_flatten(json.loads(va or b"{}"))), dict(_flatten(json.loads(vb or b"{}")))
        except ValueError:
            diffs.append(f"{b.name}: metadata {key.decode(errors='replace')} differs")
            continue
        for k in sorted(set(ja) | set(jb)):
            if ja.get(k) != jb.get(k):
                (run_only if _run_key(k) else diffs).append(f"{b.name}: provenance {k}: {ja.get(k)!r} vs {jb.get(k)!r}")
    return diffs, run_only


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("before", type=Path, help="the first demo output folder (results/, report/)")
    p.add_argument("after", type=Path, help="the second demo output folder")
    a = p.parse_args(argv)
    diffs: list[str] = []
    run_only: list[str] = []
    ra, rb = _files(a.before, "results", (".parquet",)), _files(a.after, "results", (".parquet",))
    ta, tb = _files(a.before, "report/tables", TABLE_SUFFIXES), _files(a.after, "report/tables", TABLE_SUFFIXES)
    for name in sorted(set(ra) ^ set(rb)):
        diffs.append(f"results/{name}: only in {'before' if name in ra else 'after'}")
    for name in sorted(set(ra) & set(rb)):
        d, r = compare_parquet(ra[name], rb[name])
        diffs += d
        run_only += r
    for name in sorted(set(ta) ^ set(tb)):
        diffs.append(f"report/{name}: only in {'before' if name in ta else 'after'}")
    same_tables = 0
    cost = 0
    for name in sorted(set(ta) & set(tb)):
        if Path(name).stem in COST_TABLES:
            if Path(name).suffix == ".csv":
                d = compare_cost_table(ta[name], tb[name])
                diffs += d
                cost += not d
        elif ta[name].read_bytes() != tb[name].read_bytes():
            diffs.append(f"report/tables/{name}: differs")
        else:
            same_tables += 1
    for line in run_only:
        print("run-only (not counted):", line)
    for line in diffs:
        print("DIFF:", line)
    n_rows = 0
    if ra:
        import pyarrow.parquet as pq

        n_rows = sum(pq.read_metadata(ra[k]).num_rows for k in ra)
    n_cost = sum(Path(n).stem in COST_TABLES for n in set(ta) | set(tb))
    print(
        f"results: {len(set(ra) & set(rb))} Parquet files ({n_rows} rows before), "
        f"{'see DIFF lines' if diffs else 'every column equal'}; report: "
        f"{same_tables} of {len(set(ta) | set(tb)) - n_cost} table files byte-identical, {cost} compute-cost "
        f"table(s) equal outside their measured columns; {len(diffs)} difference(s)"
    )
    return 0 if not diffs else 1


if __name__ == "__main__":
    sys.exit(main())
