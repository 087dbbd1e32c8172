"""In-place repair of a bag whose writer died (SIGKILL, power, full disk).

Crash model: rosbags' MCAP writer emits a chunk whenever 1 MiB is pending; TrialBag also
closes the pending chunk and flushes the file every ``flush_interval_s`` so that low-rate
topics reach the disk too. A killed writer leaves a file with complete chunks then a torn
tail and no summary; ``repair_bag`` cuts the tail, appends the summary and writes
metadata.yaml, so the bag reads with rosbags, mcap, Foxglove and ``ros2 bag info`` as far
as it was written. Repair needs no free space beyond a few KiB (it never copies the data),
which matters after ENOSPC. It checks that metadata.yaml and the MCAP file agree (a bag
whose metadata names another file is rebuilt too).
"""
from __future__ import annotations

import os
import struct
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path

from gaze4hri_core.errors import SessionError
from gaze4hri_core.mcap_crc import data_crc_of, decompress
from rosbags.interfaces import Connection, ConnectionExtRosbag2, MessageDefinition, MessageDefinitionFormat
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.storage_mcap import Channel, Schema, get_qos

from .bag_files import FIX_DAMAGED, mcap_file, metadata_agrees
from .mcap_writer import MAGIC, CrcFile, CrcMcapWriter, chunk_index, empty_chunk, message_index
from .rosbag2_fields import set_ros_distro, type_hash

__all__ = ["RepairResult", "repair_bag"]


@dataclass
class RepairResult:
    bag_dir: Path
    repaired: bool  # False: the bag was complete already
    messages: int
    chunks: int
    cut_bytes: int


@dataclass
class _Chunk:
    """A complete chunk found in the file: its place, times, sizes, its messages' (log
    time, offset) per channel, and the message index records seen after it."""

    start: int
    length: int
    cs: int
    ce: int
    comp: str
    clen: int
    usize: int
    entries: dict[int, list[tuple[int, int]]]
    index_end: int
    index: dict[int, int] = field(default_factory=dict)


@dataclass
class _Scan:
    """What one walk over the file found up to its torn tail."""

    schemas: dict[int, Schema] = field(default_factory=dict)
    channels: dict[int, Channel] = field(default_factory=dict)
    chunks: list[_Chunk] = field(default_factory=list)
    good_end: int | None = None  # end of the last complete record kept


def _channel_metadata(b: bytes) -> dict[str, str]:
    """An MCAP channel's metadata map (spec "Channel": map<string, string>)."""
    out, off = {}, 0
    try:
        while off < len(b):
            k, off = _str(b, off)
            v, off = _str(b, off)
            out[k] = v
    except (struct.error, UnicodeDecodeError):
        pass
    return out


def _u(fmt: str, b: bytes, off: int):
    return struct.unpack_from(fmt, b, off)


def _str(b: bytes, off: int) -> tuple[str, int]:
    (n,) = _u("<I", b, off)
    return b[off + 4: off + 4 + n].decode(), off + 4 + n


def _decompress(data: bytes, compression: str, size: int) -> bytes:
    raw = decompress(data, compression)  # gaze4hri_core.mcap_crc: the one chunk decompressor
    if raw is None:
        raise SessionError(f"unsupported chunk compression {compression!r}", None, "use none, zstd or lz4")
    return raw


def _complete_chunk_follows(buf: bytes, off: int) -> bool:
    """Whether a complete Chunk record follows ``off`` (past message indexes and other records)."""
    while off + 9 <= len(buf):
        (ln,) = _u("<Q", buf, off + 1)
        if off + 9 + ln > len(buf):
            return False
        if buf[off] == 0x06:
            return True
        off += 9 + ln
    return False


