"""Run every benchmark script in benchmarks/ (``make bench``), one after another.

Each script measures one issue's numbers and writes its figures (with the command
that produced them) to docs/perf/<area>.md; docs/PERFORMANCE.md links them. Scripts
are independent: ``python benchmarks/<name>.py --help`` shows each one's options.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--only", nargs="*", help="substrings of script names to run")
    ap.add_argument("--list", action="store_true", help="list the scripts and exit")
    a = ap.parse_args()
    scripts = sorted(
        p
        for p in HERE.glob("*.py")
        if p.name not in {"run_all.py", "__init__.py"}
        and not p.name.startswith("_")
        and p.name != "make_synthetic_results.py"
    )
    if a.only:
        scripts = [p for p in scripts if any(s in p.name for s in a.only)]
    if a.list:
        print("\n".join(p.name for p in scripts))
        return 0
    failed = []
    for p in scripts:
        t0 = time.perf_counter()
        print(f"== {p.name}", flush=True)
        rc = subprocess.call([sys.executable, str(p)])
        print(f"== {p.name}: exit {rc} in {time.perf_counter() - t0:.0f} s", flush=True)
        if rc:
            failed.append(p.name)
    if failed:
        print("failed: " + ", ".join(failed), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
