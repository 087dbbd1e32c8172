"""Validity reasons and their counts, interpolation limits, blink annotations and EAR."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.data import validity
from gaze4hri_bench.data.frame_truth import GTOptions
from gaze4hri_bench.data.reader import Dataset
from gaze4hri_bench.testing.session import TrialSpec, write_session
from gaze4hri_core.errors import Gaze4HRIError


@pytest.mark.replay
def test_reasons_counted(sessions):
    ds = Dataset(sessions)
    by = {r.trial: validity.count_reasons(ds.trial_ground_truth(r)) for r in ds.trials()}
    p5 = by["illum100_P5"]
    assert p5["dropped_frame"] == 2 and p5["duplicate_frame"] == 1
    # no head pose from 0.40 to 0.55 s: the frames at 0.403 .. 0.536 s (5) are lost
    assert p5["mocap_lost"] == 5 and p5["interp_gap"] == 0
    assert p5["valid"] == p5["total"] - 8
    assert by["arc_P1"]["valid"] == by["arc_P1"]["total"] == 30
    inc = by["conflict_left_H2"]
    assert inc["trial_incomplete"] == inc["total"] == 15 and inc["valid"] == 0


@pytest.mark.replay
def test_interpolation_refuses_gaps(tmp_path):
    """A 40 ms robot gap while the camera moves exceeds the 30 ms limit (interp_gap),
    but is bridged while the robot stands still (the interpolation is exact); a 40 ms
    head gap is bridged under the 50 ms default but refused with a 20 ms limit."""
    root = tmp_path / "root"
    write_session(root, "S01", [TrialSpec("arc_P1", seconds=0.6, robot_gap=(0.2, 0.235)),
                                TrialSpec("illum100_P2", seconds=0.6, mocap_gap=(0.3, 0.325)),
                                TrialSpec("illum100_P3", seconds=0.6, robot_gap=(0.2, 0.235))], tmp=tmp_path)
    ds = Dataset(root)
    by = {r.trial: r for r in ds.trials()}
    robot, head, static = by["arc_P1"], by["illum100_P2"], by["illum100_P3"]
    assert ds.trial_ground_truth(static)["valid"].all()
    gr = ds.trial_ground_truth(robot)
    bad = gr.loc[gr["invalid_reason"] == "interp_gap", "t_ns"]
    assert len(bad) >= 1 and gr.loc[gr["invalid_reason"] == "interp_gap", "gt_x"].isna().all()
    gh = ds.trial_ground_truth(head)
    assert gh["valid"].all()  # 40 ms head gap bridged
    strict = Dataset(root, gt_options=GTOptions(max_gap_mocap_s=0.02))
    gs = strict.trial_ground_truth([r for r in strict.trials() if r.trial == "illum100_P2"][0])
    assert (gs["invalid_reason"] == "interp_gap").sum() >= 1
    with pytest.raises(ValueError):
        GTOptions(max_gap_mocap_s=0.2, mocap_lost_s=0.1)


@pytest.mark.replay
def test_blink_annotations_yaml_and_csv(tmp_path, sessions):
    import shutil

    root = tmp_path / "root"
    shutil.copytree(sessions / "S01", root / "S01")
    ann = root / "S01" / "annotations"
    ann.mkdir()
    (ann / "blinks.yaml").write_text(
        "format: gaze4hri/blinks@1\nsubject: S01\ntrials:\n  arc_P1: [[3, 5], [20, 20]]\n  mutual_h_fast: []\n"
    )
    ds = Dataset(root)
    refs = {r.trial: r for r in ds.trials()}
    gt = ds.trial_ground_truth(refs["arc_P1"])
    assert list(gt.loc[gt["invalid_reason"] == "blink", "frame"]) == [3, 4, 5, 20]
    assert ds.blink_ranges(refs["mutual_h_fast"]) == []  # annotated: no blink
    assert ds.blink_ranges(refs["illum100_P5"]) is None  # not annotated: EAR decides
    # data reasons win over blinks
    (ann / "blinks.yaml").write_text("format: gaze4hri/blinks@1\ntrials:\n  illum100_P5: [[0, 30]]\n")
    c = validity.count_reasons(Dataset(root).trial_ground_truth(refs["illum100_P5"]))
    assert c["dropped_frame"] == 2 and c["blink"] == 31 - 8 and c["valid"] == 0
    (ann / "blinks.yaml").unlink()
    (ann / "blinks.csv").write_text("trial,first_frame,last_frame\narc_P1,7,8\n")
    gt = Dataset(root).trial_ground_truth(refs["arc_P1"])
    assert list(gt.loc[~gt["valid"], "frame"]) == [7, 8]


@pytest.mark.unit
def test_bad_annotation_files(tmp_path):
    p = tmp_path / "blinks.yaml"
    p.write_text("trials: {a: [[1, 2]]}\n")
    with pytest.raises(Gaze4HRIError, match="format: gaze4hri/blinks@1"):
        validity.load_blink_annotations(p)
    p.write_text("format: gaze4hri/blinks@1\ntrials: {a: [[5, 2]]}\n")
    with pytest.raises(Gaze4HRIError, match="first <= last"):
        validity.load_blink_annotations(p)
    c = tmp_path / "b.csv"
    c.write_text("trial,first_frame,last_frame\na,x,3\n")
    with pytest.raises(Gaze4HRIError, match=r"b.csv:2"):
        validity.load_blink_annotations(c)


@pytest.mark.unit
def test_ear_blink_and_face_reasons():
    import pandas as pd
    from gaze4hri_bench.faces.landmarks import eye_aspect_ratio

    open_eye = np.array([[0, 0], [1, -0.3], [2, -0.3], [3, 0], [2, 0.3], [1, 0.3]], float)
    assert eye_aspect_ratio(open_eye) == pytest.approx((0.6 + 0.6) / (2 * 3))
    closed = open_eye * [1, 0.1]
    assert eye_aspect_ratio(closed) < validity.EAR_THRESHOLD < eye_aspect_ratio(open_eye * [1, 1.5])
    ear = np.array([0.3, 0.3, 0.1, 0.12, 0.3, 0.05, 0.3, np.nan])
    assert list(validity.blink_from_ear(ear)) == [0, 0, 1, 1, 0, 1, 0, 0]  # relative: < 0.85 x median 0.3
    assert list(validity.blink_from_ear(ear, min_frames=2)) == [0, 0, 1, 1, 0, 0, 0, 0]
    # the default rule adapts to the subject: narrow eyes (median 0.19) are not all blinks ...
    narrow = np.array([0.19, 0.18, 0.195, 0.09, 0.19, 0.19])
    assert list(validity.blink_from_ear(narrow)) == [0, 0, 0, 1, 0, 0]
    # ... which the absolute baseline threshold alone would claim
    assert validity.blink_from_ear(narrow, validity.EAR_THRESHOLD, relative=None).sum() == 6
    # a shallow dip only a stricter relative rule sees; an absolute threshold adds to the relative rule
    e2 = np.array([0.36, 0.37, 0.32, 0.36, 0.35])
    assert not validity.blink_from_ear(e2).any()
    assert list(validity.blink_from_ear(e2, relative=0.9)) == [0, 0, 1, 0, 0]
    assert list(validity.blink_from_ear(e2, threshold=0.33)) == [0, 0, 1, 0, 0]
    with pytest.raises(ValueError):
        validity.blink_from_ear(e2, None, relative=None)
    gt = pd.DataFrame(
        {"frame": range(4), "valid": [True, False, True, True], "invalid_reason": ["", "mocap_lost", "", ""]}
    )
    out = validity.apply_face_reasons(gt, blink=[1, 1, 0, 0], no_face=[0, 0, 1, 1])
    assert list(out["invalid_reason"]) == ["blink", "mocap_lost", "no_face", "no_face"]
    assert not out["valid"].any()


@pytest.mark.unit
def test_ranges_round_trip(tmp_path):
    frames = np.array([0, 1, 2, 3, 5, 6, 7, 8])  # frame 4 absent (stride or drop)
    mask = np.array([0, 1, 1, 0, 1, 1, 0, 1], bool)
    r = validity.mask_to_ranges(frames, mask)
    assert r == [(1, 2), (5, 6), (8, 8)]
    assert validity.mask_to_ranges([3, 4, 6], [1, 1, 1]) == [(3, 4), (6, 6)]
    p = tmp_path / "blinks.yaml"
    validity.save_blink_annotations(p, {"arc_P1": r, "illum100_P5": []}, subject="S01", note="EAR proposals")
    assert validity.load_blink_annotations(p) == {"arc_P1": r, "illum100_P5": []}
    assert list(validity.annotation_mask(frames, r)) == list(mask)


@pytest.mark.replay
def test_validity_report(sessions):
    rep = Dataset(sessions).validity_report()
    assert list(rep["trial"]) == ["illum100_P5", "arc_P1", "mutual_h_fast", "conflict_left_H2"]
    assert set(validity.REASONS) <= set(rep.columns)
    row = rep.set_index("trial").loc["illum100_P5"]
    assert (row["dropped_frame"], row["duplicate_frame"], row["mocap_lost"]) == (2, 1, 5)
    assert (rep[list(validity.REASONS)].sum(axis=1) + rep["valid"] == rep["total"]).all()
