"""``gaze4hri-bench methods``: every registered method with its status (weights present
and verified, present but unrecorded, or missing with the import command), the spec
files added to the models folder and the plugins found through the entry point.
``gaze4hri-bench methods add mynet.yaml``: check a spec file against its ONNX file and
copy both into the models folder, so that ``--method mynet`` runs it (docs/models.md,
"Your own model")."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

__all__ = ["add_arguments", "main", "status_rows", "add_method", "register_models_dir"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=("list", "add", "check"), default="list",
                   help="list (default): every method and its status; add: copy a spec file and its ONNX "
                        "file into the models folder; check: its output convention against --data")
    p.add_argument("spec", nargs="?", metavar="SPEC.yaml", help="add, check: the method's spec file (check: or name)")
    p.add_argument("--models-dir", default=None, metavar="DIR",
                   help="folder of <method>.onnx + manifest.yaml (default: $GAZE4HRI_MODELS, else models/)")
    p.add_argument("--force", action="store_true", help="add: replace a method of the same name added before")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--all", action="store_true", help="include hidden test methods")
    from .convention_check import add_check_arguments

    add_check_arguments(p)


def register_models_dir(models_dir=None) -> dict[str, str]:
    """Register every spec file in the models folder (added with ``methods add``);
    returns the files refused, file -> one-line reason (the listing shows them)."""
    from gaze4hri_core.errors import Gaze4HRIError

    from ..methods import METHODS
    from ..methods.plugins import user_method
    from ..zoo.store import MANIFEST_NAME
    from ..zoo.store import models_dir as _dir

    d = _dir(models_dir)
    refused = {}
    for p in sorted(d.glob("*.yaml")) if d.is_dir() else []:
        if p.name == MANIFEST_NAME:
            continue
        try:
            user_method(METHODS, str(p), d)
        except Gaze4HRIError as e:
            refused[str(p)] = e.line()
    return refused


def add_method(spec_file: str, models_dir=None, force: bool = False) -> Path:
    """Check ``spec_file`` (fields, crop rule, its ONNX graph) and copy it with its ONNX
    file into the models folder, recorded in manifest.yaml; returns the copied spec."""
    import shutil

    import yaml

    from ..methods import METHODS
    from ..methods.plugins import check_crop_rule, spec_source
    from ..spec_file import SpecError, check_onnx, load_spec, spec_hash
    from ..zoo import store

    spec, aliases = load_spec(spec_file)
    onnx_path = Path(spec.weights_file)
    if not onnx_path.is_file():
        raise SpecError(spec_file, "weights_file", f"{onnx_path} does not exist",
                        "put the ONNX file next to the spec file, or give its path relative to it")
    check_crop_rule(spec, spec_file)
    check_onnx(spec, onnx_path, spec_file)
    d = store.models_dir(models_dir)
    dest = d / f"{spec.name}.yaml"
    if METHODS.find(spec.name) is not None and spec_source(spec.name) != str(dest):
        raise SpecError(spec_file, "name", f"{spec.name!r} is taken by another method",
                        "rename the method (`gaze4hri-bench methods` lists the names in use)")
    if dest.is_file() and not force:
        raise SpecError(spec_file, "name", f"{spec.name!r} was added before ({dest})",
                        "rename the method, or replace it with --force")
    d.mkdir(parents=True, exist_ok=True)
    onnx_dest = d / f"{spec.name}.onnx"
    if onnx_path.resolve() != onnx_dest.resolve():
        shutil.copyfile(onnx_path, onnx_dest)
    data = yaml.safe_load(Path(spec_file).read_text(encoding="utf-8"))
    data["weights_file"] = onnx_dest.name  # relative to the copied spec: the models folder
    dest.write_text(f"# added by `gaze4hri-bench methods add {spec_file}`\n"
                    + yaml.safe_dump(data, sort_keys=False, width=110), encoding="utf-8")
    store.write_record(d, spec.name, {"method": spec.name, "onnx": onnx_dest.name,
                                      "onnx_sha256": store.sha256_file(onnx_dest), "spec": dest.name,
                                      "spec_sha256": spec_hash(spec), "source": spec.source_url})
    return dest


def status_rows(models_dir=None, include_hidden: bool = False) -> list[dict]:
    from gaze4hri_core.errors import Gaze4HRIError

    from ..methods import METHODS, method_spec
    from ..methods.plugins import PLUGIN_ERRORS, spec_source
    from .runtime import import_command, resolve_model

    rows = [{"method": f, "aliases": "", "kind": "spec file", "summary": "", "input": "", "status": "refused",
             "fix": why} for f, why in register_models_dir(models_dir).items()]
    rows += [{"method": n, "aliases": "", "kind": "plugin", "summary": "", "input": "", "status": "refused",
              "fix": why} for n, why in PLUGIN_ERRORS.items()]
    for e in METHODS.entries(include_hidden):
        row = {"method": e.name, "aliases": ", ".join(e.aliases), "kind": e.kind, "summary": e.summary}
        if e.kind != "onnx":
            row.update(status="plugin (built when a run names it)" if e.kind == "plugin" else
                       "ready (no weights needed)", input="none" if e.kind != "plugin" else "", fix="")
            rows.append(row)
            continue
        spec = method_spec(e.name)
        row["input"] = spec.input_type
        from ..zoo.store import models_dir as _dir

        present = (_dir(models_dir) / spec.weights_file).is_file()
        try:
            mf = resolve_model(spec, models_dir)
        except Gaze4HRIError:
            fix = (f"`gaze4hri-bench methods add {spec_source(e.name)} --force`" if spec_source(e.name)
                   else f"`{import_command(spec)}` (release: {spec.source_url})")
            row.update(status="sha256 differs from manifest.yaml" if present else "missing weights",
                       file=spec.weights_file, fix=fix)
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
    if args.action == "check":
        from .convention_check import check_main

        return check_main(args)
    if args.action == "add":
        if not args.spec:
            from gaze4hri_core.errors import Gaze4HRIError

            raise Gaze4HRIError("no spec file given", "gaze4hri-bench methods add",
                                "name one: `gaze4hri-bench methods add mynet.yaml`")
        dest = add_method(args.spec, args.models_dir, args.force)
        name = dest.stem
        print(f"added {name}: {dest} (run it with `gaze4hri-bench run --method {name}`)")
        return 0
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
