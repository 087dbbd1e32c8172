"""Pipeline profiles (gaze4hri_bench.profiles): the registry, load-time validation, the
oracle per method x profile x input type, the reference-profile corrections, the
study's face rule, and a mutation test over every setting.

Oracle: a perfect network's output is encoded in the method's own raw convention
through the frame's input geometry (methods.oracle); ``reference`` must return the
truth (< 0.01 deg) and ``study`` the analytic value of its documented differences,
computed here independently (the study's steps followed literally with Rodrigues
vectors, not the module's matrix shortcut).
"""
from __future__ import annotations

import dataclasses
import functools
import re

import cv2
import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.faces import crops
from gaze4hri_bench.faces.normalization import EYE_TO_FACE_CENTRE_MM, study_head_rotation
from gaze4hri_bench.methods import get_method
from gaze4hri_bench.methods.clips import policy_for
from gaze4hri_bench.methods.network import OnnxMethod
from gaze4hri_bench.methods.oracle import (
    FrameGeometry,
    encode_raw,
    face_box_from_geometry,
    oracle_context,
    oracle_vector,
)
from gaze4hri_bench.specs import SPECS
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.gaze import angular_error_deg, normalize

from gaze4hri_bench import profiles as P

pytestmark = pytest.mark.unit

K = np.array([[1380.0, 0.0, 960.0], [0.0, 1380.0, 540.0], [0.0, 0.0, 1.0]])  # 1920x1080


def _geometry(eye=(0.25, -0.08, 0.8), rvec=(0.1, 0.5, 0.15), gaze_off=(0.3, -0.2, 0.0)) -> FrameGeometry:
    """An off-axis face, a turned and rolled head, gaze away from the camera."""
    e = np.asarray(eye, float)
    R = cv2.Rodrigues(np.asarray(rvec, float))[0]
    c = e + R @ EYE_TO_FACE_CENTRE_MM / 1000.0
    g = normalize(normalize(-e) + np.asarray(gaze_off))
    return FrameGeometry(K, (1920, 1080), e, c, R, g, face_box_from_geometry(K, c, shape=(1080, 1920)))


GEOS = [_geometry(), _geometry((-0.1, 0.05, 0.55), (-0.2, -0.4, -0.1), (-0.2, 0.1, 0.1)),
        _geometry((0.0, 0.0, 0.6), (0.0, 0.0, 0.0), (0.0, 0.0, 0.0))]


def _inputs(name):
    return ("crop", "rectified")  # every network takes both (Table S9)


# -- registry and validation ----------------------------------------------------------
def test_registry_default_and_did_you_mean():
    assert P.get_profile(None).name == "reference" and set(P.profile_names()) == {"reference", "study"}
    with pytest.raises(Gaze4HRIError) as e:
        P.get_profile("studdy")
    assert "did you mean study" in str(e.value) and "\n" not in str(e.value)


def test_one_setting_alone_is_a_profile_named_base_colon_setting():
    """``study:SETTING`` is reference with exactly that field changed, for exactly the
    methods the setting names; every setting of study has one; typos get a did-you-mean."""
    ref, study = P.get_profile("reference"), P.get_profile("study")
    for s in study.settings:
        one = P.get_profile(f"study:{s.name}")
        assert one.name == f"study:{s.name}" and one.settings == (s,) and one is P.get_profile(f"STUDY:{s.name}")
        for m, r in one.records.items():
            applies = s.methods == ("*",) or m in s.methods
            diff = {f for f in r.__dataclass_fields__ if getattr(r, f) != getattr(ref.records[m], f)}
            assert diff == ({s.field} if applies and getattr(ref.records[m], s.field) != s.value else set()), (
                s.name,
                m,
            )
    assert P.single_setting_names() == [f"study:{s.name}" for s in study.settings]
    with pytest.raises(Gaze4HRIError) as e:
        P.get_profile("study:no_ray_corection")
    assert "did you mean no_ray_correction" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(Gaze4HRIError, match="did you mean study"):
        P.get_profile("studdy:no_ray_correction")
    with pytest.raises(Gaze4HRIError, match="has no setting"):
        P.get_profile("reference:no_ray_correction")


