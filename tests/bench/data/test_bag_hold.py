"""One open reader per trial (issue 22, item 2): inside ``SessionDataset.hold`` the
trial's scan (ground truth), frames and camera intrinsics share one rosbags reader, and
return exactly what separate opens return; outside it each read opens its own."""
from __future__ import annotations

import threading

import numpy as np
import pytest
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
    assert opens[me] == 1 and np.array_equal(cam_cold.K, cam0.K) and (cam_cold.width, cam_cold.height) == (cam0.width, cam0.height)

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
    assert sum(v for k, v in opens.items() if k != me) == 2  # the other thread never uses the held reader: a's scan and frames