def repair_bag(bag_dir: Path) -> RepairResult:
    """Make an interrupted bag readable as far as it was written (idempotent).

    Complete means: the MCAP file ends with its footer magic *and* metadata.yaml names
    exactly the MCAP files present. Otherwise the summary and metadata are rebuilt from
    the complete chunks; a file still under rosbags' name is first given rosbag2's name,
    so the metadata written afterwards names the file as it stays.
    """
    bag_dir = Path(bag_dir)
    path = mcap_file(bag_dir)
    if path is None:
        raise SessionError("no MCAP file in bag directory", str(bag_dir),
                           "the trial wrote nothing; redo it with --redo")
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:8] != MAGIC:
        raise SessionError("not an MCAP file (bad magic)", str(path), "redo the trial with --redo")
    if len(buf) >= 45 and buf[-8:] == MAGIC and metadata_agrees(bag_dir):
        return RepairResult(bag_dir, False, -1, -1, 0)
    if path.name == f"{bag_dir.name}.mcap":
        final = bag_dir / f"{bag_dir.name}_0.mcap"
        os.replace(path, final)  # before metadata exists for it: metadata below names the final file
        path = final
    (bag_dir / "metadata.yaml").unlink(missing_ok=True)  # stale or wrong: rebuilt below
    scan = _scan(buf, path)
    if scan.good_end is None:
        raise SessionError("bag holds no complete record", str(path), "redo the trial with --redo")
    cut = len(buf) - scan.good_end
    del buf
    f = open(path, "r+b")  # noqa: SIM115 - handed to McapWriter, closed by its close()
    good_end = _cut_tail(f, scan)
    chunk_recs, stats, t_min, t_max = _chunk_indexes(scan.chunks)
    _write_summary(bag_dir, path, f, good_end, scan, chunk_recs, stats, (t_min, t_max))
    try:
        set_ros_distro(bag_dir)
    except OSError:
        pass  # no room for the rewrite: the bag reads the same with rosbags' placeholder distro
    return RepairResult(bag_dir, True, sum(stats.values()), len(chunk_recs), cut)


def _scan(buf: bytes, path: Path) -> _Scan:
    """Walk the records after the magic up to the torn tail (a torn record, a chunk that
    does not decompress or whose CRC fails at the end) or the Data End record."""
    scan = _Scan()
    off = 8
    while off + 9 <= len(buf):
        op = buf[off]
        (ln,) = _u("<Q", buf, off + 1)
        end = off + 9 + ln
        if end > len(buf):
            break  # torn record: the tail repair cuts
        body = buf[off + 9: end]
        if op == 0x06:  # chunk
            chunk = _read_chunk(buf, off, end, body, path, scan)
            if chunk is None:
                break
            scan.chunks.append(chunk)
            scan.good_end = end
        elif op == 0x07 and scan.chunks:  # message index of the previous chunk
            (cid,) = _u("<H", body, 0)
            scan.chunks[-1].index[cid] = off
            scan.chunks[-1].index_end = end
            scan.good_end = end
        elif op == 0x0F:  # data end: everything before it is complete
            break
        else:
            scan.good_end = end
        off = end
    return scan


def _read_chunk(buf: bytes, off: int, end: int, body: bytes, path: Path, scan: _Scan) -> _Chunk | None:
    """The chunk record at ``off`` (``body`` its content), or None when it is the torn end;
    a damaged chunk with a complete one after it is an error, not a tail to cut."""
    cs, ce, usize, crc = _u("<QQQI", body, 0)
    comp, p = _str(body, 28)
    (clen,) = _u("<Q", body, p)
    try:
        raw = _decompress(body[p + 8: p + 8 + clen], comp, usize)
    except Exception:  # a chunk that does not decompress is the torn end
        return None
    if crc and zlib.crc32(raw) != crc:
        if _complete_chunk_follows(buf, end):  # damaged in the middle, not torn at the end
            raise SessionError(f"chunk CRC mismatch at offset {off}", str(path), FIX_DAMAGED)
        return None  # the last chunk, damaged by the crash: the torn end
    entries = _chunk_records(raw, scan)
    return _Chunk(start=off, length=end - off, cs=cs, ce=ce, comp=comp, clen=clen, usize=usize, entries=entries,
                  index_end=end)


def _chunk_records(raw: bytes, scan: _Scan) -> dict[int, list[tuple[int, int]]]:
    """The records inside a chunk: schemas and channels into ``scan``; returns the
    messages' (log time, offset in the chunk) per channel."""
    q = 0
    entries: dict[int, list[tuple[int, int]]] = defaultdict(list)
    while q + 9 <= len(raw):
        rop = raw[q]
        (rln,) = _u("<Q", raw, q + 1)
        rb = raw[q + 9: q + 9 + rln]
        if rop == 0x03:
            (sid,) = _u("<H", rb, 0)
            name, r = _str(rb, 2)
            enc, r = _str(rb, r)
            data, _ = _str(rb, r)
            scan.schemas[sid] = Schema(sid, name, enc, data)
        elif rop == 0x04:
            cid, sid = _u("<HH", rb, 0)
            topic, r = _str(rb, 4)
            menc, r = _str(rb, r)
            (mlen,) = _u("<I", rb, r)
            scan.channels[cid] = Channel(cid, scan.schemas[sid].name, topic, menc, rb[r + 4: r + 4 + mlen])
        elif rop == 0x05:
            cid, _seq, lt = _u("<HIQ", rb, 0)
            entries[cid].append((lt, q))
        q += 9 + rln
    return entries


