"""ONNX Runtime for the benchmark: device selection, weight resolution with a one-line
error when a model is missing, batched sessions and a bounded prefetch thread that
overlaps decoding and pre-processing with inference.

Device rule: CUDA (or TensorRT when asked) when onnxruntime-gpu and a GPU are present,
CPU otherwise. A device that was asked for and is not available is an error, never a
silent fallback (onnxruntime-gpu itself falls back to CPU silently, so the providers
of the created session are checked). Install onnxruntime OR onnxruntime-gpu, never
both (they own the same folder).
"""
from __future__ import annotations

import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError

from ..specs import MethodSpec

__all__ = ["DEVICES", "MissingWeightsError", "ModelFile", "resolve_model", "choose_providers", "Runner",
           "prefetch", "vram_used_mb"]

DEVICES = ("auto", "cpu", "cuda", "tensorrt")
_CUDA = "CUDAExecutionProvider"
_TRT = "TensorrtExecutionProvider"
_CPU = "CPUExecutionProvider"


class MissingWeightsError(Gaze4HRIError):
    """A method's ONNX file is absent (or does not match its recorded sha256)."""

    exit_code = 3


@dataclass(frozen=True)
class ModelFile:
    """A resolved ONNX file: path, sha256 and its manifest.yaml record (or None)."""

    path: Path
    sha256: str
    record: dict | None

    @property
    def verified(self) -> bool:
        return bool(self.record) and self.record.get("onnx_sha256") == self.sha256

    @property
    def random_init(self) -> bool:
        return bool(self.record and self.record.get("random_init"))


def import_command(spec: MethodSpec) -> str:
    return f"gaze4hri-bench models import {spec.name} CHECKPOINT"


def expected_sha256(spec: MethodSpec, record: dict | None) -> str:
    """What the file should hash to: the manifest record, else the spec's release hash."""
    if record and record.get("onnx_sha256"):
        return f"expected onnx sha256 {record['onnx_sha256']}"
    if spec.weights_sha256:
        return f"expected checkpoint sha256 {spec.weights_sha256}"
    return "expected sha256: none published, recorded in manifest.yaml at import"


def resolve_model(spec: MethodSpec, models_dir: str | Path | None = None, check_hash: bool = True) -> ModelFile:
    """``<models>/<spec.weights_file>`` or a one-line :class:`MissingWeightsError` naming
    the file, its expected sha256, the official release and the import command."""
    from ..zoo import store

    directory = store.models_dir(models_dir)
    path = directory / spec.weights_file
    try:
        record = store.read_records(directory).get(spec.name)
    except Gaze4HRIError:
        record = None
    if not path.is_file():
        raise MissingWeightsError(
            f"weights missing for {spec.name}: {path} ({expected_sha256(spec, record)})",
            f"official release: {spec.source_url}",
            f"download the checkpoint there, then run `{import_command(spec)}`",
        )
    digest = store.sha256_file(path) if check_hash else ""
    if check_hash and record and record.get("onnx_sha256") and record["onnx_sha256"] != digest:
        raise MissingWeightsError(
            f"{path} has sha256 {digest[:16]}..., manifest.yaml records {str(record['onnx_sha256'])[:16]}...",
            spec.name, f"re-import it: `{import_command(spec)}`")
    return ModelFile(path, digest, record)


def choose_providers(device: str = "auto") -> list[str]:
    """Execution providers for ``device`` (auto | cpu | cuda | tensorrt)."""
    import onnxruntime as ort

    if device not in DEVICES:
        raise Gaze4HRIError(f"unknown device {device!r}", "--device", f"use one of: {', '.join(DEVICES)}")
    avail = ort.get_available_providers()
    if device == "cpu":
        return [_CPU]
    if device == "tensorrt":
        if _TRT not in avail:
            raise Gaze4HRIError("TensorRT execution provider not available", f"onnxruntime providers: {', '.join(avail)}",
                                "install onnxruntime-gpu with TensorRT, or use --device cuda/cpu")
        return [_TRT, _CUDA, _CPU]
    if device == "cuda":
        if _CUDA not in avail:
            raise Gaze4HRIError("CUDA execution provider not available", f"onnxruntime providers: {', '.join(avail)}",
                                "install onnxruntime-gpu (instead of onnxruntime) on a machine with a GPU, or use --device cpu")
        return [_CUDA, _CPU]
    return [_CUDA, _CPU] if _CUDA in avail else [_CPU]


