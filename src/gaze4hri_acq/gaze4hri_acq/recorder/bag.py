"""One rosbag2 bag (MCAP storage) per trial, written with rosbags' Writer from CDR
bytes, plus in-place repair of a bag whose writer died (SIGKILL, power, full disk).

Crash model: rosbags' MCAP writer emits a chunk whenever 1 MiB is pending; we also
close the pending chunk and flush the file every ``flush_interval_s`` so that low-rate
topics reach the disk too. A killed writer leaves a file with complete chunks then
a torn tail and no summary; ``repair_bag`` cuts the tail, appends the summary and
writes metadata.yaml, so the bag reads with rosbags, mcap, Foxglove and
``ros2 bag info`` as far as it was written. Repair needs no free space beyond a few
KiB (it never copies the data), which matters after ENOSPC.

The MCAP file is named ``<trial>_0.mcap`` as rosbag2 does (docs/session_layout.md),
from the moment it is created (renamed while still empty, before any data), so
metadata.yaml, written atomically once at the end (or by repair), can only ever name a
file that exists: there is no rename after the data, and no window in which a kill
leaves metadata and files disagreeing. ``repair_bag`` checks that they agree.

Disk reserve: every write first checks the free space (statvfs, or the test hook's
virtual disk) and refuses with ``DiskFullError`` when it would fall below
``reserve_bytes``; the bag is then closed normally (summary + metadata fit in the
reserve), and session.yaml can still be written.
Integrity: rosbags' writer stores every CRC as 0 ("not computed", MCAP spec); the
writer here (``_CrcMcapWriter``) stores the CRC-32 of each chunk's uncompressed records
(spec "Chunk"), of the data section (spec "Data End") and of the summary (spec
"Footer"), so that ``check_bag`` (gaze4hri_core.mcap_crc), rosbags' and mcap's readers
detect damaged bytes instead of reading them as data.
MCAP fields as rosbag2's own writer writes them (ros2/rosbag2 jazzy,
rosbag2_storage_mcap/src/mcap_storage.cpp; tests/acq/test_bag_rosbag2_fields.py compares
field by field):
- each channel's metadata holds ``offered_qos_profiles`` (the publishers' QoS as YAML) and
  ``topic_type_hash`` (the type's RIHS01 hash, "RIHS01_<64 hex>"), mcap_storage.cpp:932-938
  (create_topic); the hash is the one rosbag2's recorder takes from the publishers' endpoint
  info (rosbag2_transport/src/rosbag2_transport/recorder.cpp:630-683), which rosidl computes
  at build time into ``share/<pkg>/msg/<Type>.json`` (``type_hash``);
- the "rosbag2" metadata record's ``serialized_metadata`` is the bag's metadata YAML
  (mcap_storage.cpp:955-972, update_metadata) with the ROS distro in use as ``ros_distro``
  (rosbag2_cpp/src/rosbag2_cpp/writers/sequential_writer.cpp:89: $ROS_DISTRO), not rosbags'
  ``ros_distro: rosbags``;
- every topic has offered QoS, also a topic that no publisher offered when the bag opened
  (rosbag2 would not have subscribed to it yet): the profile the project's publisher of that
  topic declares (``PUBLISHER_QOS``); all in the form discovery reports them, which is what
  rosbag2 records (history unknown, depth 0, infinite durations: rclpy's TopicEndpointInfo);
- log times never go backwards within a channel in file order (rosbag2's log time is the
  receive time, mcap_storage.cpp:875; ours is the device stamp, so /tf, fed by poses of
  several devices, is written with the latest /tf log time when its stamp is older; the
  stamps inside the message are unchanged). Across channels the file stays in arrival
  order with device stamps as log times (the benchmark's time base), as MCAP allows.
rosbags 0.11 internals used here (``Writer.storage``, ``McapWriter.close_chunk``,
``McapWriter.bio``) are pinned by requirements/ros.txt and covered by tests/acq/test_bag.py.
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
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path

from gaze4hri_core.errors import SessionError
from gaze4hri_core.mcap_crc import Damage, check_mcap, data_crc_of, decompress
from gaze4hri_core.session import Topics
from rosbags.interfaces import Connection, ConnectionExtRosbag2, MessageDefinition, MessageDefinitionFormat
from rosbags.rosbag2 import StoragePlugin, Writer
from rosbags.rosbag2.storage_mcap import Channel, McapWriter, PendingChunk, Schema, get_qos
from rosbags.typesys import Stores, get_typestore

__all__ = ["TrialBag", "repair_bag", "RepairResult", "COMPRESSIONS", "mcap_file", "DiskFullError", "metadata_agrees", "ros_distro",
           "bag_qos", "check_bag", "require_intact", "FIX_DAMAGED", "type_hash", "PUBLISHER_QOS", "declared_qos", "as_discovered"]

COMPRESSIONS = ("none", "zstd", "lz4")
_BIG = 1 << 20  # messages this large bypass rosbags' chunk buffer: one chunk each (compressed or not)
_MAGIC = b"\x89MCAP0\r\n"
_TYPESTORE = None


class DiskFullError(OSError):
    """Raised by TrialBag.write when the disk (or the injected fault) refuses bytes, or
    when writing would leave less than the bag's reserve free."""

    reserve_hit = False


