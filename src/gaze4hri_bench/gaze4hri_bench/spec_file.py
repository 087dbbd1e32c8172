"""Method spec files: one YAML format for every network in one ONNX file, the seven
built-in configurations (specs/*.yaml, shipped in the package) and a user's own
(``gaze4hri-bench run --method mynet.yaml``, ``gaze4hri-bench methods add``). The schema
is one pydantic model (:class:`SpecFile`), loaded into the pipeline's
:class:`~gaze4hri_bench.specs.MethodSpec`; docs/models.md "Your own model" lists every
field. A spec is checked against its ONNX graph (:func:`check_onnx`: names, ranks,
fixed and dynamic axes) before a run uses it. Every error is one line
``<file>: <field>: <what is wrong>; <fix>`` (:class:`SpecError`, exit 2)."""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from gaze4hri_core.errors import Gaze4HRIError
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .output_rules import angles_rule, bins_rule, vector_rule

__all__ = ["MethodSpec", "SpecError", "SpecFile", "load_spec", "spec_from_mapping", "spec_hash", "check_onnx", "FORMAT"]

FORMAT = 1  # the spec file format this module reads (``format:`` in the file)

Dim = int | str  # an int: a fixed size; a name (B, H, W): a dynamic axis


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


class SpecError(Gaze4HRIError):
    """A spec file refused: ``<file>: <field>: <what is wrong>; <fix>``."""

    def __init__(self, file: str, field: str, what: str, fix: str):
        self.file, self.field = file, field
        super().__init__(what, f"{file}: {field}", fix)

    def line(self) -> str:
        return f"{self.where}: {self.what}; {self.fix}".replace("\n", " ")


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Normalization(_Strict):
    """Zhang et al. 2018 data normalization of a rectified input (ETH-XGaze: 960 px, 600 mm)."""

    focal_px: float = Field(gt=0, description="the normalized camera's focal length in pixels, e.g. 960")
    distance_mm: float = Field(gt=0, description="the normalized camera's distance to the face in mm, e.g. 600")


class InputSpec(_Strict):
    kind: Literal["crop", "rectified"] = Field(description="crop (a face box cut out) or rectified")
    size: int = Field(gt=0, description="the square side of the network input in pixels (patch size)")
    crop_rule: str | None = Field(None, description="a rule of faces.crops.CROP_RULES (crop inputs)")
    normalization: Normalization | None = Field(None, description="{focal_px, distance_mm} (rectified inputs)")
    colour: Literal["rgb", "bgr"] = Field(description="rgb or bgr, the channel order the network expects")
    scale: float = Field(255.0, gt=0, description="the divisor of the pixel values (255 or 1)")
    mean: list[float] | None = Field(None, description="3 per-channel means after scaling, or null")
    std: list[float] | None = Field(None, description="3 per-channel stds after scaling, or null")

    @field_validator("mean", "std")
    @classmethod
    def _three(cls, v, info):
        if v is not None and len(v) != 3:
            raise ValueError(f"{len(v)} values given, one per channel needed (3)")
        if v is not None and info.field_name == "std" and min(v) <= 0:
            raise ValueError("every std must be > 0")
        return v

    @model_validator(mode="after")
    def _kind_fields(self):
        if self.kind == "crop":  # the rule's name is checked against faces.crops when the method is registered
            if self.normalization is not None:
                raise ValueError("normalization: only rectified inputs take it; remove it")
            if self.crop_rule is None:
                raise ValueError("crop_rule: a crop input needs it, e.g. l2cs_face_box")
        elif self.normalization is None:
            raise ValueError("normalization: a rectified input needs it; give {focal_px: 960, distance_mm: 600}")
        elif self.crop_rule is not None:
            raise ValueError("crop_rule: only crop inputs take it; remove it")
        return self


class ClipSpec(_Strict):
    length: int = Field(1, ge=1, description="frames per sample (1: a single image)")
    stride: int = Field(1, ge=1, description="the frame step inside a clip")
    out_index: int | None = Field(None, ge=0, description="the clip position the centre frame is read from")

    @model_validator(mode="after")
    def _index(self):
        if self.length > 1 and (self.out_index is None or self.out_index >= self.length):
            raise ValueError(f"out_index: a clip of {self.length} frames needs 0 <= out_index < {self.length}")
        if self.length == 1 and self.out_index is not None:
            raise ValueError("out_index: a single-image network has none; use null")
        return self


