"""The study profile's crop padding, GaT's unscored tail and nearest-sample pose
matching (issue 23 item 1), each against a re-derivation of the study's code path
written here from its source (cited per test; no code copied)."""
from __future__ import annotations

import cv2
import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.data.frame_truth import (
    FrameTable,
    GTOptions,
    PoseStream,
    compute_ground_truth,
    nearest_sample_index,
    pose_match_options,
)
from gaze4hri_bench.faces import crops
from gaze4hri_bench.specs import SPECS

from gaze4hri_bench import profiles as P

pytestmark = pytest.mark.unit

PADDED = ("puregaze_eth", "puregaze_gaze360", "gazetr_gaze360")


# -- crop_pad_20px ------------------------------------------------------------------
def _study_padded_crop(frame, box, padd=20, out=(224, 224)):
    """GazeForHRI/GazeModels@puregaze:gaze_estimation.py:234-243 (same at
    puregaze_gaze360:247-256, gazetr_gaze360:241-250): the box's four values through
    int(), a numpy slice [max(y1 - padd, 0):min(y2 + padd, H), max(x1 - padd, 0):
    min(x2 + padd, W)], then cv2.resize to 224x224 (padding=False, the batch scripts'
    default)."""
    x1, y1, x2, y2 = (int(v) for v in box)
    H, W = frame.shape[:2]
    part = frame[max(y1 - padd, 0):min(y2 + padd, H), max(x1 - padd, 0):min(x2 + padd, W)]
    return cv2.resize(part, out)


def test_crop_pad_20px_equals_the_study_crop_and_applies_to_its_three_methods():
    rng = np.random.default_rng(3)
    img = rng.integers(0, 255, (180, 320, 3), dtype=np.uint8)
    boxes = [[100.7, 40.2, 180.9, 130.5], [0.0, 0.0, 60.3, 70.8], [5.5, 19.9, 40.1, 60.0],  # near the top-left border
             [290.2, 150.6, 320.0, 180.0], [12.0, 30.0, 300.0, 170.0]]  # bottom-right border; nearly the image
    boxes += [sorted(rng.uniform(0, 320, 2)) for _ in range(20)]
    boxes[5:] = [[b[0], y, b[1] + 1, y + 30] for b, y in zip(boxes[5:], rng.uniform(0, 140, 20), strict=True)]
    for b in boxes:
        ours = crops.crop(img, b, "l2cs_face_box_pad20", 224)
        assert np.array_equal(ours, _study_padded_crop(img, b)), b
    # without the padding the rule is the study's L2CS/GaT crop (padd = 0, @l2cs:gaze_estimation.py:304)
    assert np.array_equal(crops.crop(img, boxes[0], "l2cs_face_box", 224), _study_padded_crop(img, boxes[0], padd=0))
    assert not np.array_equal(crops.crop(img, boxes[0], "l2cs_face_box", 224), _study_padded_crop(img, boxes[0]))
    study, ref = P.get_profile("study"), P.get_profile("reference")
    for n in SPECS:
        want = "l2cs_face_box_pad20" if n in PADDED else None
        if want:
            assert study.record(n).crop_rule == want and ref.record(n).crop_rule == "l2cs_face_box", n
        else:
            assert study.record(n).crop_rule != "l2cs_face_box_pad20", n
    assert (
        P.get_profile("study:crop_pad_20px").record("gazetr_eth").crop_rule == "l2cs_face_box"
    )  # GazeTR (ETH): padd 0


# -- gat_last_3_unscored ------------------------------------------------------------------
def _study_scored_rows(n_aligned: int, model: str) -> list[int]:
    """GazeForHRI/Gaze4HRI@main:data_analyer.py:114-121: rows i_est of the aligned
    estimates the analyser scores: range(n - 3) for gaze3d_clip_len_8 (GaT), range(n)
    for every other model."""
    return list(range(n_aligned - 3 if model.startswith("gaze3d_clip_len_8") else n_aligned))


