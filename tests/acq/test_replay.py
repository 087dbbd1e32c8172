"""gaze4hri-acq replay: the recorded CDR goes out unchanged on the original topics,
paced by the bag's log times (--rate)."""
from __future__ import annotations

import time

import pytest

pytest.importorskip("rclpy")
import rclpy  # noqa: E402
from gaze4hri_acq.replay import replay_session  # noqa: E402
from gaze4hri_core.errors import SessionError  # noqa: E402
from gaze4hri_core.session import MSG_TYPES, Topics, bag_dir  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402

pytestmark = [pytest.mark.replay, pytest.mark.node]


def _cls(ty):
    import importlib

    pkg, _, name = ty.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


def test_replay_republishes_bytes_with_original_timing(short_session):
    ctx = Context()
    rclpy.init(context=ctx, args=[])
    node = rclpy.create_node("listener", context=ctx)
    got = []
    for topic in (Topics.IMAGE, Topics.TCP_POSE):
        node.create_subscription(
            _cls(MSG_TYPES[topic]), topic, lambda b, t=topic: got.append((t, time.monotonic(), bytes(b))), 500, raw=True
        )
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    import threading

    th = threading.Thread(target=ex.spin, daemon=True)
    th.start()
    try:
        time.sleep(0.3)
        t0 = time.monotonic()
        n = replay_session(short_session, trials=["illum010_P1"], rate=2.0, quiet=True, context=ctx)
        wall = time.monotonic() - t0
        time.sleep(0.5)
    finally:
        ex.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    with Reader(bag_dir(short_session, "illum010_P1")) as r:
        recorded = [bytes(raw) for c, _t, raw in r.messages() if c.topic == Topics.IMAGE]
        duration = r.duration / 1e9
        from gaze4hri_acq.replay import _installed

        count = sum(
            c.msgcount for c in r.connections if _installed(c.msgtype)
        )  # /tf without tf2_msgs: kept in the bag only
    assert n == count
    imgs = [b for t, _w, b in got if t == Topics.IMAGE]
    assert imgs == recorded  # unchanged bytes, in order
    assert duration / 2.0 * 0.8 <= wall <= duration / 2.0 + 2.0  # --rate 2: half the recorded span


def test_replay_unknown_trial_is_one_line(short_session):
    with pytest.raises(SessionError, match="did you mean illum010_P1"):
        replay_session(short_session, trials=["illum010_P9"], quiet=True)


@pytest.fixture(scope="module")
def last_bag_damaged(short_session, tmp_path_factory):
    """A copy of the short session whose last trial in protocol order has 64 flipped bits
    inside its chunks (seeded)."""
    import random
    import shutil

    from gaze4hri_acq.recorder.bag import mcap_file

    sd = tmp_path_factory.mktemp("last_damaged") / short_session.name
    shutil.copytree(short_session, sd)
    from gaze4hri_acq.replay import trial_bags

    bad = trial_bags(sd)[-1][0]
    f = mcap_file(bag_dir(sd, bad))
    b = bytearray(f.read_bytes())
    rng = random.Random(7)
    for _ in range(64):
        b[rng.randrange(int(len(b) * 0.3), int(len(b) * 0.7))] ^= 1 << rng.randrange(8)
    f.write_bytes(b)
    return sd, bad


def test_replay_checks_crcs_lazily_one_bag_ahead(last_bag_damaged, capsys):
    """The first trial plays before the last bag's CRCs are checked (before: every bag was
    checked up front, so this damaged last bag was named before the first message); played
    to the end, the damaged bag is named in one line and none of its messages go out."""
    from gaze4hri_acq.replay import trial_bags

    sd, bad = last_bag_damaged
    bags = trial_bags(sd)
    assert len(bags) >= 3 and bags[-1][0] == bad
    played: list[str] = []
    n = replay_session(sd, rate=1000.0, quiet=True, on_trial=played.append, max_messages=5)
    assert n == 5 and played == [bags[0][0]]
    assert bad not in capsys.readouterr().err  # the last bag is two ahead of the cursor: not checked yet

    played.clear()
    n = replay_session(sd, rate=1000.0, quiet=True, on_trial=played.append)
    err = capsys.readouterr().err
    named = [ln for ln in err.splitlines() if bad in ln or "damaged" in ln]  # (other notes, e.g. /tf's, may be there)
    assert played == [t for t, _b in bags[:-1]]
    assert len(named) == 1 and bad in named[0] and "chunk CRC mismatch at offset" in named[0], err
    from gaze4hri_acq.replay import _installed

    want = 0
    for _tid, b in bags[:-1]:
        with Reader(b) as r:
            want += sum(c.msgcount for c in r.connections if _installed(c.msgtype))
    assert n == want  # the good bags whole, nothing of the damaged one
