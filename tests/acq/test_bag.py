"""Trial bags: readable by rosbags and mcap, lossless, optionally compressed; a bag
cut anywhere (SIGKILL, power, full disk) is repaired to its last complete chunk."""
import errno
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")
from gaze4hri_acq.nodes._cdr import encode_image  # noqa: E402
from gaze4hri_acq.recorder.bag import DiskFullError, TrialBag, mcap_file, repair_bag  # noqa: E402
from gaze4hri_core.errors import SessionError  # noqa: E402
from gaze4hri_core.session import MSG_TYPES, Topics  # noqa: E402
from mcap.reader import make_reader  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402
from std_msgs.msg import String  # noqa: E402

TOPICS = {Topics.IMAGE: MSG_TYPES[Topics.IMAGE], Topics.EVENTS: MSG_TYPES[Topics.EVENTS]}


def _img(i):
    return np.full((18, 32, 3), i % 256, np.uint8)


def _write(d: Path, n: int, compression="none", close=True, **kw) -> TrialBag:
    b = TrialBag(d, TOPICS, compression=compression, flush_interval_s=0.0, **kw)
    for i in range(n):
        t = 1_000_000_000 + i * 33_333_333
        b.write(Topics.IMAGE, t, encode_image(t, "camera_color_optical_frame", _img(i)))
        b.write(Topics.EVENTS, t, serialize_message(String(data=f"e{i}")))
    if close:
        b.close()
    return b


def _read_rosbags(d: Path):
    with Reader(d) as r:
        return [(c.topic, t, bytes(raw)) for c, t, raw in r.messages()]


def _read_mcap(d: Path):
    with open(mcap_file(d), "rb") as f:
        return [(ch.topic, m.log_time, m.data) for _s, ch, m in make_reader(f).iter_messages()]


@pytest.mark.replay
@pytest.mark.parametrize("compression", ["none", "zstd", "lz4"])
def test_bag_lossless_and_readable_by_rosbags_and_mcap(tmp_path, compression):
    d = tmp_path / "trial"
    _write(d, 12, compression)
    assert (d / "metadata.yaml").is_file() and (d / "trial_0.mcap").is_file()
    a, b = _read_rosbags(d), _read_mcap(d)
    assert len(a) == len(b) == 24
    imgs = [raw for topic, _t, raw in a if topic == Topics.IMAGE]
    for i, raw in enumerate(imgs):
        m = deserialize_message(raw, Image)
        assert bytes(m.data) == _img(i).tobytes()  # lossless
    meta = (d / "metadata.yaml").read_text()
    assert "trial_0.mcap" in meta and "storage_identifier: mcap" in meta


@pytest.mark.replay
@pytest.mark.parametrize("compression", ["zstd", "lz4"])
def test_compression_shrinks_compressible_frames(tmp_path, compression):
    img = np.tile(np.arange(320, dtype=np.uint8)[None, :, None], (180, 1, 3))  # a smooth ramp compresses well
    sizes = {}
    for c in ("none", compression):
        b = TrialBag(tmp_path / c, TOPICS, compression=c, flush_interval_s=60.0)
        for i in range(10):
            b.write(Topics.IMAGE, i, encode_image(i, "cam", img))
        b.close()
        sizes[c] = mcap_file(tmp_path / c).stat().st_size
    assert sizes[compression] < sizes["none"] / 5


@pytest.mark.replay
@pytest.mark.parametrize("cut_fraction", [0.31, 0.5, 0.77, 0.999])
@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_killed_writer_repairs_to_last_complete_chunk(tmp_path, cut_fraction, compression):
    d = tmp_path / "trial"
    b = _write(d, 20, compression, close=False)
    b._w.storage.bio.flush()  # what the OS holds when the process dies
    p = mcap_file(d)
    data = p.read_bytes()
    p.write_bytes(data[: int(len(data) * cut_fraction)])  # torn tail, no summary, no metadata.yaml
    r = repair_bag(d)
    assert r.repaired and r.cut_bytes >= 0  # a cut may fall exactly on a chunk's end: nothing torn to cut
    a, m = _read_rosbags(d), _read_mcap(d)
    assert len(a) == len(m) == r.messages > 0
    # every kept message is intact and in order
    ts = [t for topic, t, _ in a if topic == Topics.IMAGE]
    assert ts == sorted(ts) and ts[0] == 1_000_000_000
    assert not repair_bag(d).repaired  # idempotent


