"""Issue 23 item 4: the ETH-XGaze export writes valid frames only: in a simulated
session the simulator's blink frames are left out (the session backend's ``sim_blinks``),
as docs/study_dataset.md says. Uses the shared short simulated session."""
from __future__ import annotations

import pytest

pytest.importorskip("rclpy")
pytest.importorskip("h5py")

pytestmark = [pytest.mark.replay, pytest.mark.node]


def test_ethxgaze_export_leaves_out_simulator_blinks(short_session, tmp_path):
    import h5py
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.export.ethxgaze import export_ethxgaze

    root = short_session.parent
    res = export_ethxgaze(root, tmp_path / "x", trials=["illum010_P1", "conflict_left_H1"], log=lambda s: None)
    ds = Dataset(root, trials=["illum010_P1", "conflict_left_H1"], blink_annotations=False)
    blinks, frames = set(), set()
    for ref in ds.trials():
        blinks |= set(ds._scan(ref).get("sim_blinks") or ())
        frames |= set(ds.trial_ground_truth(ref).query("valid")["t_ns"].tolist())
    with h5py.File(tmp_path / "x" / "train" / f"subject{ds.trials()[0].subject}.h5", "r", swmr=True) as f:
        t = set(f["t_ns"][:].tolist())
    assert len(t) == sum(res.counts.values()) > 5
    # exactly the data-valid frames without the simulator's blinks (whether the simulated
    # subject blinked in these trials depends on the run's pacing: the equality holds either way)
    assert t == frames - blinks and not (t & blinks)
    assert t == frames - blinks


def test_study_export_writes_the_tracked_table(short_session, tmp_path):
    """The session tracked the table: table_pose.npy is its pose (not identity), the
    targets are the table x the target's offset (data_collector.py:346-366), and the study
    reader gives the session's ground truth to 0.01 deg."""
    import numpy as np
    from gaze4hri_bench.data.reader import Dataset
    from gaze4hri_bench.export.study import export_study
    from gaze4hri_core.gaze import angular_error_deg

    root = short_session.parent
    res = export_study(root, tmp_path / "s", trials=["illum010_P1"], lossless=True, log=lambda s: None)
    d = res.written[0]
    T = np.load(d / "table_pose.npy")
    assert not np.allclose(T, np.eye(4))
    mc = Dataset(root, trials=["illum010_P1"], blink_annotations=False)
    ref = mc.trials()[0]
    off = ref.calibration.targets_in_table()[ref.protocol.target]
    tgt = np.load(d / "target_positions.npy")
    # the per-row targets use the smoothed tracked table (tracked_targets_world); table_pose is the
    # raw first sample, whose simulated marker noise (about 1 mrad of tilt) moves a target 1.1 m
    # from the table's origin by up to about 1.5 mm
    assert np.allclose(T[:3, :3] @ off + T[:3, 3], tgt[0, 1:], atol=3e-3)
    st = Dataset(tmp_path / "s", blink_annotations=False)
    ga, gb = mc.trial_ground_truth(ref), st.trial_ground_truth(st.trials()[0])
    v = ga["valid"].to_numpy() & gb["valid"].to_numpy()
    assert v.sum() > 5
    e = angular_error_deg(
        ga.loc[v, ["gt_x", "gt_y", "gt_z"]].to_numpy(), gb.loc[v, ["gt_x", "gt_y", "gt_z"]].to_numpy()
    )
    assert np.max(e) < 0.01, np.max(e)
