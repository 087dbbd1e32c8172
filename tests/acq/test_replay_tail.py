"""Replay delivers the tail (issue 31): a subscriber that listens from the start to the
end of ``gaze4hri-acq replay`` (another process, over DDS) receives every recorded
message of every topic; before, the process ended before its last samples left
(6 of 1,307 /robot/tcp_pose, 21 of 4,442 /tf, 5 of 1,304 /joint_states missing)."""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("rclpy")
import rclpy  # noqa: E402
from gaze4hri_core.session import bag_dir  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402

from .conftest import SHORT_TRIALS, own_domain  # noqa: E402
from .test_launch import ws  # noqa: E402, F401 - the colcon-built workspace (launch tier)

pytestmark = [pytest.mark.replay, pytest.mark.node]

CLI = [sys.executable, "-m", "gaze4hri_acq.cli"]
#: how long the subscriber may still take the samples the replay's exit left acknowledged
#: (received by its reader, not yet taken by its executor): a bound for the test, not a pace
TAKE_PATIENCE_S = 20.0


def _cls(ty):
    import importlib

    pkg, _, name = ty.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


def _digest(raw) -> bytes:
    """A message's identity: its CDR body without the encapsulation header and trailing padding
    (DDS may re-pad a payload to 4 bytes and note the padding in the header's options)."""
    return hashlib.blake2b(bytes(raw)[4:].rstrip(b"\0"), digest_size=16).digest()


def recorded_counts(session: Path, trials: list[str]) -> tuple[Counter, dict[str, str]]:
    """Messages per topic in the trials' bags, and each topic's type."""
    counts, types = Counter(), {}
    for tid in trials:
        with Reader(bag_dir(session, tid)) as r:
            for c in r.connections:
                counts[c.topic] += c.msgcount
                types[c.topic] = c.msgtype
    return counts, types


class Listener:
    """Every topic of the bags, reliable and deep enough to hold a whole trial (keep all:
    no sample is replaced before it is taken), in a context of its own spun by a thread."""

    def __init__(self, types: dict[str, str]):
        self.ctx = Context()
        rclpy.init(context=self.ctx, args=[])
        self.node = rclpy.create_node("tail_listener", context=self.ctx)
        self.got: Counter = Counter()
        self.digests: dict[str, set[bytes]] = {t: set() for t in types}
        self._lock = threading.Lock()
        for topic, ty in types.items():
            durable = DurabilityPolicy.TRANSIENT_LOCAL if topic == "/tf_static" else DurabilityPolicy.VOLATILE
            qos = QoSProfile(depth=1, history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE,
                             durability=durable)
            self.node.create_subscription(_cls(ty), topic, lambda b, t=topic: self._count(t, b), qos, raw=True)
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)
        self.th = threading.Thread(target=self.ex.spin, daemon=True)
        self.th.start()

    def _count(self, topic: str, raw: bytes) -> None:
        with self._lock:
            self.got[topic] += 1
            self.digests[topic].add(_digest(raw))

    def settle(self, want: Counter, patience_s: float = TAKE_PATIENCE_S) -> Counter:
        """The counts once they equal ``want`` or have not changed for ``patience_s``."""
        last, since = None, time.monotonic()
        while time.monotonic() - since < patience_s:
            with self._lock:
                now = Counter(self.got)
            if all(now[t] == n for t, n in want.items()):
                return now
            if now != last:
                last, since = now, time.monotonic()
            time.sleep(0.1)
        return last

    def close(self) -> None:
        self.ex.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        rclpy.shutdown(context=self.ctx)


@pytest.fixture
def shared_graph(monkeypatch):
    """The replay process and the listener on one host, in a domain of their own."""
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.setenv("ROS_DOMAIN_ID", str(own_domain(40)))
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def _listen_to_replay(types: dict[str, str], want: Counter, run) -> Counter:
    """The listener's counts after ``run()`` (the replay, to its end) has returned."""
    listener = Listener(types)
    try:
        p = run()
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        return listener.settle(want)
    finally:
        listener.close()


def _assert_same(got: Counter, want: Counter) -> None:
    missing = {t: f"{got[t]} of {n}" for t, n in want.items() if got[t] != n}
    assert not missing, f"subscriber counts differ from the bags: {missing}"


@pytest.mark.launch
@pytest.mark.long  # a colcon build and a launched replay; the CLI tests below guard the same drain in the default tier
def test_launched_replay_delivers_every_message_of_every_topic(short_session, ws, monkeypatch):  # noqa: F811
    """replay.launch.py wait_for_subscribers:=true: the launched replay process, same counts."""
    for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE"):
        monkeypatch.setenv(k, ws.env[k])  # the listener on the launch's own graph
    want, types = recorded_counts(short_session, SHORT_TRIALS)
    got = _listen_to_replay(types, want, lambda: ws.launch("replay.launch.py", session=str(short_session), rate="1",
                                                           wait_for_subscribers="true", timeout=240))
    _assert_same(got, want)


@pytest.mark.long  # ~18 s; the drain at the end of a CLI replay is checked in the default tier by the test below
def test_cli_replay_delivers_every_message_of_every_topic(short_session, shared_graph):
    """``gaze4hri-acq replay ... --ros-args -p wait_for_subscribers:=true`` in a process of its
    own (the test below sets the same with the command line's --wait-for-subscribers)."""
    trials = ["illum010_P1", "conflict_left_H1"]  # the two short trials: 1.5 s at rate 1
    want, types = recorded_counts(short_session, trials)
    got = _listen_to_replay(types, want, lambda: subprocess.run(
        [*CLI, "replay", str(short_session), "--rate", "1", "--quiet", *[a for t in trials for a in ("--trial", t)],
         "--ros-args", "-p", "wait_for_subscribers:=true"], capture_output=True, text=True, timeout=180,
        env=shared_graph))
    _assert_same(got, want)


def _writer_depth(topic: str) -> int:
    """The history depth of replay's publisher of ``topic``."""
    from gaze4hri_acq.replay import publisher_qos

    return publisher_qos(topic).depth


def test_cli_replay_at_speed_delivers_the_last_samples_of_every_topic(short_session, shared_graph):
    """At 20x the subscriber falls behind (keep-last publishers then replace samples it has not
    acknowledged yet: beyond their depth the middle is not promised), but the last ``depth`` samples of every
    topic stay in the publisher until acknowledged: the process must not end before. Before
    the fix, the end of the stream was lost (38 of the last 38 /robot/tcp_pose at 5x)."""
    trials = ["illum010_P1", "mutual_v_fast"]
    want, types = recorded_counts(short_session, trials)
    tails: dict[str, list[bytes]] = {t: [] for t in types}
    for tid in trials:
        with Reader(bag_dir(short_session, tid)) as r:
            for c, _t, raw in r.messages():
                tails[c.topic].append(_digest(raw))
    listener = Listener(types)
    try:
        p = subprocess.run([*CLI, "replay", str(short_session), "--rate", "20", "--quiet",
                            *[a for t in trials for a in ("--trial", t)], "--wait-for-subscribers"],
                           capture_output=True, text=True, timeout=180, env=shared_graph)
        assert p.returncode == 0, p.stderr[-2000:]
        listener.settle(want, patience_s=5.0)
        with listener._lock:
            got = {t: set(d) for t, d in listener.digests.items()}
    finally:
        listener.close()
    lost = {}
    for topic, seq in tails.items():
        last = seq[-_writer_depth(topic) :]
        n = sum(d not in got[topic] for d in last)
        if n:
            lost[topic] = f"{n} of the last {len(last)}"
    assert not lost, f"the end of the replay did not reach the subscriber: {lost}"
