"""The ``study`` backend against trials written by hand from the layout spec
(tests/bench/data/_study.py): axis conventions, units, multi-stamp folders, blink
labels, face boxes, subject metadata, and one-line errors for bad trials while the
good ones are still read."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.data.reader import Dataset, detect_format
from gaze4hri_core.gaze import angular_error_deg

from . import _study as S

pytestmark = pytest.mark.replay


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    b = tmp_path_factory.mktemp("study") / "BASE"
    blinks = np.ones(12, np.int16)
    blinks[[3, 4]] = 3
    other = np.zeros(12, np.int16)
    other[7] = 2
    S.write_trial(b, blinks={"alice": blinks, "bob": other})
    # a re-recording: the earlier stamp is broken (no head poses) and must not be read
    old = S.write_trial(b, exp="circular_movement", point="p2", stamp=1699999000000)
    (old / "head_poses.npy").unlink()
    S.write_trial(b, exp="circular_movement", point="p2", stamp=1700000900000, boxes=False)
    (old.parent / ".1700000999999.partial").mkdir()  # an unfinished export is never read
    S.write_trial(b, exp="line_movement_slow", point="vertical", stamp=1700001000000)
    return b


def test_discovery_ids_rerecordings_and_subject_info(base):
    assert detect_format(base) == "study" and detect_format(base / "2025-03-04") == "study"
    ds = Dataset(base)
    refs = ds.trials()
    assert [r.trial for r in refs] == ["illum100_P5", "arc_P2", "mutual_v_slow"] and not ds.skipped
    arc = refs[1]
    assert arc.bag_dir.name == "1700000900000" and [p.name for p in arc.rerecordings] == ["1699999000000"]
    assert arc.subject == "0005" and ds.subject_info("0005")["glasses"] is True
    assert refs[0].subject_info["gender"] == "female"
    assert len(Dataset(base / "2025-03-04" / "0005", trials=["arc_P2"]).trials()) == 1  # a subject folder works too


def test_axes_units_and_ground_truth(base):
    ds = Dataset(base, trials=["illum100_P5"], blink_annotations=False)
    ref = ds.trials()[0]
    gt = ds.trial_ground_truth(ref)
    assert len(gt) == 12 and gt["valid"].all()
    g = gt[["gt_x", "gt_y", "gt_z"]].to_numpy()
    assert np.max(angular_error_deg(g, S.EXPECTED_GAZE)) < 1e-6
    f = gt[["head_fwd_x", "head_fwd_y", "head_fwd_z"]].to_numpy()
    assert np.max(angular_error_deg(f, S.EXPECTED_HEAD_FWD)) < 1e-6
    assert np.allclose(gt["head_gaze_conflict_deg"], 45.0) and np.allclose(gt["camera_yaw_deg"], 0.0, atol=1e-9)
    assert np.allclose(gt[["eye_cx", "eye_cy", "eye_cz"]].to_numpy(), [0.0, 0.0, 0.6])  # metres, optical axis
    assert gt["t_ns"].iloc[0] == int((S.T0_MS + 3.0) * 1e6)  # ms -> ns
    K = ds.camera_info(ref)
    assert (K.width, K.height, K.fx, K.fy, K.cx, K.cy) == (160, 90, 120.0, 121.0, 80.0, 45.0)


def test_frames_lazy_rgb_and_stride(base):
    ds = Dataset(base, trials=["illum100_P5"], stride=4)
    ref = ds.trials()[0]
    frames = list(ds.iter_frames(ref))
    assert [f.index for f in frames] == [0, 4, 8] == ds.trial_ground_truth(ref)["frame"].tolist()
    img = frames[0].image
    assert img.shape == (90, 160, 3) and img[45, 20, 0] > 150 and img[45, 140, 0] < 100  # red on the left: RGB order


def test_blink_labels_and_face_boxes(base):
    ds = Dataset(base, trials=["illum100_P5", "arc_P2"])
    p5, arc = ds.trials()
    r = ds.trial_ground_truth(p5)["invalid_reason"].tolist()  # the study's rule: the first annotator by name (alice)
    assert r[3] == r[4] == "blink" and r[7] == "" and r.count("") == 10
    anyone = Dataset(base, trials=["illum100_P5"], blink_rule="any")
    r = anyone.trial_ground_truth(anyone.trials()[0])["invalid_reason"].tolist()  # the highest code of any annotator
    assert r[3] == r[4] == "blink" and r[7] == "blink_uncertain" and r.count("") == 9
    assert ds.blinks_annotated(p5) and not ds.blinks_annotated(arc)
    b = ds.face_boxes(p5)
    assert b.shape == (12, 5) and b[2].tolist() == [12.0, 5.0, 62.0, 70.0, 1.0]
    assert ds.face_boxes(arc) is None


def test_eye_positions_cross_check(tmp_path):
    d = S.write_trial(tmp_path / "B")
    e = np.load(d / "eye_positions.npy")
    e[:, 3] += 0.01  # 1 cm off: a warning, the trial is still read
    np.save(d / "eye_positions.npy", e)
    ds = Dataset(tmp_path / "B")
    assert len(ds.trials()) == 1 and "10.0 mm" in ds.warnings[0]


def _bad_dataset(tmp_path):
    b = tmp_path / "BAD"
    S.write_trial(b)  # the good one
    d = S.write_trial(b, exp="lighting_10", point="p1")
    (d / "camera_poses.npy").unlink()
    d = S.write_trial(b, exp="lighting_25", point="p1")
    np.save(d / "rgb_timestamps.npy", np.load(d / "rgb_timestamps.npy")[:-2])
    d = S.write_trial(b, exp="lighting_50", point="p1")
    (d / "rgb_video.mp4").write_bytes(b"not a video at all" * 100)
    d = S.write_trial(b, exp="circular_movement", point="p1")
    np.save(d / "camera_intrinsics.npy", np.array([120.0, 121.0, 80.0, 45.0], dtype=object), allow_pickle=True)
    S.write_trial(b, exp="lighting_75", point="p1")
    return b


def test_bad_trials_are_skipped_with_one_line_reasons(tmp_path):
    ds = Dataset(_bad_dataset(tmp_path))
    assert [r.trial for r in ds.trials()] == ["illum100_P5"]
    why = {s.trial: s.reason for s in ds.skipped}
    assert set(why) == {"illum010_P1", "illum025_P1", "illum050_P1", "arc_P1", "lighting_75"}
    assert "camera_poses.npy missing" in why["illum010_P1"]
    assert "12 frames but rgb_timestamps.npy has 10" in why["illum025_P1"]
    assert "rgb_video.mp4 cannot be decoded" in why["illum050_P1"]
    assert "not a dict" in why["arc_P1"] and "np.save" in why["arc_P1"]
    assert "unknown exp_type folder 'lighting_75'" in why["lighting_75"]
    for s in ds.skipped:
        assert "\n" not in s.reason and "(" in s.reason and ": " in s.reason  # what (where): fix
        assert s.where in s.reason or "lighting_75" in s.where


def test_malicious_intrinsics_pickle_is_not_executed(tmp_path):
    import os

    d = S.write_trial(tmp_path / "B")
    marker = tmp_path / "pwned"

    class Evil:
        def __reduce__(self):
            return (os.system, (f"touch {marker}",))

    np.save(d / "camera_intrinsics.npy", np.array({"fx": Evil()}, dtype=object), allow_pickle=True)
    ds = Dataset(tmp_path / "B")
    assert ds.trials() == [] and "refused global" in ds.skipped[0].reason
    assert not marker.exists()


def test_run_cli_goes_on_and_lists_skipped(tmp_path, capsys):
    import pandas as pd
    from gaze4hri_bench.cli import main

    b = _bad_dataset(tmp_path)
    out = tmp_path / "res"
    rc = main(
        [
            "run",
            "--data",
            str(b),
            "--format",
            "study",
            "--method",
            "head_pose",
            "--out",
            str(out),
            "--no-progress",
            "--blinks",
            "annotations",
        ]
    )
    text = capsys.readouterr()
    assert rc == 0, text.err
    assert text.out.count("skipped ") + text.err.count("skipped ") >= 5
    df = pd.read_parquet(out / "head_pose__none.parquet")
    assert set(df["trial"]) == {"illum100_P5"} and df["valid"].all()
    assert np.allclose(df["error_deg"], 45.0)  # head forward vs gaze: the 45 deg conflict of the scene
    from gaze4hri_bench.pipeline import results

    assert results.read_metadata(out / "head_pose__none.parquet")["subjects"]["0005"]["glasses"] is True


def test_broken_metadata_and_blink_file(tmp_path):
    d = S.write_trial(tmp_path / "B", blinks={"alice": np.ones(12, np.int16)})
    S.write_trial(tmp_path / "B", exp="lighting_50", point="p2")
    (d.parents[2] / "subject_info.json").write_text("{not json")
    (d / "blink_annotations_by_alice.npy").write_bytes(b"garbage")
    ds = Dataset(tmp_path / "B")
    assert [r.trial for r in ds.trials()] == ["illum050_P2"]
    assert ds.trials()[0].subject_info == {} and "subject_info.json not valid JSON" in ds.warnings[0]
    assert "blink_annotations_by_alice.npy unreadable" in ds.skipped[0].reason


def test_study_time_sync_option(tmp_path):
    """GTOptions(sync="study"): the study's matcher (mean of the bracketing samples, no
    gap limit, frames before the mocap stream's stable start dropped)."""
    from gaze4hri_bench.data.frame_truth import GTOptions, stable_start_ns, study_query_times

    t = np.array([0, 10, 20, 40], np.int64) * 1_000_000
    q = np.array([-5, 0, 15, 30, 50], np.int64) * 1_000_000
    assert (study_query_times(t, q) / 1e6).tolist() == [0.0, 0.0, 15.0, 30.0, 40.0]
    jittery = np.cumsum([0, 30, 3, 25, 10, 10, 9, 11, 10, 10, 10]) * 1_000_000
    assert stable_start_ns(jittery) == jittery[8]  # intervals 3..7 are the first five in 10 +- 2 ms: sample 3 + 5
    assert stable_start_ns(np.array([0, 50, 100]) * 1_000_000) == 0  # too short: from the first sample, as the study
    d = S.write_trial(tmp_path / "B")
    h = np.load(d / "head_poses.npy")
    h[:8, 0] = (
        h[8, 0] - 10.0 * np.arange(8, 0, -1) - np.array([90, 60, 40, 30, 20, 13, 5, 2])
    )  # irregular first samples
    np.save(d / "head_poses.npy", h)
    ds = Dataset(tmp_path / "B", gt_options=GTOptions(sync="study"))
    gt = ds.trial_ground_truth(ds.trials()[0])
    start = stable_start_ns(np.rint(h[:, 0] * 1e6).astype(np.int64))
    before = gt["t_ns"].to_numpy() < start
    assert before.any() and (~before).any()
    assert (gt.loc[before, "invalid_reason"] == "before_stable_start").all() and gt.loc[~before, "valid"].all()
    g = gt.loc[~before, ["gt_x", "gt_y", "gt_z"]].to_numpy()
    assert np.max(angular_error_deg(g, S.EXPECTED_GAZE)) < 1e-6
