"""ONNX export of a zoo network and its verification against PyTorch.

Export uses the TorchScript-based exporter (``torch.onnx.export(..., dynamo=False)``) at
opset :data:`OPSET` = 17, tracing at batch 2 with a dynamic batch axis ``B``; input and
output names and fixed dimensions come from the method spec. Verification checks the
ONNX graph against the spec and runs ONNX Runtime (CPU) and PyTorch on the same random
inputs at a batch size other than the traced one; the largest absolute difference must
stay below :data:`PARITY_ATOL`.
"""
from __future__ import annotations

import contextlib
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError

from ..specs import MethodSpec

__all__ = ["OPSET", "PARITY_ATOL", "TRACE_BATCH", "example_inputs", "random_model", "export_onnx",
           "check_contract", "ort_session", "parity", "Parity"]

OPSET = 17
PARITY_ATOL = 1e-4
TRACE_BATCH = 2


def _shape(dims: tuple, batch: int, size: int | None = None) -> tuple[int, ...]:
    """Concrete shape: ``B`` -> batch, other named (dynamic image) axes -> ``size``."""
    return tuple(batch if d == "B" else int(size) if isinstance(d, str) else int(d) for d in dims)


def _example_frame_hw(shape: tuple[int, ...], size: int, g):
    """Image sizes (B, T, 2) for a FRAME_HW input: most frames fill the input, some are
    cut (one side shorter, as at an image border) and, in every other clip, the last two
    frames are absent (0, 0), so that an export and its parity check exercise both."""
    import torch

    b, t, _ = shape
    hw = torch.full(shape, float(size))
    short = torch.randint(size // 2, size, (b, 2), generator=g).float()
    hw[:, 0, 0], hw[:, 1, 1] = short[:, 0], short[:, 1]
    hw[1::2, t - 2:] = 0.0
    return hw


def example_inputs(spec: MethodSpec, batch: int, seed: int = 0) -> tuple:
    """Random inputs shaped as ``spec.onnx_inputs``: pixels uniform in [0, 1], then the
    spec's mean/std normalisation, i.e. what the pipeline feeds the model; image sizes
    for a FRAME_HW input."""
    import torch

    from ..specs import FRAME_HW

    g = torch.Generator().manual_seed(seed)
    out = []
    for name, dims in spec.onnx_inputs.items():
        if name == FRAME_HW:
            out.append(_example_frame_hw(_shape(dims, batch), spec.size, g))
            continue
        x = torch.rand(_shape(dims, batch, spec.size), generator=g)
        if spec.mean is not None and spec.std is not None:
            shape = [1] * x.dim()
            shape[-3] = 3  # channel axis: ... x 3 x H x W
            x = (x - torch.tensor(spec.mean).view(shape)) / torch.tensor(spec.std).view(shape)
        out.append(x)
    return tuple(out)


def random_model(module, spec: MethodSpec, seed: int = 0, calibrate: bool | None = None):
    """``module.build()`` with reproducible random weights and realistic activation scales.

    The network is built under ``torch.manual_seed(seed)`` (its own initialisers), the
    BatchNorm affine terms are perturbed, and the BatchNorm running statistics are then
    estimated on one random batch (cumulative average; Ioffe & Szegedy 2015, Sec. 3.1)
    so that outputs stay O(1): the parity tolerance is absolute. Returns it in eval mode.

    ``calibrate`` defaults to single-image families only. In MCGaze the recalibrated
    random trunk drives the refined proposal boxes to the feature-map border, where
    RoIAlign's validity mask (mmcv ``aligned=True``: samples beyond -1 px are zero) is
    discontinuous, so float rounding between PyTorch and ONNX Runtime flips samples
    and parity becomes a property of the random weights, not of the export.
    """
    import torch

    if calibrate is None:
        calibrate = spec.clip_len == 1

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = module.build()
        bns = [m for m in model.modules() if isinstance(m, torch.nn.modules.batchnorm._BatchNorm)]
        with torch.no_grad():
            for bn in bns:
                if bn.affine:
                    bn.weight.uniform_(0.5, 1.5)
                    bn.bias.normal_(0.0, 0.1)
        if calibrate and bns:
            model.eval()
            saved = [bn.momentum for bn in bns]
            for bn in bns:
                bn.reset_running_stats()
                bn.momentum = None
                bn.train()
            with torch.no_grad():
                model(*example_inputs(spec, TRACE_BATCH, seed=seed + 1))
            for bn, mom in zip(bns, saved, strict=True):
                bn.momentum = mom
    return model.eval()


def export_onnx(model, spec: MethodSpec, path: str | Path, opset: int = OPSET) -> Path:
    """Trace ``model`` at batch :data:`TRACE_BATCH` and write a single-file ONNX model
    whose inputs/outputs are named as in ``spec`` with a dynamic batch axis ``B``."""
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    names_in, names_out = list(spec.onnx_inputs), list(spec.onnx_outputs)
    dims = {**spec.onnx_inputs, **spec.onnx_outputs}
    axes = {n: {i: d for i, d in enumerate(dims[n]) if isinstance(d, str)} for n in names_in + names_out}
    model.eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.filterwarnings("ignore", message=".*legacy TorchScript-based ONNX export.*")
        warnings.filterwarnings("ignore", message=".*feature will be removed.*")
        torch.onnx.export(
            model, example_inputs(spec, TRACE_BATCH), str(path), input_names=names_in, output_names=names_out,
            dynamic_axes=axes, opset_version=opset, do_constant_folding=True, dynamo=False,
        )
    return path


def check_contract(path: str | Path, spec: MethodSpec) -> None:
    """The ONNX graph is valid and its I/O names, order and shapes are exactly the spec's."""
    import onnx

    try:
        model = onnx.load(str(path), load_external_data=False)
        onnx.checker.check_model(model)
    except Exception as e:  # noqa: BLE001 - protobuf/checker raise assorted types
        raise Gaze4HRIError(f"invalid ONNX file {Path(path).name}", str(e).splitlines()[0][:120],
                            "re-run `models import`") from None
    inits = {i.name for i in model.graph.initializer}

    def dims(vi) -> tuple:
        return tuple(d.dim_param if d.dim_param else d.dim_value for d in vi.type.tensor_type.shape.dim)

    got_in = {vi.name: dims(vi) for vi in model.graph.input if vi.name not in inits}
    got_out = {vi.name: dims(vi) for vi in model.graph.output}
    for label, got, want in (("inputs", got_in, spec.onnx_inputs), ("outputs", got_out, spec.onnx_outputs)):
        if list(got) != list(want) or any(tuple(got[k]) != tuple(want[k]) for k in want):
            raise Gaze4HRIError(
                f"ONNX {label} {got} differ from the spec {dict(want)}", f"{Path(path).name} vs specs.{spec.name}",
                "re-export the model with this version of gaze4hri",
            )


def ort_session(path: str | Path, threads: int | None = None):
    """CPU ONNX Runtime session (all graph optimisations)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    if threads:
        so.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


@dataclass(frozen=True)
class Parity:
    """Result of one ONNX Runtime vs PyTorch comparison."""

    max_abs_diff: float
    batch: int
    seed: int
    seconds: float

    @property
    def ok(self) -> bool:
        return self.max_abs_diff < PARITY_ATOL


def parity(model, path: str | Path, spec: MethodSpec, batch: int | None = None, seed: int = 12345,
           session=None, raise_on_fail: bool = True) -> Parity:
    """Run ``model`` and the ONNX file on the same random inputs; compare every output.

    ``batch`` defaults to 3 for single images and 1 for clips (differs from the traced
    batch, so the dynamic axis is exercised)."""
    import torch

    t0 = time.perf_counter()
    batch = batch or (3 if spec.clip_len == 1 else 1)
    xs = example_inputs(spec, batch, seed=seed)
    sess = session or ort_session(path)
    feeds = {n: x.numpy() for n, x in zip(spec.onnx_inputs, xs, strict=True)}
    got = sess.run(list(spec.onnx_outputs), feeds)
    with torch.no_grad():
        ref = model.eval()(*xs)
    ref = ref if isinstance(ref, tuple | list) else (ref,)
    diff = 0.0
    for name, a, b in zip(spec.onnx_outputs, got, ref, strict=True):
        want = _shape(spec.onnx_outputs[name], batch)
        if tuple(a.shape) != want or tuple(b.shape) != want:
            raise Gaze4HRIError(f"output {name!r} has shape ONNX {a.shape} / PyTorch {tuple(b.shape)}, expected {want}",
                                spec.name, "the network does not follow its spec")
        if not np.all(np.isfinite(a)):
            diff = float("inf")
        else:
            diff = max(diff, float(np.max(np.abs(a - b.numpy()))))
    res = Parity(diff, batch, seed, time.perf_counter() - t0)
    if raise_on_fail and not res.ok:
        raise Gaze4HRIError(f"ONNX Runtime and PyTorch disagree: max |diff| = {diff:.3g} >= {PARITY_ATOL:g}",
                            f"{spec.name} parity check", "report this with the checkpoint's sha256")
    return res


@contextlib.contextmanager
def timed(store: dict, key: str):
    """Record the wall time of a block under ``store[key]`` (seconds)."""
    t0 = time.perf_counter()
    try:
        yield
    finally:
        store[key] = round(time.perf_counter() - t0, 3)
