"""Helpers of the spec-file tests: a spec mapping of each input kind and output rule, and
a tiny ONNX graph with that spec's exact signature whose output is a constant of the
right shape (so the decoded gaze is known in advance)."""
from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import yaml

PITCH, YAW = 0.2, -0.3  # radians, what every constant network "sees"


def frame_a(pitch: float = PITCH, yaw: float = YAW) -> np.ndarray:
    """Frame A unit vector written out (GazeHub: looking into the camera is (0, 0, -1))."""
    return np.array([-np.cos(pitch) * np.sin(yaw), -np.sin(pitch), -np.cos(pitch) * np.cos(yaw)])


def bin_logits(angle_deg: float, count: int, lo: float, hi: float) -> np.ndarray:
    """Logits peaked at the bin of ``angle_deg`` (a smooth bump, so the expectation moves)."""
    centres = lo + (hi - lo) / count * np.arange(count)
    return (-0.5 * ((centres - angle_deg) / 7.0) ** 2).astype(np.float32)


def bins_angle(logits: np.ndarray, count: int, lo: float, hi: float) -> float:
    """The expectation over bins, written out: lo + width * sum(softmax * index)."""
    p = np.exp(logits - logits.max())
    p = p / p.sum()
    return lo + (hi - lo) / count * float(p @ np.arange(count))


RULES = {  # output rule -> (output block, constant output tensors (last axes), expected Frame A vector)
    "angles_pitch_yaw_rad": ({"kind": "angles", "order": "pitch_yaw", "unit": "rad"},
                             [np.array([PITCH, YAW], np.float32)], frame_a()),
    "angles_yaw_pitch_deg": ({"kind": "angles", "order": "yaw_pitch", "unit": "deg"},
                             [np.degrees([YAW, PITCH]).astype(np.float32)], frame_a()),
    "vector_a": ({"kind": "vector", "frame": "A"}, [(2 * frame_a()).astype(np.float32)], frame_a()),
    "vector_b": ({"kind": "vector", "frame": "B"},
                 [(frame_a() * [-1, -1, 1]).astype(np.float32)], frame_a()),  # Gaze360: x left, y up
    "bins_pitch_yaw": ({"kind": "bins", "order": "pitch_yaw", "bins": {"count": 60, "range_deg": [-90, 90]}},
                       [bin_logits(np.degrees(PITCH), 60, -90, 90), bin_logits(np.degrees(YAW), 60, -90, 90)],
                       frame_a(np.radians(bins_angle(bin_logits(np.degrees(PITCH), 60, -90, 90), 60, -90, 90)),
                               np.radians(bins_angle(bin_logits(np.degrees(YAW), 60, -90, 90), 60, -90, 90)))),
    "bins_yaw_pitch_l2cs": ({"kind": "bins", "order": "yaw_pitch", "bins": {"count": 90, "range_deg": [-180, 180]}},
                            [bin_logits(np.degrees(YAW), 90, -180, 180), bin_logits(np.degrees(PITCH), 90, -180, 180)],
                            frame_a(np.radians(bins_angle(bin_logits(np.degrees(PITCH), 90, -180, 180), 90, -180, 180)),
                                    np.radians(bins_angle(bin_logits(np.degrees(YAW), 90, -180, 180), 90, -180, 180)))),
}

INPUTS = {
    "crop": {"kind": "crop", "size": 32, "crop_rule": "l2cs_face_box", "colour": "rgb",
             "mean": [0.485, 0.456, 0.406], "std": [0.229, 0.224, 0.225]},
    "rectified": {"kind": "rectified", "size": 32, "normalization": {"focal_px": 960, "distance_mm": 600},
                  "colour": "bgr", "scale": 1, "mean": [100, 110, 120], "std": [50, 55, 60]},
}


def spec_dict(name: str = "mynet", rule: str = "angles_pitch_yaw_rad", kind: str = "crop", clip: int = 1) -> dict:
    """A valid spec mapping of one input kind and output rule (``clip`` frames per sample)."""
    out, consts, _ = RULES[rule]
    size = INPUTS[kind]["size"]
    shape = ["B", 3, size, size] if clip == 1 else ["B", clip, 3, size, size]
    lead = ["B"] if clip == 1 else ["B", clip]
    names = ["gaze"] if len(consts) == 1 else ["head1", "head2"]
    d = {"format": 1, "name": name, "family": "mynet", "train_set": "Gaze360", "table_name": "MyNet",
         "licence": "MIT", "source": "https://example.org/mynet", "weights_file": f"{name}.onnx",
         "input": copy.deepcopy(INPUTS[kind]),
         "onnx": {"inputs": {"face": shape},
                  "outputs": {n: [*lead, len(c)] for n, c in zip(names, consts, strict=True)}},
         "output": copy.deepcopy(out)}
    if clip > 1:
        d["clip"] = {"length": clip, "stride": 1, "out_index": clip // 2}
    return d


def constant_onnx(d: dict, rule: str, path: Path) -> Path:
    """An ONNX graph with ``d``'s input and output names and shapes (dynamic B) whose
    outputs are ``RULES[rule]``'s constants, broadcast over the batch (and clip) axes."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    (in_name, in_shape), = d["onnx"]["inputs"].items()
    rank = len(in_shape)
    lead = rank - 3  # B, or B and T
    nodes = [helper.make_node("ReduceMean", [in_name, "axes"], ["m"], keepdims=0),  # (B,) or (B, T)
             helper.make_node("Mul", ["m", "zero"], ["z"]),
             helper.make_node("Unsqueeze", ["z", "last"], ["z1"])]  # (..., 1)
    inits = [numpy_helper.from_array(np.arange(lead, rank, dtype=np.int64), "axes"),
             numpy_helper.from_array(np.float32(0), "zero"),
             numpy_helper.from_array(np.array([lead], np.int64), "last")]
    outs = []
    for i, ((name, shape), c) in enumerate(zip(d["onnx"]["outputs"].items(), RULES[rule][1], strict=True)):
        inits.append(numpy_helper.from_array(np.asarray(c, np.float32).reshape([1] * lead + [-1]), f"c{i}"))
        nodes.append(helper.make_node("Add", ["z1", f"c{i}"], [name]))
        outs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
    graph = helper.make_graph(nodes, "constant", [helper.make_tensor_value_info(in_name, TensorProto.FLOAT, in_shape)],
                              outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(path))
    return path


def write_spec(folder: Path, d: dict, rule: str | None = None, onnx_dict: dict | None = None) -> Path:
    """``<folder>/<name>.yaml`` and (``rule``) its constant ONNX file next to it (built from
    ``onnx_dict``'s signature when given: a graph that disagrees with the spec)."""
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / f"{d.get('name', 'spec')}.yaml"
    p.write_text(yaml.safe_dump(d, sort_keys=False))
    if rule is not None:
        constant_onnx(onnx_dict or d, rule, folder / d["weights_file"])
    return p