def test_a_profile_lacking_a_method_or_with_a_bad_value_is_refused_at_load_time():
    ref = P.get_profile("reference")
    partial = {k: v for k, v in ref.records.items() if k != "gat_gaze360"}
    with pytest.raises(Gaze4HRIError, match="lacks a record for gat_gaze360"):
        P._validate(P.Profile("broken", "", partial))
    bad = dict(ref.records, l2cs_gaze360=dataclasses.replace(ref.records["l2cs_gaze360"], crop_rule="squarish"))
    with pytest.raises(Gaze4HRIError, match="crop_rule = 'squarish'"):
        P._validate(P.Profile("broken", "", bad))
    bad = dict(ref.records, l2cs_gaze360=dataclasses.replace(ref.records["l2cs_gaze360"], output="bins"))
    with pytest.raises(Gaze4HRIError, match="output = 'bins'"):
        P._validate(P.Profile("broken", "", bad))
    with pytest.raises(dataclasses.FrozenInstanceError):
        ref.records["l2cs_gaze360"].colour = "bgr"


def test_every_study_setting_is_cited_and_judged():
    cite = re.compile(r"^GazeForHRI/(GazeModels|Gaze4HRI)@[\w.]+:[\w/.]+\.py:\d+")
    study = P.get_profile("study")
    assert len(study.settings) >= 15
    for s in study.settings:
        assert cite.match(s.citation), s
        assert s.verdict in ("deliberate choice", "looks like a mistake") and s.why
        assert s.field in {f.name for f in dataclasses.fields(P.MethodProfile)}


def test_unknown_profile_in_run_fails_before_any_work(tmp_path):
    from gaze4hri_bench.pipeline.run import RunConfig, plan_jobs

    with pytest.raises(Gaze4HRIError, match="did you mean study"):
        plan_jobs(RunConfig(methods=("straight",), data=tmp_path, out=tmp_path, profile="stduy"))


# -- oracle -------------------------------------------------------------------------
@pytest.mark.parametrize("geo", range(len(GEOS)))
@pytest.mark.parametrize("input_type", ["crop", "rectified"])
@pytest.mark.parametrize("name", list(SPECS))
def test_reference_oracle_returns_the_truth(name, input_type, geo):
    g = GEOS[geo]
    v = oracle_vector(get_method(name, profile="reference"), g, input_type)
    assert float(angular_error_deg(v, g.gaze)) < 0.01


def _ray_frame(box):
    """Rows: the ray frame's axes (z through the box centre, x closest to the camera x)."""
    r = normalize(np.linalg.solve(K, [(box[0] + box[2]) / 2, (box[1] + box[3]) / 2, 1.0]))
    x = normalize(np.cross([0.0, 1.0, 0.0], r))
    return np.stack([x, np.cross(r, x), r])


def _study_rotation(centre, R_head_cv):
    """The study's normalization rotation, its steps followed literally: band rotation
    in rgb_camera_link axes -> rotation vector -> [-y, -z, x] -> 180 deg about y ->
    -90 deg about z (GazeForHRI/GazeModels@puregaze:gaze_estimation.py:156-214)."""
    B = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])  # optical <- body
    P_band = np.array([[0.0, 0.0, -1.0], [0.0, -1.0, 0.0], [-1.0, 0.0, 0.0]])  # cv head <- band (x fwd, y up, z right)
    R_band_body = B.T @ R_head_cv @ P_band
    rvec = cv2.Rodrigues(R_band_body)[0].ravel()
    rvec = np.array([-rvec[1], -rvec[2], rvec[0]])
    R2 = np.diag([-1.0, 1.0, -1.0]) @ cv2.Rodrigues(rvec)[0]
    a = np.radians(-90.0)
    R3 = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1.0]]) @ R2
    z = normalize(centre)
    y = normalize(np.cross(z, R3[:, 0]))
    return np.stack([np.cross(y, z), y, z])


