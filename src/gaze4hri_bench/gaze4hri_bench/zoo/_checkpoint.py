"""Reading released checkpoints safely and mapping their keys onto our networks.

``torch.load`` is tried with ``weights_only=True`` first (tensors and plain containers
only, no arbitrary code). A checkpoint that needs full unpickling (e.g. a Lightning
file holding custom hyper-parameter objects) is loaded with ``weights_only=False`` only
when the user passed ``--trust-pickle``, after a warning.
"""
from __future__ import annotations

import pickle
import sys
import zipfile
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["load_checkpoint", "unwrap_state_dict", "map_state_dict", "NESTED_KEYS"]

#: first bytes of torch.save files: zip archive (PyTorch >= 1.6) or legacy pickle (protocol 2+)
_MAGIC = (b"PK\x03\x04", b"\x80")
#: Keys under which training scripts nest the weights, tried in this order.
NESTED_KEYS = ("state_dict", "model_state_dict", "model", "net", "network", "weights")


def load_checkpoint(path: str | Path, trust_pickle: bool = False) -> Any:
    """``torch.load`` on CPU with clear errors for missing, empty, truncated or foreign files."""
    import torch

    p = Path(path)
    if not p.is_file():
        raise Gaze4HRIError(f"checkpoint not found: {p}", "models import",
                            "pass the path of the downloaded weights file")
    if p.stat().st_size == 0:
        raise Gaze4HRIError(f"checkpoint is empty: {p}", "models import", "download the file again")
    with open(p, "rb") as f:
        head = f.read(64)
    if not head.startswith(_MAGIC):
        html = head.lstrip().lower().startswith((b"<!doctype", b"<html"))
        raise Gaze4HRIError(
            f"{p.name} is not a PyTorch checkpoint" + (" but an HTML page" if html else ""),
            f"starts with {head[:16]!r}",
            "download the file itself (Google Drive serves a warning page for large files)" if html
            else "pass the .pt/.pth/.pkl/.ckpt weights file",
        )
    try:
        return torch.load(p, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError as e:
        if "weights only" not in str(e).lower():
            raise _unreadable(p, e) from None
        if not trust_pickle:
            raise Gaze4HRIError(
                f"checkpoint {p.name} holds pickled Python objects besides tensors",
                "models import",
                "if you trust its source, re-run with --trust-pickle (full unpickling can run code)",
            ) from None
    except Exception as e:  # noqa: BLE001 - torch raises RuntimeError/EOFError/zip errors for bad files
        raise _unreadable(p, e) from None
    print(f"warning: loading {p.name} with full unpickling (--trust-pickle)", file=sys.stderr)
    try:
        return torch.load(p, map_location="cpu", weights_only=False)
    except Exception as e:  # noqa: BLE001 - same as above, plus missing classes of foreign code
        raise _unreadable(p, e) from None


def _unreadable(p: Path, e: BaseException) -> Gaze4HRIError:
    kind = "truncated or not a PyTorch checkpoint"
    if isinstance(e, ModuleNotFoundError | AttributeError):
        kind = f"it pickles classes of the original code ({e})"
    elif isinstance(e, zipfile.BadZipFile | EOFError):
        kind = "truncated (incomplete download?)"
    msg = str(e).splitlines()[0][:120] if str(e) else type(e).__name__
    return Gaze4HRIError(f"cannot read checkpoint {p.name}: {kind}", f"torch.load: {msg}",
                         "download the file again and check its sha256")


def _is_tensor_dict(obj: Any) -> bool:
    import torch

    return isinstance(obj, Mapping) and len(obj) > 0 and all(isinstance(v, torch.Tensor) for v in obj.values())


def unwrap_state_dict(obj: Any, where: str = "checkpoint") -> dict[str, Any]:
    """Find the flat name -> tensor mapping inside a checkpoint container: a bare state
    dict, a dict nesting it under one of :data:`NESTED_KEYS`, or a pickled ``nn.Module``."""
    import torch

    seen = 0
    while seen < 4:
        seen += 1
        if isinstance(obj, torch.nn.Module):
            return dict(obj.state_dict())
        if _is_tensor_dict(obj):
            return dict(obj)
        if isinstance(obj, Mapping):
            nested = next((obj[k] for k in NESTED_KEYS if k in obj and isinstance(obj[k], Mapping | torch.nn.Module)),
                          None)
            if nested is None:
                tensors = {k: v for k, v in obj.items() if isinstance(v, torch.Tensor)}
                if len(tensors) > len(obj) // 2:  # a state dict carrying a few stray non-tensor entries
                    return dict(obj)
                break
            obj = nested
            continue
        break
    keys = ", ".join(map(str, list(obj)[:6])) if isinstance(obj, Mapping) else type(obj).__name__
    raise Gaze4HRIError(
        f"no state dict found in {where} (top level: {keys})", "models import",
        "pass the released .pt/.pth/.pkl/.ckpt weights file"
    )


def _strip(key: str, prefixes: Iterable[str]) -> str:
    changed = True
    while changed:
        changed = False
        for pre in prefixes:
            if key.startswith(pre):
                key, changed = key[len(pre):], True
    return key


def map_state_dict(
    obj: Any,
    reference: Mapping[str, Any],
    family: str,
    dropped: Iterable[str] = (),
    strip_prefixes: Iterable[str] = ("module.",),
) -> OrderedDict[str, Any]:
    """Official container -> state dict with exactly ``reference``'s keys, order and shapes.

    Steps (documented in docs/models.md): unwrap the container; strip ``strip_prefixes``
    (DataParallel's ``module.``); drop keys starting with a ``dropped`` prefix (training-only
    heads); fill absent BatchNorm ``num_batches_tracked`` counters (unused at inference and
    missing from pre-0.4.1 checkpoints) with 0. Anything else missing, unexpected or of the
    wrong shape raises :class:`Gaze4HRIError` naming the keys.
    """
    import torch

    flat = unwrap_state_dict(obj)
    dropped = tuple(dropped)
    sd: dict[str, Any] = {}
    for k, v in flat.items():
        k = _strip(str(k), tuple(strip_prefixes))
        if dropped and k.startswith(dropped):
            continue
        sd[k] = v
    for k in reference:
        if k not in sd and k.endswith("num_batches_tracked"):
            sd[k] = torch.zeros((), dtype=torch.long)
    missing = [k for k in reference if k not in sd]
    unexpected = [k for k in sd if k not in reference]
    wrong = [
        f"{k} {list(sd[k].shape) if isinstance(sd[k], torch.Tensor) else type(sd[k]).__name__} "
        f"!= {list(reference[k].shape)}"
        for k in reference
        if k in sd and (not isinstance(sd[k], torch.Tensor) or tuple(sd[k].shape) != tuple(reference[k].shape))
    ]
    if missing or unexpected or wrong:
        raise Gaze4HRIError(
            f"checkpoint does not match the {family} architecture: {describe_mismatch(missing, unexpected, wrong)}",
            "models import",
            "check that the file is a checkpoint of this method (see `gaze4hri-bench models list`)",
        )
    return OrderedDict((k, sd[k]) for k in reference)


def describe_mismatch(missing: list[str], unexpected: list[str], wrong: list[str], show: int = 3) -> str:
    """One-line summary: counts and the first few names of each kind of difference."""

    def part(label: str, items: list[str]) -> str | None:
        if not items:
            return None
        more = f", ... (+{len(items) - show})" if len(items) > show else ""
        return f"{len(items)} {label} ({', '.join(items[:show])}{more})"

    return "; ".join(p for p in (part("missing", missing), part("unexpected", unexpected),
                                 part("wrong shape", wrong)) if p)