class OnnxSpec(_Strict):
    inputs: dict[str, list[Dim]] = Field(description="input name -> shape, the image or clip tensor first")
    outputs: dict[str, list[Dim]] = Field(description="output name -> shape, in the order the decoder reads them")

    @field_validator("inputs", "outputs")
    @classmethod
    def _not_empty(cls, v):
        if not v:
            raise ValueError("name at least one tensor, e.g. {face: [B, 3, 224, 224]}")
        return v


class BinsSpec(_Strict):
    count: int = Field(gt=1, description="the number of bins per head")
    range_deg: list[float] = Field(description="[low, high] degrees the bins cover, e.g. [-180, 180]")

    @field_validator("range_deg")
    @classmethod
    def _ordered(cls, v):
        if len(v) != 2:
            raise ValueError("give two values, [low, high]")
        if v[1] <= v[0]:
            raise ValueError("high must be above low, e.g. [-180, 180]")
        return v


class OutputSpec(_Strict):
    kind: Literal["angles", "vector", "bins"] = Field(description="angles, vector or bins")
    order: Literal["pitch_yaw", "yaw_pitch"] | None = Field(None, description="pitch_yaw or yaw_pitch (angles, bins)")
    unit: Literal["rad", "deg"] | None = Field(None, description="rad or deg (angles)")
    frame: Literal["A", "B"] | None = Field(None, description="A (GazeHub) or B (Gaze360) (vector)")
    bins: BinsSpec | None = Field(None, description="{count, range_deg} (bins)")

    @model_validator(mode="after")
    def _by_kind(self):
        need = {"angles": ("order", "unit"), "vector": ("frame",), "bins": ("order", "bins")}[self.kind]
        for name in ("order", "unit", "frame", "bins"):
            given = getattr(self, name) is not None
            if name in need and not given:
                raise ValueError(f"{name}: {self.kind} outputs need it")
            if name not in need and given:
                raise ValueError(f"{name}: {self.kind} outputs take no {name}; remove it")
        return self

    def rule(self) -> str:
        """The decoder name (decoders.DECODERS) this output is read with."""
        if self.kind == "angles":
            return angles_rule(self.order, self.unit)
        if self.kind == "vector":
            return vector_rule(self.frame)
        return bins_rule(self.order, self.bins.count, *self.bins.range_deg)

    @property
    def gaze_frame(self) -> str:
        return self.frame if self.kind == "vector" else "A"

    @property
    def n_outputs(self) -> int:
        return 2 if self.kind == "bins" else 1


