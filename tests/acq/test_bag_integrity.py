"""Recorded data integrity (issue 20): the recorder's MCAP CRCs are written and every
reader catches flipped bytes (the project's check, rosbags, mcap); a damaged trial is
named in one line and skipped by replay and by ``gaze4hri-bench run``, which writes the
other trials' results and exits 1; and every recorded topic, /joint_states included,
decodes with rosbags (rclpy's CDR of an empty float64 sequence used to be 4 bytes long)."""
from __future__ import annotations

import random
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")
from gaze4hri_acq.recorder.bag import TrialBag, check_bag, mcap_file, repair_bag  # noqa: E402
from gaze4hri_core.errors import SessionError  # noqa: E402
from mcap.reader import NonSeekingReader, make_reader  # noqa: E402
from mcap.stream_reader import StreamReader  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402

TOPICS = {"/robot/tcp_pose": "geometry_msgs/msg/PoseStamped", "/camera/color/image_raw": "sensor_msgs/msg/Image"}


def _bag(root: Path, compression: str = "none", frames: int = 6, **kw) -> TrialBag:
    """A small bag: poses at 100 Hz, 400x300 frames (several chunks with flush_interval_s=0)."""
    from gaze4hri_acq.nodes._cdr import encode_image
    from geometry_msgs.msg import PoseStamped
    from rclpy.serialization import serialize_message

    b = TrialBag(root / "trial", TOPICS, compression=compression, **kw)
    pose = serialize_message(PoseStamped())
    for i in range(frames * 10):
        b.write("/robot/tcp_pose", i * 10_000_000, pose)
        if i % 10 == 0:
            b.write(
                "/camera/color/image_raw",
                i * 10_000_000,
                encode_image(i * 10_000_000, "cam", np.full((300, 400, 3), i, np.uint8)),
            )
            b.flush()
    return b


def _flip(path: Path, n: int, seed: int, lo: float = 0.0, hi: float = 1.0) -> None:
    """Flip one bit in each of ``n`` seeded byte positions between fractions lo and hi of the file."""
    b = bytearray(path.read_bytes())
    rng = random.Random(seed)
    for _ in range(n):
        i = rng.randrange(int(len(b) * lo), int(len(b) * hi))
        b[i] ^= 1 << rng.randrange(8)
    path.write_bytes(b)


def _readers_fail(bag: Path) -> dict[str, bool]:
    """Which readers refuse the bag: ours, rosbags (chunk CRCs), mcap seeking and streaming (validate_crcs)."""
    f = mcap_file(bag)
    out = {"check_bag": bool(check_bag(bag))}
    for name, read in (
        ("rosbags", lambda: [None for _ in Reader(bag).__enter__().messages()]),
        ("mcap", lambda: [None for _ in make_reader(open(f, "rb"), validate_crcs=True).iter_messages()]),
        ("mcap_stream", lambda: [None for _ in NonSeekingReader(open(f, "rb"), validate_crcs=True).iter_messages()]),
    ):
        try:
            read()
            out[name] = False
        except Exception:
            out[name] = True
    return out


@pytest.mark.unit
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_crcs_are_written_and_64_flipped_bytes_are_caught_by_every_reader(tmp_path, compression):
    b = _bag(tmp_path, compression)
    b.close()
    f = mcap_file(b.bag_dir)
    with open(f, "rb") as fh:
        recs = list(StreamReader(fh, validate_crcs=True, emit_chunks=True).records)
    chunks = [r for r in recs if type(r).__name__ == "Chunk"]
    data_end = next(r for r in recs if type(r).__name__ == "DataEnd")
    footer = next(r for r in recs if type(r).__name__ == "Footer")
    assert len(chunks) >= 6 and all(c.uncompressed_crc for c in chunks)
    assert data_end.data_section_crc and footer.summary_crc
    assert check_bag(b.bag_dir) == [] and not any(_readers_fail(b.bag_dir).values())
    _flip(f, 64, seed=20, lo=0.2, hi=0.8)  # inside the chunks
    assert _readers_fail(b.bag_dir) == {"check_bag": True, "rosbags": True, "mcap": True, "mcap_stream": True}
    assert check_bag(b.bag_dir)[0].kind == "chunk CRC mismatch"


