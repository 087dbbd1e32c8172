"""Frozen method specifications: the contract between the model zoo (which exports
ONNX files) and the pipeline (which feeds and decodes them). One spec file per released
configuration of the study (Sezer et al., Table II) in specs/*.yaml, in the one format a
user's own network uses too (spec_file.py; docs/models.md, "Your own model"); facts from
the official repositories (see docs/models.md and ../shared/reference/methods.md).

Each ONNX file has exactly the input and output names and shapes given here, with a
dynamic batch axis ``B`` (and dynamic image axes ``H``, ``W`` where named: at most
``size``). Every method adapter turns the decoded output into a unit
vector in the OpenCV camera frame before it leaves the method.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from gaze4hri_core.registry import Registry

__all__ = ["MethodSpec", "SPECS", "ALIASES", "get_spec", "IMAGENET_MEAN", "IMAGENET_STD", "FRAME_HW", "SPEC_DIR",
           "BUILTIN_ORDER"]

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
    colour: ``bgr`` or ``rgb``; pixel values are divided by 255 first (a spec file's
    ``scale`` is folded into mean/std); mean/std: per-channel normalisation after
    scaling (None: none). clip_len: frames per sample (1 = single image); clip_stride:
    frame step inside a clip; out_index: which clip position the prediction of the
    centre frame is read from. output: decoding rule name (decoders.DECODERS,
    output_rules.py): ``pitchyaw_rad`` [pitch, yaw] radians Frame A; ``yawpitch_rad``
    [yaw, pitch]; ``*_deg`` the same in degrees; ``l2cs_bins`` two 90-bin heads (yaw
    first) -> degrees; ``bins_*`` other bins; ``vector_a``/``vector_b`` unit 3D in
    Frame A/B per clip frame. Built from a spec file: spec_file.SpecFile.
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


#: the folder of the built-in spec files, shipped in the package (one per configuration)
SPEC_DIR = Path(__file__).with_name("specs")


def _load_builtin() -> tuple[Registry[MethodSpec], dict[str, str]]:
    """Every specs/*.yaml, in the order of Table II (``BUILTIN_ORDER``), into one Registry."""
    from .spec_file import load_spec

    reg: Registry[MethodSpec] = Registry("method")
    aliases: dict[str, str] = {}
    files = {p.stem: p for p in SPEC_DIR.glob("*.yaml")}
    for name in (*BUILTIN_ORDER, *sorted(set(files) - set(BUILTIN_ORDER))):
        spec, names = load_spec(files[name], relative_weights=False)  # weights: the models folder
        reg.add(spec.name, spec, aliases=names)
        aliases.update(dict.fromkeys(names, spec.name))
    return reg, aliases


#: the study's configurations in the order of its Table II (files: specs/<name>.yaml)
BUILTIN_ORDER = ("puregaze_eth", "puregaze_gaze360", "gazetr_eth", "gazetr_gaze360", "l2cs_gaze360",
                 "mcgaze_gaze360", "gat_gaze360")

#: every built-in method configuration by name (aliases: ALIASES), one Registry like every named table
SPECS, ALIASES = _load_builtin()


def get_spec(name: str) -> MethodSpec:
    """Spec by name or alias; unknown names raise with a did-you-mean list."""
    return SPECS.get(name)