class SpecFile(BaseModel):
    """One method spec file (format 1): what the network eats and emits, and where it is from."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = Field(FORMAT, description="1 (the spec file format)")
    name: str = Field(pattern=r"^[a-z][a-z0-9_]*$", description="a method name of lower-case letters, digits and _")
    aliases: list[str] = Field(default_factory=list, description="a list of other names for the method")
    family: str = Field(description="the network family, e.g. mynet")
    train_set: str = Field(description="the training data set, e.g. Gaze360")
    table_name: str = Field("", description="the name in tables and figures")
    licence: str = Field(description="the licence of the weights, e.g. MIT")
    source: str = Field(description="where the weights come from (a URL)")
    weights_file: str = Field(description="the ONNX file, relative to the spec file (or the models folder)")
    weights_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$",
                                       description="the published checkpoint's sha256 (64 hex digits) or null")
    input: InputSpec
    clip: ClipSpec = Field(default_factory=ClipSpec)
    onnx: OnnxSpec
    output: OutputSpec
    notes: str = ""

    @field_validator("weights_file")
    @classmethod
    def _onnx_suffix(cls, v):
        if not v.endswith(".onnx"):
            raise ValueError("must name an .onnx file, e.g. mynet.onnx")
        return v

    @model_validator(mode="after")
    def _shapes(self):
        """The tensor shapes agree with the input, clip and output fields."""
        (first, shape), *_ = self.onnx.inputs.items()
        s = self.input.size
        want = [3, s, s] if self.clip.length == 1 else [self.clip.length, 3, s, s]
        dims = shape[1:]
        if len(dims) != len(want) or any(isinstance(d, int) and d != w for d, w in zip(dims, want, strict=True)):
            raise ValueError(f"onnx.inputs.{first}: shape {shape} does not match input.size and clip.length; "
                             f"use [B, {', '.join(map(str, want))}]")
        if len(self.onnx.outputs) != self.output.n_outputs:
            raise ValueError(f"onnx.outputs: {self.output.kind} outputs read {self.output.n_outputs} tensor(s), "
                             f"{len(self.onnx.outputs)} named")
        last = {"angles": 2, "vector": 3, "bins": self.output.bins.count if self.output.bins else 0}[self.output.kind]
        for n, sh in self.onnx.outputs.items():
            if sh[-1] != last:
                raise ValueError(f"onnx.outputs.{n}: last axis is {sh[-1]}, {self.output.kind} outputs give {last}")
        return self

    def to_method_spec(self, weights_file: str | None = None):
        """The pipeline's MethodSpec (scale folded into mean/std: (x/scale - m)/s =
        (x/255 - m scale/255)/(s scale/255))."""
        i = self.input
        mean, std = (None if v is None else tuple(v) for v in (i.mean, i.std))
        if i.scale != 255.0:
            mean = tuple(v * i.scale / 255 for v in (mean or (0.0, 0.0, 0.0)))
            std = tuple(v * i.scale / 255 for v in (std or (1.0, 1.0, 1.0)))
        norm = {} if i.normalization is None else {
            "focal_px": i.normalization.focal_px, "distance_mm": i.normalization.distance_mm, "size": i.size}
        return MethodSpec(
            name=self.name, family=self.family, train_set=self.train_set, input_type=i.kind, size=i.size,
            colour=i.colour, mean=mean, std=std, clip_len=self.clip.length, clip_stride=self.clip.stride,
            out_index=self.clip.out_index, onnx_inputs={k: tuple(v) for k, v in self.onnx.inputs.items()},
            onnx_outputs={k: tuple(v) for k, v in self.onnx.outputs.items()}, output=self.output.rule(),
            gaze_frame=self.output.gaze_frame, licence=self.licence, source_url=self.source,
            weights_file=weights_file or self.weights_file, weights_sha256=self.weights_sha256,
            normalization=norm, crop_rule=i.crop_rule, table_name=self.table_name, notes=self.notes)


def _field_of(err: dict) -> tuple[str, str]:
    """(field path, message) of pydantic's first error; a model validator names its field first."""
    # list indices and union members (onnx.inputs.face.1.int) are not fields: the field is named
    loc = ".".join(str(x) for x in err.get("loc", ()) if not isinstance(x, int) and x not in ("int", "str"))
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    head, sep, rest = msg.partition(": ")
    if sep and " " not in head and head.replace(".", "").replace("_", "").isalnum():
        loc = f"{loc}.{head}" if loc else head
        msg = rest
    if err.get("type") not in ("value_error", "missing") and "input" in err:
        msg += f", got {err['input']!r}"
    return loc or "(file)", msg


def _fix(loc: str) -> str:
    """The field's own description as the fix (docs/models.md "Your own model")."""
    model: type[BaseModel] | None = SpecFile
    desc = ""
    for part in loc.split("."):
        f = model.model_fields.get(part) if model is not None else None
        if f is None:
            break
        desc = f.description or desc
        ann = f.annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
        for arg in getattr(ann, "__args__", ()):
            if isinstance(arg, type) and issubclass(arg, BaseModel):
                model = arg
    return f"expected {desc}" if desc else "see docs/models.md, \"Your own model\""