def _study_expected(name, input_type, g):
    if input_type == "crop":
        gr = _ray_frame(g.box) @ g.gaze  # taken as camera-frame gaze: no ray correction
        if name == "l2cs_gaze360":  # first head (yaw) as pitch, then the [z, -y, -x] basis swap
            p, y = np.arcsin(-gr[1]), np.arctan2(-gr[0], -gr[2])
            return np.array([-np.sin(y), -np.cos(y) * np.sin(p), -np.cos(y) * np.cos(p)])
        return gr
    R = _study_rotation(g.eye_center, g.R_head)
    gn = R @ g.gaze
    if name == "l2cs_gaze360":
        p, y = np.arcsin(-gn[1]), np.arctan2(-gn[0], -gn[2])
        gn = np.array([-np.sin(y), -np.cos(y) * np.sin(p), -np.cos(y) * np.cos(p)])
    return normalize(R.T @ np.diag([1.0, 1.0, np.linalg.norm(g.eye_center) / 0.6]) @ gn)  # M^-1 = R^T S^-1


@pytest.mark.parametrize("geo", range(len(GEOS)))
@pytest.mark.parametrize("input_type", ["crop", "rectified"])
@pytest.mark.parametrize("name", list(SPECS))
def test_study_oracle_returns_the_documented_differences(name, input_type, geo):
    g = GEOS[geo]
    v = oracle_vector(get_method(name, profile="study"), g, input_type)
    want = _study_expected(name, input_type, g)
    assert float(angular_error_deg(v, want)) < 0.01
    if geo == 0:  # and the differences are not small for an off-axis face
        assert float(angular_error_deg(v, g.gaze)) > 3.0


def test_study_differences_vanish_where_the_paper_says():
    """On the optical axis at 600 mm with an upright head, M^-1 = R^T, the crop ray is
    the optical axis, and L2CS's head swap is exact for a gaze straight at the camera."""
    g = FrameGeometry(
        K,
        (1920, 1080),
        np.array([0.0, 0.0, 0.6]),
        np.array([0.0, 0.0, 0.6]),
        np.eye(3),
        np.array([0.0, 0.0, -1.0]),
        face_box_from_geometry(K, [0.0, 0.0, 0.6]),
    )
    for name in SPECS:
        for it in ("crop", "rectified"):
            v = oracle_vector(get_method(name, profile="study"), g, it)
            assert float(angular_error_deg(v, g.gaze)) < 0.01, (name, it)


def test_study_head_axis_chain_rolls_the_other_way():
    r = np.radians(20.0)
    Rroll = np.array([[np.cos(r), -np.sin(r), 0], [np.sin(r), np.cos(r), 0], [0, 0, 1.0]])
    x = study_head_rotation(Rroll)[:, 0]
    assert np.allclose(x, [np.cos(r), -np.sin(r), 0.0])
    assert np.allclose(study_head_rotation(np.eye(3))[:, 0], [1.0, 0.0, 0.0])
    R = _study_rotation(np.array([0.1, 0.0, 0.7]), cv2.Rodrigues(np.array([0.2, -0.3, 0.25]))[0])
    from gaze4hri_bench.faces.normalization import normalization_rotation

    assert np.allclose(
        normalization_rotation([0.1, 0.0, 0.7], study_head_rotation(cv2.Rodrigues(np.array([0.2, -0.3, 0.25]))[0])),
        R,
        atol=1e-9,
    )


# -- tensors: colour and mean/std (a perfect network is blind to them) ---------------
def test_study_tensor_settings():
    rng = np.random.default_rng(0)
    patch = rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)
    ref, st = get_method("gazetr_eth"), get_method("gazetr_eth", profile="study")
    assert np.allclose(st.to_tensor(patch), ref.to_tensor(patch)[::-1])  # RGB fed where BGR was trained
    ref, st = get_method("gazetr_gaze360"), get_method("gazetr_gaze360", profile="study")
    x = ref.to_tensor(patch)  # BGR in [0, 1]
    mean, std = np.array(P.IMAGENET_MEAN)[:, None, None], np.array(P.IMAGENET_STD)[:, None, None]
    assert np.allclose(st.to_tensor(patch), (x - mean) / std, atol=1e-5)


# -- the reference corrections ------------------------------------------------------
def test_puregaze_gaze360_reads_yaw_first():
    """A Gaze360-trained PureGaze outputs [yaw, pitch]: raw [0.3, -0.1] is yaw 0.3."""
    m = get_method("puregaze_gaze360")
    v = m.decode([np.array([[0.3, -0.1]], np.float32)])[0]
    assert np.isclose(np.arctan2(-v[0], -v[2]), 0.3) and np.isclose(np.arcsin(-v[1]), -0.1)


