"""The simulation pacer and the device stream threads wait instead of polling: a device
sleeps on the paced SimClock until its next sample time, the pacer sleeps until the
earliest such time is due (docs/perf/acq.md, "Simulation pacer"). The spinning pacer
and the 0.5 ms device polls kept the session process's GIL and a core busy (issue 24,
docs/perf/operator_view.md); the stamps and the clock's bounds stay as they were."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest
from gaze4hri_sim.clock import SimClock

T0 = 1_700_000_000_000_000_000


@pytest.mark.unit
def test_a_paced_clock_wakes_each_sleeper_at_its_own_time():
    c = SimClock(manual=True)
    c.attach_pacer()
    woke: dict[str, int] = {}

    def sleeper(name: str, t: int) -> None:
        assert c.sleep_until(t, timeout_wall_s=30.0)
        woke[name] = c.now_ns()

    ts = {"camera": T0 + 33_333_333, "robot": T0 + 8_000_000}
    threads = [threading.Thread(target=sleeper, args=kv) for kv in ts.items()]
    seen = c.changes()
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(c._waiters) < 2 and time.monotonic() < deadline:  # both registered
        c.wait_change(seen, 0.5)
        seen = c.changes()
    assert c.next_due_ns() == T0 + 8_000_000  # the earliest: what the pacer advances to next
    c.advance_to(T0 + 8_000_000)
    threads[1].join(30)
    assert woke == {"robot": T0 + 8_000_000} and c.next_due_ns() == T0 + 33_333_333
    c.advance_to(T0 + 40_000_000)
    threads[0].join(30)
    assert woke["camera"] == T0 + 40_000_000 and c.next_due_ns() is None


@pytest.mark.unit
def test_detaching_the_pacer_releases_sleepers_and_manual_steps_return_at_once():
    c = SimClock(manual=True)
    c.attach_pacer()
    out = []
    t = threading.Thread(target=lambda: out.append(c.sleep_until(T0 + 10**9, timeout_wall_s=30.0)))
    t.start()
    deadline = time.monotonic() + 30
    while c.next_due_ns() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    w0 = time.monotonic()
    c.detach_pacer()
    t.join(30)
    assert out == [False] and time.monotonic() - w0 < 5  # released, not reached
    # without a pacer a manual clock answers at once, as single-threaded tests need
    assert not c.sleep_until(T0 + 10**9, timeout_wall_s=30.0) and c.next_due_ns() is None
    with pytest.raises(RuntimeError, match="manual"):
        SimClock().attach_pacer()


def _thread_cpu_s(thread: threading.Thread) -> float:
    """CPU seconds (user + sys) of one thread of this process, from /proc (proc(5) stat 14, 15)."""
    import os
    from pathlib import Path

    f = Path(f"/proc/self/task/{thread.native_id}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.node
def test_pacer_and_device_threads_sleep_between_samples_at_the_device_rates():
    """Three simulated devices streaming on the paced clock (real-time factor 4): the
    pacer wakes about twice per sample time (the spinning loop advanced the clock
    ~76,000 times per simulated second), the stream threads find a sample at every step
    (the 0.5 ms polls: 27-72 empty steps per device and simulated second, load 16),
    every stream keeps its rate and the clock never runs faster than the factor."""
    pytest.importorskip("rclpy")
    from gaze4hri_acq.runner import Stack, StackConfig
    from rclpy.lifecycle import TransitionCallbackReturn

    rtf = 4.0
    cfg = StackConfig(backend="sim", nodes=("camera", "mocap", "robot"), sim={"real_time_factor": rtf},
                      params={"camera": {"width": 320, "height": 180}})
    with Stack(cfg) as st:
        nodes = [st.nodes[n] for n in ("camera", "mocap", "robot")]
        for n in nodes:
            assert n.trigger_configure() == TransitionCallbackReturn.SUCCESS, n.last_error
            assert n.trigger_activate() == TransitionCallbackReturn.SUCCESS
        deadline = time.monotonic() + 60
        while not all(n.streaming and n.stream_ns for n in nodes) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert all(n.stream_ns for n in nodes), "a device never streamed"
        cam, mocap, robot = nodes
        pacer, clock = st._pacer, st.world.clock
        assert clock.paced
        counts0 = (cam.frames, mocap.frames, robot.samples)
        idle0 = [n.idle_steps for n in nodes]
        wake0, sim0, wall0 = pacer.wakeups, clock.now_ns(), time.monotonic()
        cpu0 = _thread_cpu_s(pacer)
        deadline = time.monotonic() + 60
        while clock.now_ns() - sim0 < 2e9 and time.monotonic() < deadline:
            time.sleep(0.05)
        sim_s, wall_s = (clock.now_ns() - sim0) / 1e9, time.monotonic() - wall0
        wakes = pacer.wakeups - wake0
        cpu = _thread_cpu_s(pacer) - cpu0
        counts = np.subtract((cam.frames, mocap.frames, robot.samples), counts0)
        idle = np.subtract([n.idle_steps for n in nodes], idle0)
    assert sim_s >= 2.0, f"the clock advanced {sim_s:.2f} simulated s in {wall_s:.1f} s"
    assert sim_s <= rtf * wall_s * 1.05 + 0.01  # never faster than the real-time factor
    # every device at its own rate (30, 100, 125 Hz), one sample per grid point
    rates = np.array([30, 100, 125])
    assert np.all(np.abs(counts - rates * sim_s) <= 3 + 0.05 * rates * sim_s), counts
    # ~255 samples per simulated second: about one wake-up each for the advance and one
    # for the next request (plus one per 10 ms step when nothing is due)
    assert wakes / sim_s < 1500, f"pacer woke {wakes} times in {sim_s:.2f} simulated s"
    assert np.all(idle / sim_s < 10), f"empty steps per device: {idle.tolist()} in {sim_s:.2f} simulated s"
    assert cpu < 0.5 * wall_s, f"pacer used {cpu:.2f} CPU s in {wall_s:.2f} s"