@pytest.mark.replay
def test_injected_disk_full_keeps_what_was_written(tmp_path):
    d = tmp_path / "trial"
    b = TrialBag(d, TOPICS, flush_interval_s=0.0, fail_after_bytes=10_500)  # room for a few 1.7 kB frames
    written = 0
    with pytest.raises(DiskFullError) as ei:
        for i in range(50):
            t = 1_000_000_000 + i
            b.write(Topics.IMAGE, t, encode_image(t, "cam", _img(i)))
            written += 1
    assert ei.value.errno == errno.ENOSPC
    assert 2 <= written < 10
    assert mcap_file(d).stat().st_size == 10_500  # the disk is full: a torn chunk at the end
    b.close()  # closes by repairing: summary + metadata.yaml over the complete chunks
    a = _read_rosbags(d)
    assert len(a) == len(_read_mcap(d)) == written
    assert [deserialize_message(raw, Image).data.tobytes() for _t, _s, raw in a] == [
        _img(i).tobytes() for i in range(written)
    ]


@pytest.mark.replay
def test_existing_bag_directory_is_refused(tmp_path):
    (tmp_path / "trial").mkdir()
    with pytest.raises(SessionError, match="exists already"):
        TrialBag(tmp_path / "trial", TOPICS)


@pytest.mark.replay
def test_repair_refuses_non_mcap(tmp_path):
    d = tmp_path / "trial"
    d.mkdir()
    (d / "trial_0.mcap").write_bytes(b"not an mcap file at all")
    with pytest.raises(SessionError, match="bad magic"):
        repair_bag(d)
    shutil.rmtree(d)


@pytest.mark.replay
@pytest.mark.parametrize("compression", ["none", "zstd", "lz4"])
def test_large_frames_bypass_the_chunk_buffer_and_still_repair(tmp_path, compression):
    """Frames of 1 MiB and more are written as their own chunk (no payload copies),
    compressed with the bag's compressor; readers and the repair see ordinary MCAP."""
    d = tmp_path / "trial"
    b = TrialBag(d, TOPICS, compression=compression, flush_interval_s=60.0)
    big = lambda i: np.full((480, 800, 3), i, np.uint8)  # noqa: E731  1.15 MB
    for i in range(6):
        b.write(Topics.EVENTS, 10 * i, serialize_message(String(data=f"e{i}")))
        b.write(Topics.IMAGE, 10 * i + 1, encode_image(10 * i + 1, "cam", big(i)))
    b._w.storage.bio.flush()
    p = mcap_file(d)
    full = p.read_bytes()
    b.close()
    a = _read_rosbags(d)
    assert [t for _tp, t, _ in a] == [0, 1, 10, 11, 20, 21, 30, 31, 40, 41, 50, 51] and len(_read_mcap(d)) == 12
    assert [deserialize_message(raw, Image).data[0] for tp, _t, raw in a if tp == Topics.IMAGE] == list(range(6))
    imgs = [deserialize_message(raw, Image) for tp, _t, raw in _read_mcap(d) if tp == Topics.IMAGE]
    assert all(bytes(m.data) == big(i).tobytes() for i, m in enumerate(imgs))  # lossless through mcap's reader too
    with open(mcap_file(d), "rb") as f:
        chunks = list(make_reader(f).get_summary().chunk_indexes)
    big_chunks = [c for c in chunks if c.uncompressed_size > 1 << 20]
    assert len(big_chunks) == 6
    want = "" if compression == "none" else compression
    assert all(c.compression == want for c in big_chunks)
    assert all((c.compressed_size < c.uncompressed_size / 20) == (compression != "none") for c in big_chunks)
    # the same bytes cut mid-frame, as a kill would leave them
    d2 = tmp_path / "cut" / "trial"
    d2.mkdir(parents=True)
    (d2 / "trial.mcap").write_bytes(full[: int(len(full) * 0.6)])
    r = repair_bag(d2)
    kept = _read_rosbags(d2)
    assert r.messages == len(kept) == len(_read_mcap(d2)) and 4 <= len(kept) < 12


