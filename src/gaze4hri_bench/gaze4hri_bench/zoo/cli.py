"""``gaze4hri-bench models``: list, import, export, verify and describe ONNX models.

    gaze4hri-bench models list [--json]
    gaze4hri-bench models import METHOD CHECKPOINT [--trust-pickle]
    gaze4hri-bench models export METHOD --random-init [--seed N]
    gaze4hri-bench models verify [METHOD ...]
    gaze4hri-bench models manifest METHOD [--write]

Every subcommand takes ``--models-dir`` (else ``$GAZE4HRI_MODELS``, else ``models/``).
Bad input raises :class:`Gaze4HRIError`; the top-level CLI prints one line and exits 2.
"""
from __future__ import annotations

import argparse
import json
import sys

from gaze4hri_core.errors import Gaze4HRIError

from ..specs import SPECS

__all__ = ["add_arguments", "main"]

_METHODS = ", ".join(SPECS)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--models-dir", metavar="DIR",
                        help="folder of <method>.onnx and manifest.yaml (default: $GAZE4HRI_MODELS, else models/)")
    sub = parser.add_subparsers(dest="models_command", metavar="ACTION")

    p = sub.add_parser("list", parents=[common], help="methods, licences, sources and the state of their ONNX models")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")

    p = sub.add_parser("import", parents=[common], help="official checkpoint -> verified <models>/<method>.onnx",
                       description="Map an official (or same-architecture) checkpoint onto our network, check it "
                                   "against the recorded manifest, export ONNX and verify it against PyTorch.")
    p.add_argument("method", metavar="METHOD", help=f"one of: {_METHODS} (or an alias)")
    p.add_argument("checkpoint", metavar="CHECKPOINT", help="the downloaded weights file (.pt, .pth, .pkl, .ckpt)")
    p.add_argument("--trust-pickle", action="store_true",
                   help="allow full unpickling when the file holds Python objects besides tensors (can run code: "
                        "only for files from a source you trust)")

    p = sub.add_parser("export", parents=[common], help="export a random-weight model (tests, timing)")
    p.add_argument("method", metavar="METHOD", help=f"one of: {_METHODS}")
    p.add_argument("--random-init", action="store_true", required=True,
                   help="required: the weights are random (use `models import` for real ones)")
    p.add_argument("--seed", type=int, default=0, help="random seed of the weights (default 0)")

    p = sub.add_parser("verify", parents=[common], help="check sha256, I/O contract and an ONNX Runtime run")
    p.add_argument("methods", nargs="*", metavar="METHOD", help="default: every model in the folder")

    p = sub.add_parser("manifest", parents=[common], help="print (or --write) the state-dict manifest of a method")
    p.add_argument("method", metavar="METHOD", help=f"one of: {_METHODS}")
    p.add_argument("--write", action="store_true", help="rewrite docs/models/<file>.json from our network")
    parser.set_defaults(_models_parser=parser)


def _table(rows: list[dict[str, str]], cols: list[str]) -> str:
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    lines = ["  ".join(c.upper().ljust(widths[c]) for c in cols)]
    lines += ["  ".join(str(r[c]).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def _cmd_list(args) -> int:
    from .manage import listing

    rows = [r.as_dict() for r in listing(args.models_dir)]
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print(_table(rows, ["method", "train_set", "licence", "onnx", "implemented"]))
    print()
    print(_table(rows, ["method", "source_url", "expected_sha256"]))
    return 0


def _cmd_import(args) -> int:
    from .manage import import_checkpoint

    import_checkpoint(args.method, args.checkpoint, args.models_dir, trust_pickle=args.trust_pickle)
    return 0


def _cmd_export(args) -> int:
    from .manage import export_random

    export_random(args.method, args.models_dir, seed=args.seed)
    print("note: random weights; gaze outputs are meaningless (for tests and timing only)", file=sys.stderr)
    return 0


def _cmd_verify(args) -> int:
    from . import store
    from .manage import verify

    results = verify(args.methods or None, args.models_dir)
    if not results:
        print(f"no models in {store.models_dir(args.models_dir)}; import one with `gaze4hri-bench models import`")
        return 1
    for r in results:
        print(f"{'OK  ' if r.ok else 'FAIL'} {r.method}: {r.message}")
    return 0 if all(r.ok for r in results) else 1


def _cmd_manifest(args) -> int:
    from .manifests import build_manifest, write_manifest

    if args.write:
        for path in write_manifest(args.method):
            print(f"wrote {path}")
    else:
        print(build_manifest(args.method).to_json(), end="")
    return 0


_COMMANDS = {"list": _cmd_list, "import": _cmd_import, "export": _cmd_export, "verify": _cmd_verify,
             "manifest": _cmd_manifest}


def main(args: argparse.Namespace) -> int:
    cmd = getattr(args, "models_command", None)
    if cmd is None:
        args._models_parser.print_help()
        return 2
    try:
        return _COMMANDS[cmd](args)
    except Gaze4HRIError:
        raise
    except (OSError, MemoryError) as e:
        raise Gaze4HRIError(f"{type(e).__name__}: {e}", f"models {cmd}",
                            "check paths, permissions and free space") from None
