"""One open reader per trial (issue 22, item 2): inside ``SessionDataset.hold`` the
trial's scan (ground truth), frames and camera intrinsics share one rosbags reader, and
return exactly what separate opens return; outside it each read opens its own."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from gaze4hri_bench.data.backends import cdr
from gaze4hri_bench.data.backends import session as backend
from gaze4hri_bench.data.reader import Dataset

pytestmark = pytest.mark.replay


@pytest.fixture
def opens(monkeypatch):
    """Bag opens counted per thread; each still opens the real bag (open_bag.__enter__)."""
    count: dict[int, int] = {}
    real = backend.open_bag.__enter__

    def counting(self):
        tid = threading.get_ident()
        count[tid] = count.get(tid, 0) + 1
        return real(self)

    monkeypatch.setattr(backend.open_bag, "__enter__", counting)
    return count


def _read(ds, ref):
    gt = ds.trial_ground_truth(ref)
    frames = [(f.index, f.t_ns, f.image.copy()) for f in ds.iter_frames(ref)]
    return gt, frames, ds.camera_info(ref)


def test_hold_opens_the_bag_once_and_reads_the_same(sessions, opens):
    plain = Dataset(sessions, trials=["illum100_P5"])
    ref = plain.trials()[0]
    me = threading.get_ident()
    gt0, frames0, cam0 = _read(plain, ref)
    assert opens[me] == 2  # scan, then frames; the intrinsics come from the cached scan
    opens.clear()
    assert plain.camera_info(ref).name == "bag" and me not in opens  # cached scan: no open
    cold = Dataset(sessions, trials=["illum100_P5"])
    cam_cold = cold.camera_info(cold.trials()[0])  # no scan yet: reads the bag's first CameraInfo
    assert (
        opens[me] == 1
        and np.array_equal(cam_cold.K, cam0.K)
        and (cam_cold.width, cam_cold.height) == (cam0.width, cam0.height)
    )

    opens.clear()
    held = Dataset(sessions, trials=["illum100_P5"])
    ref = held.trials()[0]
    with held.hold(ref):
        with held.hold(ref):  # nested: shares the outer reader
            gt1, frames1, cam1 = _read(held, ref)
        assert held._held[me][1] is not None  # still open until the outer hold ends
    assert opens[me] == 1
    assert held._held == {}  # closed and forgotten
    assert gt1.equals(gt0)
    assert [(i, t) for i, t, _ in frames1] == [(i, t) for i, t, _ in frames0]
    assert all(np.array_equal(a[2], b[2]) for a, b in zip(frames1, frames0, strict=True))
    assert np.array_equal(cam1.K, cam0.K) and cam1.name == "bag"


def test_hold_is_per_thread_and_per_bag(sessions, opens):
    ds = Dataset(sessions, trials=["illum100_P5", "arc_P1"])
    a, b = ds.trials()
    seen = {}
    with ds.hold(a):
        n_b = sum(1 for _ in ds.iter_frames(b))  # another bag: its own reader
        t = threading.Thread(target=lambda: seen.update(n=sum(1 for _ in ds.iter_frames(a))))
        t.start()
        t.join(60)
        n_a = sum(1 for _ in ds.iter_frames(a))
        n_a2 = sum(1 for _ in ds.iter_frames(a))  # same held reader, read again from the start
    me = threading.get_ident()
    assert n_b > 0 and seen["n"] == n_a == n_a2 > 0
    assert opens[me] == 3  # b not held: its scan and its frames; a held: once for both reads
    assert (
        sum(v for k, v in opens.items() if k != me) == 2
    )  # the other thread never uses the held reader: a's scan and frames


@pytest.mark.parametrize("little", [True, False])
def test_direct_cdr_reads_what_rosbags_reads(little):
    """image_cdr and _poses (the per-frame and pose-stream fields read without rosbags'
    message objects) against rosbags' own deserializer, both byte orders, odd frame ids
    and a row stride with padding; a truncated or over-long message is a one-line error."""
    from gaze4hri_core.errors import SessionError
    from gaze4hri_core.session import MSG_TYPES, Topics

    ts = backend.typestore()
    g = ts.types
    rng = np.random.default_rng(1)
    pix = rng.integers(0, 256, (5, 8), dtype=np.uint8)  # 2 px rgb8 wide, step 8 (2 bytes of padding per row)
    head = lambda frame, s: g["std_msgs/msg/Header"](g["builtin_interfaces/msg/Time"](s, 123 + s), frame)  # noqa: E731
    img = g["sensor_msgs/msg/Image"](head("cam_optical", 7), 5, 2, "rgb8", 0, 8, pix.reshape(-1))
    raw = bytes(ts.serialize_cdr(img, "sensor_msgs/msg/Image", little_endian=little))
    mine, theirs = cdr.image_cdr(raw), ts.deserialize_cdr(raw, "sensor_msgs/msg/Image")
    assert (mine.height, mine.width, mine.encoding, mine.step) == (5, 2, "rgb8", 8)
    assert np.array_equal(backend.decode_image(mine), backend.decode_image(theirs))
    assert np.array_equal(backend.decode_image(mine), pix[:, :6].reshape(5, 2, 3))

    Pt, Qt = g["geometry_msgs/msg/Point"], g["geometry_msgs/msg/Quaternion"]
    raws = []
    for k, frame in enumerate(["world", "w", "a_longer_frame_id"]):
        q = rng.normal(size=4)
        pose = g["geometry_msgs/msg/Pose"](Pt(*rng.normal(size=3)), Qt(*(q / np.linalg.norm(q))))
        raws.append(
            bytes(
                ts.serialize_cdr(
                    g["geometry_msgs/msg/PoseStamped"](head(frame, k), pose),
                    MSG_TYPES[Topics.HEAD_POSE],
                    little_endian=little,
                )
            )
        )
    bag = backend.open_bag("/nonexistent")  # only its path is used, for the error's location
    s = cdr._poses(bag, Topics.HEAD_POSE, raws)
    for k, raw in enumerate(raws):
        m = ts.deserialize_cdr(raw, MSG_TYPES[Topics.HEAD_POSE])
        assert s.t_ns[k] == m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
        assert tuple(s.p[k]) == (m.pose.position.x, m.pose.position.y, m.pose.position.z)
        assert tuple(s.q[k]) == (m.pose.orientation.x, m.pose.orientation.y, m.pose.orientation.z, m.pose.orientation.w)
    for bad in (raws[0][:-8], raws[0] + bytes(8)):
        with pytest.raises(SessionError, match="cannot decode a geometry_msgs/msg/PoseStamped message on /mocap"):
            cdr._poses(bag, Topics.HEAD_POSE, [bad])
    with pytest.raises(ValueError):
        cdr.image_cdr(raw[:-3])