def test_gat_last_3_frames_are_not_scored_as_the_study_analyser():
    frames = np.arange(40, 95)  # the aligned rows of one video (after the stable start)
    for name, model in (("gat_gaze360", "gaze3d_clip_len_8"), ("mcgaze_gaze360", "mcgaze"), ("l2cs_gaze360", "l2cs")):
        rec = P.get_profile("study").record(name)
        scored = np.flatnonzero(~P.not_scored_mask(frames, rec))
        assert scored.tolist() == _study_scored_rows(len(frames), model), name
        assert not P.not_scored_mask(frames, P.get_profile("reference").record(name)).any()
    gat = P.get_profile("study:gat_last_3_unscored").record("gat_gaze360")
    assert gat.unscored_tail == 3 and gat.clip_shift == 0  # one setting alone
    # on result rows: valid and no_face frames of the tail become not_scored, data reasons stay
    rows = pd.DataFrame(
        {
            "frame": np.arange(10),
            "valid": [True] * 7 + [True, False, False],
            "invalid_reason": [""] * 7 + ["", "no_face", "blink"],
            "error_deg": np.r_[np.arange(8.0), np.nan, np.nan],
        }
    )
    out = P.mark_not_scored(rows, gat)
    assert out["invalid_reason"].tolist()[7:] == ["not_scored", "not_scored", "blink"]
    assert out["valid"].tolist() == [True] * 7 + [False] * 3 and out["error_deg"].iloc[7:].isna().all()
    assert rows["invalid_reason"].iloc[7] == ""  # a copy
    # the trial's last slot, not the last row, bounds the tail (stride or trailing invalid rows)
    assert P.not_scored_mask([0, 5, 10], gat, last_frame=14).tolist() == [False, False, False]


# -- rect_pose_nearest_20ms ---------------------------------------------------------------
def _study_match(ts1_ms, ts2_ms, max_ms):
    """GazeForHRI/Gaze4HRI@main:data_matcher.py:32-66 (match_regular_to_regular), as a
    loop: per row of ts1, candidates searchsorted(ts2, t) then the one before; the
    first candidate is kept unless the other is strictly closer; matched if the
    distance <= max_ms, else the row is left out. Returns {row: matched index}."""
    out = {}
    for i, t in enumerate(ts1_ms):
        j = int(np.searchsorted(ts2_ms, t))
        cand = ([j] if j < len(ts2_ms) else []) + ([j - 1] if j > 0 else [])
        best, bj = float("inf"), None
        for c in cand:
            d = abs(ts2_ms[c] - t)
            if d < best:
                best, bj = d, c
        if best <= max_ms:
            out[i] = bj
    return out


def test_nearest_sample_index_equals_the_study_matcher():
    rng = np.random.default_rng(7)
    for trial in range(30):
        src = np.cumsum(rng.choice([10, 10, 10, 9, 11, 45, 80], size=60)).astype(np.int64)  # ms, with gaps
        q = np.sort(rng.uniform(-30, src[-1] + 40, 50)).round()
        q = np.concatenate([q, (src[:5] + src[1:6]) / 2, src[::7] + 20, src[::9] - 20])  # ties; exactly 20 ms
        got = nearest_sample_index(src * 1_000_000, (q * 1_000_000).astype(np.int64), 20e6)
        want = _study_match(q, src.astype(float), 20.0)
        assert {i: int(j) for i, j in enumerate(got) if j >= 0} == want, trial


