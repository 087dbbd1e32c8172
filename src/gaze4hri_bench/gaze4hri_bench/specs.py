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

from pathlib import Path

from gaze4hri_core.registry import Registry

from .spec_file import MethodSpec, load_spec

__all__ = ["MethodSpec", "SPECS", "ALIASES", "get_spec", "IMAGENET_MEAN", "IMAGENET_STD", "FRAME_HW", "SPEC_DIR",
           "BUILTIN_ORDER"]

#: second input of a clip network that takes each frame's image size (B, T, 2) =
#: (height, width) in input pixels, image at the top left, zeros after it; height 0
#: marks an absent frame (MCGaze: zoo/nets/mcgaze.py)
FRAME_HW = "frame_hw"

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)

#: the folder of the built-in spec files, shipped in the package (one per configuration)
SPEC_DIR = Path(__file__).with_name("specs")


def _load_builtin() -> tuple[Registry[MethodSpec], dict[str, str]]:
    """Every specs/*.yaml, in the order of Table II (``BUILTIN_ORDER``), into one Registry."""
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