class Runner:
    """One ONNX Runtime session of a method, checked against its spec, run in batches.

    ``run(*xs)`` takes one float32 array per spec input (spec order, any batch size) and
    returns the outputs in spec order, splitting into chunks of ``batch``.
    """

    def __init__(self, path: str | Path, spec: MethodSpec, device: str = "auto", batch: int = 8,
                 threads: int | None = None):
        import onnxruntime as ort

        providers = choose_providers(device)
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if threads:
            so.intra_op_num_threads = threads
        try:
            self.session = ort.InferenceSession(str(path), so, providers=providers)
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own types
            raise Gaze4HRIError(f"ONNX Runtime cannot load {path}", str(e).splitlines()[0][:160],
                                f"re-import it: `{import_command(spec)}`") from None
        got = self.session.get_providers()
        if device in ("cuda", "tensorrt") and providers[0] not in got:
            raise Gaze4HRIError(f"{device} requested but ONNX Runtime runs on {got[0]}", str(path),
                                "check the CUDA/cuDNN install of onnxruntime-gpu, or use --device cpu")
        self.device = "cuda" if got[0] in (_CUDA, _TRT) else "cpu"
        self.provider = got[0]
        self.spec = spec
        self.batch = max(1, int(batch))
        ins = {i.name: tuple(i.shape) for i in self.session.get_inputs()}
        outs = [o.name for o in self.session.get_outputs()]
        self.input_names = list(spec.onnx_inputs)
        if list(ins) != self.input_names or outs[: len(spec.onnx_outputs)] != list(spec.onnx_outputs):
            raise Gaze4HRIError(f"{Path(path).name} has inputs {list(ins)} and outputs {outs}",
                                f"spec {spec.name}: {list(spec.onnx_inputs)} -> {list(spec.onnx_outputs)}",
                                f"re-export it with this version: `{import_command(spec)}`")
        for name, want in spec.onnx_inputs.items():
            if list(ins[name][1:]) != [d for d in want if d != "B"]:
                raise Gaze4HRIError(f"{Path(path).name} input {name} shape {ins[name]} differs from the spec {want}",
                                    spec.name, f"re-export it: `{import_command(spec)}`")
        self.output_names = list(spec.onnx_outputs)

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        if len(xs) != len(self.input_names):
            raise ValueError(f"{self.spec.name}: {len(xs)} inputs given, the model takes {self.input_names}")
        xs = tuple(np.ascontiguousarray(x, dtype=np.float32) for x in xs)
        n = len(xs[0])
        chunks = [self.session.run(self.output_names, {k: x[i:i + self.batch] for k, x in zip(self.input_names, xs, strict=True)})
                  for i in range(0, n, self.batch)]
        return [np.concatenate([c[k] for c in chunks]) for k in range(len(self.output_names))]


_DONE = object()


class _Failure:
    def __init__(self, exc: BaseException):
        self.exc = exc


def prefetch(items: Iterable, maxsize: int = 16) -> Iterator:
    """Iterate ``items`` in a background thread through a bounded queue, so that the
    producer (decode, detect, pre-process) overlaps the consumer (inference) while at
    most ``maxsize`` items wait in memory. Producer exceptions re-raise here."""
    q: queue.Queue = queue.Queue(maxsize=max(1, maxsize))
    stop = threading.Event()

    def work():
        try:
            for it in items:
                while not stop.is_set():
                    try:
                        q.put(it, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put(_DONE)
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            q.put(_Failure(e))

    t = threading.Thread(target=work, name="gaze4hri-prefetch", daemon=True)
    t.start()
    try:
        while True:
            it = q.get()
            if it is _DONE:
                return
            if isinstance(it, _Failure):
                raise it.exc
            yield it
    finally:
        stop.set()
        while t.is_alive():
            try:
                q.get_nowait()
            except queue.Empty:
                t.join(0.05)


def vram_used_mb(pid: int | None = None) -> float | None:
    """GPU memory used by this process (MB) from nvidia-smi, or None without a GPU."""
    if not shutil.which("nvidia-smi"):
        return None
    pid = pid or os.getpid()
    try:
        out = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    for line in out.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 2 and parts[0] == str(pid):
            try:
                return float(parts[1])
            except ValueError:
                return None
    return 0.0
