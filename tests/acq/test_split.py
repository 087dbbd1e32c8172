"""The one-process command's simulated devices in a second process (gaze4hri_acq/split.py):
the bus bridge delivers every message once, in order, with its bytes; a split session
records what the one-process session records; a child that cannot start is one line;
a parent that dies takes the child with it."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

pytest.importorskip("rclpy")
pytestmark = pytest.mark.node
from gaze4hri_acq.nodes._bridge import BusBridge  # noqa: E402
from gaze4hri_acq.nodes._bus import IntraProcessBus  # noqa: E402
from gaze4hri_acq.testing.wait import wait_for  # noqa: E402
from gaze4hri_core.errors import Gaze4HRIError  # noqa: E402


def test_the_bridge_delivers_each_message_once_in_order_with_its_bytes():
    a_bus, b_bus = IntraProcessBus(), IntraProcessBus()
    sa, sb = socket.socketpair()
    a, b = BusBridge(a_bus, sa, "a").start(), BusBridge(b_bus, sb, "b").start()
    got_b: dict[str, list[bytes]] = {}
    got_a: list[bytes] = []
    for t in ("/x", "/y", "/big"):
        b_bus.subscribe(t, lambda topic, data: got_b.setdefault(topic, []).append(data))
    a_bus.subscribe("/back", lambda _t, data: got_a.append(data))
    b_bus.subscribe("/back", lambda _t, data: None)  # b's own subscriber: b's message goes to a once, not back
    sent: dict[str, list[bytes]] = {"/x": [], "/y": [], "/big": []}

    def publish(topic: str, n: int, size: int) -> None:
        for i in range(n):
            data = i.to_bytes(4, "little") * (size // 4)
            sent[topic].append(data)
            a_bus.deliver(topic, data)

    threads = [threading.Thread(target=publish, args=args) for args in
               (("/x", 3000, 40), ("/y", 3000, 300), ("/big", 40, 691_200))]  # 640x360 RGB frames among small ones
    for th in threads:
        th.start()
    for i in range(50):
        b_bus.deliver("/back", bytes([i]))
    for th in threads:
        th.join()
    wait_for(lambda: sum(map(len, got_b.values())) == 6040 and len(got_a) == 50, 60.0, "every message across")
    assert got_b == sent  # per topic (one publisher each): every message, in order, same bytes
    assert got_a == [bytes([i]) for i in range(50)]
    a.close()
    b.close()
    time.sleep(0.2)
    assert a.received == 50 and b.received == 6040  # nothing echoed back


def test_a_split_session_records_what_one_process_records(tmp_path):
    from gaze4hri_acq.simulate import run_sim_session
    from gaze4hri_core.session import load_manifest

    trials = ["illum100_P1", "conflict_left_H1"]
    out = {}
    for mode in ("yes", "no"):
        sdir = run_sim_session(tmp_path / mode, subject="S02", trial_ids=trials, resolution=(160, 90),
                               trial_seconds=0.5, real_time_factor=20, device_process=mode)
        out[mode] = load_manifest(sdir).trials
    for t in trials:
        for mode in ("yes", "no"):
            assert out[mode][t].status == "done" and out[mode][t].dropped_frames == 0, (mode, out[mode][t])
        # the frames inside the 0.5 s window at 30 Hz: 15 or 16 (whether a frame lands on its edge),
        # and no more: a fixed camera's window goes to the recorder with the start, so frames the
        # devices render past its end (more of them in their own process) are never written
        inside = {mode: _frames_in_window(tmp_path / mode, t, 0.5) for mode in ("yes", "no")}
        assert abs(inside["yes"] - inside["no"]) <= 1 and min(inside.values()) >= 15, (t, inside, out["yes"][t])
        assert out["yes"][t].frames == inside["yes"] and out["no"][t].frames == inside["no"], (t, inside)


def _frames_in_window(root, trial: str, seconds: float) -> int:
    """Images of a trial's bag stamped within ``seconds`` of its window's start (the log time
    of the /tf_static the recorder writes when the window opens)."""
    from gaze4hri_core.session import Topics, bag_dir
    from rosbags.rosbag2 import Reader

    (sdir,) = [p.parent for p in root.rglob("session.yaml")]
    with Reader(bag_dir(sdir, trial)) as r:
        stamps = {c.topic: [] for c in r.connections}
        for c, t, _raw in r.messages():
            stamps[c.topic].append(t)
    start = min(stamps["/tf_static"])
    return sum(start <= t <= start + int(seconds * 1e9) for t in stamps[Topics.IMAGE])


def test_a_child_that_cannot_start_is_one_line(tmp_path):
    from gaze4hri_acq.runner import StackConfig
    from gaze4hri_acq.split import SplitStack

    bad = StackConfig(backend="sim", sim={"real_time_factor": -3.0}, nodes=("camera", "mocap", "robot", "recorder"))
    with pytest.raises(Gaze4HRIError) as ei:
        SplitStack(bad).start()
    line = ei.value.line()
    assert "simulated devices' process" in line and "real_time_factor" in line and "\n" not in line


def _children(pid: int) -> list[int]:
    import psutil

    try:
        return [c.pid for c in psutil.Process(pid).children() if "gaze4hri_acq.split" in " ".join(c.cmdline())]
    except psutil.NoSuchProcess:
        return []


def test_a_killed_session_takes_its_device_process_with_it(tmp_path):
    import psutil

    cmd = [sys.executable, "-m", "gaze4hri_acq.cli", "session", "--subject", "S03", "--backend", "sim",
           "--trials", "mutual_h_slow", "--resolution", "160x90", "--out-dir", str(tmp_path), "--quiet",
           "--live-view", "off", "--skip-checks", "--sim-device-process", "yes"]
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        wait_for(lambda: (tmp_path / "S03" / "bags").is_dir() and _children(p.pid), 120.0, "the session recording")
        child = _children(p.pid)[0]
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        wait_for(lambda: not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE,
                 30.0, "the device process to exit after its parent")
    finally:
        if p.poll() is None:
            p.kill()


def test_a_device_process_that_dies_ends_the_session_with_its_trial_incomplete(tmp_path):
    """The child killed mid-trial: the session ends at once as interrupted (not after a
    minute of timeouts per trial), the recording trial marked incomplete for --resume,
    with one line naming the cause; the trial recorded before it stays done."""
    from gaze4hri_core.session import load_manifest

    cmd = [sys.executable, "-m", "gaze4hri_acq.cli", "session", "--subject", "S04", "--backend", "sim",
           "--trials", "mutual_h_slow", "illum100_P1", "--resolution", "160x90", "--out-dir", str(tmp_path), "--quiet",
           "--live-view", "off", "--skip-checks", "--sim-device-process", "yes"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        def recording():
            try:
                return load_manifest(tmp_path / "S04").trials["mutual_h_slow"].status == "recording"
            except Exception:  # noqa: BLE001 - not written yet
                return False

        wait_for(lambda: recording() and _children(p.pid), 120.0, "the first trial recording")
        os.kill(_children(p.pid)[0], signal.SIGKILL)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 1, (out, err)
    assert "session interrupted (the simulated devices' process ended (exit code -9))" in err
    m = load_manifest(tmp_path / "S04")
    assert m.trials["mutual_h_slow"].status == "incomplete" and m.trials["illum100_P1"].status == "done"  # ran first


def test_auto_splits_a_sim_session_of_a_minute_or_more_on_two_cores(monkeypatch):
    from gaze4hri_acq import split

    monkeypatch.setattr(split.os, "cpu_count", lambda: 2)
    assert split.use_split("auto", "sim", False, 283.0) and not split.use_split("auto", "sim", False, 4.0)
    assert split.use_split("yes", "sim", False, 4.0) and not split.use_split("no", "sim", False, 283.0)
    assert not split.use_split("yes", "real", False, 283.0) and not split.use_split("yes", "sim", True, 283.0)
    monkeypatch.setattr(split.os, "cpu_count", lambda: 1)
    assert not split.use_split("auto", "sim", False, 283.0)