def test_pose_match_takes_the_nearest_sample_and_leaves_unmatched_frames_unscored():
    from gaze4hri_core.calibration import Calibration, CameraIntrinsics
    from gaze4hri_core.protocol import trial_by_id
    from gaze4hri_core.transforms import SE3

    # head moving along y at 1 m/s, sampled at 100 Hz with a 60 ms hole; camera static at 125 Hz
    th = np.concatenate([np.arange(0, 200, 10), np.arange(260, 400, 10)]).astype(np.int64) * 1_000_000
    p = np.column_stack([np.zeros(len(th)), th / 1e9, np.full(len(th), 1.2)])
    q = np.tile([0.0, 0.0, 0.0, 1.0], (len(th), 1))
    head = PoseStream(th, p, q)
    tr = np.arange(0, 400, 8).astype(np.int64) * 1_000_000
    R_cam = np.array([[0.0, 0, 1], [-1, 0, 0], [0, -1, 0]])  # optical axes in the world: z along +x, x along -y
    robot = PoseStream(
        tr, np.tile([-0.6, 0.0, 1.2], (len(tr), 1)), np.tile(SE3(R_cam, np.zeros(3)).quat_xyzw, (len(tr), 1))
    )
    t = np.array([33, 66, 100, 133, 166, 200, 233, 266, 300, 333], np.int64) * 1_000_000 + 3_000_000
    n = len(t)
    frames = FrameTable(np.arange(n), t, np.arange(n), np.array(["ok"] * n, dtype=object))
    intr = CameraIntrinsics(
        320, 180, np.array([[200.0, 0, 160], [0, 200, 90], [0, 0, 1]]), np.zeros(5), "plumb_bob", "t"
    )
    cal = Calibration(
        directory=None,
        intrinsics=intr,
        T_tool0_camera=SE3.identity(),
        T_world_base=SE3.identity(),
        robot_model="ur5",
        targets={},
        eye_nominal_world=np.array([0.0, 0, 1.2]),
        subject_forward_world=np.array([-1.0, 0, 0]),
        front_camera_distance_m=0.6,
        front_camera_elevation_deg=0.0,
        head_band_above_eye_m=0.0,
        T_head_eye=SE3.identity(),
        subject="x",
    )
    trial = trial_by_id("mutual_h_slow")
    rec = P.get_profile("study").record("puregaze_eth")
    opt = pose_match_options(rec, "rectified", GTOptions())
    assert opt is not None and opt.sync == "nearest" and opt.nearest_max_ms == 20.0
    assert (
        pose_match_options(rec, "crop") is None
        and pose_match_options(P.get_profile("reference").record("puregaze_eth"), "rectified") is None
    )
    near = compute_ground_truth(frames, head, robot, cal, trial, opt)
    interp = compute_ground_truth(frames, head, robot, cal, trial, GTOptions(max_gap_mocap_s=0.1, mocap_lost_s=0.1))
    # the study: nearest head sample within 20 ms (unrectification.py:104), else the row is dropped
    match = _study_match(t / 1e6, th / 1e6, 20.0)
    for i in range(n):
        if i in match:
            assert near["invalid_reason"].iloc[i] == "", i
            # the eye (head x identity offset) at the matched sample, in the camera: y_world -> -x_cam
            assert np.isclose(near["eye_cx"].iloc[i], -th[match[i]] / 1e9, atol=1e-9), i
        else:
            assert near["invalid_reason"].iloc[i] == "interp_gap", i
    assert set(range(n)) - set(match) == {6}  # 236 ms: samples at 190 and 260 ms, both over 20 ms away
    assert not np.allclose(near["eye_cx"].dropna(), interp["eye_cx"][near["eye_cx"].notna()])  # not interpolated
    mask = P.not_scored_mask(frames.frame, rec, "rectified", near)
    assert mask.tolist() == [i not in match for i in range(n)]
    assert not P.not_scored_mask(frames.frame, rec, "crop", near).any()
    alone = P.get_profile("study:rect_pose_nearest_20ms")
    assert {alone.record(m).pose_match for m in SPECS} == {"nearest_20ms"}


def test_deviations_measure_the_three_settings():
    """The oracle table has a row per setting; frame-dropping settings count their
    frames (not_scored), the crop padding is blind to a perfect network (0 deg)."""
    from types import SimpleNamespace

    from gaze4hri_bench.methods.oracle import FrameGeometry, face_box_from_geometry
    from gaze4hri_bench.pipeline.deviations import _PM, deviation_table

    K = np.array([[600.0, 0, 320], [0, 600, 240], [0, 0, 1]])
    n = 12
    geos, rows = [], []
    for i in range(n):
        e = np.array([0.01 * i, 0.0, 0.6])
        c = e + np.array([0, 0.02, 0.01])
        g = np.array([0.1, 0.2, -1.0]) / np.linalg.norm([0.1, 0.2, -1.0])
        geos.append(FrameGeometry(K, (640, 480), e, c, np.eye(3), g, face_box_from_geometry(K, c, shape=(480, 640))))
        r = {"frame": i, "trial_last_frame": n - 1}
        pm = (
            np.concatenate([e + [0.002, 0, 0], c + [0.002, 0, 0], np.eye(3).ravel()]) if i != 4 else np.full(15, np.nan)
        )
        r.update({f"pm_{k}": v for k, v in zip(_PM, pm, strict=True)})
        rows.append(r)
    truths = [(SimpleNamespace(subject="0001", trial="illum100_P5"), "illumination", geos, pd.DataFrame(rows))]
    tab = deviation_table(truths, ["gat_gaze360", "puregaze_eth"], "study", log=lambda *_: None)
    by = {(r.setting, r.method, r.input): r for r in tab.itertuples()}
    tail = by[("gat_last_3_unscored", "gat_gaze360", "crop")]
    assert tail.not_scored == 3 and tail.frames == n - 3 and tail.oracle_sees
    pose = by[("rect_pose_nearest_20ms", "puregaze_eth", "rectified")]
    assert pose.not_scored == 1 and pose.oracle_sees and pose.max_deg < 1e-6  # R^T de-normalization: blind to the pose
    assert by[("rect_pose_nearest_20ms", "puregaze_eth", "crop")].not_scored == 0
    pad = by[("crop_pad_20px", "puregaze_eth", "crop")]
    assert pad.max_deg < 1e-6 and pad.not_scored == 0 and not pad.oracle_sees
