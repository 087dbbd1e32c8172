"""Pipeline profiles: how each method's input is prepared and its output decoded, as
data. A profile is a frozen record per method (:class:`MethodProfile`), looked up by
name in :data:`PROFILES` (``gaze4hri-bench run --profile NAME``); ``BASE:SETTING``
names one setting of a profile alone on top of ``reference``.

* ``reference`` (default): each method per its own official code and Zhang et al.
  2018 (data normalization, de-normalization by R^T), with the camera->face ray
  correction for crops (Kellnhofer et al. 2019, Sec. 3.3).
* ``study``: what the study's released inference and analysis code did (Sezer et al.;
  ``GazeForHRI/GazeModels``, one branch per model, and ``GazeForHRI/Gaze4HRI``). Each
  difference from ``reference`` is a :class:`Setting` with a citation
  ``repo@branch:path:line`` and a verdict (deliberate choice / looks like a mistake);
  docs/pipeline.md tabulates them.

Adding a profile or changing one setting touches :data:`PROFILES` only. Every profile
is validated when this module is imported (a method without a record, or a value no
registry knows, is refused at load time, not mid-run).
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.registry import Registry

from .specs import IMAGENET_MEAN, IMAGENET_STD, SPECS, MethodSpec

__all__ = ["MethodProfile", "Setting", "Profile", "PROFILES", "DEFAULT_PROFILE", "get_profile", "profile_names",
           "reference_record", "FIELD_CHOICES", "VERDICTS", "single_setting_names", "not_scored_mask",
           "mark_not_scored", "NOT_SCORED"]

DEFAULT_PROFILE = "reference"

#: crop rule for methods whose spec names none (rectified methods run on crops, Table S9)
DEFAULT_CROP_RULE = "l2cs_face_box"

#: allowed values of the enumerated fields (crop_rule, output: the crop and decoder registries)
FIELD_CHOICES: dict[str, tuple] = {
    "face_boxes": ("detector", "dataset"),
    "track_rule": ("subject", "most_frequent"),
    "missing_face": ("frame", "trial"),
    "rect_centre": ("face_centre", "eye_midpoint"),
    "head_axes": ("head_x", "study_chain"),
    "denorm": ("rotation", "inverse_warp"),
    "colour": ("rgb", "bgr"),
    "clip": ("official", "causal"),
    "pose_match": ("interpolate", "nearest_20ms"),
}
VERDICTS = ("deliberate choice", "looks like a mistake", "same as reference")


@dataclass(frozen=True)
class MethodProfile:
    """Every setting of one method under one profile (both input types).

    crop: ``crop_rule`` (faces.crops.CROP_RULES), ``box_margin`` (fraction of the box
    added on every side by the face pass's study rule, clamped to the image; dataset
    boxes carry it already), ``face_boxes`` (``detector``: our face pass;
    ``dataset``: the dataset's released boxes when it has them, e.g. the study layout's
    head_bboxes.npy through ``Dataset.face_boxes(tref)``, else the detector with this
    record's rule), ``detector_conf`` (None: the
    detector's own default), ``track_rule`` (``subject``: faces.tracking's subject
    rule; ``most_frequent``: the track id seen in most frames), ``missing_face``
    (``frame``: a frame without the subject's box is ``no_face``; ``trial``: the whole
    trial is excluded), ``ray_correction`` (rotate a crop's output by the camera->face
    ray). Rectification: ``rect_centre`` (ETH face centre or eye midpoint),
    ``head_axes`` (the head x axis, or the study's axis chain), ``denorm``
    (``rotation``: R^T; ``inverse_warp``: M^-1 = R^T S^-1). Tensor: ``colour``,
    ``mean``/``std``. ``output``: decoder (decoders.DECODERS). Clips: ``clip``
    (``official`` window of the method's code, or ``causal`` f-T+1..f read at the last
    position), ``clip_shift`` (the prediction of frame f is compared with frame
    f + shift) and ``smoothing`` (alpha of the official MCGaze evaluation's temporal
    filter alpha x self + (1 - alpha)/2 x (previous + next), re-normalized; None: off).
    Scoring: ``unscored_tail`` (the last N frames of every trial are not scored: reason
    ``not_scored``, :func:`not_scored_mask`); ``pose_match`` (``interpolate``: a
    rectified input's geometry (eye midpoint, face centre, head rotation, camera) is the
    motion capture interpolated at the frame stamp, as the ground truth; ``nearest_20ms``:
    the sample nearest to the stamp, and a frame without one within 20 ms is not scored;
    data.frame_truth.pose_match_options)."""

    crop_rule: str
    box_margin: float
    face_boxes: str
    detector_conf: float | None
    track_rule: str
    missing_face: str
    ray_correction: bool
    rect_centre: str
    head_axes: str
    denorm: str
    colour: str
    mean: tuple[float, float, float] | None
    std: tuple[float, float, float] | None
    output: str
    clip: str
    clip_shift: int
    smoothing: float | None
    unscored_tail: int = 0
    pose_match: str = "interpolate"

    def validate(self, where: str) -> None:
        """Raise Gaze4HRIError naming the first invalid field."""
        from .decoders import DECODERS
        from .faces.crops import CROP_RULES

        choices = {**FIELD_CHOICES, "crop_rule": tuple(CROP_RULES), "output": tuple(DECODERS)}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if v is None and f.name in ("detector_conf", "mean", "std"):
                continue
            if f.name in choices and v not in choices[f.name]:
                raise Gaze4HRIError(f"profile {where}: {f.name} = {v!r} is not one of "
                                    f"{', '.join(map(str, choices[f.name]))}",
                                    "gaze4hri_bench.profiles", "fix the profile record")
        if (not 0.0 <= self.box_margin < 1.0 or self.clip_shift < 0 or self.unscored_tail < 0
                or (self.smoothing is not None and not 0.0 < self.smoothing <= 1.0)):
            raise Gaze4HRIError(f"profile {where}: box_margin must lie in [0, 1), clip_shift and unscored_tail >= 0, "
                                "smoothing in (0, 1]",
                                "gaze4hri_bench.profiles", "fix the profile record")
        if self.detector_conf is not None and not 0.0 < self.detector_conf < 1.0:
            raise Gaze4HRIError(f"profile {where}: detector_conf must lie in (0, 1)", "gaze4hri_bench.profiles",
                                "fix the profile record")
        for k in ("mean", "std"):
            v = getattr(self, k)
            if v is not None and (len(v) != 3 or (k == "std" and min(v) <= 0)):
                raise Gaze4HRIError(f"profile {where}: {k} must be 3 values (std > 0)", "gaze4hri_bench.profiles",
                                    "fix the profile record")


def reference_record(spec: MethodSpec) -> MethodProfile:
    """The ``reference`` record of a method: its spec's official settings, Zhang et al.
    2018 rectification and the ray correction for crops."""
    return MethodProfile(
        crop_rule=spec.crop_rule or DEFAULT_CROP_RULE, box_margin=0.0, face_boxes="detector", detector_conf=None,
        track_rule="subject", missing_face="frame", ray_correction=True, rect_centre="face_centre", head_axes="head_x",
        denorm="rotation", colour=spec.colour, mean=spec.mean, std=spec.std, output=spec.output, clip="official",
        clip_shift=0, smoothing=spec_smoothing(spec))


def spec_smoothing(spec: MethodSpec) -> float | None:
    """The official evaluation's temporal smoothing of a method: MCGaze 0.6
    (GazeForHRI/GazeModels@MCGaze:tools/calculate_mae_l2cs.py:16-28,125, the official
    code as vendored by the study); None for the others."""
    return 0.6 if spec.family == "mcgaze" else None


@dataclass(frozen=True)
class Setting:
    """One documented difference of a profile from ``reference``: the field it sets,
    its value, the methods it applies to, where the study's code does it, and whether
    it looks deliberate."""

    name: str
    field: str
    value: object
    methods: tuple[str, ...]
    citation: str
    verdict: str
    why: str


@dataclass(frozen=True)
class Profile:
    """A named set of per-method records; ``settings``: the documented differences
    from ``reference`` (empty for ``reference``)."""

    name: str
    summary: str
    records: Mapping[str, MethodProfile]
    settings: tuple[Setting, ...] = ()
    extra: Mapping[str, MethodProfile] = field(default_factory=dict)

    def record(self, method: str, spec: MethodSpec | None = None) -> MethodProfile:
        """The record of ``method``; an unregistered network (``spec`` given, e.g. the
        tests' tiny_test) gets its reference record with the every-method settings."""
        if method in self.records:
            return self.records[method]
        if spec is None:
            raise Gaze4HRIError(f"profile {self.name} has no record for method {method!r}", "--profile",
                                "add the method to gaze4hri_bench.profiles.PROFILES")
        r = _apply({method: reference_record(spec)}, tuple(s for s in self.settings if s.methods == _ALL))[method]
        r.validate(f"{self.name}/{method}")
        return r

    def setting(self, name: str) -> Setting:
        for s in self.settings:
            if s.name == name:
                return s
        raise KeyError(name)

    def describe(self) -> dict:
        """JSON-ready summary for results provenance."""
        return {"name": self.name, "settings": [s.name for s in self.settings]}


_CROP_METHODS = ("l2cs_gaze360", "mcgaze_gaze360", "gat_gaze360")
_RECT_METHODS = ("puregaze_eth", "puregaze_gaze360", "gazetr_eth", "gazetr_gaze360")
_ALL = ("*",)  # every method, registered or not (tests' tiny_test too)

#: the study's released code, one setting per documented difference (docs/pipeline.md)
STUDY_SETTINGS: tuple[Setting, ...] = (
    Setting("crop_stretched_224", "crop_rule", "l2cs_face_box", ("mcgaze_gaze360", "gat_gaze360"),
            "GazeForHRI/GazeModels@l2cs:gaze_estimation.py:302-315",
            "deliberate choice",
            "the face box (integer, clamped) resized to 224x224 without squaring, not the methods' square head crops "
            "(L2CS and GazeTR (ETH) crop so in both profiles; the other rectified methods pad it: crop_pad_20px)"),
    Setting("box_margin_10pct", "box_margin", 0.1, _ALL,
            "GazeForHRI/Gaze4HRI@main:head_detection.py:41,114-120",
            "deliberate choice", "detector box grown by 10 % of its width/height on every side, clamped to the image"),
    Setting("released_face_boxes", "face_boxes", "dataset", _ALL,
            "GazeForHRI/GazeModels@l2cs:gaze_estimation_batch.py:104 (head_bboxes.npy)", "deliberate choice",
            "the dataset's own face boxes (study layout head_bboxes.npy) where it has them"),
    Setting("detector_conf_0_3", "detector_conf", 0.3, _ALL,
            "GazeForHRI/Gaze4HRI@main:head_detection.py:91", "deliberate choice",
            "yolov8n-face detections kept from confidence 0.3"),
    Setting("track_most_frequent", "track_rule", "most_frequent", _ALL,
            "GazeForHRI/Gaze4HRI@main:head_detection.py:136-148", "deliberate choice",
            "ByteTrack; the track id seen in most frames is the subject"),
    Setting("trial_needs_every_face", "missing_face", "trial", _ALL,
            "GazeForHRI/GazeModels@l2cs:gaze_estimation.py:300-301", "deliberate choice",
            "a video with a frame lacking the kept track's box raises, so the trial is dropped"),
    Setting("no_ray_correction", "ray_correction", False, _ALL,
            "GazeForHRI/GazeModels@l2cs:gaze_model_l2cs.py:51-54", "looks like a mistake",
            "a crop's output is taken as camera-frame gaze; the camera->face ray is ignored"),
    Setting("rect_eye_midpoint", "rect_centre", "eye_midpoint", _ALL,
            "GazeForHRI/GazeModels@puregaze:gaze_estimation.py:202", "deliberate choice",
            "rectification centred on the mocap eye midpoint, not the ETH face centre"),
    Setting("rect_head_axis_chain", "head_axes", "study_chain", _ALL,
            "GazeForHRI/GazeModels@puregaze:gaze_estimation.py:204", "looks like a mistake",
            "band rotation vector re-based, flipped 180 deg about y and turned -90 deg about z; the patch follows "
            "head roll with the opposite sign"),
    Setting("denorm_inverse_warp", "denorm", "inverse_warp", _ALL,
            "GazeForHRI/GazeModels@gazetr:gaze_estimation.py:264-271 (M = S R: data_rectification.py:52)",
            "looks like a mistake",
            "predictions mapped back with M^-1 = R^T S^-1; Zhang et al. 2018 use R^T (S does not apply to directions)"),
    Setting("l2cs_first_head_as_pitch", "output", "l2cs_bins_first_as_pitch", ("l2cs_gaze360",),
            "GazeForHRI/GazeModels@l2cs:gaze_model_l2cs.py:40,52-53,67-69", "looks like a mistake",
            "the first 90-bin head (yaw in L2CS) is passed on as pitch, then x and y are swapped by the basis change"),
    Setting("l2cs_resize_pil", "crop_rule", "l2cs_face_box_pil", ("l2cs_gaze360",),
            "GazeForHRI/GazeModels@l2cs:gaze_model_l2cs.py:37 (l2cs/utils.py:19-27,40-49)", "deliberate choice",
            "the 224x224 crop brought to 448 by torchvision's Resize on a PIL image (PIL bilinear, as L2CS-Net's own "
            "transforms), not cv2's INTER_LINEAR: 1 grey level apart in a third of the pixels"),
    Setting("gazetr_eth_rgb", "colour", "rgb", ("gazetr_eth",),
            "GazeForHRI/GazeModels@gazetr:gaze_estimation_batch.py:44 (isRGB default: gaze_estimation.py:9)",
            "looks like a mistake", "frames decoded to RGB and fed as is; GazeTR was trained on BGR"),
    Setting("gazetr_gaze360_imagenet", "mean", IMAGENET_MEAN, ("gazetr_gaze360",),
            "GazeForHRI/GazeModels@gazetr_gaze360:gaze_model_gazetr_gaze360.py:21", "deliberate choice",
            "ImageNet mean/std (the study trained this model itself)"),
    Setting("gazetr_gaze360_imagenet_std", "std", IMAGENET_STD, ("gazetr_gaze360",),
            "GazeForHRI/GazeModels@gazetr_gaze360:gaze_model_gazetr_gaze360.py:21", "deliberate choice",
            "ImageNet std (with the mean above)"),
    Setting("mcgaze_causal_7", "clip", "causal", ("mcgaze_gaze360",),
            "GazeForHRI/Gaze4HRI@main:gaze_model_mcgaze.py:71,88", "deliberate choice",
            "one pass per frame on frames f-6..f (a shorter clip for the first 6 frames), the value at the last frame "
            "(online use)"),
    Setting("mcgaze_no_smoothing", "smoothing", None, ("mcgaze_gaze360",),
            "GazeForHRI/Gaze4HRI@main:gaze_model_mcgaze.py:88", "deliberate choice",
            "each frame's value as the causal pass returns it, without the official 0.6/0.2/0.2 smoothing"),
    Setting("gat_causal_8", "clip", "causal", ("gat_gaze360",),
            "GazeForHRI/GazeModels@gaze3d:gaze_model_gaze3d.py:91-99,161-164", "deliberate choice",
            "causal 8-frame windows f-7..f read at index 7"),
    Setting("gat_shift_3", "clip_shift", 3, ("gat_gaze360",),
            "GazeForHRI/Gaze4HRI@main:data_analyer.py:114-121", "looks like a mistake",
            "the analysis compares frame f with the output for frame f-3 (a 'reverse shift' of a shift the "
            "causal windows do not have)"),
    Setting("crop_pad_20px", "crop_rule", "l2cs_face_box_pad20", ("puregaze_eth", "puregaze_gaze360", "gazetr_gaze360"),
            "GazeForHRI/GazeModels@puregaze:gaze_estimation.py:234-243, @puregaze_gaze360:gaze_estimation.py:247-256, "
            "@gazetr_gaze360:gaze_estimation.py:241-250 (padd = 20)", "deliberate choice",
            "the crop input's integer face box grown by 20 px on every side before the clamp, then stretched to "
            "224x224 (L2CS, GaT and GazeTR (ETH) pad 0)"),
    Setting("gat_last_3_unscored", "unscored_tail", 3, ("gat_gaze360",),
            "GazeForHRI/Gaze4HRI@main:data_analyer.py:114-121", "looks like a mistake",
            "the analyser loops over range(len - 3) of GaT's aligned estimates: the last 3 frames of every video "
            "are never scored"),
    Setting("rect_pose_nearest_20ms", "pose_match", "nearest_20ms", _ALL,
            "GazeForHRI/Gaze4HRI@main:unrectification.py:103-105,118-120 (data_matcher.py:32-66); input: "
            "GazeForHRI/GazeModels@puregaze:gaze_estimation.py:76-87", "deliberate choice",
            "a rectified input's eye, head and camera poses are the motion-capture samples nearest to the frame "
            "stamp (not interpolated); a frame without one within 20 ms gets no de-normalized output (not scored)"),
)
# Agreement, listed for completeness (no difference from reference once the reference
# reads a Gaze360-trained PureGaze as [yaw, pitch]):
# GazeForHRI/GazeModels@puregaze_gaze360:gaze_model_puregaze_on_gaze360.py:86-87.


#: the reason of a frame a profile record does not score (data.validity.PROFILE_REASONS)
NOT_SCORED = "not_scored"


def not_scored_mask(frames, record: MethodProfile | None, input_type: str = "crop", pose_gt=None,
                    last_frame: int | None = None):
    """Which of a trial's ``frames`` (frame slots, any order) ``record`` does not score
    (bool array): with ``unscored_tail = N``, the last N frame slots of the trial
    (slot > last_frame - N; ``last_frame``: the trial's last slot, default the largest
    of ``frames``), as the study's analyser, which loops over ``range(len - 3)`` of GaT's
    aligned estimates (GazeForHRI/Gaze4HRI@main:data_analyer.py:114-121); with
    ``pose_match = nearest_20ms`` on the rectified input, the frames ``pose_gt`` (the
    ground-truth table of data.frame_truth.pose_match_options) marks ``interp_gap``: no
    motion-capture sample within 20 ms, so the study's de-normalization skips the row
    (unrectification.py:103-105,118-120)."""
    import numpy as np

    f = np.asarray(frames, np.int64).reshape(-1)
    out = np.zeros(len(f), bool)
    if record is None or not len(f):
        return out
    tail = int(getattr(record, "unscored_tail", 0) or 0)
    if tail:
        last = int(f.max()) if last_frame is None else int(last_frame)
        out |= f > last - tail
    matched = getattr(record, "pose_match", "interpolate") != "interpolate"
    if pose_gt is not None and matched and input_type == "rectified":
        unmatched = pose_gt["invalid_reason"].astype(str).to_numpy() == "interp_gap"
        out |= np.isin(f, pose_gt["frame"].to_numpy(np.int64)[unmatched])
    return out


def mark_not_scored(rows, record: MethodProfile | None, input_type: str = "crop", pose_gt=None,
                    last_frame: int | None = None):
    """``rows`` (one trial of a method's result rows, schema.COLUMNS: frame, valid,
    invalid_reason, error_deg) with the frames :func:`not_scored_mask` names turned
    invalid with reason ``not_scored`` (error NaN), unless a data or blink reason
    already holds (``no_face``, which a missing prediction gets, is replaced). A copy."""
    import numpy as np

    out = rows.copy()
    m = not_scored_mask(out["frame"].to_numpy(), record, input_type, pose_gt, last_frame)
    if not m.any():
        return out
    reason = out["invalid_reason"].fillna("").astype(str).to_numpy(object)
    m &= (reason == "") | (reason == "no_face")
    out.loc[m, "valid"] = False
    out.loc[m, "invalid_reason"] = NOT_SCORED
    if "error_deg" in out.columns:
        out.loc[m, "error_deg"] = np.nan
    return out


def _apply(base: Mapping[str, MethodProfile], settings: tuple[Setting, ...]) -> dict[str, MethodProfile]:
    out = dict(base)
    for s in settings:
        for m in (out if s.methods == _ALL else s.methods):
            out[m] = dataclasses.replace(out[m], **{s.field: s.value})
    return out


def _validate(p: Profile) -> Profile:
    missing = [m for m in SPECS if m not in p.records]
    if missing:
        raise Gaze4HRIError(f"profile {p.name} lacks a record for {', '.join(missing)}", "gaze4hri_bench.profiles",
                            "give every registered method a MethodProfile")
    for m, r in p.records.items():
        if not isinstance(r, MethodProfile):
            raise Gaze4HRIError(f"profile {p.name}: record of {m} is not a MethodProfile", "gaze4hri_bench.profiles",
                                "fix the profile record")
        r.validate(f"{p.name}/{m}")
    for s in p.settings:
        if s.verdict not in VERDICTS or not s.citation:
            raise Gaze4HRIError(f"profile {p.name}: setting {s.name} needs a citation and a verdict",
                                "gaze4hri_bench.profiles", f"verdict one of: {', '.join(VERDICTS)}")
    return p


def make_profile(name: str, summary: str, settings: tuple[Setting, ...] = ()) -> Profile:
    """A validated profile: ``reference`` records with ``settings`` applied."""
    ref = {m: reference_record(s) for m, s in SPECS.items()}
    return _validate(Profile(name, summary, MappingProxyType(_apply(ref, settings)), settings))


#: the pipeline profiles by name (``BASE:SETTING`` names are built on demand: get_profile)
PROFILES: Registry[Profile] = Registry("profile", where="--profile",
                                       listing="(or BASE:SETTING for one setting alone, e.g. study:no_ray_correction)")
PROFILES.add("reference", make_profile(
    "reference", "each method per its official code and Zhang et al. 2018, with the crop ray correction"))
PROFILES.add("study", make_profile(
    "study", "the study's released code (GazeForHRI/GazeModels, GazeForHRI/Gaze4HRI): reproduces the paper",
    STUDY_SETTINGS))


def profile_names() -> list[str]:
    return list(PROFILES)


def get_profile(name: str | None) -> Profile:
    """Profile by name (None: the default). ``BASE:SETTING`` names one documented
    setting of profile BASE alone on top of ``reference`` (``study:no_ray_correction``:
    what that one difference does; ``gaze4hri-bench deviations`` runs each so).
    Unknown names raise with a did-you-mean."""
    key = (name or DEFAULT_PROFILE).lower()
    if ":" in key and key not in PROFILES:
        base, _, setting = key.partition(":")
        return _single_setting(get_profile(base).name, setting)
    return PROFILES.get(key)


@functools.cache
def _single_setting(base: str, setting: str) -> Profile:
    """``reference`` with only ``setting`` of profile ``base`` applied (validated, cached)."""
    prof = PROFILES[base]
    names = [s.name for s in prof.settings]
    if setting not in names:
        near = difflib.get_close_matches(setting, names, n=2, cutoff=0.4)
        hint = f"did you mean {' or '.join(near)}? " if near else ""
        raise Gaze4HRIError(f"profile {base} has no setting {setting!r}", "--profile",
                            f"{hint}settings of {base}: {', '.join(names) or 'none'} (docs/pipeline.md)")
    s = prof.setting(setting)
    return make_profile(f"{base}:{setting}", f"{base}'s setting {setting} alone on top of reference", (s,))


def single_setting_names(base: str = "study") -> list[str]:
    """``BASE:SETTING`` for every documented setting of ``base``."""
    return [f"{base}:{s.name}" for s in get_profile(base).settings]
