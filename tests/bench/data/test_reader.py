"""Dataset: discovery, filters, lazy frame decoding, frame table (drops, duplicates),
stride, and the simulator-truth check of the ground truth on real MCAP bags."""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from gaze4hri_bench.data.reader import Dataset, build_frame_table
from gaze4hri_bench.testing.session import T0, render
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.gaze import angular_error_deg

pytestmark = pytest.mark.replay


def test_trials_carry_protocol_and_calibration(sessions):
    refs = Dataset(sessions).trials()
    assert [(r.subject, r.trial) for r in refs] == [
        ("S01", "illum100_P5"), ("S01", "arc_P1"), ("S01", "mutual_h_fast"), ("S02", "conflict_left_H2")]
    r = refs[0]
    assert (r.experiment, r.condition, r.target, r.status) == ("illumination", "100", "P5", "done")
    assert r.calibration.subject == "S01" and r.calibration.T_head_eye is not None
    assert r.bag_dir.is_dir() and r.session_dir.name == "S01"
    assert refs[-1].status == "incomplete"


def test_filters(sessions):
    assert [r.trial for r in Dataset(sessions, subjects=["S02"]).trials()] == ["conflict_left_H2"]
    assert [r.key for r in Dataset(sessions, trials=["arc_P1"]).trials()] == ["S01/arc_P1"]
    assert len(Dataset(sessions / "S01").trials()) == 3  # a single session directory works too
    with pytest.raises(Gaze4HRIError, match="S99.*known: S01, S02"):
        Dataset(sessions, subjects=["S99"]).trials()
    with pytest.raises(Gaze4HRIError, match="did you mean.*arc_P1"):
        Dataset(sessions, trials=["arc_P11"])


def test_frames_decode_lazily_rgb(sessions):
    ds = Dataset(sessions, trials=["arc_P1", "mutual_h_fast"])
    arc, mutual = ds.trials()
    it = ds.iter_frames(arc)
    assert inspect.isgenerator(it)
    f0 = next(it)
    assert f0.image.dtype == np.uint8 and f0.image.shape == (90, 160, 3)
    assert f0.index == 0 and f0.frame_number == 1000 and f0.t_ns == T0 + 3_000_000
    assert np.array_equal(f0.image, render((160, 90), 0.003))  # the exact pixels written
    # bgr8 on the wire comes back as RGB
    g0 = next(ds.iter_frames(mutual))
    assert np.array_equal(g0.image, render((160, 90), 0.003))


def test_frame_table_drops_duplicates_and_stride(sessions):
    ds = Dataset(sessions, trials=["illum100_P5"])
    ref = ds.trials()[0]
    tab = ds.frame_table(ref)
    assert len(tab) == 31  # 30 camera frames + 1 duplicate written
    assert list(tab.kind[5:7]) == ["dropped", "dropped"] and tab.kind[11] == "duplicate"
    assert list(tab.frame_number[4:8]) == [1004, 1005, 1006, 1007]
    frames = list(ds.iter_frames(ref))
    gt = ds.trial_ground_truth(ref)
    assert len(frames) == 29 and len(gt) == 31
    assert set(f.index for f in frames) <= set(gt["frame"])
    assert [f.index for f in frames][4:7] == [4, 7, 8]  # slots skip the dropped placeholders
    # stride 3: every third recorded frame, same rows in the ground truth, no placeholders
    ds3 = Dataset(sessions, trials=["illum100_P5"], stride=3)
    f3 = [f.index for f in ds3.iter_frames(ds3.trials()[0])]
    g3 = ds3.trial_ground_truth(ds3.trials()[0])
    assert f3 == list(g3["frame"]) and len(f3) == 10 and "dropped_frame" not in set(g3["invalid_reason"])
    with pytest.raises(Gaze4HRIError, match="stride"):
        Dataset(sessions, stride=0)


def test_frame_table_without_counters_uses_stamps():
    period = 33_333_333
    stamps = np.array([0, 1, 2, 4, 4, 5]) * period  # frame 3 lost, frame 4 repeated
    tab = build_frame_table(stamps, np.full(6, -1))
    assert list(tab.kind) == ["ok", "ok", "ok", "dropped", "ok", "duplicate", "ok"]
    assert list(tab.frame) == list(range(7))


def test_ground_truth_matches_simulator_truth(sessions):
    """The reader's ground truth (100 Hz head band, 125 Hz robot, interpolated at the
    frame stamps) agrees with the exact gaze written at each stamp to < 0.1 deg."""
    ds = Dataset(sessions, subjects=["S01"])
    for ref in ds.trials():
        gt = ds.trial_ground_truth(ref)
        truth = ds.sim_truth(ref)
        m = gt[gt["valid"]].merge(truth, on="t_ns", how="inner")
        assert len(m) >= 20, ref.trial
        err = angular_error_deg(m[["gt_x", "gt_y", "gt_z"]].to_numpy(), m[["x", "y", "z"]].to_numpy())
        assert np.nanmax(err) < 0.1, (ref.trial, np.nanmax(err))


def test_joint_state_cdr_both_layouts():
    """JointState written by rclpy (Fast-CDR pads the empty effort sequence: 268 bytes)
    and by rosbags (264 bytes) both give the stamp and positions."""
    from gaze4hri_bench.data.reader import joint_state_cdr
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_KILTED)
    g = ts.types
    names = [
        "shoulder_pan_joint",
        "shoulder_lift_joint",
        "elbow_joint",
        "wrist_1_joint",
        "wrist_2_joint",
        "wrist_3_joint",
    ]
    q = np.array([0.1, -1.2, 1.3, -0.4, 1.5, -3.0])
    m = g["sensor_msgs/msg/JointState"](
        header=g["std_msgs/msg/Header"](stamp=g["builtin_interfaces/msg/Time"](sec=12, nanosec=345), frame_id=""),
        name=names,
        position=q,
        velocity=np.zeros(6),
        effort=np.zeros(0),
    )
    raws = [bytes(ts.serialize_cdr(m, "sensor_msgs/msg/JointState"))]
    try:
        from rclpy.serialization import serialize_message
        from sensor_msgs.msg import JointState

        j = JointState()
        j.header.stamp.sec, j.header.stamp.nanosec = 12, 345
        j.name, j.position, j.velocity = names, q.tolist(), [0.0] * 6
        raws.append(serialize_message(j))
    except ImportError:
        pass
    for raw in raws:
        stamp, pos = joint_state_cdr(raw)
        assert stamp == 12_000_000_345 and np.array_equal(pos, q)
