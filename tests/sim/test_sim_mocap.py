"""The simulated motion capture's reader on a clock that ran ahead: every frame in turn by
default (a session records them all), or, with ``max_lag_s``, from the last ``max_lag_s``
seconds on, as a live stream's reader (calibration runs on a free-running clock)."""
from __future__ import annotations

import pytest
from gaze4hri_core.device_config import MocapConfig, SimConfig
from gaze4hri_sim.clock import SimClock
from gaze4hri_sim.mocap import SimMocap
from gaze4hri_sim.world import SimWorld

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("max_lag_s,first", [(None, 1), (0.5, 150)])
def test_a_reader_behind_the_clock(max_lag_s, first, default_calibration_dir):
    world = SimWorld(SimConfig(seed=1, calibration_dir=default_calibration_dir), clock=SimClock(manual=True))
    m = SimMocap(MocapConfig(), world, max_lag_s=max_lag_s)
    m.connect()
    k0 = world.mocap_index(world.clock.now_ns())
    world.clock.advance(2.0)  # 200 frames at 100 Hz happen while nobody reads
    f = m.read(0.0)
    assert f is not None and world.mocap_index(f.stamp_ns) - k0 == first
