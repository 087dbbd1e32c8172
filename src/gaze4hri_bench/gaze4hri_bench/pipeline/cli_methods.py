"""``gaze4hri-bench methods``: every registered method with its status (weights present
and verified, present but unrecorded, or missing with the import command)."""
from __future__ import annotations

import argparse
import json

__all__ = ["add_arguments", "main", "status_rows"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models-dir", default=None, metavar="DIR",
                   help="folder of <method>.onnx + manifest.yaml (default: $GAZE4HRI_MODELS, else models/)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--all", action="store_true", help="include hidden test methods")


def status_rows(models_dir=None, include_hidden: bool = False) -> list[dict]:
    from gaze4hri_core.errors import Gaze4HRIError

    from ..methods import METHODS, get_method
    from .runtime import import_command, resolve_model

    rows = []
    for e in METHODS.entries(include_hidden):
        row = {"method": e.name, "aliases": ", ".join(e.aliases), "kind": e.kind, "summary": e.summary}
        if e.kind != "onnx":
            row.update(status="ready (no weights needed)", input="none", fix="")
            rows.append(row)
            continue
        spec = get_method(e.name).spec
        row["input"] = spec.input_type
        from ..zoo.store import models_dir as _dir

        present = (_dir(models_dir) / spec.weights_file).is_file()
        try:
            mf = resolve_model(spec, models_dir)
        except Gaze4HRIError:
            row.update(status="sha256 differs from manifest.yaml" if present else "missing weights",
                       file=spec.weights_file, fix=f"`{import_command(spec)}` (release: {spec.source_url})")
            rows.append(row)
            continue
        if mf.verified:
            st = "verified, RANDOM weights (timing only)" if mf.random_init else "verified"
        else:
            st = "present, not recorded in manifest.yaml"
        row.update(status=st, file=str(mf.path), fix="" if mf.verified else f"re-import: `{import_command(spec)}`")
        rows.append(row)
    return rows


def main(args: argparse.Namespace) -> int:
    rows = status_rows(args.models_dir, args.all)
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    cols = ["method", "kind", "input", "status"]
    w = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    print("  ".join(c.upper().ljust(w[c]) for c in cols).rstrip())
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(w[c]) for c in cols).rstrip())
    fixes = [r for r in rows if r.get("fix")]
    if fixes:
        print()
        for r in fixes:
            print(f"{r['method']}: {r['fix']}")
    print("\nAliases: " + "; ".join(f"{r['method']} = {r['aliases']}" for r in rows if r["aliases"]))
    return 0