# --------------------------------------------------------------- issue 13 faults
@pytest.mark.replay
def test_metadata_naming_a_moved_file_is_repaired(tmp_path):
    """The state a kill between the old rename of <trial>.mcap to <trial>_0.mcap and the
    metadata rewrite left behind: metadata names a file that no longer exists. Repair
    must not call that bag complete; afterwards rosbags reads it."""
    d = tmp_path / "trial"
    _write(d, 4)
    meta = d / "metadata.yaml"
    meta.write_text(meta.read_text("utf-8").replace("trial_0.mcap", "trial.mcap"), "utf-8")
    with pytest.raises(Exception, match="missing"):
        _read_rosbags(d)  # reproduces "Some database files are missing"
    r = repair_bag(d)
    assert r.repaired and r.messages == 8
    assert len(_read_rosbags(d)) == 8
    assert not repair_bag(d).repaired


@pytest.mark.replay
def test_mcap_has_its_final_name_from_creation_and_close_renames_nothing(tmp_path, monkeypatch):
    """No rename after the data: the file is <trial>_0.mcap from the start, and a kill
    at the metadata write (simulated) leaves a bag that repair makes readable."""
    import os

    d = tmp_path / "trial"
    b = _write(d, 3, close=False)
    assert [p.name for p in d.glob("*.mcap")] == ["trial_0.mcap"]
    real_replace = os.replace

    def killed(src, dst):  # the metadata's atomic replace never happens (SIGKILL)
        if str(dst).endswith("metadata.yaml"):
            raise KeyboardInterrupt
        return real_replace(src, dst)

    monkeypatch.setattr(os, "replace", killed)
    import pathlib

    monkeypatch.setattr(pathlib.Path, "replace", lambda self, t: killed(self, t))
    with pytest.raises(KeyboardInterrupt):
        b.close()
    monkeypatch.undo()
    assert [p.name for p in d.glob("*.mcap")] == ["trial_0.mcap"] and not (d / "metadata.yaml").exists()
    assert repair_bag(d).repaired
    assert len(_read_rosbags(d)) == 6


def test_free_space_asks_the_file_system_by_time_and_bytes_and_counts_its_own_writes(tmp_path, monkeypatch):
    """Between two statvfs calls the bag's free space is the last answer less its own
    writes; another writer filling the disk is seen at the next call (0.1 s of the bag's
    clock, or 4 MiB of ours), and the reserve then stops the bag."""
    import gaze4hri_acq.recorder.bag as bagmod

    disk = {"free": 1 << 30, "calls": 0}

    def fake_usage(_p):
        disk["calls"] += 1
        return shutil._ntuple_diskusage(2 << 30, (2 << 30) - disk["free"], disk["free"])

    monkeypatch.setattr(bagmod.shutil, "disk_usage", fake_usage)
    now = [0.0]
    b = TrialBag(tmp_path / "trial", TOPICS, flush_interval_s=1e9, clock=lambda: now[0], reserve_bytes=256 << 20)
    payload = encode_image(1, "cam", np.zeros((360, 640, 3), np.uint8))  # 691 kB
    for i in range(5):  # 3.5 MB: under 4 MiB, the clock still: one statvfs
        b.write(Topics.IMAGE, 1_000_000_000 + i, payload)
        disk["free"] -= len(payload)  # what the file system sees of our writes
    assert disk["calls"] == 1 and b.free_bytes() == disk["free"]
    disk["free"] = (256 << 20) + len(payload) // 2  # another program filled the disk: room for half a frame
    b.write(Topics.IMAGE, 1_000_000_010, payload)  # not seen yet: the estimate is 1 GB less our writes
    now[0] += 0.1
    with pytest.raises(DiskFullError, match="reserve"):
        b.write(Topics.IMAGE, 1_000_000_011, payload)
    assert disk["calls"] == 2 and b.reserve_hit and not b.broken
    b.close()