def _typestore():
    global _TYPESTORE  # cached: building the store costs ~0.3 s and it is immutable
    if _TYPESTORE is None:
        _TYPESTORE = get_typestore(Stores.ROS2_KILTED)
    return _TYPESTORE


def ros_distro() -> str:
    """The ROS 2 distribution in use, as rosbag2 records it in metadata.yaml: $ROS_DISTRO
    (a sourced ROS), else the distro of the installed rclpy wheel (ros-<distro>-rclpy)."""
    if os.environ.get("ROS_DISTRO"):
        return os.environ["ROS_DISTRO"]
    from importlib import metadata

    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith("ros-") and name.endswith("-rclpy"):
            return name[len("ros-"):-len("-rclpy")]
    return "unknown"


def bag_qos(profile):
    """An rclpy QoSProfile (a publisher's offered QoS) as rosbags' Qos, which it writes
    like rosbag2: metadata.yaml's offered_qos_profiles and the MCAP channel's
    'offered_qos_profiles' YAML string."""
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    def t(d) -> QosTime:
        ns = int(d.nanoseconds)
        return QosTime(ns // 1_000_000_000, ns % 1_000_000_000)

    return Qos(QosHistory[profile.history.name], int(profile.depth), QosReliability[profile.reliability.name],
               QosDurability[profile.durability.name], t(profile.deadline), t(profile.lifespan), QosLiveliness[profile.liveliness.name],
               t(profile.liveliness_lease_duration), bool(profile.avoid_ros_namespace_conventions))


def type_hash(msgtype: str) -> str:
    """RIHS01 type hash of ``pkg/msg/Name`` as the installed distro built it: rosidl's
    ``share/<pkg>/msg/<Name>.json`` (found through the ament index where AMENT_PREFIX_PATH is
    set, else beside the package's Python module: ``<prefix>/lib/pythonX.Y/site-packages/<pkg>``),
    the value rclpy reports as TopicEndpointInfo.topic_type_hash; for a type not installed
    here (tf2_msgs without a sourced ROS), rosbags' own RIHS01 computation of the Kilted type."""
    import importlib.util
    import json

    pkg, _, name = msgtype.split("/")
    candidates = []
    if os.environ.get("AMENT_PREFIX_PATH"):
        candidates += [Path(p) / "share" / pkg / "msg" / f"{name}.json" for p in os.environ["AMENT_PREFIX_PATH"].split(os.pathsep) if p]
    try:
        spec = importlib.util.find_spec(pkg)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        candidates.append(Path(spec.origin).resolve().parents[4 if Path(spec.origin).name == "__init__.py" else 3] / "share" / pkg / "msg" / f"{name}.json")
    for c in candidates:
        try:
            hashes = json.loads(c.read_text("utf-8"))["type_hashes"]
        except (OSError, ValueError, KeyError):
            continue
        for h in hashes:
            if h.get("type_name") == msgtype:
                return str(h["hash_string"])
    return _typestore().hash_rihs01(msgtype)


# The QoS each topic's publisher declares (nodes/common.py QOS_*; camera_node.py:98-102,
# mocap_node.py:66-71, robot_node.py:129-134, recorder/node.py:129-130, device.py:54), for a
# topic that no publisher offered when the bag opened. Everything else: QOS_SENSOR.
PUBLISHER_QOS = {
    Topics.CAMERA_INFO: "QOS_LATCHED",
    Topics.EVENTS: "QOS_RELIABLE",
    Topics.SAFETY: "QOS_RELIABLE",
    Topics.DIAGNOSTICS: "QOS_RELIABLE",
}
_INFINITE = (9223372036, 854775807)  # RMW_DURATION_INFINITE as rosbag2 writes it (sec, nsec)


def as_discovered(q):
    """A rosbags Qos in the form discovery reports an endpoint's offered QoS, which is what
    rosbag2 records (recorder.cpp:620-628, TopicEndpointInfo.qos_profile): history unknown,
    depth 0, unset (zero) durations infinite, system-default liveliness automatic."""
    from rosbags.interfaces import QosHistory, QosLiveliness, QosTime

    def t(d):
        return QosTime(*_INFINITE) if (d.sec, d.nsec) == (0, 0) else d

    live = QosLiveliness.AUTOMATIC if q.liveliness == QosLiveliness.SYSTEM_DEFAULT else q.liveliness
    return q._replace(history=QosHistory.UNKNOWN, depth=0, deadline=t(q.deadline), lifespan=t(q.lifespan), liveliness=live,
                      liveliness_lease_duration=t(q.liveliness_lease_duration))


def declared_qos(topic: str):
    """The offered QoS of ``topic``'s publisher (PUBLISHER_QOS), as discovery would report it."""
    from ..nodes import common

    return as_discovered(bag_qos(getattr(common, PUBLISHER_QOS.get(topic, "QOS_SENSOR"))))


def _with_distro(serialized: str) -> str:
    """rosbags' serialized metadata with the distro in use instead of ``ros_distro: rosbags``."""
    import yaml

    data = yaml.safe_load(serialized)
    if not isinstance(data, dict):
        return serialized
    data["ros_distro"] = ros_distro()
    return yaml.safe_dump(data, sort_keys=False).strip()


def _set_ros_distro(bag_dir: Path) -> None:
    """rosbags writes ``ros_distro: rosbags``; rosbag2 writes the distro in use: replace
    it atomically (same directory, os.replace) so metadata.yaml is never half-written."""
    import yaml

    meta = Path(bag_dir) / "metadata.yaml"
    data = yaml.safe_load(meta.read_text("utf-8"))
    data["rosbag2_bagfile_information"]["ros_distro"] = ros_distro()
    tmp = meta.with_name(".metadata.yaml.tmp")
    tmp.write_text(yaml.safe_dump(data, sort_keys=False), "utf-8")
    os.replace(tmp, meta)


def mcap_file(bag_dir: Path) -> Path | None:
    """The bag's MCAP file (rosbag2 name first, then rosbags' own name)."""
    bag_dir = Path(bag_dir)
    for p in (bag_dir / f"{bag_dir.name}_0.mcap", bag_dir / f"{bag_dir.name}.mcap"):
        if p.is_file():
            return p
    found = sorted(bag_dir.glob("*.mcap"))
    return found[0] if found else None


class _CrcFile:
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


class _CrcMcapWriter(McapWriter):
    """rosbags' McapWriter with the MCAP CRCs filled in (spec "Chunk", "Data End", "Footer").

    ``close_chunk`` writes the same records as rosbags' (chunk, message indexes, chunk
    index entry) with ``uncompressed_crc`` set; ``close`` lets rosbags lay out the summary
    in memory, then sets ``data_section_crc`` and ``summary_crc`` and writes it out."""

    def close_chunk(self) -> None:
        pending = self.chunk
        records = pending.bio.getvalue()
        compressed = self.compressor(records)
        comp = self.compression.encode()
        head = struct.pack("<QQQI", pending.message_start_time, pending.message_end_time, len(records), zlib.crc32(records))
        head += struct.pack("<I", len(comp)) + comp + struct.pack("<Q", len(compressed))
        chunk_start = self.bio.tell()
        self.bio.write(b"\x06" + struct.pack("<Q", len(head) + len(compressed)) + head)
        self.bio.write(compressed)
        chunk_end = self.bio.tell()
        offsets = []
        for cid, msgs in pending.msgs.items():
            offsets.append((cid, self.bio.tell()))
            rec = struct.pack("<HI", cid, 16 * len(msgs)) + b"".join(struct.pack("<QQ", t, o) for t, o in msgs)
            self.bio.write(b"\x07" + struct.pack("<Q", len(rec)) + rec)
        ci = BytesIO()  # chunk index (spec "Chunk Index"), written by close() into the summary
        ci.write(struct.pack("<QQQQ", pending.message_start_time, pending.message_end_time, chunk_start, chunk_end - chunk_start))
        ci.write(struct.pack("<I", 10 * len(offsets)) + b"".join(struct.pack("<HQ", c, o) for c, o in offsets))
        ci.write(struct.pack("<Q", self.bio.tell() - chunk_end))
        ci.write(struct.pack("<I", len(comp)) + comp + struct.pack("<QQ", len(compressed), len(records)))
        self.chunks.append(ci)
        self.chunk = PendingChunk(2**63 - 1, 0, BytesIO(), defaultdict(list))

    def add_connection(self, connection, offered_qos_profiles: str) -> None:
        """rosbags' McapWriter.add_connection with ``topic_type_hash`` added to the channel's
        metadata, as rosbag2 writes it (mcap_storage.cpp:932-938)."""
        from rosbags.rosbag2.storage_mcap import write_channel, write_string

        meta = BytesIO()
        write_string(meta, "offered_qos_profiles")
        write_string(meta, offered_qos_profiles)
        write_string(meta, "topic_type_hash")
        write_string(meta, connection.digest)
        self.channels.append(Channel(connection.id, connection.msgtype, connection.topic, connection.ext.serialization_format, meta.getvalue()))
        self.channel_stats[connection.id] = 0
        write_channel(self.chunk.bio, self.channels[-1], self.schemas)

    def close(self, version: int, metadata: str) -> None:
        if self.chunk.bio.tell():
            self.close_chunk()
        out = self.bio
        tail = self.bio = _Tail(out.tell())
        super().close(version, _with_distro(metadata))
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
            raise SessionError("bag directory exists already", str(self.bag_dir), "move it away or redo the trial with --redo")
        self.bag_dir.parent.mkdir(parents=True, exist_ok=True)
        self._w = Writer(self.bag_dir, version=9, storage_plugin=StoragePlugin.MCAP)
        self._w.open()
        st = self._w.storage
        # rosbag2's file name from the start (header only so far): metadata written at
        # close or by repair names this file, so the two can never disagree
        final = self.bag_dir / f"{self.bag_dir.name}_0.mcap"
        os.replace(st.path, final)
        st.path = final
        st.__class__ = _CrcMcapWriter  # same state, CRCs written (rosbags' writer leaves them 0)
        st.bio.flush()
        st.bio = _CrcFile(st.bio, zlib.crc32(final.read_bytes()))  # magic and header written by rosbags so far
        if compression == "zstd":
            from rosbags.rosbag2.storage_mcap import zstd  # the module rosbags itself decompresses with

            st.compression, st.compressor = "zstd", lambda b: zstd.compress(b, 1)
        elif compression == "lz4":
            import lz4.frame

            st.compression, st.compressor = "lz4", lz4.frame.compress
        if fail_after_bytes is not None:
            st.bio._f = _FullDisk(st.bio._f, fail_after_bytes)
        ts = _typestore()
        qos = offered_qos or {}  # topic -> [rosbags Qos] of its publishers (bag_qos)
        self._conns = {t: self._w.add_connection(t, ty, msgdef=ts.generate_msgdef(ty, ros_version=2)[0], rihs01=type_hash(ty),
                                                 offered_qos_profiles=[as_discovered(q) for q in qos.get(t) or [declared_qos(t)]])
                       for t, ty in topics.items()}
        self._last_log: dict[str, int] = {}  # topic -> latest log time written (never backwards in file order)
        self.compression = compression
        self.flush_interval_s = flush_interval_s
        self.fail_after_bytes = fail_after_bytes
        self.bytes_written = 0
        self.counts: dict[str, int] = defaultdict(int)
        self.first_ns: int | None = None
        self.last_ns: int | None = None
        self._clock = clock
        self._last_flush = clock()
        self.closed = False
        self.broken = False
        self.reserve_bytes = int(reserve_bytes)
        self.reserve_hit = False
        self.flush()  # header, schemas and channels on disk at once: even an early crash leaves the topics

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
        except OSError as e:
            self.broken = True
            if e.errno == errno.ENOSPC:
                raise DiskFullError(errno.ENOSPC, "No space left on device", str(self.bag_dir)) from e
            raise

    def free_bytes(self) -> int:
        """Free space for this bag: the file system's, or the test hook's virtual disk."""
        free = shutil.disk_usage(self.bag_dir).free
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
                                            f"{self.reserve_bytes / 1e6:.1f} MB kept for closing the bag and the session file", str(self.bag_dir))
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
        body = struct.pack("<QQQI", t, t, records, crc) + struct.pack("<I", len(comp)) + comp + struct.pack("<Q", stored)
        chunk_start = st.bio.tell()
        st.bio.write(b"\x06" + struct.pack("<Q", len(body) + stored) + body)
        if payload is None:
            st.bio.write(rec_head)
            st.bio.write(data)
        else:
            st.bio.write(payload)
        chunk_end = st.bio.tell()
        idx = struct.pack("<HI", conn.id, 16) + struct.pack("<QQ", t, 0)
        st.bio.write(b"\x07" + struct.pack("<Q", len(idx)) + idx)
        ci = BytesIO()
        ci.write(struct.pack("<QQQQ", t, t, chunk_start, chunk_end - chunk_start))
        ci.write(struct.pack("<I", 10) + struct.pack("<HQ", conn.id, chunk_end))
        ci.write(struct.pack("<Q", st.bio.tell() - chunk_end))
        ci.write(struct.pack("<I", len(comp)) + comp + struct.pack("<QQ", stored, records))
        st.chunks.append(ci)
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

    def close(self) -> Path:
        """Finish the bag (summary, then metadata.yaml written atomically), fsync."""
        if self.closed:
            return self.bag_dir
        self.closed = True
        if self.broken:
            self.abort_and_repair()
            return self.bag_dir
        st = self._w.storage
        self._w.close()
        _set_ros_distro(self.bag_dir)
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


