"""Motion preview fuzz (issue 20, item 7): joint and Cartesian moves with NaN/inf, huge,
zero and negative speeds, accelerations, blends, poses and joint goals end in a refusal
or a safe acceptance, never in an exception. The 2,000-case count is
benchmarks/reliability_fuzz.py (run(n)); this draws 300 cases with hypothesis."""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest
from gaze4hri_core.safety import SafetyMonitor
from gaze4hri_core.trajectories import Move, preview_move, sample_path, trapezoid
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO

pytestmark = pytest.mark.unit


def _fuzz_module():
    if "reliability_fuzz" not in sys.modules:  # benchmarks/ is not a package
        spec = importlib.util.spec_from_file_location("reliability_fuzz", REPO / "benchmarks" / "reliability_fuzz.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules["reliability_fuzz"] = mod
        spec.loader.exec_module(mod)
    return sys.modules["reliability_fuzz"]


SPECIAL = st.sampled_from([float("nan"), float("inf"), float("-inf"), 0.0, -1.0, 1e300, -1e300, 1e-300])


def _num(scale: float, positive: bool = False):
    lo = 0.0 if positive else -scale
    return st.one_of(SPECIAL, st.floats(lo, scale, allow_nan=False))


@st.composite
def cases(draw):
    rf = _fuzz_module()
    scale = draw(st.sampled_from([0.01, 0.1, 0.5, 3.0]))
    return rf.Case(
        joint=draw(st.booleans()),
        delta=tuple(draw(_num(scale)) for _ in range(6)),
        speed=draw(_num(0.3, True)),
        accel=draw(_num(1.5, True)),
        blend=draw(st.one_of(st.just(0.0), _num(0.01, True))),
        q_start_bad=draw(st.one_of(st.none(), SPECIAL)),
    )


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_preview_refuses_or_accepts_safely_never_raises(case):
    assert _fuzz_module().run_case(case) in ("accepted", "refused")


@pytest.mark.parametrize(
    "speed,accel",
    [(float("nan"), 0.5), (0.1, float("nan")), (float("inf"), 0.5), (-0.1, 0.5), (0.1, 0.0), (0.1, 1e-300)],
)
def test_bad_speed_or_accel_is_a_refusal_with_a_reason(speed, accel):
    rf = _fuzz_module()
    ctx = rf._context()
    goal = rf._se3_moved(ctx["start"], [0.02, 0, 0], [0, 0, 0])
    pv = preview_move(Move("probe", (goal,), speed, accel), ctx["start"], ctx["q0"], ctx["mon"], check_mocap=False)
    assert not pv.ok and pv.verdict.reason and len(pv.t) == 0


def test_nan_pose_blend_and_start_joints_are_refused():
    rf = _fuzz_module()
    ctx = rf._context()
    start, q0, mon = ctx["start"], ctx["q0"], ctx["mon"]
    good = rf._se3_moved(start, [0.02, 0, 0], [0, 0, 0])
    nan_pose = rf._se3_moved(start, [float("nan"), 0, 0], [0, 0, 0])
    assert preview_move(Move("ok", (good,), 0.1, 0.5), start, q0, mon, check_mocap=False).ok
    for move, q in (
        (Move("p", (nan_pose,), 0.1, 0.5), q0),
        (Move("b", (good,), 0.1, 0.5, blend=float("nan")), q0),
        (Move("q", (good,), 0.1, 0.5), np.r_[q0[:5], np.inf]),
    ):
        pv = preview_move(move, start, q, mon, check_mocap=False)
        assert not pv.ok and "finite" in pv.verdict.reason


def test_sample_path_and_monitor_preview_refuse_what_callers_pass_unchecked():
    """The simulated arm and the RTDE driver call sample_path, then SafetyMonitor.preview."""
    rf = _fuzz_module()
    ctx = rf._context()
    mon: SafetyMonitor = ctx["mon"]
    start = ctx["start"]
    nan_pose = rf._se3_moved(start, [0, float("inf"), 0], [0, 0, 0])
    for poses, speed, accel in (
        ([start, nan_pose], 0.1, 0.5),
        ([start, start], float("nan"), 0.5),
        ([start, start], -1.0, 0.5),
    ):
        t, ps, v, prof = sample_path(poses, speed, accel, 50.0)
        verdict, q = mon.preview(t, ps, ctx["q0"], speed, accel)
        assert not verdict and q is None
    with pytest.raises(ValueError, match="finite"):
        trapezoid(float("nan"), 0.1, 0.5)