def test_gat_crop_truncates_to_integers_and_antialiases():
    img = np.indices((400, 400)).sum(0) % 2 * 255  # 1-px checkerboard
    img = np.repeat(img[..., None], 3, -1).astype(np.uint8)
    box = [100.6, 100.6, 300.4, 300.4]
    p = crops.crop(img, box, "gat_head_box", 56, box_kind="head")
    assert abs(float(p.mean()) - 127.5) < 4 and float(p.std()) < 12  # aliasing-free
    # official (idiap/gaze3d transforms.py:131-132): x, y, w, h truncated, not x2, y2:
    # s = 199.8 * 0.9 = 179.82, xmin = 200.5 - 89.91 = 110.59, ymin = 100.6 + 17.982 = 118.582
    # -> columns 110 .. 110 + 179, rows 118 .. 118 + 179
    q = crops.resize_antialiased(img[118:297, 110:289], 56, 56)
    assert np.array_equal(p, q)


def test_mcgaze_square_uses_integer_centre_and_half_side():
    # official (MCGaze_demo/demo.ipynb): int(x1 + x2) // 2, int(max(h, w) * 0.8) of the float box
    sq = crops.rule_square([100.7, 50.2, 201.9, 171.6], "mcgaze_head_square", "head")
    cx, cy, half = int(302.6) // 2, int(221.8) // 2, int(121.4 * 0.8)
    assert (cx, cy, half) == (151, 110, 97)
    assert np.array_equal(sq, [cx - half, cy - half, cx + half, cy + half])


def test_study_crop_stretches_without_squaring():
    padded = {
        "puregaze_eth",
        "puregaze_gaze360",
        "gazetr_gaze360",
    }  # crop_pad_20px (tests/bench/test_study_settings.py)
    pil = {
        "l2cs_gaze360"
    }  # l2cs_resize_pil: the same crop, 224 -> 448 by PIL (tests/bench/faces/test_study_l2cs_crop.py)
    assert {P.get_profile("study").record(n).crop_rule for n in SPECS if n not in padded | pil} == {"l2cs_face_box"}
    assert {P.get_profile("study").record(n).crop_rule for n in pil} == {"l2cs_face_box_pil"}
    img = np.zeros((100, 200, 3), np.uint8)
    img[20:40, 50:150] = 255  # a 100x20 white bar
    p = crops.crop(img, [50.9, 20.9, 150.2, 40.2], "l2cs_face_box", 224)
    assert p.shape == (224, 224, 3) and p[5:-5, 5:-5].min() == 255  # the bar fills the whole patch


# -- the study's face rule ----------------------------------------------------------
class _Det:
    def __init__(self, box, score):
        self.box, self.score, self.keypoints, self.landmarks, self.track_id = (
            np.asarray(box, float),
            score,
            None,
            None,
            None,
        )


def _frames_of_two_people(n=12, bystander=True):
    """A bystander (large, central, high score) for 4 frames; the subject for all n."""
    out = []
    for i in range(n):
        d = [_Det([600 + i, 300, 700 + i, 420], 0.9)]
        if i < 4 and bystander:
            d.append(_Det([900, 400, 1100, 640], 0.95))
        if i == 7:
            d[0].score = 0.28  # below the study's 0.3
        if i == 9:
            d[0].score = 0.4  # above it
        out.append(d)
    return out


def test_study_face_rule_most_frequent_track_margin_and_exclusion():
    from gaze4hri_bench.pipeline.face_pass import apply_face_rule

    study = P.get_profile("study").record("l2cs_gaze360")
    boxes, tids, _ = apply_face_rule(
        dataclasses.replace(study, face_boxes="detector"), _frames_of_two_people(), (1080, 1920)
    )
    assert boxes[7] is None  # conf 0.3 drops the weak detection
    got = [b for b in boxes if b is not None]
    assert len(got) == 11 and len({t for t in tids if t is not None}) == 1
    assert np.array_equal(boxes[0], [590, 288, 710, 432])  # +10 % per side, integer
    # released boxes are used as they are
    rel = np.array([[1, 2, 3, 4, 7, f] for f in range(12)], float)
    b2, _, _ = apply_face_rule(study, _frames_of_two_people(), (1080, 1920), rel)
    assert np.array_equal(b2[3], [1, 2, 3, 4])
    slots = np.full((12, 5), np.nan)  # the study backend's per-slot form (data.backends.study.face_boxes)
    slots[3] = [5, 6, 7, 8, 2]
    b3, t3, _ = apply_face_rule(study, _frames_of_two_people(), (1080, 1920), slots)
    assert np.array_equal(b3[3], [5, 6, 7, 8]) and t3[3] == 2 and b3[2] is None


