"""The models folder: ``<method>.onnx`` files and ``manifest.yaml``, the record of how each
was produced (checkpoint and ONNX sha256, source, licence, date, parity result).

Folder resolution, first match wins: an explicit ``--models-dir``; the environment
variable ``GAZE4HRI_MODELS``; ``models/`` of the source checkout holding this package;
``./models``.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any

from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["ENV_VAR", "MANIFEST_NAME", "SCHEMA", "models_dir", "onnx_path", "sha256_file", "read_records",
           "write_record", "remove_record"]

ENV_VAR = "GAZE4HRI_MODELS"
MANIFEST_NAME = "manifest.yaml"
SCHEMA = "gaze4hri-models/1"
_HEADER = """\
# Record of the ONNX models in this folder, written by `gaze4hri-bench models import`
# and `models export`; read by `models list` / `models verify` and the benchmark.
# Weights and .onnx files are never committed (see README.md in this folder).
"""


def models_dir(override: str | Path | None = None) -> Path:
    """Where ONNX models live (see the module docstring for the resolution order)."""
    if override:
        return Path(override).expanduser()
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env).expanduser()
    from .families import repo_root

    root = repo_root()
    if root is not None and (root / "models").is_dir():
        return root / "models"
    return Path.cwd() / "models"


def onnx_path(method: str, directory: Path) -> Path:
    return directory / f"{method}.onnx"


def sha256_file(path: str | Path, chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def read_records(directory: Path) -> dict[str, dict[str, Any]]:
    """method -> record from ``manifest.yaml`` (empty when the file does not exist)."""
    import yaml

    p = directory / MANIFEST_NAME
    if not p.is_file():
        return {}
    try:
        doc = yaml.safe_load(p.read_text()) or {}
    except yaml.YAMLError as e:
        raise Gaze4HRIError(f"cannot parse {p}", str(e).splitlines()[0],
                            "fix or delete the file and re-import") from None
    models = doc.get("models") or {}
    if not isinstance(models, dict):
        raise Gaze4HRIError(f"{p}: 'models' must be a mapping", MANIFEST_NAME, "fix or delete the file and re-import")
    return {str(k): dict(v or {}) for k, v in models.items()}


def _write(directory: Path, records: dict[str, dict[str, Any]]) -> Path:
    import yaml

    directory.mkdir(parents=True, exist_ok=True)
    p = directory / MANIFEST_NAME
    body = yaml.safe_dump({"schema": SCHEMA, "models": dict(sorted(records.items()))}, sort_keys=False, width=120,
                          default_flow_style=None)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".manifest.", suffix=".yaml")
    with os.fdopen(fd, "w") as f:
        f.write(_HEADER + body)
    os.replace(tmp, p)
    return p


def write_record(directory: Path, method: str, record: dict[str, Any]) -> Path:
    """Insert or replace one method's record (atomic rewrite of ``manifest.yaml``)."""
    records = read_records(directory)
    records[method] = record
    return _write(directory, records)


def remove_record(directory: Path, method: str) -> None:
    records = read_records(directory)
    if records.pop(method, None) is not None:
        _write(directory, records)
