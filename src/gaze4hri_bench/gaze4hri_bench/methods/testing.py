"""Tiny ONNX models with the exact I/O signature of a method spec, whose output is a
known function of the image: yaw from the horizontal intensity gradient, pitch from the
vertical one. Mirroring the input flips the sign of the horizontal gradient, so a flip
test on them fails when a decoder swaps or mis-signs yaw (methods.md, "flip test").

Used by tests/bench and benchmarks/ (built with ``onnx.helper``; no torch needed).
These are not gaze estimators.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..specs import IMAGENET_MEAN, IMAGENET_STD, MethodSpec

__all__ = ["TINY_SPEC", "tiny_method", "build_gradient_onnx", "gradient_angles", "GAIN", "L2CS_SIGMA_DEG"]

GAIN = 1.5  # radians per unit of normalized gradient
L2CS_SIGMA_DEG = 6.0

TINY_SPEC = MethodSpec(
    name="tiny_test", family="tiny", train_set="none", input_type="crop", size=32, colour="rgb",
    mean=IMAGENET_MEAN, std=IMAGENET_STD, clip_len=1, clip_stride=1, out_index=None,
    onnx_inputs={"face": ("B", 3, 32, 32)}, onnx_outputs={"gaze": ("B", 2)}, output="pitchyaw_rad",
    gaze_frame="A", licence="Apache-2.0", source_url="(built by tests: gaze4hri_bench.methods.testing)",
    weights_file="tiny_test.onnx", crop_rule="l2cs_face_box", table_name="tiny test",
    notes="Gradient network for tests; build it with build_gradient_onnx(TINY_SPEC, path).",
)


def tiny_method(name: str = "tiny_test", spec: MethodSpec | None = None, profile=None, record=None):
    from .network import OnnxMethod

    return OnnxMethod(name, spec or TINY_SPEC, profile, record)


def _weights(n: int) -> np.ndarray:
    """Antisymmetric ramp weights summing to zero, mean-normalised: sum_j w_j x_j / n."""
    c = (np.arange(n) - (n - 1) / 2) / ((n - 1) / 2)
    return (c / n).astype(np.float32)


def gradient_angles(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """NumPy reference of the tiny network: (pitch, yaw) radians for tensors
    (..., 3, H, W). yaw = GAIN * horizontal gradient; pitch = GAIN * vertical one."""
    gray = np.asarray(x, np.float64).mean(axis=-3)
    h, w = gray.shape[-2:]
    gx = (gray @ _weights(w).astype(np.float64)).mean(axis=-1)
    gy = (np.swapaxes(gray, -1, -2) @ _weights(h).astype(np.float64)).mean(axis=-1)
    return GAIN * gy, GAIN * gx


class _Graph:
    """The nodes and initialisers of an ONNX graph being built."""

    def __init__(self):
        from onnx import helper

        self.helper = helper
        self.nodes: list = []
        self.inits: list = []

    def const(self, name: str, arr) -> str:
        from onnx import numpy_helper

        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def node(self, op: str, ins: list[str], out: str, **kw) -> str:
        self.nodes.append(self.helper.make_node(op, ins, [out], **kw))
        return out


def _ramp(g: _Graph, in_name: str, in_shape, dynamic: bool, axis: int, tag: str) -> str:
    """_weights(n) for the input's size n along ``axis``, as a (n, 1) column."""
    from onnx import TensorProto

    if not dynamic:
        n = int(in_shape[axis])
        return g.const(f"w{tag}", _weights(n).reshape(n, 1))
    node, const = g.node, g.const
    n_i = node("Gather", [node("Shape", [in_name], f"shape_{tag}"), const(f"ax_{tag}", np.array(axis, np.int64))],
               f"n_{tag}")
    n_f = node("Cast", [n_i], f"nf_{tag}", to=TensorProto.FLOAT)
    rng = node("Range", [const(f"zero_{tag}", np.array(0, np.int64)), n_i, const(f"one_{tag}", np.array(1, np.int64))],
               f"range_{tag}")
    idx = node("Cast", [rng], f"idx_{tag}", to=TensorProto.FLOAT)
    nm1 = node("Sub", [n_f, const(f"c1_{tag}", np.float32(1))], f"nm1_{tag}")
    half = node("Div", [nm1, const(f"c2_{tag}", np.float32(2))], f"half_{tag}")
    c = node("Div", [node("Sub", [idx, half], f"ctr_{tag}"), half], f"c_{tag}")
    w = node("Div", [c, n_f], f"wv_{tag}")
    return node("Unsqueeze", [w, const(f"axw_{tag}", np.array([1], np.int64))], f"w{tag}")