def test_study_trial_exclusion_names_the_frame():
    import pandas as pd
    from gaze4hri_bench.pipeline.face_pass import trial_exclusion

    faces = pd.DataFrame({"frame": [0, 1, 2], "x1": [1.0, np.nan, 1.0]})
    assert "first: frame 1" in trial_exclusion([0, 1, 2], faces)
    assert trial_exclusion([0, 2], faces) is None


def test_study_face_rule_runs_the_stand_in_yolo_onnx(tmp_path):
    """The detector registry's YOLOv8-face ONNX path with a constant stand-in model:
    conf 0.3 (the study) keeps a 0.35 face and drops a 0.28 one that conf 0.25 keeps."""
    from gaze4hri_bench.faces import detectors as D
    from gaze4hri_bench.pipeline.face_pass import profile_face_table

    from .faces.test_detectors import _constant_yolo_onnx

    pred = np.zeros((1, 20, 2), np.float32)
    pred[0, :5, 0] = [320, 320, 100, 120, 0.35]
    pred[0, :5, 1] = [120, 320, 60, 60, 0.28]
    w = tmp_path / "yolov8n-face.onnx"
    _constant_yolo_onnx(w, pred)

    class _F:
        def __init__(self, i):
            self.index, self.image = i, np.zeros((180, 320, 3), np.uint8)

    study = P.get_profile("study").record("gat_gaze360")
    det = D.get_detector("yolov8_face_onnx", weights=w, conf=study.detector_conf)
    t = profile_face_table([_F(i) for i in range(5)], det, dataclasses.replace(study, face_boxes="detector"))
    assert (t["n_faces"] == 1).all() and t["x1"].notna().all()
    det25 = D.get_detector("yolov8_face_onnx", weights=w, conf=0.25)
    assert len(det25.detect(np.zeros((180, 320, 3), np.uint8))) == 2


# -- mutation: changing any one setting is seen ---------------------------------------
_SEQ = normalize(np.random.default_rng(3).normal(size=(6, 3)) + [0, 0, -3])
_TEXTURE = np.random.default_rng(2).integers(0, 255, (1080, 1920, 3), dtype=np.uint8)


@functools.cache
def _observe(name: str, rec: P.MethodProfile):
    """Everything a record decides, on fixed inputs: oracle vectors (crop, rectified),
    the patch and tensor, the clip window, the shift, and the face rule's outcome."""
    spec = SPECS[name]
    prof = P.Profile("mut", "", {**P.get_profile("reference").records, name: rec})
    m = OnnxMethod(name, spec, prof)
    g = GEOS[0]
    vec = tuple(np.round(oracle_vector(m, g, it), 6).tobytes() for it in ("crop", "rectified"))
    rng = np.random.default_rng(1)
    img = rng.integers(0, 255, (240, 320, 3), dtype=np.uint8)
    patch = crops.crop(img, [100.5, 60.5, 180.5, 160.5], rec.crop_rule, spec.size)
    tensor = np.round(m.to_tensor(patch), 5).tobytes()
    ctx = oracle_context(g)
    ctx.image = _TEXTURE
    rect = np.round(m.prepare(ctx, "rectified").tensor, 4).tobytes()  # the patch a real network sees
    pol = policy_for(spec, rec)
    window = None if pol is None else tuple(pol.window(10, 30) if hasattr(pol, "out_index") else pol.starts(30))
    from gaze4hri_bench.pipeline.face_pass import apply_face_rule

    rel = np.array([[1, 2, 3, 4, 7, f] for f in range(12)], float)
    faces = tuple(
        tuple(
            None if x is None else tuple(np.round(x, 3))
            for x in apply_face_rule(rec, _frames_of_two_people(bystander=by), (1080, 1920), released)[0]
        )
        for released in (rel, None)
        for by in (True, False)
    )  # with/without released boxes, bystander
    seq = None
    if rec.smoothing is not None:
        from gaze4hri_bench.methods.clips import smooth_sequence

        seq = np.round(smooth_sequence(_SEQ, rec.smoothing), 6).tobytes()
    # scoring: the frames of a 30-frame trial left unscored (a pose-match table with frame 4 unmatched)
    pose_gt = pd.DataFrame(
        {"frame": np.arange(30), "invalid_reason": ["interp_gap" if f == 4 else "" for f in range(30)]}
    )
    scored = tuple(P.not_scored_mask(np.arange(30), rec, it, pose_gt).tobytes() for it in ("crop", "rectified"))
    return {
        "vec": vec,
        "tensor": tensor,
        "rect": rect,
        "window": window,
        "smoothing": seq,
        "shift": rec.clip_shift,
        "faces": faces,
        "trial": rec.missing_face,
        "scored": scored,
    }


