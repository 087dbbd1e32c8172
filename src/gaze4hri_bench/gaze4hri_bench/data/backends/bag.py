"""Bag access of the ``session`` backend: rosbags' reader behind one-line errors
(open_bag), the MCAP CRC check of a trial's bag (bag_damage) and the decoding of
recorded images (decode_image)."""
from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError, SessionError
from gaze4hri_core.mcap_crc import check_mcap
from gaze4hri_core.session import MSG_TYPES

__all__ = ["open_bag", "bag_damage", "typestore", "decode_image"]

_FIX_BAG = "re-record the trial (gaze4hri-acq session --resume) or exclude it with --trials"
_FIX_DAMAGED = ("re-record it with 'gaze4hri-acq session --redo {trial}' (same --subject and --backend) "
                "or restore the bag from a backup")


def bag_damage(bag: Path, trial: str | None = None) -> SessionError | None:
    """The one-line error for a bag whose MCAP CRCs disagree with its bytes (first damaged
    offset; None when intact, unchecked or incomplete). Costs one read of the bag."""
    bag = Path(bag)
    for f in sorted(bag.glob("*.mcap")) if bag.is_dir() else []:
        try:
            damages = check_mcap(f)
        except OSError:
            continue  # unreadable: opening the bag reports it
        if damages:
            more = f" (+{len(damages) - 1} more)" if len(damages) > 1 else ""
            who = f"trial {trial}: " if trial else ""
            return SessionError(f"{who}{damages[0].line()}{more}", str(f), _FIX_DAMAGED.format(trial=trial or bag.name))
    return None


def _indexes(bag: Path) -> list | None:
    """The MCAP index of every file the bag's metadata.yaml lists; None when one cannot be
    used (rosbags reads the bag then, with its own errors)."""
    import yaml
    from gaze4hri_core.fileio import load_yaml

    from .mcap_index import McapIndex

    try:
        meta = load_yaml((bag / "metadata.yaml").read_text("utf-8"))
        info = meta["rosbag2_bagfile_information"]
        files = [bag / p for p in info["relative_file_paths"]]
        if info.get("storage_identifier") != "mcap" or not files:
            return None
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        return None
    out = []
    for p in files:
        ix = McapIndex.open(p) if p.suffix == ".mcap" and p.is_file() else None
        if ix is None:
            for x in out:
                x.close()
            return None
        out.append(ix)
    return out


def _read_error(what: str, e: Exception, path: Path) -> SessionError:
    """A reader failure; a CRC failure (rosbags checks chunk CRCs) is named with its offset."""
    damage = bag_damage(path) if "checksum" in str(e).lower() else None
    return damage or SessionError(f"{what} ({type(e).__name__}: {_short(e)})", str(path), _FIX_BAG)


_TYPESTORE = None


def typestore():
    """The ROS 2 message definitions used to decode (Kilted; the messages are standard)."""
    global _TYPESTORE
    if _TYPESTORE is None:
        from rosbags.typesys import Stores, get_typestore

        _TYPESTORE = get_typestore(Stores.ROS2_KILTED)
    return _TYPESTORE


