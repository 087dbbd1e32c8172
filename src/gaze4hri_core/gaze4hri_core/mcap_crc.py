"""CRC-32 integrity of an MCAP file (the recorder's bags): finds the damaged places
of a complete file in one streaming pass, so a flipped byte never reaches a result.

Checked, as the MCAP spec defines them (https://mcap.dev/spec): every Chunk's
``uncompressed_crc`` (CRC-32 of the chunk's uncompressed records, "Chunk"), the Data
End record's ``data_section_crc`` (every byte from the leading magic up to the Data End
record, "Data End"; the convention of the mcap writer, mcap/writer.py) and the Footer's
``summary_crc`` (summary start through the footer's ``summary_offset_start`` field,
"Footer"). An intact file costs one streaming CRC pass (the data-section CRC covers
every stored byte of every chunk); the chunks are walked, decompressed and checked one
by one only when that pass fails, to name the damaged places. A CRC of 0 means "not
computed" (spec) and is not checked: bags recorded before the recorder wrote CRCs read
as before. Not the mcap package's
``StreamReader(validate_crcs=True)``: that one stops at the first mismatch and does not
check the summary CRC, while the operator's line names every damaged place with its
offset and the repair needs to know which chunk is the torn tail. Stdlib (zlib) only,
so the core stays free of the reader packages; compressed chunks need the codec the
recorder used (zstd: backports.zstd or zstandard; lz4: lz4). Where python-isal is
installed (the benchmark depends on it) its CRC-32, the same function, does the
streaming pass in half the CPU time (docs/perf/bench.md, stop 40).
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

try:  # ISA-L's CRC-32: zlib's polynomial and interface, ~2x faster on the intact-file pass
    from isal.isal_zlib import crc32 as _crc32
except ImportError:
    _crc32 = zlib.crc32

__all__ = ["MAGIC", "Damage", "check_mcap", "data_crc_of", "decompress"]

MAGIC = b"\x89MCAP0\r\n"
_FOOTER_LEN = 1 + 8 + 20  # opcode, record length, summary_start, summary_offset_start, summary_crc
_OP_CHUNK, _OP_DATA_END, _OP_FOOTER = 0x06, 0x0F, 0x02
_BLOCK = 1 << 20


@dataclass(frozen=True)
class Damage:
    """One damaged place: ``kind`` (e.g. "chunk CRC mismatch") at byte ``offset`` of ``path``."""

    path: Path
    kind: str
    offset: int

    def line(self) -> str:
        return f"{self.kind} at offset {self.offset}"


def decompress(data: bytes, compression: str) -> bytes | None:
    """A chunk's records ("", zstd, lz4: the codecs the recorder writes); None when the
    codec is unknown or not installed (the chunk stays unchecked). The recorder's repair
    uses it too."""
    if compression == "":
        return data
    try:
        if compression == "zstd":
            try:
                from backports import zstd  # what rosbags decompresses with
            except ImportError:
                import zstandard as zstd
            return zstd.decompress(data)
        if compression == "lz4":
            import lz4.frame

            return lz4.frame.decompress(data)
    except ImportError:
        return None
    return None


def data_crc_of(f, end: int) -> int:
    """CRC-32 of the first ``end`` bytes of the open binary file ``f`` (leaves f at ``end``)."""
    return _crc_range(f, 0, end)


def _crc_range(f, start: int, end: int, crc: int = 0) -> int:
    """CRC-32 of bytes ``[start, end)`` of the open binary file ``f``, continued from ``crc``
    (one reused buffer: no copy per block; leaves f at ``end`` or at its end of file)."""
    f.seek(start)
    buf = bytearray(min(_BLOCK * 4, max(end - start, 1)))
    view = memoryview(buf)
    left = end - start
    while left > 0:
        n = f.readinto(view[: min(len(buf), left)])
        if not n:
            break
        crc = _crc32(view[:n], crc)
        left -= n
    return crc


def check_mcap(path: Path | str) -> list[Damage] | None:
    """Damaged places of the MCAP file at ``path`` ([] when every recorded CRC matches),
    or None when the file is not a complete MCAP file (no footer: an interrupted
    recording, which recorder.bag.repair_bag handles, not a checksum)."""
    path = Path(path)
    damages: list[Damage] = []
    with open(path, "rb") as f:
        size = f.seek(0, 2)
        if size < 8 + 9 + _FOOTER_LEN + 8:
            return None
        f.seek(0)
        if f.read(8) != MAGIC:
            return None
        f.seek(size - _FOOTER_LEN - 8)
        footer = f.read(_FOOTER_LEN + 8)
        if footer[-8:] != MAGIC:
            return None
        if footer[0] != _OP_FOOTER or struct.unpack_from("<Q", footer, 1)[0] != 20:
            return [Damage(path, "footer record damaged", size - _FOOTER_LEN - 8)]
        summary_start, _summary_offset_start, summary_crc = struct.unpack_from("<QQI", footer, 9)
        footer_start = size - _FOOTER_LEN - 8
        if _intact(f, footer, summary_start, summary_crc, footer_start):
            return damages
        f.seek(0)
        crc = zlib.crc32(f.read(8))
        off = 8
        data_end_seen = False
        while off + 9 <= footer_start:
            head = f.read(9)
            op, ln = head[0], struct.unpack_from("<Q", head, 1)[0]
            if off + 9 + ln > footer_start:
                damages.append(Damage(path, "record length runs past the data", off))
                return damages
            if op == _OP_DATA_END:
                body = f.read(ln)
                (want,) = struct.unpack_from("<I", body, 0) if ln >= 4 else (0,)
                if want and want != crc:
                    damages.append(Damage(path, "data section CRC mismatch", off))
                data_end_seen = True
                break
            crc = zlib.crc32(head, crc)
            if op == _OP_CHUNK and ln >= 40:
                body = f.read(ln)
                crc = zlib.crc32(body, crc)
                if _chunk_bad(body):
                    damages.append(Damage(path, "chunk CRC mismatch", off))
            else:  # other records: only their bytes count
                crc = _crc_range(f, off + 9, off + 9 + ln, crc)
            off += 9 + ln
        if not data_end_seen:
            damages.append(Damage(path, "no Data End record before the summary", off))
        if summary_crc and summary_start:
            if not 0 < summary_start <= footer_start:
                damages.append(Damage(path, "footer summary offset out of range", footer_start))
            else:
                s = zlib.crc32(footer[: 1 + 8 + 16], _crc_range(f, summary_start, footer_start))
                if s != summary_crc:
                    damages.append(Damage(path, "summary CRC mismatch", summary_start))
    return damages


def _intact(f, footer: bytes, summary_start: int, summary_crc: int, footer_start: int) -> bool:
    """The fast path: True when the Data End record sits where the footer says the data
    section ends and both its data-section CRC and the footer's summary CRC are present
    and match (one streaming CRC over the file, no record walk, no decompression). The
    data-section CRC covers every byte of every chunk as stored, so the chunks' own CRCs
    are only needed to say *which* chunk is damaged, which the full walk does when this
    returns False. (rosbags checks each chunk's CRC again as it reads it.)"""
    if not summary_crc or not 0 < summary_start <= footer_start:
        return False
    end = summary_start - 13  # Data End: opcode, length 4, data_section_crc (MCAP spec "Data End")
    if end < 8:
        return False
    f.seek(end)
    rec = f.read(13)
    if len(rec) != 13 or rec[0] != _OP_DATA_END or struct.unpack_from("<Q", rec, 1)[0] != 4:
        return False
    (want,) = struct.unpack_from("<I", rec, 9)
    if not want or _crc_range(f, 0, end) != want:
        return False
    s = zlib.crc32(footer[: 1 + 8 + 16], _crc_range(f, summary_start, footer_start))
    return s == summary_crc


def _chunk_bad(body: bytes) -> bool:
    """Whether a Chunk record body's stored CRC disagrees with its records (MCAP spec "Chunk":
    message_start_time, message_end_time, uncompressed_size, uncompressed_crc, compression, records)."""
    try:
        usize, want = struct.unpack_from("<QI", body, 16)
        if not want:
            return False
        (n,) = struct.unpack_from("<I", body, 28)
        comp = bytes(body[32: 32 + n]).decode()
        (rlen,) = struct.unpack_from("<Q", body, 32 + n)
        start = 32 + n + 8
        if start + rlen > len(body):
            return True
        raw = decompress(memoryview(body)[start: start + rlen], comp)
    except Exception:  # the header does not parse, or the codec's own error type: damaged either way
        return True
    if raw is None:
        return False
    return len(raw) != usize or zlib.crc32(raw) != want
