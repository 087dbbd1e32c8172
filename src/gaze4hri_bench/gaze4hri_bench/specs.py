"""Frozen method specifications: the contract between the model zoo (which exports
ONNX files) and the pipeline (which feeds and decodes them). One entry per released
configuration of the study (Sezer et al., Table II); facts from the official
repositories (see docs/models.md and ../shared/reference/methods.md).

Each ONNX file has exactly the input and output names and shapes given here, with a
dynamic batch axis ``B`` (and dynamic image axes ``H``, ``W`` where named: at most
``size``). Every method adapter turns the decoded output into a unit
vector in the OpenCV camera frame before it leaves the method.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from gaze4hri_core.registry import Registry

__all__ = ["MethodSpec", "SPECS", "ALIASES", "get_spec", "IMAGENET_MEAN", "IMAGENET_STD", "FRAME_HW"]

#: second input of a clip network that takes each frame's image size (B, T, 2) =
#: (height, width) in input pixels, image at the top left, zeros after it; height 0
#: marks an absent frame (MCGaze: zoo/nets/mcgaze.py)
FRAME_HW = "frame_hw"

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


@dataclass(frozen=True)
class MethodSpec:
    """What a method eats and emits.

    input_type: ``rectified`` (Zhang et al. 2018 data normalization) or ``crop``.
    colour: ``bgr`` or ``rgb``; scale: pixel values divided by 255 first;
    mean/std: per-channel normalisation after scaling (None: none).
    clip_len: frames per sample (1 = single image); clip_stride: frame step inside a
    clip; out_index: which clip position the prediction of the centre frame is read
    from. output: decoding rule name (see the pipeline's decoders):
    ``pitchyaw_rad`` [pitch, yaw] radians Frame A; ``yawpitch_rad`` [yaw, pitch];
    ``l2cs_bins`` two 90-bin heads (yaw first) -> degrees; ``vector_b`` unit 3D in
    Frame B per clip frame.
    """

    name: str
    family: str
    train_set: str
    input_type: str
    size: int
    colour: str
    mean: tuple[float, float, float] | None
    std: tuple[float, float, float] | None
    clip_len: int
    clip_stride: int
    out_index: int | None
    onnx_inputs: dict[str, tuple]
    onnx_outputs: dict[str, tuple]
    output: str
    gaze_frame: str
    licence: str
    source_url: str
    weights_file: str
    weights_sha256: str | None = None
    normalization: dict = field(default_factory=dict)  # focal_px, distance_mm for rectified
    crop_rule: str | None = None  # name of the crop rule for crop inputs
    table_name: str = ""
    notes: str = ""


_NORM_ETH = {"focal_px": 960.0, "distance_mm": 600.0, "size": 224}

_SPECS: dict[str, MethodSpec] = {
    "puregaze_eth": MethodSpec(
        name="puregaze_eth", family="puregaze", train_set="ETH-XGaze", input_type="rectified", size=224,
        colour="bgr", mean=None, std=None, clip_len=1, clip_stride=1, out_index=None,
        onnx_inputs={"face": ("B", 3, 224, 224)}, onnx_outputs={"gaze": ("B", 2)},
        output="pitchyaw_rad", gaze_frame="A", licence="CC BY-NC 4.0",
        source_url="https://github.com/yihuacheng/PureGaze", weights_file="puregaze_eth.onnx",
        normalization=_NORM_ETH, table_name="PureGaze (E)",
    ),
    "puregaze_gaze360": MethodSpec(
        name="puregaze_gaze360", family="puregaze", train_set="Gaze360", input_type="rectified", size=224,
        colour="bgr", mean=None, std=None, clip_len=1, clip_stride=1, out_index=None,
        onnx_inputs={"face": ("B", 3, 224, 224)}, onnx_outputs={"gaze": ("B", 2)},
        output="yawpitch_rad", gaze_frame="A", licence="CC BY-NC 4.0",
        source_url="https://github.com/yihuacheng/PureGaze", weights_file="puregaze_gaze360.onnx",
        normalization=_NORM_ETH, table_name="PureGaze (G)",
        notes="No released weights: the study trained it (50 epochs, lr 1e-4); import your own checkpoint. "
              "Output [yaw, pitch]: trained on GazeHub Gaze360 labels, whose reader reads the (yaw, pitch) column "
              "(PureGaze's [pitch, yaw] conversion is for ETH only), as the study reads it "
              "(GazeForHRI/GazeModels@puregaze_gaze360:gaze_model_puregaze_on_gaze360.py:86-87).",
    ),
    "gazetr_eth": MethodSpec(
        name="gazetr_eth", family="gazetr", train_set="ETH-XGaze", input_type="rectified", size=224,
        colour="bgr", mean=None, std=None, clip_len=1, clip_stride=1, out_index=None,
        onnx_inputs={"face": ("B", 3, 224, 224)}, onnx_outputs={"gaze": ("B", 2)},
        output="yawpitch_rad", gaze_frame="A", licence="CC BY-NC-SA 4.0",
        source_url="https://github.com/yihuacheng/GazeTR", weights_file="gazetr_eth.onnx",
        normalization=_NORM_ETH, table_name="GazeTR (E)",
        notes="Output order settled by the flip test (docs/models.md).",
    ),
    "gazetr_gaze360": MethodSpec(
        name="gazetr_gaze360", family="gazetr", train_set="Gaze360", input_type="rectified", size=224,
        colour="bgr", mean=None, std=None, clip_len=1, clip_stride=1, out_index=None,
        onnx_inputs={"face": ("B", 3, 224, 224)}, onnx_outputs={"gaze": ("B", 2)},
        output="yawpitch_rad", gaze_frame="A", licence="CC BY-NC-SA 4.0",
        source_url="https://github.com/yihuacheng/GazeTR", weights_file="gazetr_gaze360.onnx",
        normalization=_NORM_ETH, table_name="GazeTR (G)",
        notes="No released weights: the study trained it (80 epochs, lr 5e-4, warm-up); import your own.",
    ),
    "l2cs_gaze360": MethodSpec(
        name="l2cs_gaze360", family="l2cs", train_set="Gaze360", input_type="crop", size=448,
        colour="rgb", mean=IMAGENET_MEAN, std=IMAGENET_STD, clip_len=1, clip_stride=1, out_index=None,
        onnx_inputs={"face": ("B", 3, 448, 448)},
        onnx_outputs={"yaw_bins": ("B", 90), "pitch_bins": ("B", 90)},
        output="l2cs_bins", gaze_frame="A", licence="MIT",
        source_url="https://github.com/Ahmednull/L2CS-Net", weights_file="l2cs_gaze360.onnx",
        crop_rule="l2cs_face_box", table_name="L2CS-Net (G)",
        notes="Face box, no margin, resized 224 then 448 (official demo).",
    ),
    "mcgaze_gaze360": MethodSpec(
        name="mcgaze_gaze360", family="mcgaze", train_set="Gaze360", input_type="crop", size=448,
        colour="rgb", mean=(123.675 / 255, 116.28 / 255, 103.53 / 255), std=(58.395 / 255, 57.12 / 255, 57.375 / 255),
        clip_len=7, clip_stride=1, out_index=3,
        onnx_inputs={"clip": ("B", 7, 3, "H", "W"), FRAME_HW: ("B", 7, 2)}, onnx_outputs={"gaze": ("B", 7, 3)},
        output="vector_b", gaze_frame="B", licence="MIT (code); Gaze360 data research-only",
        source_url="https://github.com/zgchen33/MCGaze", weights_file="mcgaze_gaze360.onnx",
        crop_rule="mcgaze_head_square", table_name="MCGaze (G)",
        notes="L2CS setting; sliding window 7, stride 4, overlaps averaged pairwise; crops cut at the border keep "
              "their aspect ratio.",
    ),
    "gat_gaze360": MethodSpec(
        name="gat_gaze360", family="gat", train_set="Gaze360", input_type="crop", size=224,
        colour="rgb", mean=IMAGENET_MEAN, std=IMAGENET_STD, clip_len=8, clip_stride=1, out_index=3,
        onnx_inputs={"clip": ("B", 8, 3, 224, 224)}, onnx_outputs={"gaze": ("B", 8, 3)},
        output="vector_b", gaze_frame="B", licence="CC BY-NC 4.0",
        source_url="https://github.com/idiap/gaze3d", weights_file="gat_gaze360.onnx",
        crop_rule="gat_head_box", table_name="GaT (G)",
        notes="Window f-3s..f+4s, prediction read at index 3.",
    ),
}

ALIASES: dict[str, str] = {
    "puregaze": "puregaze_eth",
    "puregaze_e": "puregaze_eth",
    "puregaze_g": "puregaze_gaze360",
    "gazetr": "gazetr_eth",
    "gazetr_e": "gazetr_eth",
    "gazetr_g": "gazetr_gaze360",
    "l2cs": "l2cs_gaze360",
    "l2csnet": "l2cs_gaze360",
    "mcgaze": "mcgaze_gaze360",
    "gat": "gat_gaze360",
}


#: every method configuration by name (aliases: ALIASES), one Registry like every named table
SPECS: Registry[MethodSpec] = Registry("method")
for _name, _spec in _SPECS.items():
    SPECS.add(_name, _spec, aliases=tuple(a for a, t in ALIASES.items() if t == _name))


def get_spec(name: str) -> MethodSpec:
    """Spec by name or alias; unknown names raise with a did-you-mean list."""
    return SPECS.get(name)