@pytest.mark.replay
def test_disk_reserve_stops_before_the_disk_is_full_and_the_bag_closes_complete(tmp_path):
    """Disk full, fixed: writes stop while ``reserve_bytes`` are still free, so the bag
    closes normally (summary + metadata) without touching the last bytes of the disk."""
    d = tmp_path / "trial"
    room, reserve = 40_000, 12_000
    b = TrialBag(d, TOPICS, flush_interval_s=0.0, fail_after_bytes=room, reserve_bytes=reserve)
    written = 0
    with pytest.raises(DiskFullError, match="reserve") as ei:
        for i in range(200):
            t = 1_000_000_000 + i
            b.write(Topics.IMAGE, t, encode_image(t, "cam", _img(i)))
            written += 1
    assert ei.value.errno == errno.ENOSPC and b.reserve_hit and not b.broken
    assert mcap_file(d).stat().st_size <= room - reserve
    b.close()  # an ordinary close: no ENOSPC, no repair
    size = mcap_file(d).stat().st_size
    assert size <= room and mcap_file(d).read_bytes()[-8:] == b"\x89MCAP0\r\n"
    assert not repair_bag(d).repaired
    assert len(_read_rosbags(d)) == len(_read_mcap(d)) == written >= 5


@pytest.mark.unit
def test_disk_ballast_holds_real_blocks_and_gives_them_back(tmp_path):
    """The ballast is allocated (not sparse) while held and gone once released."""
    from gaze4hri_acq.recorder.ballast import BALLAST_NAME, DiskBallast

    b = DiskBallast(tmp_path / "bags", 2 * 1024 * 1024)
    assert b.allocate() and b.held
    st = (tmp_path / "bags" / BALLAST_NAME).stat()
    assert st.st_size == 2 * 1024 * 1024 and st.st_blocks * 512 >= 2 * 1024 * 1024
    assert b.release() and not (tmp_path / "bags" / BALLAST_NAME).exists()
    assert not b.release()
    assert not DiskBallast(tmp_path, 0).allocate() and not (tmp_path / BALLAST_NAME).exists()


def test_the_os_is_asked_to_write_frames_out_while_the_bag_records(tmp_path, monkeypatch):
    """Every WRITEBACK_EVERY_BYTES of frames (and at each flush) the written bytes are handed to
    the OS's writeback (posix_fadvise), so the fsync at close waits for the last few MB only;
    the bag reads back whole."""
    import os

    calls = []
    real = os.posix_fadvise
    def advise(fd, off, n, adv):
        calls.append((off, n, adv))
        return real(fd, off, n, adv)

    monkeypatch.setattr(os, "posix_fadvise", advise)
    d = tmp_path / "trial"
    b = TrialBag(d, TOPICS, flush_interval_s=60.0)
    calls.clear()  # the header's flush
    big = lambda i: np.full((480, 800, 3), i, np.uint8)  # noqa: E731  1.15 MB
    for i in range(20):
        b.write(Topics.IMAGE, i, encode_image(i, "cam", big(i)))
    assert len(calls) == 2 and all(adv == os.POSIX_FADV_DONTNEED for *_x, adv in calls)
    assert calls[0][0] == 0 and calls[1][0] == calls[0][1] & ~0xFFF  # each from where the last one ended
    assert b._written_out > 16 << 20  # before the close
    b.close()
    imgs = [deserialize_message(raw, Image) for tp, _t, raw in _read_mcap(d) if tp == Topics.IMAGE]
    assert [m.data[0] for m in imgs] == list(range(20))
