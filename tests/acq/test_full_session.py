"""The whole simulated protocol: 63 trials at 160x90, 2 s per fixed trial, the study's
10 s arcs and 0.5 m / 0.2 m line scans (about 220 s of recording). Its speed at
640x360 is measured by benchmarks/acq_session.py (docs/perf/acq.md), not here."""

import pytest

pytest.importorskip("rclpy")
from gaze4hri_core.session import load_manifest  # noqa: E402


@pytest.mark.node
@pytest.mark.long
def test_whole_simulated_session(tmp_path):
    from gaze4hri_acq.simulate import run_sim_session

    # 160x90: this test is about the protocol (every trial recorded, none dropped), not
    # render cost; the session's speed at 640x360 is benchmarks/acq_session.py's figure
    sdir = run_sim_session(tmp_path, subject="S01", resolution=(160, 90), real_time_factor=100.0)
    m = load_manifest(sdir)
    assert len(m.trials) == 63
    done = [r for r in m.trials.values() if r.status == "done"]
    assert len(done) == 63, {k: (r.status, r.reason) for k, r in m.trials.items() if r.status != "done"}
    assert all(r.dropped_frames == 0 for r in done)
    assert all(r.frames >= 55 for r in done)  # >= ~2 s at 30 fps
