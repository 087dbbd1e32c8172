"""Our ByteTrack gives Ultralytics' BYTETracker rows (the tracker the study used) on random
scenes: boxes, ids, scores and detection indices, frame by frame; plus its own bookkeeping
(births, confirmation, loss and removal) on scenes small enough to reason about."""
from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pytest
from gaze4hri_bench.faces.bytetrack import ByteTrack, TrackerSettings
from gaze4hri_bench.faces.tracking import BYTETRACK_DEFAULTS


class _Results:
    """The Results-like view Ultralytics' BYTETracker reads: conf, cls, xywh, boolean indexing."""

    def __init__(self, xyxy: np.ndarray, conf: np.ndarray):
        self.xyxy, self.conf = np.asarray(xyxy, np.float32).reshape(-1, 4), np.asarray(conf, np.float32)
        self.cls = np.zeros(len(self.conf), np.float32)

    @property
    def xywh(self) -> np.ndarray:
        b = self.xyxy
        return np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2, b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], 1)

    def __len__(self) -> int:
        return len(self.conf)

    def __getitem__(self, idx) -> _Results:
        return _Results(self.xyxy[idx], self.conf[idx])


def _scene(rng: np.random.Generator, frames: int = 240):
    """1-4 moving boxes with jitter, missed frames, low-score frames, occlusions longer than the
    track buffer, degenerate boxes and clutter: every branch of the association."""
    k = int(rng.integers(1, 5))
    pos, vel = rng.uniform(80, 500, (k, 2)), rng.normal(0, 3, (k, 2))
    size = rng.uniform(30, 120, (k, 2))
    hidden = {i: set(range(s, s + int(rng.integers(5, 45)))) for i, s in enumerate(rng.integers(0, frames, k))}
    for t in range(frames):
        pos += vel + rng.normal(0, 1, pos.shape)
        boxes, scores = [], []
        for i in range(k):
            if t in hidden[i] or rng.random() < 0.08:
                continue
            c, s = pos[i] + rng.normal(0, 2, 2), size[i] * rng.uniform(0.95, 1.05, 2)
            boxes.append([c[0] - s[0] / 2, c[1] - s[1] / 2, c[0] + s[0] / 2, c[1] + s[1] / 2])
            scores.append(rng.uniform(0.3, 1) if rng.random() < 0.8 else rng.uniform(0.05, 0.3))
        if rng.random() < 0.1:
            c = rng.uniform(0, 600, 2)
            boxes.append([*c, *(c + rng.uniform(10, 80, 2))])
            scores.append(rng.uniform(0, 1))
        if rng.random() < 0.02:
            boxes.append([10, 10, 10, 50])  # zero width: never a track
            scores.append(0.9)
        yield np.array(boxes, np.float32).reshape(-1, 4), np.array(scores, np.float32)


def test_rows_equal_ultralytics_bytetracker_on_random_scenes(tmp_path):
    os.environ.setdefault("YOLO_OFFLINE", "1")
    os.environ.setdefault("YOLO_CONFIG_DIR", str(tmp_path))
    byte_tracker = pytest.importorskip("ultralytics.trackers.byte_tracker", reason="the reference tracker")
    seen = {"refound": 0, "ids": 0, "rows": 0}
    for seed in range(40):
        ref = byte_tracker.BYTETracker(SimpleNamespace(**BYTETRACK_DEFAULTS))
        ours = ByteTrack(TrackerSettings())
        last_seen: dict[int, int] = {}
        for t, (boxes, scores) in enumerate(_scene(np.random.default_rng(seed))):
            want = np.asarray(ref.update(_Results(boxes, scores)), np.float32).reshape(-1, 8)
            got = ours.update(boxes, scores)
            assert np.array_equal(got, want), f"seed {seed}, frame {t}:\n{got}\n!=\n{want}"
            for tid in got[:, 4].astype(int):
                seen["refound"] += t - last_seen.get(tid, t) > 1
                last_seen[tid] = t
            seen["rows"] += len(got)
        seen["ids"] += len(last_seen)
    # the scenes reached the branches: many tracks, tracks found again after a gap
    assert seen["ids"] > 100 and seen["refound"] > 50 and seen["rows"] > 10_000, seen


def _box(x: float, y: float = 100.0, w: float = 60.0) -> list[float]:
    return [x, y, x + w, y + w]


def test_a_track_is_born_confirmed_lost_found_and_removed():
    bt = ByteTrack(TrackerSettings(track_buffer=5))
    first = bt.update(np.array([_box(100)]), np.array([0.9]))
    assert first[:, 4].tolist() == [1]  # born confirmed on the first frame
    second = bt.update(np.array([_box(103), _box(400)]), np.array([0.9, 0.9]))
    assert second[:, 4].tolist() == [1]  # the later birth waits one frame
    third = bt.update(np.array([_box(106), _box(400)]), np.array([0.9, 0.9]))
    assert sorted(third[:, 4].tolist()) == [1, 2] and third[third[:, 4] == 2, 7].tolist() == [1]
    for _ in range(3):  # track 2 unseen for 3 frames (< buffer)
        bt.update(np.array([_box(109)]), np.array([0.9]))
    back = bt.update(np.array([_box(109), _box(401)]), np.array([0.9, 0.9]))
    assert sorted(back[:, 4].tolist()) == [1, 2]  # found again with its id
    for _ in range(8):  # past the buffer: removed
        bt.update(np.array([_box(109)]), np.array([0.9]))
    new = bt.update(np.array([_box(109), _box(401)]), np.array([0.9, 0.9]))
    assert new[:, 4].tolist() == [1]  # a new id, not yet confirmed
    assert sorted(bt.update(np.array([_box(109), _box(401)]), np.array([0.9, 0.9]))[:, 4].tolist()) == [1, 3]


def test_a_low_score_box_keeps_a_track_but_starts_none():
    bt = ByteTrack(TrackerSettings())
    bt.update(np.array([_box(100)]), np.array([0.9]))
    kept = bt.update(np.array([_box(102)]), np.array([0.15]))  # second association only
    assert kept[:, 4].tolist() == [1] and kept[0, 5] == np.float32(0.15)
    fresh = ByteTrack(TrackerSettings())
    assert len(fresh.update(np.array([_box(100)]), np.array([0.15]))) == 0
    assert len(fresh.update(np.zeros((0, 4)), np.zeros(0))) == 0