_FACE_FIELDS = ("box_margin", "detector_conf", "track_rule", "face_boxes", "missing_face")


def _mutations():
    """(method, base profile, field, other value): every field, from the base where it acts."""
    out = []
    for f in dataclasses.fields(P.MethodProfile):
        for name in SPECS:
            for base in ("reference", "study"):
                rec = P.get_profile(base).record(name)
                cur = getattr(rec, f.name)
                if f.name in P.FIELD_CHOICES:
                    alt = next(v for v in P.FIELD_CHOICES[f.name] if v != cur)
                elif f.name == "crop_rule":
                    alt = "gat_head_box" if cur == "l2cs_face_box" else "l2cs_face_box"
                elif f.name == "output":
                    alt = {
                        "l2cs_bins": "l2cs_bins_first_as_pitch",
                        "l2cs_bins_first_as_pitch": "l2cs_bins",
                        "pitchyaw_rad": "yawpitch_rad",
                        "yawpitch_rad": "pitchyaw_rad",
                        "vector_b": None,
                    }[cur]
                elif f.name in ("mean", "std"):
                    alt = None if cur is not None else (0.5, 0.5, 0.5)
                elif f.name == "box_margin":
                    alt = 0.2 if cur else 0.1
                elif f.name == "detector_conf":
                    alt = 0.5 if cur is None else None
                elif f.name == "ray_correction":
                    alt = not cur
                elif f.name in ("clip_shift", "unscored_tail"):
                    alt = cur + 2
                elif f.name == "smoothing":
                    alt = None if cur is not None else 0.6
                else:
                    raise AssertionError(f"no mutation for field {f.name}: add one")
                if alt is None:
                    continue
                if f.name == "clip" and SPECS[name].clip_len == 1:
                    continue  # image methods have no clip
                if f.name == "face_boxes" and base == "reference":
                    continue  # released boxes only matter with the dataset's boxes present (base study covers it)
                if f.name in _FACE_FIELDS and name != "l2cs_gaze360":
                    continue  # the face rule is the same code for every method: one method suffices
                out.append((name, base, f.name, alt))
    return out


@pytest.mark.parametrize("name,base,field,alt", _mutations())
def test_mutating_any_setting_is_detected(name, base, field, alt):
    rec = P.get_profile(base).record(name)
    mut = dataclasses.replace(rec, **{field: alt})
    assert _observe(name, rec) != _observe(name, mut), f"{base}/{name}: {field} -> {alt!r} changed nothing observable"


def test_every_field_has_a_mutation():
    fields = {f for _n, _b, f, _a in _mutations()}
    assert fields == {f.name for f in dataclasses.fields(P.MethodProfile)}


def test_encode_matches_each_true_convention():
    """The oracle's encoder inverts each reference decoder (one geometry, every rule)."""
    g = normalize(np.array([[0.2, -0.3, -0.9]]))
    for name in SPECS:
        m = get_method(name)
        d = m.decode(encode_raw(m.spec, g))
        d = d[:, -1] if d.ndim == 3 else d
        assert float(angular_error_deg(d[0], g[0])) < 1e-4, name


