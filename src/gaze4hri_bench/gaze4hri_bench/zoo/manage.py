"""Zoo operations behind ``gaze4hri-bench models``: import an official checkpoint, export a
random-weight model, verify and list the models folder.

Import order (docs/models.md): read the file safely -> map the official keys onto our
network (family ``convert_checkpoint``) -> compare names and shapes with the recorded
manifest (docs/models/) -> ``load_state_dict(strict=True)`` -> ONNX export -> graph
contract check -> ONNX Runtime vs PyTorch parity -> move into place and record.
"""
from __future__ import annotations

import datetime as _dt
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gaze4hri_core.errors import Gaze4HRIError

from ..specs import SPECS, MethodSpec, get_spec
from . import export as ex
from . import families, store
from ._checkpoint import load_checkpoint, unwrap_state_dict
from ._manifest import check as check_manifest

__all__ = ["import_checkpoint", "export_random", "verify", "listing", "Row", "VerifyResult"]


def _versions() -> dict[str, str]:
    import onnx
    import onnxruntime
    import torch

    from gaze4hri_bench import __version__ as ours

    return {"gaze4hri_bench": str(ours), "torch": str(torch.__version__), "onnx": str(onnx.__version__),
            "onnxruntime": str(onnxruntime.__version__)}


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def _guess_methods(obj: Any, exclude: str) -> list[str]:
    """Methods whose recorded manifest the checkpoint's keys match (for error hints)."""
    try:
        keys = {k.removeprefix("module.") for k in unwrap_state_dict(obj)}
    except Gaze4HRIError:
        return []
    hits = []
    for name, spec in SPECS.items():
        if name == exclude or families.family_status(spec.family) != "ok":
            continue
        try:
            man = families.load_method_manifest(spec, families.load_family(spec.family))
        except Gaze4HRIError:
            continue
        if man is not None and man.names and all(n in keys for n in man.names if not n.endswith("num_batches_tracked")):
            hits.append(name)
    return hits


def _export_and_record(model, spec: MethodSpec, directory: Path, record: dict[str, Any], quiet: bool) -> dict[str, Any]:
    """Export to a temporary file, check contract and parity, move into place, record."""
    times: dict[str, float] = {}
    final = store.onnx_path(spec.name, directory)
    tmp = directory / f".{spec.name}.{os.getpid()}.onnx.tmp"
    try:
        with ex.timed(times, "export_s"):
            ex.export_onnx(model, spec, tmp)
        with ex.timed(times, "verify_s"):
            ex.check_contract(tmp, spec)
            par = ex.parity(model, tmp, spec)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    record.update({
        "onnx": final.name,
        "onnx_sha256": store.sha256_file(tmp),
        "opset": ex.OPSET,
        "inputs": {k: list(v) for k, v in spec.onnx_inputs.items()},
        "outputs": {k: list(v) for k, v in spec.onnx_outputs.items()},
        "parity": {"max_abs_diff": float(f"{par.max_abs_diff:.3g}"), "atol": ex.PARITY_ATOL, "batch": par.batch,
                   "runtime": "onnxruntime CPUExecutionProvider"},
        "seconds": times,
        "versions": _versions(),
    })
    try:
        os.replace(tmp, final)
        store.write_record(directory, spec.name, record)
    except BaseException:
        tmp.unlink(missing_ok=True)
        final.unlink(missing_ok=True)
        store.remove_record(directory, spec.name)
        raise
    if not quiet:
        print(f"wrote {final} (parity max |diff| {par.max_abs_diff:.2g} < {ex.PARITY_ATOL:g}; "
              f"export {times['export_s']:.1f} s, verify {times['verify_s']:.1f} s)")
    return record


def import_checkpoint(method: str, checkpoint: str | Path, models_dir: str | Path | None = None,
                      trust_pickle: bool = False, quiet: bool = False) -> dict[str, Any]:
    """Official (or same-architecture) checkpoint -> verified ``<models>/<method>.onnx``."""
    res = families.resolve(method)
    spec, mod = res.spec, res.module
    manifest = families.load_method_manifest(spec, mod)
    ckpt = Path(checkpoint)
    obj = load_checkpoint(ckpt, trust_pickle=trust_pickle)
    check = getattr(mod, "check_checkpoint", None)  # optional family hook: a same-architecture file for another setting
    note = check(obj, ckpt) if check is not None else None
    if note:
        print(f"warning: {note}", file=sys.stderr)
    try:
        sd = mod.convert_checkpoint(obj)
    except Gaze4HRIError as e:
        others = _guess_methods(obj, spec.name)
        if others:
            e.fix = f"its keys match {', '.join(others)}: did you mean `models import {others[0]} {ckpt}`?"
        raise
    if manifest is not None:
        check_manifest(manifest, sd, f"checkpoint {ckpt.name}")
    digest = store.sha256_file(ckpt)
    if spec.weights_sha256 and digest != spec.weights_sha256:
        print(f"warning: {ckpt.name} sha256 {digest[:12]}... differs from the official release "
              f"({spec.weights_sha256[:12]}...); importing it as a same-architecture checkpoint", file=sys.stderr)
    model = mod.build()
    try:
        model.load_state_dict(sd, strict=True)
    except RuntimeError as e:
        raise Gaze4HRIError(f"checkpoint does not load into {spec.family}", str(e).splitlines()[0][:160],
                            "check the method name") from None
    model.eval()
    directory = store.models_dir(models_dir)
    record = {
        "method": spec.name, "family": spec.family, "train_set": spec.train_set, "random_init": False,
        "checkpoint": ckpt.name, "checkpoint_sha256": digest,
        "official_checkpoint": bool(spec.weights_sha256 and digest == spec.weights_sha256),
        "source": spec.source_url, "licence": spec.licence, "imported_utc": _now(),
        "state_dict_manifest": str(families.manifest_path(spec, mod).relative_to(families.repo_root()))
        if manifest is not None else "not available (installed package)",
    }
    return _export_and_record(model, spec, directory, record, quiet)