def metadata_agrees(bag_dir: Path) -> bool:
    """metadata.yaml exists, parses, and its files are exactly the MCAP files present."""
    import yaml

    meta = Path(bag_dir) / "metadata.yaml"
    try:
        info = yaml.safe_load(meta.read_text("utf-8"))["rosbag2_bagfile_information"]
        listed = set(info.get("relative_file_paths") or []) | {f["path"] for f in info.get("files") or []}
    except (OSError, KeyError, TypeError, yaml.YAMLError):
        return False
    present = {p.name for p in Path(bag_dir).glob("*.mcap")}
    return bool(listed) and listed == present


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


# ----------------------------------------------------------------------- repair
@dataclass
class RepairResult:
    bag_dir: Path
    repaired: bool  # False: the bag was complete already
    messages: int
    chunks: int
    cut_bytes: int


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


FIX_DAMAGED = "re-record the trial with 'gaze4hri-acq session --redo ID' (same --subject and --backend) or restore the bag from a backup"


def check_bag(bag_dir: Path) -> list[Damage] | None:
    """Damaged places of a bag's MCAP file by its CRCs (gaze4hri_core.mcap_crc.check_mcap):
    [] when intact, None when the file is missing or incomplete (repair_bag's case)."""
    path = mcap_file(Path(bag_dir))
    return None if path is None else check_mcap(path)


