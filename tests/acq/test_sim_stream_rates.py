"""A simulated session records every device at its own rate, with distinct stamps:
the benchmark refuses to interpolate poses across gaps over 30 ms (robot) and 50 ms
(mocap), so a robot stream sampled only when the sim clock steps a camera frame
(33 ms) would invalidate moving-camera frames."""
from pathlib import Path

import numpy as np
import pytest
from gaze4hri_core.session import Topics
from rosbags.highlevel import AnyReader

pytestmark = [pytest.mark.node, pytest.mark.replay]


def _stamps(bag: Path, topic: str) -> np.ndarray:
    with AnyReader([bag]) as r:
        cs = [c for c in r.connections if c.topic == topic]
        out = []
        for c, _, raw in r.messages(connections=cs):
            s = r.deserialize(raw, c.msgtype).header.stamp
            out.append(s.sec * 10**9 + s.nanosec)
    return np.array(out)


def test_moving_camera_trial_streams_at_device_rates(tmp_path):
    from gaze4hri_acq.simulate import run_sim_session

    d = run_sim_session(tmp_path, "S01", ["arc_P5"], resolution=(320, 180), trial_seconds=1.0)
    bag = d / "bags" / "arc_P5"
    tcp = _stamps(bag, Topics.TCP_POSE)
    head = _stamps(bag, Topics.HEAD_POSE)
    img = _stamps(bag, Topics.IMAGE)
    assert len(img) > 20
    assert np.all(np.diff(tcp) > 0), "robot stamps repeat"
    assert np.diff(tcp).max() <= 9_000_000, "robot stream has gaps beyond its 125 Hz period"
    assert np.all(np.diff(head) > 0) and np.diff(head).max() <= 11_000_000
    # every image lies inside both pose streams
    assert tcp[0] <= img[0] and img[-1] <= tcp[-1]