def spec_from_mapping(data: object, where: str, weights_base: Path | None = None):
    """(MethodSpec, aliases) of a parsed spec file; ``weights_base``: the folder the
    ONNX file is relative to (None: kept as written, relative to the models folder)."""
    if not isinstance(data, dict):
        raise SpecError(where, "(file)", "not a mapping of fields", "start from docs/models.md, \"Your own model\"")
    try:
        sf = SpecFile(**data)
    except ValidationError as e:
        loc, msg = _field_of(e.errors()[0])
        if e.errors()[0].get("type") == "extra_forbidden":
            msg, fix = "unknown field", f"remove it (fields: {', '.join(SpecFile.model_fields)})"
        else:
            fix = _fix(loc)
        raise SpecError(where, loc, msg, fix) from None
    weights = None if weights_base is None else str((weights_base / sf.weights_file).resolve())
    return sf.to_method_spec(weights), tuple(sf.aliases)


def load_spec(path: str | Path, relative_weights: bool = True):
    """(MethodSpec, aliases) of a spec file; the ONNX file is found next to it
    (``relative_weights``) or in the models folder."""
    import yaml

    p = Path(path)
    if not p.is_file():
        raise SpecError(str(p), "(file)", "no such file", "give the path of a method spec (.yaml)")
    try:
        data = yaml.safe_load(p.read_text(encoding="utf-8"))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise SpecError(str(p), "(file)", f"not YAML ({str(e).splitlines()[0]})", "fix the YAML syntax") from None
    return spec_from_mapping(data, str(p), p.parent if relative_weights else None)


def spec_hash(spec) -> str:
    """sha256 of a MethodSpec's canonical JSON (every field; independent of the YAML's
    layout and comments): the spec part of a result's provenance."""
    import dataclasses

    text = json.dumps(dataclasses.asdict(spec), sort_keys=True, default=list)
    return hashlib.sha256(text.encode()).hexdigest()


def _dims(value_info) -> list[int | str | None]:
    """An ONNX tensor's shape: int (fixed), str (named dynamic axis) or None (unknown)."""
    dims = value_info.type.tensor_type.shape.dim
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in dims]


def check_onnx(spec, path: str | Path, where: str | None = None) -> None:
    """The ONNX graph at ``path`` has the spec's inputs (names in order) and its outputs
    first (as pipeline.runtime's session check), with their ranks and fixed sizes, and a
    dynamic axis wherever the spec names one (B, H, W). One line otherwise."""
    import onnx

    where = where or spec.name
    try:
        g = onnx.load(str(path), load_external_data=False).graph
    except Exception as e:  # noqa: BLE001 - any unreadable file is the same one-line refusal
        raise SpecError(where, "weights_file", f"{path} is not an ONNX model ({type(e).__name__})",
                        "export the network to ONNX (docs/models.md)") from None
    inits = {i.name for i in g.initializer}
    graph = {"inputs": {v.name: _dims(v) for v in g.input if v.name not in inits},
             "outputs": {v.name: _dims(v) for v in g.output}}
    for kind, declared in (("inputs", spec.onnx_inputs), ("outputs", spec.onnx_outputs)):
        have = graph[kind]
        # in order: the decoder reads the outputs in the spec's order; a graph may give more outputs after them
        if list(have)[: len(declared) if kind == "outputs" else None] != list(declared):
            raise SpecError(where, f"onnx.{kind}", f"names {list(declared)}, the graph has {list(have)}",
                            f"use the graph's {kind[:-1]} names, in its order")
        for name, shape in declared.items():
            _check_shape(where, f"onnx.{kind}.{name}", list(shape), have[name])


def _check_shape(where: str, field: str, spec_shape: list, graph_shape: list) -> None:
    if len(spec_shape) != len(graph_shape):
        raise SpecError(where, field, f"rank {len(spec_shape)}, the graph's is {len(graph_shape)} ({graph_shape})",
                        "give one size or axis name per graph axis")
    for i, (s, g) in enumerate(zip(spec_shape, graph_shape, strict=True)):
        if isinstance(s, str) and isinstance(g, int):
            raise SpecError(where, field, f"axis {i} is dynamic ({s}) here, fixed to {g} in the graph",
                            f"write {g}, or export the network with a dynamic axis {i}")
        if isinstance(s, int) and isinstance(g, int) and s != g:
            raise SpecError(where, field, f"axis {i} is {s}, the graph's is {g}", f"write {g}")