@pytest.mark.unit
def test_an_intact_bag_is_checked_in_one_pass_and_a_damaged_one_is_walked(tmp_path, monkeypatch):
    """An intact bag: the data-section and summary CRCs alone (no chunk decompressed); a
    damaged one: every chunk walked, and the damaged chunk named with its offset."""
    import gaze4hri_core.mcap_crc as mc

    b = _bag(tmp_path, "zstd")
    b.close()
    f = mcap_file(b.bag_dir)
    calls = []
    real = mc.decompress
    monkeypatch.setattr(mc, "decompress", lambda data, comp: calls.append(comp) or real(data, comp))
    assert mc.check_mcap(f) == [] and calls == []
    _flip(f, 64, seed=20, lo=0.2, hi=0.8)  # inside the chunks
    kinds = [d.kind for d in mc.check_mcap(f)]
    assert "zstd" in calls and kinds[0] == "chunk CRC mismatch"


@pytest.mark.unit
def test_one_flipped_bit_anywhere_is_caught_by_the_check(tmp_path):
    b = _bag(tmp_path, frames=2)
    b.close()
    f = mcap_file(b.bag_dir)
    good = f.read_bytes()
    missed = []
    for seed in range(40):  # headers, chunks, message indexes, summary, footer
        _flip(f, 1, seed, hi=(len(good) - 8) / len(good))  # (a damaged trailing magic reads as an interrupted bag)
        if not check_bag(b.bag_dir):
            missed.append(seed)
        f.write_bytes(good)
    assert missed == []


@pytest.mark.unit
def test_a_repaired_bag_carries_valid_crcs(tmp_path):
    b = _bag(tmp_path, frames=2, fail_after_bytes=1_500_000)
    with pytest.raises(OSError):
        for _ in range(4):
            b.write("/camera/color/image_raw", 10**9, b"\0" * 400_000)
    b.abort_and_repair()
    assert check_bag(b.bag_dir) == [] and not any(_readers_fail(b.bag_dir).values())


@pytest.mark.unit
def test_repair_refuses_a_bag_damaged_in_the_middle(tmp_path):
    b = _bag(tmp_path)
    b.flush()  # killed: complete chunks, no summary
    f = mcap_file(b.bag_dir)
    _flip(f, 1, seed=3, lo=0.3, hi=0.5)
    with pytest.raises(SessionError, match=r"chunk CRC mismatch at offset \d+ .*--redo"):
        repair_bag(b.bag_dir)


# -- /joint_states and every recorded topic ------------------------------------------------
@pytest.mark.unit
@pytest.mark.parametrize(
    "fields",
    [
        dict(position=[1.0, 2.0], velocity=[0.1, 0.2]),
        dict(),
        dict(effort=[3.0, 4.0]),
        dict(position=[1.0, 2.0], velocity=[], effort=[0.5, 0.5]),
    ],
)
def test_joint_state_bytes_are_exact_cdr(fields):
    from gaze4hri_acq.nodes._cdr import serialize
    from gaze4hri_bench.data.backends.session import typestore
    from rclpy.serialization import deserialize_message
    from sensor_msgs.msg import JointState

    m = JointState(name=["shoulder_pan_joint", "elbow_joint"], **fields)
    m.header.frame_id = "base"
    m.header.stamp.sec, m.header.stamp.nanosec = 12, 34
    raw = serialize(m)
    assert deserialize_message(raw, JointState) == m
    ts = typestore()
    back = ts.deserialize_cdr(raw, "sensor_msgs/msg/JointState")
    assert (
        list(back.name) == list(m.name)
        and list(back.position) == list(m.position)
        and list(back.effort) == list(m.effort)
    )
    assert len(ts.serialize_cdr(back, "sensor_msgs/msg/JointState")) == len(
        raw
    )  # rosbags writes as many bytes (rclpy pads with garbage)


