"""The bag reader through the MCAP indexes (data/backends/mcap_index.py): the same
messages, bytes and order as rosbags' reader, on the recorder's uncompressed chunks and on
compressed, out-of-order chunks; rosbags takes over where the indexes cannot be checked; a
damaged record is a one-line error."""
from __future__ import annotations

import shutil

import pytest
from gaze4hri_bench.data.backends.bag import open_bag
from gaze4hri_core.errors import SessionError
from mcap.reader import make_reader
from mcap.writer import CompressionType, IndexType, Writer

pytestmark = pytest.mark.replay


def _both(bag):
    """Every message of every topic, through the indexes and through rosbags."""
    with open_bag(bag) as b:
        assert b.index is not None, "the indexed path was not taken"
        topics = sorted(b.conns)
        indexed = list(b.messages_of(topics))
        per_topic = {t: list(b.messages(t)) for t in topics}
    with open_bag(bag) as b:
        b.index = None
        b._open_rosbags()
        plain = list(b.messages_of(topics))
    return indexed, plain, per_topic


def _rewrite(src_bag, dst_bag, compression=CompressionType.NONE, statistics=True, shuffle=False):
    """A copy of a bag whose MCAP file is rewritten by the ``mcap`` library: small chunks,
    the given compression, with or without statistics; ``shuffle`` reverses each run of 5 messages (log
    times out of order inside and across chunks)."""
    shutil.copytree(src_bag, dst_bag)
    (mcap_file,) = dst_bag.glob("*.mcap")
    with open(src_bag / mcap_file.name, "rb") as f:
        r = make_reader(f)
        summary = r.get_summary()
        msgs = [(ch.id, m.log_time, m.publish_time, m.data) for _s, ch, m in r.iter_messages(log_time_order=False)]
    if shuffle:
        msgs = [m for i in range(0, len(msgs), 5) for m in reversed(msgs[i:i + 5])]
    with open(mcap_file, "wb") as out:
        w = Writer(out, chunk_size=4096, compression=compression, index_types=IndexType.ALL, use_statistics=statistics)
        w.start(profile="ros2", library="test")
        sid = {k: w.register_schema(s.name, s.encoding, s.data) for k, s in summary.schemas.items()}
        cid = {k: w.register_channel(c.topic, c.message_encoding, sid[c.schema_id], c.metadata)
               for k, c in summary.channels.items()}
        for seq, (c, t, p, data) in enumerate(msgs):
            w.add_message(cid[c], t, data, p, sequence=seq)
        w.finish()
    return dst_bag


def _bags(sessions):
    return sorted(p for p in sessions.glob("*/bags/*") if p.is_dir())


def test_the_indexes_give_rosbags_messages_in_rosbags_order(sessions):
    n = 0
    for bag in _bags(sessions):
        indexed, plain, per_topic = _both(bag)
        assert indexed == plain and len(plain) > 0
        for t, got in per_topic.items():
            assert got == [(tl, raw) for topic, tl, raw in plain if topic == t]
        n += len(plain)
    assert n > 1000


@pytest.mark.parametrize(("compression", "name"),
                         [(CompressionType.LZ4, "lz4"), (CompressionType.ZSTD, "zstd"), (CompressionType.NONE, "")])
def test_compressed_and_out_of_order_chunks_read_as_rosbags_reads_them(sessions, tmp_path, compression, name):
    bag = _rewrite(_bags(sessions)[0], tmp_path / "bag", compression, shuffle=True)
    with open(next(bag.glob("*.mcap")), "rb") as f:
        s = make_reader(f).get_summary()
    assert len(s.chunk_indexes) > 20 and {c.compression for c in s.chunk_indexes} == {name}
    indexed, plain, _ = _both(bag)
    times = [t for _topic, t, _raw in plain]
    assert indexed == plain and times == sorted(times)


def test_without_statistics_rosbags_reads_the_bag(sessions, tmp_path):
    """No per-channel counts to check the indexes against: rosbags reads the bag."""
    src = _bags(sessions)[0]
    bag = _rewrite(src, tmp_path / "bag", statistics=False)
    with open_bag(bag) as b:
        got = list(b.messages_of(sorted(b.conns)))
        assert b.index is None and b.reader is not None  # fell back
    _indexed, plain, _ = _both(src)
    assert [(t, tl) for t, tl, _r in got] == [(t, tl) for t, tl, _r in plain]


def test_a_damaged_message_record_is_a_one_line_error(sessions, tmp_path):
    bag = tmp_path / "bag"
    shutil.copytree(_bags(sessions)[0], bag)
    with open_bag(bag) as b:
        ix = b.index[0]
        (_t, chunk, off, _c), *_ = ix.entries(sorted(b.conns))
        recs, base = ix._records(chunk)
        at = base + off
    mcap_file = next(bag.glob("*.mcap"))
    data = bytearray(mcap_file.read_bytes())
    data[at] = 0x42  # not a Message opcode
    mcap_file.write_bytes(bytes(data))
    with open_bag(bag) as b, pytest.raises(SessionError) as e:
        list(b.messages_of(sorted(b.conns)))
    msg = str(e.value)
    assert "\n" not in msg and "corrupt or truncated" in msg and str(bag) in msg and "no message record" in msg


def test_indexes_that_disagree_with_the_statistics_hand_over_to_rosbags(sessions):
    """A channel whose message indexes list fewer messages than its recorded count: the
    indexes are not trusted and rosbags reads the bag (the same messages as before)."""
    bag = _bags(sessions)[0]
    _indexed, plain, _ = _both(bag)
    with open_bag(bag) as b:
        counts = b.index[0]._summary.statistics.channel_message_counts
        cid = next(iter(counts))
        counts[cid] += 1
        got = list(b.messages_of(sorted(b.conns)))
        assert b.index is None and b.reader is not None
    assert got == plain
