"""The simulated arm's joint angles at a past time come from its recent history: the sample
at or before it, interpolated towards the next (what a controller sampled then)."""
from __future__ import annotations

import bisect

import numpy as np
import pytest
from gaze4hri_sim.arm import SimArm
from gaze4hri_sim.clock import SimClock


@pytest.mark.unit
def test_q_at_a_past_time_interpolates_the_history():
    arm = SimArm(SimClock(manual=True), monitor=None)
    rng = np.random.default_rng(0)
    t = arm._t
    for _ in range(700):  # past the history's 4 s: the oldest samples are gone
        t += int(rng.integers(1, 16_000_000))
        arm._t = t
        arm._q = rng.normal(size=6)
        arm._hist.append((t, arm._q.copy()))
    hist = list(arm._hist)
    times = [h[0] for h in hist]
    for query in [times[0] - 5, times[0], *rng.integers(times[0], times[-1], 300).tolist(), times[-1] - 1]:
        i = bisect.bisect_right(times, query)
        if i == 0:
            want = hist[0][1]
        else:
            (t0, q0), (t1, q1) = hist[i - 1], hist[i]
            want = q0 + (query - t0) / (t1 - t0) * (q1 - q0)
        np.testing.assert_allclose(arm.q_at(int(query)), want, rtol=0, atol=1e-12)
