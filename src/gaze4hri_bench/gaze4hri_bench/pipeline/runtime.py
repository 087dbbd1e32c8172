"""ONNX Runtime for the benchmark: device selection, weight resolution with a one-line
error when a model is missing, batched sessions (I/O binding on a GPU, ``--batch auto``
sized to free GPU memory, ``--fp16`` copies checked against FP32, a warm-up run at
creation) and a bounded prefetch thread that overlaps decoding and pre-processing with
inference (docs/pipeline.md, "Runtime" and "Devices").

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
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError

from ..specs import MethodSpec

__all__ = ["DEVICES", "MissingWeightsError", "ModelFile", "resolve_model", "choose_providers", "Runner",
           "prefetch", "vram_used_mb", "AUTO", "FP16_MAX_DEG", "FP16_ENV", "parse_batch", "probe_inputs", "fp16_model",
           "max_gaze_difference_deg", "auto_batch", "gpu_memory_mb", "parse_nvidia_smi", "CPU_STREAMS", "cpu_cores",
           "resolve_streams"]

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
            raise Gaze4HRIError("TensorRT execution provider not available",
                                f"onnxruntime providers: {', '.join(avail)}",
                                "install onnxruntime-gpu with TensorRT, or use --device cuda/cpu")
        return [_TRT, _CUDA, _CPU]
    if device == "cuda":
        if _CUDA not in avail:
            raise Gaze4HRIError("CUDA execution provider not available", f"onnxruntime providers: {', '.join(avail)}",
                                "install onnxruntime-gpu (instead of onnxruntime) on a machine with a GPU, "
                                "or use --device cpu")
        return [_CUDA, _CPU]
    return [_CUDA, _CPU] if _CUDA in avail else [_CPU]


#: FP16 parity limit: the largest angle (degrees) allowed between the FP32 and FP16
#: models' decoded gaze on the parity batch before ``--fp16`` is refused. 1 deg is a
#: tenth of the study's smallest per-method mean errors (Table III, 10-20 deg);
#: override with $GAZE4HRI_FP16_MAX_DEG (docs/pipeline.md, "Devices").
FP16_MAX_DEG = 1.0
FP16_ENV = "GAZE4HRI_FP16_MAX_DEG"
PARITY_BATCH = 4  # samples (clips) of the FP16 parity check (probe_inputs, seed PARITY_SEED)
PARITY_SEED = 16
AUTO = 0  # ``--batch auto``: sized to free device memory on a GPU
CPU_AUTO_BATCH = 8  # ``--batch auto`` on the CPU: the default batch
AUTO_BATCH_CAP = {1: 256}  # by clip length: single images; clips use CLIP_AUTO_BATCH_CAP
CLIP_AUTO_BATCH_CAP = 32
AUTO_MEMORY_FRACTION = 0.5  # of the free device memory after the probe runs
_PROBE_BATCH = 8
#: ``--streams auto`` on the CPU: batches of one network in flight at once, each on its own
#: share of the cores (intra-op threads = cores / streams). One session whose intra-op
#: threads meet at a barrier after every operator stalls whole while the data thread holds
#: one of its cores; two streams of half the cores lose only that core (docs/pipeline.md,
#: "Streams"; the side-by-side figures: benchmarks/pipeline_vs_ort.py).
CPU_STREAMS = 2


def cpu_cores() -> int:
    """Cores this process may run on (its affinity mask, e.g. a Slurm or container limit)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def resolve_streams(streams: int | None, cpu: bool, threads: int | None,
                    cores: int | None = None) -> tuple[int, int | None]:
    """(streams, intra-op threads per stream) for a session: ``streams`` None is auto,
    CPU_STREAMS on a CPU with 2 or more cores when ``threads`` is not given, else 1. A GPU
    runs one stream (its I/O binding buffers are per session). ``threads`` None with
    several streams: the cores shared out (at least one each)."""
    cores = cpu_cores() if cores is None else cores
    if not cpu:
        return 1, threads
    if streams is None:
        streams = CPU_STREAMS if threads is None and cores >= 2 else 1
    streams = max(1, int(streams))
    if threads is None and streams > 1:
        threads = max(1, cores // streams)
    return streams, threads


def parse_batch(text: str) -> int:
    """``--batch`` value: a positive integer, or ``auto`` (= :data:`AUTO`)."""
    if str(text).strip().lower() == "auto":
        return AUTO
    try:
        n = int(text)
    except ValueError:
        n = -1
    if n < 1:
        raise Gaze4HRIError(f"--batch {text!r} is not a positive integer", "gaze4hri-bench run",
                            "e.g. --batch 8, or --batch auto (sized to GPU memory)")
    return n


def probe_inputs(spec: MethodSpec, batch: int, seed: int = 0) -> list[np.ndarray]:
    """Random pre-processed inputs of ``spec``'s shapes: pixels uniform in [0, 1] with
    the spec's mean/std normalisation (what the pipeline feeds; zoo/export.py
    ``example_inputs``), full-size images for a FRAME_HW input. For warm-up, memory
    probes and the FP16 parity check; numpy only (no torch)."""
    from ..specs import FRAME_HW

    rng = np.random.default_rng(seed)
    out = []
    for name, dims in spec.onnx_inputs.items():
        shape = tuple(batch if d == "B" else int(spec.size) if isinstance(d, str) else int(d) for d in dims)
        if name == FRAME_HW:
            out.append(np.full(shape, float(spec.size), np.float32))
            continue
        x = rng.random(shape, dtype=np.float32)
        if spec.mean is not None and spec.std is not None:
            bshape = [1] * len(shape)
            bshape[-3] = 3
            mean = np.asarray(spec.mean, np.float32).reshape(bshape)
            x = (x - mean) / np.asarray(spec.std, np.float32).reshape(bshape)
        out.append(np.ascontiguousarray(x, dtype=np.float32))
    return out


def fp16_model(path: str | Path) -> Path:
    """FP16 copy of an ONNX file, converted once and cached next to it as
    ``<stem>.fp16-<sha256[:12] of the FP32 file>.onnx`` (a re-import gives a new name).
    Converter: onnxruntime.transformers.float16 (ships with onnxruntime), FP32 inputs and
    outputs kept (keep_io_types), so the pipeline feeds and decodes it unchanged."""
    import onnx
    from onnxruntime.transformers.float16 import convert_float_to_float16

    from ..zoo import store

    path = Path(path)
    out = path.with_name(f"{path.stem}.fp16-{store.sha256_file(path)[:12]}.onnx")
    if out.is_file():
        return out
    try:
        model = convert_float_to_float16(onnx.load(str(path)), keep_io_types=True)
    except Exception as e:  # noqa: BLE001 - the converter raises assorted types
        raise Gaze4HRIError(f"cannot convert {path} to FP16",
                            str(e).splitlines()[0][:160] if str(e) else type(e).__name__,
                            "run without --fp16") from None
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    try:
        onnx.save(model, str(tmp))
        os.replace(tmp, out)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise Gaze4HRIError(f"cannot write the FP16 model {out}", str(e),
                            "make the models folder writable, or run without --fp16") from None
    return out


def max_gaze_difference_deg(spec: MethodSpec, a: list[np.ndarray], b: list[np.ndarray],
                            rule: str | None = None) -> float:
    """Largest angle (degrees) between the gaze decoded from two output sets of the same
    inputs (``spec.output``'s decoder; gaze4hri_core.gaze.angular_error_deg). NaN
    counts as infinitely far."""
    from gaze4hri_core.gaze import angular_error_deg

    from ..decoders import decode

    ang = angular_error_deg(decode(rule or spec.output, a), decode(rule or spec.output, b))
    return float("inf") if np.isnan(ang).any() else float(np.max(ang))


def auto_batch(free_mb: float, per_sample_mb: float, cap: int, fraction: float = AUTO_MEMORY_FRACTION) -> int:
    """Largest power of two <= ``cap`` whose samples fit ``fraction`` of ``free_mb`` at
    ``per_sample_mb`` each (at least 1)."""
    fit = int(max(0.0, free_mb) * fraction // max(per_sample_mb, 1e-3))
    n = 1
    while n * 2 <= min(fit, cap):
        n *= 2
    return n


def gpu_memory_mb(pid: int | None = None) -> dict | None:
    """Device memory from nvidia-smi, MB: ``{"used", "free", "total", "name", "scope"}`` for
    the GPU this process runs on (else the first). ``used`` is this process's memory
    (scope "process"), or total - free of the whole GPU where nvidia-smi does not list
    the process (containers with their own PID namespace; scope "device"). None without
    nvidia-smi."""
    if not shutil.which("nvidia-smi"):
        return None
    pid = pid or os.getpid()
    try:
        gpus = subprocess.run(["nvidia-smi", "--query-gpu=uuid,memory.free,memory.total,name",
                               "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
        apps = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory",
                               "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if gpus.returncode != 0:
        return None
    return parse_nvidia_smi(gpus.stdout, apps.stdout if apps.returncode == 0 else "", pid)


def parse_nvidia_smi(gpus_csv: str, apps_csv: str, pid: int) -> dict | None:
    """:func:`gpu_memory_mb` from nvidia-smi's CSV (``--query-gpu=uuid,memory.free,
    memory.total,name`` and ``--query-compute-apps=pid,gpu_uuid,used_memory``, both
    ``--format=csv,noheader,nounits``)."""
    rows = [[c.strip() for c in line.split(",")] for line in gpus_csv.splitlines() if line.strip()]
    if not rows:
        return None
    used, uuid = None, rows[0][0]
    for line in apps_csv.splitlines():
        parts = [c.strip() for c in line.split(",")]
        if len(parts) == 3 and parts[0] == str(pid):
            uuid = parts[1]
            try:
                used = (used or 0.0) + float(parts[2])
            except ValueError:
                pass
    row = next((r for r in rows if r[0] == uuid), rows[0])
    try:
        free, total = float(row[1]), float(row[2])
    except (ValueError, IndexError):
        return None
    return {"used": total - free if used is None else used, "free": free, "total": total, "name": ",".join(row[3:]),
            "scope": "device" if used is None else "process"}


class Runner:
    """One ONNX Runtime session of a method, checked against its spec, run in batches.

    ``run(*xs)`` takes one float32 array per spec input (spec order, any batch size) and
    returns the outputs in spec order, splitting into chunks of ``batch``.

    On CUDA / TensorRT the inputs are bound as device OrtValues (one host-to-device copy
    per chunk into buffers reused between runs), the outputs stay on the device until one
    copy out per chunk (I/O binding), and a partial last chunk is padded to the full
    batch by repeating its last sample, so the device sees one shape (no new cuDNN
    search or TensorRT engine). ``io_binding=True`` forces the bound path on the CPU
    too (tests: identical outputs). ``batch=AUTO`` sizes the batch to free device
    memory after two probe runs (CPU: :data:`CPU_AUTO_BATCH`). ``fp16=True`` runs the
    cached FP16 copy (:func:`fp16_model`) after a parity check against FP32 on
    :func:`probe_inputs`; above ``fp16_max_deg`` (default :data:`FP16_MAX_DEG`, or
    $GAZE4HRI_FP16_MAX_DEG) it is refused. A warm-up run at creation (``warmup_s``) keeps
    first-run costs (allocations, cuDNN algorithm search, TensorRT engine build) out of
    the run loop's ``infer_s``. ``streams`` (None: auto, :func:`resolve_streams`) is how
    many batches the caller may run at once from as many threads (CPU only; ``streams``
    and ``threads`` hold what was chosen).
    """

    def __init__(self, path: str | Path, spec: MethodSpec, device: str = "auto", batch: int = 8,
                 threads: int | None = None, fp16: bool = False, io_binding: bool | None = None,
                 warmup: bool = True, fp16_max_deg: float | None = None, log=None, streams: int | None = 1):
        import onnxruntime as ort

        self._ort = ort
        self._log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.spec = spec
        self.path = Path(path)
        self._device_arg = device
        providers = choose_providers(device)
        self._providers = self._provider_options(providers, self.path)
        #: batches the engine may run at once (run() is then called from that many threads;
        #: ONNX Runtime sessions take concurrent runs); threads: intra-op threads of each
        self.streams, self.threads = resolve_streams(streams, providers[0] == _CPU and not io_binding, threads)
        self.session = self._open(self.path)
        got = self.session.get_providers()
        self.device = "cuda" if got[0] in (_CUDA, _TRT) else "cpu"
        self.provider = got[0]
        self.input_names = list(spec.onnx_inputs)
        self.output_names = list(spec.onnx_outputs)
        self._check_contract(self.session, self.path)
        self.io_binding = self.device == "cuda" if io_binding is None else bool(io_binding)
        self._pad = self.device == "cuda"
        self._values: dict[tuple, object] = {}
        self.fp16 = bool(fp16)
        self.fp16_path: Path | None = None
        self.fp16_deviation_deg: float | None = None
        if self.fp16:
            self._to_fp16(fp16_max_deg)
        self.batch_note = ""
        self.warmup_s = 0.0
        if int(batch) <= AUTO:
            self.batch = self._auto_batch()
        else:
            self.batch = int(batch)
        if warmup:
            t0 = time.perf_counter()
            self._warm(self.batch if self.device == "cuda" else 1)
            self.warmup_s = time.perf_counter() - t0

    # -- session -------------------------------------------------------------------
    def _provider_options(self, providers: list[str], path: Path) -> list:
        """CUDA: the arena grows by what is asked (kSameAsRequested), so device memory
        follows the model's real need (Table S10 figures, ``--batch auto``). TensorRT:
        engines cached next to the model (``<stem>.trt/``), built once per shape."""
        out: list = []
        for p in providers:
            if p == _CUDA:
                out.append((p, {"arena_extend_strategy": "kSameAsRequested"}))
            elif p == _TRT:
                out.append((p, {"trt_engine_cache_enable": "True",
                                "trt_engine_cache_path": str(path.with_suffix(".trt"))}))
            else:
                out.append(p)
        return out

    def _open(self, path: Path):
        ort = self._ort
        so = ort.SessionOptions()
        so.log_severity_level = 3
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        if self.threads:
            so.intra_op_num_threads = self.threads
        try:
            sess = ort.InferenceSession(str(path), so, providers=self._providers)
        except Exception as e:  # noqa: BLE001 - onnxruntime raises its own types
            raise Gaze4HRIError(f"ONNX Runtime cannot load {path}",
                                str(e).splitlines()[0][:160] if str(e) else type(e).__name__,
                                f"re-import it: `{import_command(self.spec)}`") from None
        got = sess.get_providers()
        want = self._providers[0][0] if isinstance(self._providers[0], tuple) else self._providers[0]
        if self._device_arg in ("cuda", "tensorrt") and want not in got:
            raise Gaze4HRIError(f"{self._device_arg} requested but ONNX Runtime runs on {got[0]}", str(path),
                                "check the CUDA/cuDNN install of onnxruntime-gpu, or use --device cpu")
        return sess

    def _check_contract(self, session, path: Path) -> None:
        spec = self.spec
        ins = {i.name: tuple(i.shape) for i in session.get_inputs()}
        outs = [o.name for o in session.get_outputs()]
        if list(ins) != self.input_names or outs[: len(spec.onnx_outputs)] != list(spec.onnx_outputs):
            raise Gaze4HRIError(f"{Path(path).name} has inputs {list(ins)} and outputs {outs}",
                                f"spec {spec.name}: {list(spec.onnx_inputs)} -> {list(spec.onnx_outputs)}",
                                f"re-export it with this version: `{import_command(spec)}`")
        for name, want in spec.onnx_inputs.items():
            if list(ins[name][1:]) != [d for d in want if d != "B"]:
                raise Gaze4HRIError(f"{Path(path).name} input {name} shape {ins[name]} differs from the spec {want}",
                                    spec.name, f"re-export it: `{import_command(spec)}`")

    def _to_fp16(self, max_deg: float | None) -> None:
        """Swap in the FP16 model after the parity check (FP32 and FP16 sessions on the
        same providers, same probe batch); refused above the limit."""
        if max_deg is None:
            env = os.environ.get(FP16_ENV)
            try:
                max_deg = float(env) if env else FP16_MAX_DEG
            except ValueError:
                raise Gaze4HRIError(f"${FP16_ENV}={env!r} is not a number", "--fp16",
                                    f"e.g. {FP16_ENV}=2.0 (degrees)") from None
        p16 = fp16_model(self.path)
        s16 = self._open(p16)
        self._check_contract(s16, p16)
        xs = probe_inputs(self.spec, PARITY_BATCH, seed=PARITY_SEED)
        ref = self._run_session(self.session, xs, len(xs[0]))
        got = self._run_session(s16, xs, len(xs[0]))
        dev = max_gaze_difference_deg(self.spec, ref, got)
        self._log(f"{self.spec.name}: FP16 vs FP32 on {PARITY_BATCH} probe samples: max gaze difference {dev:.4f} deg "
                  f"(limit {max_deg:g} deg)")
        if not dev <= max_deg:
            raise Gaze4HRIError(f"FP16 model of {self.spec.name} differs from FP32 by up to {dev:.3f} deg "
                                f"(limit {max_deg:g} deg)",
                                str(p16), f"run without --fp16, or allow more: {FP16_ENV}=<degrees>")
        self.session, self.fp16_path, self.fp16_deviation_deg = s16, p16, dev
        self._values.clear()

    # -- batch and warm-up ---------------------------------------------------------
    def _auto_batch(self) -> int:
        """``--batch auto``: on a GPU, per-sample device memory from a batch-1 and a
        batch-8 probe run (the arena grows as asked), then :func:`auto_batch` of the free
        memory, capped (:data:`AUTO_BATCH_CAP`); halved while a warm-up at it runs out of
        memory. CPU, or no nvidia-smi: :data:`CPU_AUTO_BATCH`."""
        cap = AUTO_BATCH_CAP.get(self.spec.clip_len, CLIP_AUTO_BATCH_CAP)
        if self.device != "cuda":
            self.batch_note = f"batch auto on the CPU: {CPU_AUTO_BATCH} (sized to memory on a GPU only)"
            return CPU_AUTO_BATCH
        self.batch = 1
        self._warm(1)
        m1 = gpu_memory_mb()
        if m1 is None:
            self.batch_note = f"batch auto: nvidia-smi not found, batch {CPU_AUTO_BATCH}"
            return CPU_AUTO_BATCH
        self.batch = _PROBE_BATCH
        self._warm(_PROBE_BATCH)
        m8 = gpu_memory_mb() or m1
        per = max((m8["used"] - m1["used"]) / (_PROBE_BATCH - 1), 1.0)
        n = auto_batch(m8["free"], per, cap)
        while n > 1:
            try:
                self.batch = n
                self._warm(n)
                break
            except Exception as e:  # noqa: BLE001 - onnxruntime's allocation failure
                if "memory" not in str(e).lower() and "alloc" not in str(e).lower():
                    raise
                n //= 2
        self.batch_note = (f"batch auto: {n} ({per:.0f} MB per sample from probe runs at 1 and {_PROBE_BATCH}, "
                           f"{m8['free']:.0f} MB free, cap {cap})")
        return n

    def _warm(self, batch: int) -> None:
        self._run_session(self.session, probe_inputs(self.spec, batch, seed=1), batch)

    # -- running -------------------------------------------------------------------
    def _value(self, name: str, x: np.ndarray):
        """Device OrtValue for input ``name`` of ``x``'s shape, reused between runs."""
        key = (name, x.shape)
        v = self._values.get(key)
        if v is None:
            v = self._ort.OrtValue.ortvalue_from_shape_and_type(x.shape, np.float32, self.device, 0)
            self._values[key] = v
        v.update_inplace(x)
        return v

    def _run_session(self, session, xs, batch: int) -> list[np.ndarray]:
        n = len(xs[0])
        chunks = []
        for i in range(0, n, batch):
            part = [x[i:i + batch] for x in xs]
            k = len(part[0])
            if self.io_binding:
                if self._pad and k < batch:
                    part = [np.concatenate([p, np.repeat(p[-1:], batch - k, axis=0)]) for p in part]
                b = session.io_binding()
                for name, p in zip(self.input_names, part, strict=True):
                    b.bind_ortvalue_input(name, self._value(name, np.ascontiguousarray(p)))
                b.synchronize_inputs()
                for name in self.output_names:
                    b.bind_output(name, self.device)
                session.run_with_iobinding(b)
                chunks.append([o[:k] for o in b.copy_outputs_to_cpu()])
            else:
                chunks.append(session.run(self.output_names, dict(zip(self.input_names, part, strict=True))))
        return [np.concatenate([c[k] for c in chunks]) for k in range(len(self.output_names))]

    def run(self, *xs: np.ndarray) -> list[np.ndarray]:
        if len(xs) != len(self.input_names):
            raise ValueError(f"{self.spec.name}: {len(xs)} inputs given, the model takes {self.input_names}")
        xs = tuple(np.ascontiguousarray(x, dtype=np.float32) for x in xs)
        return self._run_session(self.session, xs, self.batch)


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