def _cut_tail(f, scan: _Scan) -> int:
    """Truncate the file after the last complete record; the last chunk's message index,
    when torn, is rewritten after the chunk. Returns the new end of the data."""
    good_end = scan.good_end
    if scan.chunks and set(scan.chunks[-1].index) != set(scan.chunks[-1].entries):
        c = scan.chunks[-1]
        good_end = c.start + c.length
        f.seek(good_end)
        f.truncate()
        c.index = {}
        for cid, ent in sorted(c.entries.items()):
            c.index[cid] = f.tell()
            f.write(message_index(cid, ent))
        c.index_end = good_end = f.tell()
    f.seek(good_end)
    f.truncate()
    return good_end


def _chunk_indexes(chunks: list[_Chunk]) -> tuple[list[BytesIO], dict[int, int], int, int]:
    """The summary's chunk index records, the message count per channel and the time span."""
    chunk_recs: list[BytesIO] = []
    stats: dict[int, int] = defaultdict(int)
    t_min, t_max = 2**63 - 1, 0
    for c in chunks:
        chunk_recs.append(chunk_index(c.cs, c.ce, c.start, c.length, sorted(c.index.items()),
                                      c.index_end - (c.start + c.length), c.comp.encode(), c.clen, c.usize))
        for cid, ent in c.entries.items():
            stats[cid] += len(ent)
        if c.entries:
            t_min, t_max = min(t_min, c.cs), max(t_max, c.ce)
    return chunk_recs, stats, t_min, t_max


def _write_summary(bag_dir: Path, path: Path, f, good_end: int, scan: _Scan, chunk_recs: list[BytesIO],
                   stats: dict[int, int], span: tuple[int, int]) -> None:
    """Append the summary and footer after the kept data and write metadata.yaml, through
    rosbags' Writer over a CRC writer set up with what the scan found."""
    t_min, t_max = span
    w = Writer(bag_dir / ".repair-placeholder", version=9, storage_plugin=StoragePlugin.MCAP)
    w.path, w.metapath = bag_dir, bag_dir / "metadata.yaml"
    st = CrcMcapWriter.__new__(CrcMcapWriter)
    st.path = path
    st.bio = CrcFile(f, data_crc_of(f, good_end))  # the kept data section, re-read once (already in the page cache)
    st.schemas = sorted(scan.schemas.values(), key=lambda s: s.id)
    st.channels = sorted(scan.channels.values(), key=lambda c: c.id)
    st.chunks = chunk_recs
    st.chunk = empty_chunk()
    st.compression, st.compressor = "", (lambda x: x)
    st.message_start_time, st.message_end_time = t_min, t_max
    st.channel_stats = {c.id: stats.get(c.id, 0) for c in st.channels}
    for c in st.channels:
        w.connections.append(_connection(c, st.schemas, w))
        w.counts[c.id] = stats.get(c.id, 0)
    if sum(stats.values()):
        w.min_timestamp, w.max_timestamp = t_min, t_max
    else:
        w.min_timestamp = w.max_timestamp = 0
    w.storage = st
    try:
        w.close()
    except OSError as e:
        raise SessionError(f"cannot finish the repaired bag ({os.strerror(e.errno or 0)})", str(path),
                           "free some disk space and run 'gaze4hri-acq session --resume' again") from None


_FORMATS = {"ros2msg": MessageDefinitionFormat.MSG, "ros2idl": MessageDefinitionFormat.IDL}


def _connection(c: Channel, schemas: list[Schema], w: Writer) -> Connection:
    """rosbags' Connection for a channel found in the file, with the type hash and offered
    QoS the channel recorded (a hash computed here when it recorded none)."""
    sc = next(s for s in schemas if s.name == c.schema)
    meta = _channel_metadata(c.metadata)  # what the channel recorded: hash and offered QoS
    digest = meta.get("topic_type_hash", "")
    if not digest:
        try:
            digest = type_hash(c.schema)
        except Exception:  # a type this typestore does not know keeps no hash
            digest = ""
    try:
        offered = get_qos(c.metadata)
    except Exception:  # unreadable QoS YAML: the bag stays readable without it
        offered = []
    msgdef = MessageDefinition(_FORMATS.get(sc.encoding, MessageDefinitionFormat.MSG), sc.data)
    ext = ConnectionExtRosbag2(serialization_format=c.message_encoding, offered_qos_profiles=offered)
    return Connection(id=c.id, topic=c.topic, msgtype=c.schema, msgdef=msgdef, digest=digest, msgcount=0, ext=ext,
                      owner=w)
