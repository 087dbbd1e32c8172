"""One rosbag2 bag (MCAP storage) per trial, written with rosbags' Writer from CDR bytes.

The writing is here; the CRC-filled MCAP writer is mcap_writer.py, the fields rosbag2 writes
that rosbags does not (distro, offered QoS, type hashes) rosbag2_fields.py, the repair of a
bag whose writer died repair.py, and the bag directory's files and their CRC check
bag_files.py. The names of all of them are importable from here, as before the split.

The MCAP file is named ``<trial>_0.mcap`` as rosbag2 does (docs/session_layout.md),
from the moment it is created (renamed while still empty, before any data), so
metadata.yaml, written atomically once at the end (or by repair), can only ever name a
file that exists: there is no rename after the data, and no window in which a kill
leaves metadata and files disagreeing. ``repair_bag`` checks that they agree.

Disk reserve: every write first checks the free space (statvfs, or the test hook's
virtual disk) and refuses with ``DiskFullError`` when it would fall below
``reserve_bytes``; the bag is then closed normally (summary + metadata fit in the
reserve), and session.yaml can still be written.

Log times never go backwards within a channel in file order (rosbag2's log time is the
receive time, mcap_storage.cpp:875; ours is the device stamp, so /tf, fed by poses of
several devices, is written with the latest /tf log time when its stamp is older; the
stamps inside the message are unchanged). Across channels the file stays in arrival
order with device stamps as log times (the benchmark's time base), as MCAP allows.
"""
from __future__ import annotations

import errno
import os
import shutil
import struct
import time
import zlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from gaze4hri_core.errors import SessionError
from rosbags.rosbag2 import StoragePlugin, Writer

from .bag_files import FIX_DAMAGED, check_bag, mcap_file, metadata_agrees, require_intact
from .bag_writer import add_connection, close_writer
from .mcap_writer import CrcFile, CrcMcapWriter, chunk_head, chunk_index, message_index
from .repair import RepairResult, repair_bag
from .rosbag2_fields import (
    PUBLISHER_QOS,
    as_discovered,
    bag_qos,
    declared_qos,
    ros_distro,
    type_hash,
)

__all__ = ["TrialBag", "repair_bag", "RepairResult", "COMPRESSIONS", "mcap_file", "DiskFullError", "metadata_agrees",
           "ros_distro", "bag_qos", "check_bag", "require_intact", "FIX_DAMAGED", "type_hash", "PUBLISHER_QOS",
           "declared_qos", "as_discovered"]

COMPRESSIONS = ("none", "zstd", "lz4")
_BIG = 1 << 20  # messages this large bypass rosbags' chunk buffer: one chunk each (compressed or not)


class DiskFullError(OSError):
    """Raised by TrialBag.write when the disk (or the injected fault) refuses bytes, or
    when writing would leave less than the bag's reserve free."""

    reserve_hit = False


class _FullDisk:
    """A file object over a disk with ``room`` bytes: test stand-in for ENOSPC."""

    def __init__(self, f, room: int):
        self._f, self.room = f, room

    def write(self, b) -> int:
        pos = self._f.tell()
        n = len(b)
        if pos + n > self.room:
            fit = max(0, self.room - pos)
            self._f.write(bytes(memoryview(b)[:fit]))
            self._f.flush()
            raise OSError(errno.ENOSPC, "No space left on device (injected)")
        return self._f.write(b)

    def __getattr__(self, name):
        return getattr(self._f, name)


