"""Fixtures for the acquisition tests: one short simulated session shared by the
node/replay tests (small frames, short trials: the suite runs on 2 shared cores)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

# Keep every test's DDS graph inside its own process (other agents share the machine).
os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF")

def own_domain(lo: int) -> int:
    """A ROS domain for a test that shares its graph with other processes: ``lo`` + 0-9 for the
    first pytest-xdist worker (and a run without workers), ``lo`` + 10-19 for the second, so
    two workers' graphs never meet (ranges in use: 20 live_tf, 40 replay_tail, 60 live_view;
    test_launch.py draws from 100-199 the same way)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return lo + 10 * (int(worker[2:]) % 2) + os.getpid() % 10


SHORT_TRIALS = ["illum010_P1", "conflict_left_H1", "mutual_v_fast"]  # the shortest raster scan (12 s)


@pytest.fixture(scope="session")
def short_session(tmp_path_factory) -> Path:
    """A finished simulated session: 3 trials (fixed camera, head-gaze conflict with the
    head-pose check, a mutual-gaze line scan) at 320x180, 0.5 s per fixed trial."""
    from gaze4hri_acq.simulate import run_sim_session

    out = tmp_path_factory.mktemp("sessions")
    return run_sim_session(
        out, subject="S01", trial_ids=SHORT_TRIALS, resolution=(320, 180), trial_seconds=0.5, real_time_factor=50
    )