@pytest.mark.replay
@pytest.mark.node
def test_every_topic_of_a_recorded_session_decodes_with_rosbags(short_session):
    from gaze4hri_bench.data.backends.session import open_bag
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    bags = sorted(p for p in (short_session / "bags").iterdir() if p.is_dir())
    seen: dict[str, int] = {}
    for bag in bags:
        assert check_bag(bag) == []
        with AnyReader([bag], default_typestore=get_typestore(Stores.ROS2_KILTED)) as r, open_bag(bag) as ours:
            for c, _t, raw in r.messages():
                if c.topic != "/camera/color/image_raw" or seen.get(c.topic, 0) < 20:  # (images: the first 20 suffice)
                    r.deserialize(raw, c.msgtype)  # raises on any size mismatch
                if c.topic in ours.conns and c.topic == "/joint_states":
                    assert len(ours.decode(raw, c.topic).position) == 6
                seen[c.topic] = seen.get(c.topic, 0) + 1
    assert seen.get("/joint_states", 0) > 50 and seen.get("/camera/color/image_raw", 0) > 10


# -- a damaged trial: named, skipped, the others go on ---------------------------------------
@pytest.fixture(scope="module")
def damaged_session(short_session, tmp_path_factory) -> tuple[Path, str]:
    root = tmp_path_factory.mktemp("damaged")
    shutil.copytree(short_session, root / short_session.name)
    sd = root / short_session.name
    trial = "conflict_left_H1"
    _flip(mcap_file(sd / "bags" / trial), 64, seed=7, lo=0.3, hi=0.7)
    return sd, trial


@pytest.mark.replay
@pytest.mark.node
def test_bench_run_names_the_damaged_trial_and_writes_the_others(damaged_session, tmp_path, capsys):
    import pandas as pd
    from gaze4hri_bench.cli import main as bench

    sd, bad = damaged_session
    out = tmp_path / "res"
    rc = bench(
        ["run", "-m", "straight", "--data", str(sd.parent), "--out", str(out), "--no-progress", "--blinks", "off"]
    )
    text = capsys.readouterr().out
    assert rc == 1
    lines = [ln for ln in text.splitlines() if "chunk CRC mismatch at offset" in ln]
    assert lines and all(bad in ln and str(sd / "bags" / bad) in ln and f"--redo {bad}" in ln for ln in lines)
    out_lines = text.rstrip().splitlines()
    summary = max(i for i, ln in enumerate(out_lines) if "results file(s) in" in ln)  # then the next command
    assert out_lines[summary - 1].strip().startswith(f"skipped S01/{bad}")  # listed again at the end
    df = pd.read_parquet(next(out.glob("*.parquet")))
    assert set(df["trial"]) == {"illum010_P1", "mutual_v_fast"}


@pytest.mark.replay
@pytest.mark.node
def test_replay_skips_a_damaged_trial_in_one_line(damaged_session, capsys):
    from gaze4hri_acq.replay import replay_session

    sd, bad = damaged_session
    played = []
    n = replay_session(sd, rate=1000.0, quiet=True, on_trial=played.append, max_messages=10**6)
    err = capsys.readouterr().err.strip().splitlines()
    assert n > 0 and bad not in played and len(played) == 2
    assert len([ln for ln in err if bad in ln]) == 1 and "chunk CRC mismatch at offset" in err[0]
    with pytest.raises(SessionError, match="chunk CRC mismatch"):
        replay_session(sd, trials=[bad], quiet=True)


def test_the_fast_crc_is_zlibs_crc32():
    """mcap_crc's streaming pass uses ISA-L's CRC-32 where python-isal is installed (the
    benchmark's dependency): the same function as zlib's, chained values included."""
    import os
    import zlib

    from gaze4hri_core import mcap_crc

    data = os.urandom(3 << 20)
    assert mcap_crc._crc32(data[1000:], mcap_crc._crc32(data[:1000])) == zlib.crc32(data)
    try:
        import isal  # noqa: F401
    except ImportError:
        assert mcap_crc._crc32 is zlib.crc32
    else:
        assert mcap_crc._crc32 is not zlib.crc32