class TrialBag:
    """Writes one trial's bag. ``topics`` maps topic -> ROS type (MSG_TYPES subset).

    ``fail_after_bytes`` is a fault-injection hook for tests: the file behaves like a
    disk with that much room (the write that does not fit stores what fits, then
    raises ENOSPC), so the torn tail and its repair are the real ones.

    ``reserve_bytes``: a write that would leave less free space than this (on the real
    file system, or on the hook's virtual disk) is refused with ``DiskFullError``
    before any byte of it is written, and the bag stays closable as a complete bag.
    """

    def __init__(self, bag_dir: Path, topics: dict[str, str], compression: str = "none",
                 flush_interval_s: float = 1.0, fail_after_bytes: int | None = None,
                 clock: Callable[[], float] = time.monotonic, reserve_bytes: int = 0, offered_qos: dict | None = None):
        if compression not in COMPRESSIONS:
            raise ValueError(f"compression must be one of {COMPRESSIONS}, got {compression!r}")
        self.bag_dir = Path(bag_dir)
        if self.bag_dir.exists():
            raise SessionError("bag directory exists already", str(self.bag_dir),
                               "move it away or redo the trial with --redo")
        self.bag_dir.parent.mkdir(parents=True, exist_ok=True)
        self._w = Writer(self.bag_dir, version=9, storage_plugin=StoragePlugin.MCAP)
        self._w.open()
        self._crc_storage(compression, fail_after_bytes)
        qos = offered_qos or {}  # topic -> [rosbags Qos] of its publishers (bag_qos)
        self._conns = {t: add_connection(self._w, t, ty, type_hash(ty),
                                         [as_discovered(q) for q in qos.get(t) or [declared_qos(t)]])
                       for t, ty in topics.items()}
        self._last_log: dict[str, int] = {}  # topic -> latest log time written (never backwards in file order)
        self.compression = compression
        self.flush_interval_s = flush_interval_s
        self.fail_after_bytes = fail_after_bytes
        self.bytes_written = 0
        self._written_out = 0  # file offset up to which the OS was asked to start the writeback
        self._writeback_at = 0  # bytes_written then
        self.counts: dict[str, int] = defaultdict(int)
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        self._clock = clock
        self._last_flush = clock()
        self.closed = False
        self.broken = False
        self.reserve_bytes = int(reserve_bytes)
        self.reserve_hit = False
        self._statfs: tuple[int, float, int] | None = None  # (free bytes, clock, bytes_written) at the last statvfs
        self.flush()  # header, schemas and channels on disk at once: even an early crash leaves the topics

    def _crc_storage(self, compression: str, fail_after_bytes: int | None) -> None:
        """Turn the storage rosbags opened into the CRC writer under rosbag2's file name,
        with the bag's compressor and, for tests, the full-disk hook."""
        st = self._w.storage
        # rosbag2's file name from the start (header only so far): metadata written at
        # close or by repair names this file, so the two can never disagree
        final = self.bag_dir / f"{self.bag_dir.name}_0.mcap"
        os.replace(st.path, final)
        st.path = final
        st.__class__ = CrcMcapWriter  # same state, CRCs written (rosbags' writer leaves them 0)
        st.bio.flush()
        st.bio = CrcFile(st.bio, zlib.crc32(final.read_bytes()))  # magic and header written by rosbags so far
        if compression == "zstd":
            from rosbags.rosbag2.storage_mcap import zstd  # the module rosbags itself decompresses with

            st.compression, st.compressor = "zstd", lambda b: zstd.compress(b, 1)
        elif compression == "lz4":
            import lz4.frame

            st.compression, st.compressor = "lz4", lz4.frame.compress
        if fail_after_bytes is not None:
            st.bio._f = _FullDisk(st.bio._f, fail_after_bytes)

    @property
    def mcap_path(self) -> Path:
        return self._w.storage.path if self._w.storage is not None else (mcap_file(self.bag_dir) or self.bag_dir)

    def write(self, topic: str, t_ns: int, data: bytes) -> None:
        conn = self._conns.get(topic)
        if conn is None:
            return
        if self.reserve_bytes > 0:
            self._check_reserve(len(data))
        t_ns = max(t_ns, self._last_log.get(topic, t_ns))  # /tf from several devices: never back in file order
        self._last_log[topic] = t_ns
        try:
            if len(data) >= _BIG:
                self._write_big(conn, t_ns, data)
            else:
                self._w.write(conn, t_ns, data)
            self.bytes_written += len(data)
            self.counts[topic] += 1
            self.first_ns = t_ns if self.first_ns is None else min(self.first_ns, t_ns)
            self.last_ns = t_ns if self.last_ns is None else max(self.last_ns, t_ns)
            if self._clock() - self._last_flush >= self.flush_interval_s:
                self.flush()
            elif self.bytes_written - self._writeback_at >= self.WRITEBACK_EVERY_BYTES and self._w.storage is not None:
                self._w.storage.bio.flush()  # the frames written straight to the file (not the pending chunk)
                self._start_writeback(self._w.storage.bio)
        except OSError as e:
            self.broken = True
            if e.errno == errno.ENOSPC:
                raise DiskFullError(errno.ENOSPC, "No space left on device", str(self.bag_dir)) from e
            raise

    #: the OS is asked to start writing out what was written after this many bytes too (as at
    #: every flush): the frames, tens of MB a second, would otherwise wait for the bag's fsync
    WRITEBACK_EVERY_BYTES = 8 << 20

    #: the file system is asked again after this much wall time or this many bytes of
    #: ours; in between, its last answer less what this bag wrote since (a statvfs per
    #: message was a fifth of the writer thread's time: docs/perf/acq.md)
    STATFS_EVERY_S, STATFS_EVERY_BYTES = 0.1, 4 << 20

    def free_bytes(self) -> int:
        """Free space for this bag: the file system's, or the test hook's virtual disk."""
        now, seen = self._clock(), self._statfs
        stale = seen is None or now - seen[1] >= self.STATFS_EVERY_S
        if stale or self.bytes_written - seen[2] >= self.STATFS_EVERY_BYTES:
            seen = self._statfs = (shutil.disk_usage(self.bag_dir).free, now, self.bytes_written)
        free = seen[0] - (self.bytes_written - seen[2])
        bio = self._w.storage.bio if self._w.storage is not None else None
        bio = getattr(bio, "_f", bio)
        if isinstance(bio, _FullDisk):
            free = min(free, bio.room - bio.tell())
        return int(free)

    def _check_reserve(self, n: int) -> None:
        """Refuse a write that would eat into the reserve (pending chunk bytes count)."""
        st = self._w.storage
        pending = st.chunk.bio.tell() if st is not None else 0
        free = self.free_bytes()
        if free - pending - n < self.reserve_bytes:
            self.reserve_hit = True
            e = DiskFullError(errno.ENOSPC, f"free space {free / 1e6:.1f} MB reached the reserve of "
                                            f"{self.reserve_bytes / 1e6:.1f} MB kept for closing the bag and the "
                                            "session file", str(self.bag_dir))
            e.reserve_hit = True
            raise e

    def _write_big(self, conn, t: int, data: bytes) -> None:
        """One large message as its own chunk, written straight to the file.

        Same records as rosbags' McapWriter.close_chunk (chunk, message index, chunk
        index entry; MCAP spec, "Chunk" / "Chunk Index") without its four intermediate
        copies of the payload: at 1080p (6 MB a frame) the copies, not the disk or the
        compressor, bounded the recorder (docs/perf/acq.md). Compressed bags compress
        the message record with the bag's compressor (zstd level 1 or lz4 frame).
        """
        st = self._w.storage
        if st.chunk.bio.tell():
            st.close_chunk()  # smaller messages already pending go first, in order
        hdr = struct.pack("<HIQQ", conn.id, 0, t, t)
        msg_len = len(hdr) + len(data)
        records = 9 + msg_len
        rec_head = b"\x05" + struct.pack("<Q", msg_len) + hdr
        comp = b"" if self.compression == "none" else st.compression.encode()
        payload = st.compressor(rec_head + data) if comp else None
        stored = records if payload is None else len(payload)
        # times, uncompressed size, CRC-32 of the uncompressed records, compression, records length
        crc = zlib.crc32(data, zlib.crc32(rec_head))
        chunk_start = st.bio.tell()
        st.bio.write(chunk_head(t, t, records, crc, comp, stored))
        if payload is None:
            st.bio.write(rec_head)
            st.bio.write(data)
        else:
            st.bio.write(payload)
        chunk_end = st.bio.tell()
        st.bio.write(message_index(conn.id, [(t, 0)]))
        st.chunks.append(chunk_index(t, t, chunk_start, chunk_end - chunk_start, [(conn.id, chunk_end)],
                                     st.bio.tell() - chunk_end, comp, stored, records))
        st.message_start_time = min(t, st.message_start_time)
        st.message_end_time = max(t, st.message_end_time)
        st.channel_stats[conn.id] += 1
        w = self._w
        w.counts[conn.id] += 1
        w.min_timestamp = min(t, w.min_timestamp)
        w.max_timestamp = max(t, w.max_timestamp)

    def flush(self) -> None:
        """Close the pending chunk and hand the bytes to the OS (survives SIGKILL)."""
        st = self._w.storage
        if st is None:
            return
        if st.chunk.bio.tell():
            st.close_chunk()
        st.bio.flush()
        self._last_flush = self._clock()
        self._start_writeback(st.bio)

    def _start_writeback(self, bio) -> None:
        """Have the OS start writing out the bytes flushed since the last call, without waiting
        (posix_fadvise DONTNEED starts the writeback of dirty pages, then drops the clean ones
        from the page cache): the fsync at the bag's close then waits for about the last
        second's bytes instead of the whole trial's (docs/perf/acq.md)."""
        if not hasattr(os, "posix_fadvise"):
            return
        try:
            end = bio.tell()
            os.posix_fadvise(bio.fileno(), self._written_out, end - self._written_out, os.POSIX_FADV_DONTNEED)
        except (OSError, ValueError, AttributeError):
            return  # a file object without a descriptor, a file system that refuses advice: fsync does it all
        self._written_out = end & ~0xFFF  # a partly written page is given again next time
        self._writeback_at = self.bytes_written

    def close(self) -> Path:
        """Finish the bag (summary, then metadata.yaml written atomically), fsync."""
        if self.closed:
            return self.bag_dir
        self.closed = True
        if self.broken:
            self.abort_and_repair()
            return self.bag_dir
        st = self._w.storage
        close_writer(self._w)  # summary, then metadata.yaml (with the distro in use) atomically
        with open(st.path, "rb") as f:
            os.fsync(f.fileno())
        return self.bag_dir

    def abort_and_repair(self) -> RepairResult:
        """After a write error: drop the unwritable tail, keep every complete chunk."""
        self.closed = True
        st = self._w.storage
        if st is not None:
            try:
                st.bio.flush()
            except OSError:
                pass  # the bytes that did not fit are the tail repair cuts anyway
            try:
                st.bio.close()
            except OSError:
                pass
            self._w.storage = None
        return repair_bag(self.bag_dir)