# -- the run loop -------------------------------------------------------------------
@pytest.mark.replay
def test_run_records_the_profile_and_resume_refuses_to_mix(tmp_path):
    import json
    from pathlib import Path

    import pyarrow.parquet as pq
    from gaze4hri_bench.pipeline import results
    from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
    from gaze4hri_bench.schema import METADATA_KEY

    from ._synth import SynthDataset

    def cfg(profile):
        return RunConfig(methods=("straight",), data=Path("/synthetic"), out=tmp_path, progress=False, profile=profile)

    [p] = run_benchmark(cfg("study"), log=lambda *_: None, dataset=SynthDataset())
    md = json.loads(pq.read_schema(p).metadata[METADATA_KEY])
    assert md["profile"] == "study" and md["excluded_trials"] == {}
    part = next((tmp_path / ".parts" / "straight__none").glob("*.parquet"))
    assert results.read_part_timing(part)["profile"] == "study"
    with pytest.raises(Gaze4HRIError, match="profile 'study', this run asks for 'reference'"):
        run_benchmark(cfg("reference"), log=lambda *_: None, dataset=SynthDataset())


def test_deviations_variants_cover_every_setting_and_the_whole_profile():
    from gaze4hri_bench.pipeline.deviations import _variants

    v = _variants("study")
    assert [x[0] for x in v[:-1]] == [s.name for s in P.get_profile("study").settings]
    assert v[-1][0] == "study (all)" and v[-1][2] is P.get_profile("study")
    for label, s, prof in v[:-1]:  # each variant differs from reference by its one setting only
        ref = P.get_profile("reference")
        diff = {
            (m, f.name)
            for m in SPECS
            for f in dataclasses.fields(P.MethodProfile)
            if getattr(prof.record(m), f.name) != getattr(ref.record(m), f.name)
        }
        assert {f for _m, f in diff} <= {s.field}, label


def test_docs_list_every_setting_with_its_citation(repo_root):
    doc = (repo_root / "docs" / "pipeline.md").read_text()
    missing = [s.name for s in P.get_profile("study").settings if f"`{s.name}`" not in doc or s.citation not in doc]
    assert not missing, f"docs/pipeline.md lacks study settings {missing}"


def test_mcgaze_official_smoothing():
    """0.6 self + 0.2 previous + 0.2 next, edges 0.6 self + 0.4 neighbour, re-normalized
    (the official evaluation); on in reference for MCGaze only, off under study."""
    from gaze4hri_bench.methods.clips import smooth_sequence

    v = normalize(np.array([[0.1, 0, -1], [0, 0.1, -1], [-0.1, 0, -1], [0, -0.1, -1.0]]))
    out = smooth_sequence(v, 0.6)
    assert np.allclose(out[1], normalize(0.6 * v[1] + 0.2 * (v[0] + v[2])))
    assert np.allclose(out[0], normalize(0.6 * v[0] + 0.4 * v[1]))
    assert np.allclose(out[-1], normalize(0.6 * v[-1] + 0.4 * v[-2]))
    assert np.allclose(smooth_sequence(v[:1], 0.6), v[:1])
    assert {n for n in SPECS if P.get_profile("reference").record(n).smoothing} == {"mcgaze_gaze360"}
    assert P.get_profile("study").record("mcgaze_gaze360").smoothing is None


def test_a_keep_ratio_crop_needs_a_network_that_takes_the_image_size():
    """MCGaze's border rule gives non-square patches: a profile giving it to a network
    without a frame_hw input is refused when the method is built, not mid-run."""
    from gaze4hri_bench.profiles import Setting, make_profile
    from gaze4hri_core.errors import Gaze4HRIError

    prof = make_profile(
        "test_keep_ratio",
        "one field",
        (
            Setting(
                "gat_mcgaze_crop",
                "crop_rule",
                "mcgaze_head_square",
                ("gat_gaze360",),
                "tests",
                "deliberate choice",
                "test",
            ),
        ),
    )
    with pytest.raises(Gaze4HRIError, match="frame_hw"):
        get_method("gat_gaze360", profile=prof)
    assert get_method("mcgaze_gaze360", profile=prof).takes_hw