def export_random(method: str, models_dir: str | Path | None = None, seed: int = 0,
                  quiet: bool = False) -> dict[str, Any]:
    """Random-weight model (tests, timing): same graph and contract as an imported one."""
    res = families.resolve(method)
    model = ex.random_model(res.module, res.spec, seed=seed)
    record = {
        "method": res.spec.name, "family": res.spec.family, "train_set": res.spec.train_set, "random_init": True,
        "seed": seed, "checkpoint": None, "checkpoint_sha256": None, "source": res.spec.source_url,
        "licence": res.spec.licence, "imported_utc": _now(),
    }
    return _export_and_record(model, res.spec, store.models_dir(models_dir), record, quiet)


@dataclass(frozen=True)
class VerifyResult:
    method: str
    ok: bool
    message: str


def _verify_one(spec: MethodSpec, directory: Path, records: dict[str, dict]) -> VerifyResult:
    path = store.onnx_path(spec.name, directory)
    rec = records.get(spec.name)
    if not path.is_file():
        return VerifyResult(spec.name, False, f"{path.name} missing" + (" (recorded in manifest.yaml)" if rec else ""))
    if rec is None:
        return VerifyResult(spec.name, False, f"{path.name} is not recorded in manifest.yaml: re-import it")
    digest = store.sha256_file(path)
    if digest != rec.get("onnx_sha256"):
        return VerifyResult(spec.name, False, f"{path.name} sha256 {digest[:12]}... differs from the recorded "
                                              f"{str(rec.get('onnx_sha256'))[:12]}...: re-import it")
    try:
        ex.check_contract(path, spec)
        sess = ex.ort_session(path)
        xs = ex.example_inputs(spec, 1)
        outs = sess.run(list(spec.onnx_outputs), {n: x.numpy() for n, x in zip(spec.onnx_inputs, xs, strict=True)})
    except Gaze4HRIError as e:
        return VerifyResult(spec.name, False, e.line())
    except Exception as e:  # noqa: BLE001 - onnxruntime raises its own exception types
        return VerifyResult(spec.name, False, f"ONNX Runtime failed: {str(e).splitlines()[0][:120]}")
    import numpy as np

    if not all(np.all(np.isfinite(o)) for o in outs):
        return VerifyResult(spec.name, False, "non-finite outputs on a random input")
    what = "random weights" if rec.get("random_init") else f"from {rec.get('checkpoint')}"
    return VerifyResult(spec.name, True, f"sha256, I/O contract and ONNX Runtime run OK ({what})")


def verify(methods: list[str] | None = None, models_dir: str | Path | None = None) -> list[VerifyResult]:
    """Check recorded models (or the given methods): file sha256 against manifest.yaml, ONNX
    graph against the spec, and one ONNX Runtime run with finite outputs."""
    directory = store.models_dir(models_dir)
    records = store.read_records(directory)
    names = [get_spec(m).name for m in methods] if methods else sorted(
        set(records) | {s for s in SPECS if store.onnx_path(s, directory).is_file()})
    out = []
    for name in names:
        spec = SPECS.find(name)
        if spec is None:
            out.append(VerifyResult(name, False, "recorded in manifest.yaml but unknown to this build"))
            continue
        out.append(_verify_one(spec, directory, records))
    return out


@dataclass(frozen=True)
class Row:
    """One line of ``models list``."""

    method: str
    family: str
    train_set: str
    licence: str
    source_url: str
    expected_sha256: str
    implemented: str
    onnx: str

    def as_dict(self) -> dict[str, str]:
        return dict(self.__dict__)


def _onnx_state(spec: MethodSpec, directory: Path, records: dict[str, dict]) -> str:
    path = store.onnx_path(spec.name, directory)
    rec = records.get(spec.name)
    if not path.is_file():
        return "missing"
    if rec is None:
        return "present, unrecorded"
    if store.sha256_file(path) != rec.get("onnx_sha256"):
        return "present, modified since import"
    if rec.get("random_init"):
        return "verified, RANDOM weights"
    return f"verified ({rec.get('imported_utc', '?')[:10]})"


def listing(models_dir: str | Path | None = None) -> list[Row]:
    """Every method of the specs with licence, source, expected sha256 and ONNX state."""
    directory = store.models_dir(models_dir)
    records = store.read_records(directory)
    rows = []
    for spec in SPECS.values():
        status = families.family_status(spec.family)
        own = "own" in spec.notes or "No released" in spec.notes
        expected = spec.weights_sha256 or ("none released (own training)" if own else "unknown")
        rows.append(Row(spec.name, spec.family, spec.train_set, spec.licence, spec.source_url, expected,
                        "yes" if status == "ok" else status, _onnx_state(spec, directory, records)))
    return rows