def _encode(g: _Graph, spec: MethodSpec, col: dict[str, str]) -> list[tuple[str, str]]:
    """(tensor, output name) pairs that encode the (pitch, yaw) columns with ``spec.output``'s rule."""
    node, const = g.node, g.const
    outs: list[tuple[str, str]] = []
    names = list(spec.onnx_outputs)
    if spec.output in ("pitchyaw_rad", "yawpitch_rad"):
        order = ["pitch", "yaw"] if spec.output == "pitchyaw_rad" else ["yaw", "pitch"]
        outs.append((node("Concat", [col[order[0]], col[order[1]]], "pair", axis=1), names[0]))
    elif spec.output == "l2cs_bins":
        centres = const("centres", (np.arange(90, dtype=np.float32) * 4 - 180).reshape(1, 90))
        k = const("k", np.float32(-0.5 / L2CS_SIGMA_DEG**2))
        deg = const("deg", np.float32(180 / np.pi))
        for which, out_name in zip(("yaw", "pitch"), names, strict=True):  # first head = yaw
            d = node("Sub", [centres, node("Mul", [col[which], deg], f"{which}_deg")], f"{which}_d")
            outs.append((node("Mul", [node("Mul", [d, d], f"{which}_d2"), k], f"{which}_logits"), out_name))
    elif spec.output == "vector_b":
        sp, cp = node("Sin", [col["pitch"]], "sp"), node("Cos", [col["pitch"]], "cp")
        sy, cy = node("Sin", [col["yaw"]], "sy"), node("Cos", [col["yaw"]], "cy")
        # Frame A (-cp sy, -sp, -cp cy) -> Frame B (cp sy, sp, -cp cy)
        bx = node("Mul", [cp, sy], "bx")
        bz = node("Neg", [node("Mul", [cp, cy], "cpcy")], "bz")
        outs.append((node("Concat", [bx, sp, bz], "vec", axis=1), names[0]))
    else:
        raise ValueError(f"no tiny model for output rule {spec.output!r}")
    return outs


def build_gradient_onnx(spec: MethodSpec, path: str | Path, opset: int = 18) -> Path:
    """Write an ONNX model named and shaped exactly as ``spec`` whose output encodes
    (pitch, yaw) = :func:`gradient_angles` of its input with ``spec.output``'s rule."""
    import onnx
    from onnx import TensorProto, helper

    (in_name, in_shape), *extra = spec.onnx_inputs.items()  # extra inputs (FRAME_HW) are declared, not read
    clip = len(in_shape) == 5
    dynamic = isinstance(in_shape[-1], str) or isinstance(in_shape[-2], str)  # named image axes (MCGaze's H, W)
    T = int(in_shape[1]) if clip else 1
    g = _Graph()
    node, const = g.node, g.const
    x = in_name
    if clip:
        head = const("shape_head", np.array([-1, 3], np.int64))  # (graph order as before: same file bytes)
        hw = node("Slice", [node("Shape", [in_name], "clip_shape"), const("s3", np.array([3], np.int64)),
                            const("s5", np.array([5], np.int64))], "clip_hw")
        shape = node("Concat", [head, hw], "shape_frames", axis=0)
        x = node("Reshape", [x, shape], "frames")
    gray = node("ReduceMean", [x, const("ax1", np.array([1], np.int64))], "gray", keepdims=1)  # N,1,H,W
    gx = node("MatMul", [gray, _ramp(g, in_name, in_shape, dynamic, -1, "x")], "gx4")  # N,1,H,1
    gyt = node("Transpose", [gray], "grayT", perm=[0, 1, 3, 2])
    gy = node("MatMul", [gyt, _ramp(g, in_name, in_shape, dynamic, -2, "y")], "gy4")  # N,1,W,1
    axes = const("ax123", np.array([1, 2, 3], np.int64))
    yaw = node("Mul", [node("ReduceMean", [gx, axes], "gx", keepdims=0), const("gain", np.float32(GAIN))], "yaw")
    pitch = node("Mul", [node("ReduceMean", [gy, axes], "gy", keepdims=0), "gain"], "pitch")
    ax_last = const("ax_last", np.array([1], np.int64))
    col = {"yaw": node("Unsqueeze", [yaw, ax_last], "yaw_c"), "pitch": node("Unsqueeze", [pitch, ax_last], "pitch_c")}
    final = []
    for i, (t, out_name) in enumerate(_encode(g, spec, col)):
        if clip:
            k = int(spec.onnx_outputs[out_name][-1])
            t = node("Reshape", [t, const(f"shape_out{i}", np.array([-1, T, k], np.int64))], f"clip_out{i}")
        g.nodes.append(helper.make_node("Identity", [t], [out_name]))
        final.append(out_name)
    inputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(d)) for n, d in [(in_name, in_shape), *extra]]
    outputs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, list(spec.onnx_outputs[n])) for n in final]
    graph = helper.make_graph(g.nodes, f"gradient_{spec.name}", inputs, outputs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="gaze4hri-tests")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path
