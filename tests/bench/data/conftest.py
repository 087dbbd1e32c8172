"""Session fixtures: real MCAP bags written with rosbags (gaze4hri_bench.testing.session)."""
from __future__ import annotations

import pytest
from gaze4hri_bench.testing.session import TrialSpec, write_session


@pytest.fixture(scope="session")
def sessions(tmp_path_factory):
    """root with S01 (three trials: drops, a duplicate and a mocap loss in illum100_P5;
    bgr8 images in mutual_h_fast; a moving camera in arc_P1) and S02 (one incomplete trial)."""
    tmp = tmp_path_factory.mktemp("sessions")
    root = tmp / "root"
    write_session(root, "S01", [
        TrialSpec("illum100_P5", drop=(5, 6), duplicate=(10,), mocap_gap=(0.40, 0.55)),
        TrialSpec("mutual_h_fast", encoding="bgr8"),
        TrialSpec("arc_P1"),
    ], tmp=tmp)
    write_session(root, "S02", [TrialSpec("conflict_left_H2", seconds=0.5, status="incomplete")], tmp=tmp)
    return root