class open_bag:
    """Context manager over a trial's bag with one-line errors; ``messages(topic)`` yields
    (t_log_ns, raw) and ``has(topic)`` tells whether a topic was recorded. Reads go through
    the MCAP files' own indexes (mcap_index.McapIndex: only the wanted messages' bytes are
    read) and fall back to rosbags' Reader where the indexes cannot be used."""

    def __init__(self, path: Path | str):
        self.path = Path(path)

    def __enter__(self):
        if not (self.path / "metadata.yaml").is_file():
            if not self.path.exists():
                raise SessionError("trial bag not found", str(self.path), _FIX_BAG)
            raise SessionError("bag has no metadata.yaml (recording interrupted?)", str(self.path), _FIX_BAG)
        self.reader = None
        self.index = _indexes(self.path)
        if self.index is None:
            self._open_rosbags()
        else:
            self.conns = {t: [(i, c) for c in cs] for i, ix in enumerate(self.index) for t, cs in ix.topics.items()}
        return self

    def _open_rosbags(self) -> None:
        from rosbags.rosbag2 import Reader

        try:
            self.reader = Reader(self.path)
            self.reader.open()
        except Exception as e:  # rosbags raises several types for corrupt files
            raise _read_error("cannot open bag", e, self.path) from None
        self.conns = {}
        for c in self.reader.connections:
            self.conns.setdefault(c.topic, []).append(c)

    def __exit__(self, *exc):
        for ix in self.index or ():
            ix.close()
        try:
            if self.reader is not None:
                self.reader.close()
        except Exception:
            pass
        return False

    def has(self, topic: str) -> bool:
        return topic in self.conns

    def require(self, topic: str, why: str) -> None:
        if topic not in self.conns:
            raise _missing_topic(topic, why, str(self.path))

    def _indexed(self, topics: list[str]) -> Iterator[tuple[str, int, bytes]] | None:
        """(topic, t_log_ns, raw) through the MCAP indexes in rosbags' order (log time, file,
        chunk, place); None (and rosbags from now on) where a file's indexes disagree with
        its statistics."""
        runs = []
        for i, ix in enumerate(self.index):
            ents = ix.entries(topics)
            if ents is None:
                for x in self.index:
                    x.close()
                self.index = None
                self._open_rosbags()
                return None
            runs.append([(t, i, ch, off, cid) for t, ch, off, cid in ents])
        merged = runs[0] if len(runs) == 1 else sorted(e for r in runs for e in r)
        def gen():
            for t, i, ch, off, cid in merged:
                yield self.index[i].topic_of[cid], t, self.index[i].read(ch, off)

        return gen()

    def messages_of(self, topics: list[str],
                    what: str = "bag is corrupt or truncated") -> Iterator[tuple[str, int, bytes]]:
        """(topic, t_log_ns, raw) of several topics in one pass, in log-time order."""
        if not any(self.conns.get(t) for t in topics):
            return
        try:
            it = self._indexed(topics) if self.index is not None else None
            if it is None:
                conns = [c for t in topics for c in self.conns.get(t, [])]
                it = ((c.topic, t, raw) for c, t, raw in self.reader.messages(connections=conns))
            yield from it
        except Gaze4HRIError:
            raise
        except Exception as e:
            raise _read_error(what, e, self.path) from None

    def messages(self, topic: str) -> Iterator[tuple[int, bytes]]:
        for _topic, t, raw in self.messages_of([topic], f"bag is corrupt or truncated while reading {topic}"):
            yield t, raw

    def decode(self, raw: bytes, topic: str):
        try:
            return typestore().deserialize_cdr(raw, MSG_TYPES[topic])
        except Exception as e:
            raise SessionError(f"cannot decode a {MSG_TYPES[topic]} message on {topic} ({_short(e)})", str(self.path),
                               _FIX_BAG) from None


def _short(e: Exception) -> str:
    s = str(e).replace("\n", " ")
    return s if len(s) < 160 else s[:157] + "..."


def _stamp_from_cdr(raw: bytes) -> int:
    """Header stamp (ns) of a CDR message starting with std_msgs/Header, without
    decoding the payload (4-byte encapsulation, int32 sec, uint32 nanosec)."""
    little = raw[1] == 1
    sec, nsec = struct.unpack_from("<iI" if little else ">iI", raw, 4)
    return sec * 1_000_000_000 + nsec


_ENCODINGS = {"rgb8": (3, False), "bgr8": (3, True), "rgba8": (4, False), "bgra8": (4, True), "mono8": (1, False)}


def decode_image(msg, where: str = "") -> np.ndarray:
    """sensor_msgs/Image -> RGB uint8 (H, W, 3) (rgb8, bgr8, rgba8, bgra8, mono8)."""
    enc = str(msg.encoding).lower()
    if enc not in _ENCODINGS:
        raise SessionError(f"unsupported image encoding {msg.encoding!r}", where,
                           f"record one of {', '.join(_ENCODINGS)}")
    ch, swap = _ENCODINGS[enc]
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    buf = np.asarray(msg.data, np.uint8)
    if buf.size < h * step or step < w * ch:
        raise SessionError(f"image data too short ({buf.size} bytes for {w}x{h} {enc})", where, _FIX_BAG)
    img = buf[: h * step].reshape(h, step)[:, : w * ch].reshape(h, w, ch)
    if ch == 1:
        return np.repeat(img, 3, axis=2)
    img = img[..., :3]
    if swap:
        img = img[..., ::-1]
    return np.ascontiguousarray(img)


def _missing_topic(topic: str, why: str, where: str) -> SessionError:
    return SessionError(f"topic {topic} missing from the bag ({why})", where,
                        f"record {topic} ({MSG_TYPES.get(topic, '?')}); {_FIX_BAG}")
