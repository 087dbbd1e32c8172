"""Messages of chosen topics read straight from their offsets in an MCAP file, through
the file's own indexes (MCAP spec, "Summary Section": Chunk Index, Message Index).

Why: rosbags' reader walks every record of every chunk, copies each one twice and checks
each chunk's CRC, so reading the small pose streams of a trial cost as much as reading
its images (~1 ms per frame at 640x360, twice per trial: scan, then frames). Here the
summary is parsed by the ``mcap`` library; the message indexes give each wanted
message's offset, and only those bytes are read (a memory map: one copy per message).
The listing has already checked the file's CRCs (bag.bag_damage). The order is rosbags'
(log time, then chunk, then place in the chunk), so the two readers yield the same
messages in the same order (tests/bench/data/test_mcap_index.py).

``McapIndex.open`` returns None where the file has no summary or no statistics, and
``entries`` returns None where a channel's indexed count differs from its recorded count:
the caller then reads with rosbags.
"""
from __future__ import annotations

import mmap
import struct
from pathlib import Path

import numpy as np
from gaze4hri_core.mcap_crc import decompress

__all__ = ["McapIndex"]

_OP_MESSAGE_INDEX, _OP_MESSAGE = 0x07, 0x05
#: Chunk record before its records: opcode, length, start and end time, uncompressed size,
#: CRC, compression string length (spec "Chunk"); then the compression name and records length
_CHUNK_HEAD = 1 + 8 + 8 + 8 + 8 + 4 + 4
#: Message record before its data: opcode, length, channel id, sequence, log and publish time
_MESSAGE_HEAD = 1 + 8 + 2 + 4 + 8 + 8


class McapIndex:
    """One MCAP file's channels by topic, and its messages of chosen topics by offset."""

    def __init__(self, path: Path, mm: mmap.mmap, summary) -> None:
        self.path, self._mm, self._summary = path, mm, summary
        self.topic_of = {cid: ch.topic for cid, ch in summary.channels.items()}
        self.topics: dict[str, list[int]] = {}
        for cid, topic in self.topic_of.items():
            self.topics.setdefault(topic, []).append(cid)
        self._chunks: dict[int, tuple] = {}  # chunk start -> (buffer of its records, where they start)
        self._unpacked: int | None = None  # the one compressed chunk kept decompressed

    @classmethod
    def open(cls, path: Path) -> McapIndex | None:
        """The index of ``path``; None when the file has no usable summary (an unfinished
        recording, a writer without message indexes or statistics)."""
        from mcap.reader import make_reader

        with open(path, "rb") as f:
            try:
                summary = make_reader(f).get_summary()
            except Exception:  # any malformed footer or summary: rosbags reports it
                return None
            if summary is None or summary.statistics is None or not summary.chunk_indexes:
                return None
            if f.seek(0, 2) == 0:
                return None
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return cls(Path(path), mm, summary)

    def close(self) -> None:
        self._chunks.clear()
        try:
            self._mm.close()
        except BufferError:  # a view still alive somewhere: the map goes with it
            pass

    def entries(self, topics: list[str]) -> list[tuple[int, int, int, int]] | None:
        """(log time, chunk start, offset in chunk, channel id) of every message of
        ``topics``; None when a channel's indexed count differs from the statistics."""
        wanted = [c for t in topics for c in self.topics.get(t, [])]
        counts = self._summary.statistics.channel_message_counts
        out: list[tuple[int, int, int, int]] = []
        for cid in wanted:
            n = 0
            for ci in self._summary.chunk_indexes:
                off = ci.message_index_offsets.get(cid)
                if off is None:
                    continue
                pairs = self._message_index(off, cid)
                if pairs is None:
                    return None
                n += len(pairs)
                out.extend((t, ci.chunk_start_offset, o, cid) for t, o in pairs)
            if n != counts.get(cid, 0):
                return None
        out.sort()
        return out

    def _message_index(self, off: int, cid: int) -> list[list[int]] | None:
        """The (log time, offset) pairs of one Message Index record (spec "Message Index"),
        as lists (no array left holding the memory map open)."""
        mm = self._mm
        if off + 15 > len(mm) or mm[off] != _OP_MESSAGE_INDEX:
            return None
        ln, ch, nbytes = struct.unpack_from("<QHI", mm, off + 1)
        if ch != cid or nbytes % 16 or 2 + 4 + nbytes > ln or off + 15 + nbytes > len(mm):
            return None
        return np.frombuffer(mm, "<u8", nbytes // 8, off + 15).reshape(-1, 2).tolist()

    def read(self, chunk_start: int, offset: int) -> bytes:
        """The data of the message record at ``offset`` in the records of the chunk at
        ``chunk_start``; ValueError when the bytes there are not that message."""
        recs, base = self._records(chunk_start)
        at = base + offset
        if at + _MESSAGE_HEAD > len(recs) or recs[at] != _OP_MESSAGE:
            raise ValueError(f"no message record at offset {offset} of the chunk at {chunk_start}")
        ln = struct.unpack_from("<Q", recs, at + 1)[0]
        end = at + 9 + ln
        if ln < _MESSAGE_HEAD - 9 or end > len(recs):
            raise ValueError(f"message record at offset {offset} of the chunk at {chunk_start} runs past its chunk")
        return recs[at + _MESSAGE_HEAD:end]

    def _records(self, chunk_start: int) -> tuple:
        """The buffer holding the chunk's records and where they start in it: the memory
        map itself for an uncompressed chunk, the decompressed bytes otherwise (one
        compressed chunk is kept at a time: the messages come in chunk order)."""
        got = self._chunks.get(chunk_start)
        if got is not None:
            return got
        mm = self._mm
        clen = struct.unpack_from("<I", mm, chunk_start + _CHUNK_HEAD - 4)[0]
        comp = bytes(mm[chunk_start + _CHUNK_HEAD:chunk_start + _CHUNK_HEAD + clen]).decode()
        start = chunk_start + _CHUNK_HEAD + clen + 8
        if comp == "":
            got = (mm, start)
        else:
            size = struct.unpack_from("<Q", mm, start - 8)[0]
            recs = decompress(bytes(mm[start:start + size]), comp)
            if recs is None:
                raise ValueError(f"chunk at {chunk_start} is compressed with {comp!r}, which is not installed")
            if self._unpacked is not None:
                self._chunks.pop(self._unpacked, None)
            self._unpacked, got = chunk_start, (recs, 0)
        self._chunks[chunk_start] = got
        return got
