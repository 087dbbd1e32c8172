"""rosbags' MCAP writer with the CRCs filled in, and the MCAP records the recorder and the
repair write themselves.

Integrity: rosbags' writer stores every CRC as 0 ("not computed", MCAP spec); the writer
here (``CrcMcapWriter``) stores the CRC-32 of each chunk's uncompressed records (spec
"Chunk"), of the data section (spec "Data End") and of the summary (spec "Footer"), so that
``check_bag`` (gaze4hri_core.mcap_crc), rosbags' and mcap's readers detect damaged bytes
instead of reading them as data. rosbags 0.11 internals used here (``Writer.storage``,
``McapWriter.close_chunk``, ``McapWriter.bio``) are pinned by requirements/ros.txt and
covered by tests/acq/test_bag.py.
"""
from __future__ import annotations

import struct
import zlib
from collections import defaultdict
from io import BytesIO

from rosbags.rosbag2.storage_mcap import Channel, McapWriter, PendingChunk

from .rosbag2_fields import with_distro

__all__ = ["MAGIC", "CrcFile", "CrcMcapWriter", "chunk_head", "message_index", "chunk_index", "empty_chunk"]

MAGIC = b"\x89MCAP0\r\n"


def empty_chunk() -> PendingChunk:
    """rosbags' pending chunk with nothing in it yet."""
    return PendingChunk(2**63 - 1, 0, BytesIO(), defaultdict(list))


def chunk_head(t0: int, t1: int, records: int, crc: int, compression: bytes, stored: int) -> bytes:
    """A Chunk record up to its payload (spec "Chunk"): opcode, length, message times, the
    uncompressed size and its CRC-32, the compression, then the payload's length."""
    head = struct.pack("<QQQI", t0, t1, records, crc) + struct.pack("<I", len(compression)) + compression
    head += struct.pack("<Q", stored)
    return b"\x06" + struct.pack("<Q", len(head) + stored) + head


def message_index(cid: int, entries) -> bytes:
    """A Message Index record (spec "Message Index"): one channel's (log time, offset) pairs."""
    rec = struct.pack("<HI", cid, 16 * len(entries)) + b"".join(struct.pack("<QQ", t, o) for t, o in entries)
    return b"\x07" + struct.pack("<Q", len(rec)) + rec


def chunk_index(t0: int, t1: int, start: int, length: int, offsets, index_len: int, compression: bytes,
                stored: int, records: int) -> BytesIO:
    """A Chunk Index record's body (spec "Chunk Index"), as rosbags keeps it until its
    summary: times, the chunk's place, its message indexes' offsets, sizes."""
    ci = BytesIO()
    ci.write(struct.pack("<QQQQ", t0, t1, start, length))
    ci.write(struct.pack("<I", 10 * len(offsets)) + b"".join(struct.pack("<HQ", c, o) for c, o in offsets))
    ci.write(struct.pack("<Q", index_len))
    ci.write(struct.pack("<I", len(compression)) + compression + struct.pack("<QQ", stored, records))
    return ci


class CrcFile:
    """The bag's file object, keeping the CRC-32 of every byte written through it (the
    data section CRC of the MCAP Data End record, mcap/writer.py's convention: from the
    leading magic on)."""

    def __init__(self, f, crc: int = 0):
        self._f, self.crc = f, crc

    def write(self, b) -> int:
        n = self._f.write(b)
        self.crc = zlib.crc32(b, self.crc)  # after the write: a refused write (ENOSPC) leaves a bag for repair_bag
        return n

    def __getattr__(self, name):
        return getattr(self._f, name)


class _Tail(BytesIO):
    """In-memory stand-in for the file while rosbags writes the summary, so that the
    Data End and Footer CRC fields can be filled in before the bytes reach the disk."""

    def __init__(self, base: int):
        super().__init__()
        self.base = base

    def tell(self) -> int:
        return self.base + super().tell()

    def close(self) -> None:  # rosbags closes its file at the end; the bytes are still needed
        pass


class CrcMcapWriter(McapWriter):
    """rosbags' McapWriter with the MCAP CRCs filled in (spec "Chunk", "Data End", "Footer").

    ``close_chunk`` writes the same records as rosbags' (chunk, message indexes, chunk
    index entry) with ``uncompressed_crc`` set; ``close`` lets rosbags lay out the summary
    in memory, then sets ``data_section_crc`` and ``summary_crc`` and writes it out."""

    def close_chunk(self) -> None:
        pending = self.chunk
        records = pending.bio.getvalue()
        compressed = self.compressor(records)
        comp = self.compression.encode()
        chunk_start = self.bio.tell()
        self.bio.write(chunk_head(pending.message_start_time, pending.message_end_time, len(records),
                                  zlib.crc32(records), comp, len(compressed)))
        self.bio.write(compressed)
        chunk_end = self.bio.tell()
        offsets = []
        for cid, msgs in pending.msgs.items():
            offsets.append((cid, self.bio.tell()))
            self.bio.write(message_index(cid, msgs))
        # the chunk index, written by close() into the summary
        self.chunks.append(chunk_index(pending.message_start_time, pending.message_end_time, chunk_start,
                                       chunk_end - chunk_start, offsets, self.bio.tell() - chunk_end, comp,
                                       len(compressed), len(records)))
        self.chunk = empty_chunk()

    def add_connection(self, connection, offered_qos_profiles: str) -> None:
        """rosbags' McapWriter.add_connection with ``topic_type_hash`` added to the channel's
        metadata, as rosbag2 writes it (mcap_storage.cpp:932-938)."""
        from rosbags.rosbag2.storage_mcap import write_channel, write_string

        meta = BytesIO()
        write_string(meta, "offered_qos_profiles")
        write_string(meta, offered_qos_profiles)
        write_string(meta, "topic_type_hash")
        write_string(meta, connection.digest)
        self.channels.append(Channel(connection.id, connection.msgtype, connection.topic,
                                     connection.ext.serialization_format, meta.getvalue()))
        self.channel_stats[connection.id] = 0
        write_channel(self.chunk.bio, self.channels[-1], self.schemas)

    def close(self, version: int, metadata: str) -> None:
        if self.chunk.bio.tell():
            self.close_chunk()
        out = self.bio
        tail = self.bio = _Tail(out.tell())
        super().close(version, with_distro(metadata))
        buf = bytearray(tail.getvalue())
        foot = len(buf) - 8 - 29  # footer record: opcode, length, summary_start, summary_offset_start, summary_crc
        (summary_start,) = struct.unpack_from("<Q", buf, foot + 9)
        data_end = summary_start - 13 - tail.base  # the Data End record right before the summary
        if buf[foot] != 0x02 or data_end < 0 or buf[data_end] != 0x0F:
            raise RuntimeError("unexpected MCAP summary layout from rosbags (requirements/ros.txt pins the version)")
        struct.pack_into("<I", buf, data_end + 9, zlib.crc32(memoryview(buf)[:data_end], out.crc))
        struct.pack_into("<I", buf, foot + 25, zlib.crc32(memoryview(buf)[summary_start - tail.base: foot + 25]))
        self.bio = out
        out.write(buf)
        out.close()