def require_intact(bag_dir: Path, trial: str | None = None) -> None:
    """Raise a one-line SessionError naming the trial, the bag and the first damaged offset
    when a CRC of the bag disagrees with its bytes."""
    damages = check_bag(bag_dir)
    if damages:
        d = damages[0]
        more = f" (+{len(damages) - 1} more)" if len(damages) > 1 else ""
        who = f"trial {trial}: " if trial else ""
        raise SessionError(f"{who}{d.line()}{more}", str(d.path), FIX_DAMAGED.replace("ID", trial or "ID"))


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
        raise SessionError("no MCAP file in bag directory", str(bag_dir), "the trial wrote nothing; redo it with --redo")
    with open(path, "rb") as f:
        buf = f.read()
    if buf[:8] != _MAGIC:
        raise SessionError("not an MCAP file (bad magic)", str(path), "redo the trial with --redo")
    if len(buf) >= 45 and buf[-8:] == _MAGIC and metadata_agrees(bag_dir):
        return RepairResult(bag_dir, False, -1, -1, 0)
    if path.name == f"{bag_dir.name}.mcap":
        final = bag_dir / f"{bag_dir.name}_0.mcap"
        os.replace(path, final)  # before metadata exists for it: metadata below names the final file
        path = final
    (bag_dir / "metadata.yaml").unlink(missing_ok=True)  # stale or wrong: rebuilt below
    off = 8
    good_end = None
    schemas: dict[int, Schema] = {}
    channels: dict[int, Channel] = {}
    chunks: list[dict] = []  # per chunk: offsets, times, sizes, message entries, index records seen
    while off + 9 <= len(buf):
        op = buf[off]
        (ln,) = _u("<Q", buf, off + 1)
        end = off + 9 + ln
        if end > len(buf):
            break  # torn record: the tail repair cuts
        body = buf[off + 9: end]
        if op == 0x06:  # chunk
            cs, ce, usize, crc = _u("<QQQI", body, 0)
            comp, p = _str(body, 28)
            (clen,) = _u("<Q", body, p)
            try:
                raw = _decompress(body[p + 8: p + 8 + clen], comp, usize)
            except Exception:  # a chunk that does not decompress is the torn end
                break
            if crc and zlib.crc32(raw) != crc:
                if _complete_chunk_follows(buf, end):  # damaged in the middle, not torn at the end
                    raise SessionError(f"chunk CRC mismatch at offset {off}", str(path), FIX_DAMAGED)
                break  # the last chunk, damaged by the crash: the torn end
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
                    schemas[sid] = Schema(sid, name, enc, data)
                elif rop == 0x04:
                    cid, sid = _u("<HH", rb, 0)
                    topic, r = _str(rb, 4)
                    menc, r = _str(rb, r)
                    (mlen,) = _u("<I", rb, r)
                    channels[cid] = Channel(cid, schemas[sid].name, topic, menc, rb[r + 4: r + 4 + mlen])
                elif rop == 0x05:
                    cid, _seq, lt = _u("<HIQ", rb, 0)
                    entries[cid].append((lt, q))
                q += 9 + rln
            chunks.append({"start": off, "len": end - off, "cs": cs, "ce": ce, "comp": comp, "clen": clen,
                           "usize": usize, "entries": entries, "index": {}, "index_end": end})
            good_end = end
        elif op == 0x07 and chunks:  # message index of the previous chunk
            (cid,) = _u("<H", body, 0)
            chunks[-1]["index"][cid] = off
            chunks[-1]["index_end"] = end
            good_end = end
        elif op == 0x0F:  # data end: everything before it is complete
            break
        else:
            good_end = end
        off = end
    if good_end is None:
        raise SessionError("bag holds no complete record", str(path), "redo the trial with --redo")
    cut = len(buf) - good_end
    del buf
    f = open(path, "r+b")  # noqa: SIM115 - handed to McapWriter, closed by its close()
    if chunks and set(chunks[-1]["index"]) != set(chunks[-1]["entries"]):
        # the last chunk's message index was torn: rewrite it after the chunk
        c = chunks[-1]
        good_end = c["start"] + c["len"]
        f.seek(good_end)
        f.truncate()
        c["index"] = {}
        for cid, ent in sorted(c["entries"].items()):
            c["index"][cid] = f.tell()
            rec = struct.pack("<HI", cid, 16 * len(ent)) + b"".join(struct.pack("<QQ", t, o) for t, o in ent)
            f.write(b"\x07" + struct.pack("<Q", len(rec)) + rec)
        c["index_end"] = good_end = f.tell()
    f.seek(good_end)
    f.truncate()
    chunk_recs: list[BytesIO] = []
    stats: dict[int, int] = defaultdict(int)
    t_min, t_max = 2**63 - 1, 0
    for c in chunks:
        rec = BytesIO()
        rec.write(struct.pack("<QQQQ", c["cs"], c["ce"], c["start"], c["len"]))
        rec.write(struct.pack("<I", 10 * len(c["index"])))
        for cid, o in sorted(c["index"].items()):
            rec.write(struct.pack("<HQ", cid, o))
        rec.write(struct.pack("<Q", c["index_end"] - (c["start"] + c["len"])))
        comp_b = c["comp"].encode()
        rec.write(struct.pack("<I", len(comp_b)) + comp_b)
        rec.write(struct.pack("<QQ", c["clen"], c["usize"]))
        chunk_recs.append(rec)
        for cid, ent in c["entries"].items():
            stats[cid] += len(ent)
        if c["entries"]:
            t_min, t_max = min(t_min, c["cs"]), max(t_max, c["ce"])

    w = Writer(bag_dir / ".repair-placeholder", version=9, storage_plugin=StoragePlugin.MCAP)
    w.path, w.metapath = bag_dir, bag_dir / "metadata.yaml"
    st = _CrcMcapWriter.__new__(_CrcMcapWriter)
    st.path = path
    st.bio = _CrcFile(f, data_crc_of(f, good_end))  # the kept data section, re-read once (the file is already in the page cache)
    st.schemas = sorted(schemas.values(), key=lambda s: s.id)
    st.channels = sorted(channels.values(), key=lambda c: c.id)
    st.chunks = chunk_recs
    st.chunk = PendingChunk(2**63 - 1, 0, BytesIO(), defaultdict(list))
    st.compression, st.compressor = "", (lambda x: x)
    st.message_start_time, st.message_end_time = t_min, t_max
    st.channel_stats = {c.id: stats.get(c.id, 0) for c in st.channels}
    fmt = {"ros2msg": MessageDefinitionFormat.MSG, "ros2idl": MessageDefinitionFormat.IDL}
    for c in st.channels:
        sc = next(s for s in st.schemas if s.name == c.schema)
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
        conn = Connection(id=c.id, topic=c.topic, msgtype=c.schema, msgdef=MessageDefinition(fmt.get(sc.encoding, MessageDefinitionFormat.MSG), sc.data),
                          digest=digest, msgcount=0, ext=ConnectionExtRosbag2(serialization_format=c.message_encoding, offered_qos_profiles=offered), owner=w)
        w.connections.append(conn)
        w.counts[c.id] = stats.get(c.id, 0)
    if sum(stats.values()):
        w.min_timestamp, w.max_timestamp = t_min, t_max
    else:
        w.min_timestamp = w.max_timestamp = 0
    w.storage = st
    try:
        w.close()
    except OSError as e:
        raise SessionError(f"cannot finish the repaired bag ({os.strerror(e.errno or 0)})", str(path), "free some disk space and run 'gaze4hri-acq session --resume' again") from None
    try:
        _set_ros_distro(bag_dir)
    except OSError:
        pass  # no room for the rewrite: the bag reads the same with rosbags' placeholder distro
    return RepairResult(bag_dir, True, sum(stats.values()), len(chunk_recs), cut)
