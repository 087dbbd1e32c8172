"""Replay delivers the tail (issue 31): a subscriber that listens from the start to the
end of ``gaze4hri-acq replay`` (another process, over DDS) receives every recorded
message of every topic; before, the process ended before its last samples left
(6 of 1,307 /robot/tcp_pose, 21 of 4,442 /tf, 5 of 1,304 /joint_states missing)."""
from __future__ import annotations

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

pytestmark = [pytest.mark.replay, pytest.mark.node]

CLI = [sys.executable, "-m", "gaze4hri_acq.cli"]
#: how long the subscriber may still take the samples the replay's exit left acknowledged
#: (received by its reader, not yet taken by its executor): a bound for the test, not a pace
TAKE_PATIENCE_S = 20.0


def _cls(ty):
    import importlib

    pkg, _, name = ty.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


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
        self._lock = threading.Lock()
        for topic, ty in types.items():
            durable = DurabilityPolicy.TRANSIENT_LOCAL if topic == "/tf_static" else DurabilityPolicy.VOLATILE
            qos = QoSProfile(depth=1, history=HistoryPolicy.KEEP_ALL, reliability=ReliabilityPolicy.RELIABLE,
                             durability=durable)
            self.node.create_subscription(_cls(ty), topic, lambda _b, t=topic: self._count(t), qos, raw=True)
        self.ex = SingleThreadedExecutor(context=self.ctx)
        self.ex.add_node(self.node)
        self.th = threading.Thread(target=self.ex.spin, daemon=True)
        self.th.start()

    def _count(self, topic: str) -> None:
        with self._lock:
            self.got[topic] += 1

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
    monkeypatch.setenv("ROS_DOMAIN_ID", str(30 + os.getpid() % 70))
    return {**os.environ, "PYTHONUNBUFFERED": "1"}


def test_cli_replay_delivers_every_message_of_every_topic(short_session, shared_graph):
    trials = ["illum010_P1", "mutual_v_fast"]
    want, types = recorded_counts(short_session, trials)
    listener = Listener(types)
    try:
        time.sleep(1.0)  # discovery of the listener's subscriptions is on the replay's side (it waits for none)
        p = subprocess.run([*CLI, "replay", str(short_session), "--rate", "1", "--quiet",
                            *[a for t in trials for a in ("--trial", t)],
                            "--ros-args", "-p", "wait_for_subscribers:=true"],
                           capture_output=True, text=True, timeout=180, env=shared_graph)
        assert p.returncode == 0, p.stderr
        got = listener.settle(want)
    finally:
        listener.close()
    missing = {t: f"{got[t]} of {n}" for t, n in want.items() if got[t] != n}
    assert not missing, f"subscriber counts differ from the bags: {missing}"
