"""ByteTrack (Zhang et al., "ByteTrack: Multi-Object Tracking by Associating Every Detection
Box", ECCV 2022, Sec. 3) on our own detections, in NumPy with `lap` for the assignment.

Why our own: the study tracked faces with Ultralytics' BYTETracker (study-code.md, head_bboxes),
but importing Ultralytics pulls torch and torchvision; the packaged alternatives pull
opencv-python (trackers), which cannot sit beside opencv-python-headless, or torch
(bytetracker), and supervision 0.31 no longer ships a tracker (docs/pipeline_data.md, "Tracking").
This module follows the behaviour of Ultralytics 8.4's BYTETracker with bytetrack.yaml's
settings, so its rows equal that tracker's (tests/bench/faces/test_bytetrack.py compares the two
on random scenes):

* state (cx, cy, a, h) and velocities under a constant-velocity Kalman filter with noise scaled
  by the box height (Wojke et al., "Deep SORT", ICIP 2017, Sec. 2.1);
* association 1: tracked and lost tracks against high-score boxes, cost 1 - IoU x score,
  gated at ``match_thresh``; association 2: the still unmatched tracked tracks against
  low-score boxes, cost 1 - IoU gated at 0.5 (the paper's Sec. 3, "BYTE");
* a track born in a later frame is unconfirmed until matched in the next frame (cost gate
  0.7); a lost track is dropped after ``track_buffer`` frames;
* a tracked/lost pair with IoU over 0.85 keeps the older of the two.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["ByteTrack", "TrackerSettings"]

_TRACKED, _LOST, _REMOVED = 1, 2, 3
_POS_W, _VEL_W = 1.0 / 20, 1.0 / 160  # Kalman noise per unit of box height (Deep SORT, Sec. 2.1)
_F = np.eye(8) + np.eye(8, k=4)  # constant velocity, one frame per step
_DUPLICATE_COST = 0.15  # a tracked and a lost track closer than this (1 - IoU) are one object
_SECOND_GATE, _UNCONFIRMED_GATE = 0.5, 0.7


@dataclass(frozen=True)
class TrackerSettings:
    """Ultralytics' bytetrack.yaml values (the study's tracker); ``track_buffer`` in frames at 30 fps."""

    track_high_thresh: float = 0.25
    track_low_thresh: float = 0.1
    new_track_thresh: float = 0.25
    track_buffer: int = 30
    match_thresh: float = 0.8
    fuse_score: bool = True


def _initiate(xyah: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kalman state for a new track: position = measurement, velocity 0 (Deep SORT Sec. 2.1)."""
    m = np.asarray(xyah, np.float64)
    h = m[3]
    std = np.array([2 * _POS_W * h, 2 * _POS_W * h, 1e-2, 2 * _POS_W * h,
                    10 * _VEL_W * h, 10 * _VEL_W * h, 1e-5, 10 * _VEL_W * h])
    return np.r_[m, np.zeros(4)], np.diag(std**2)


def _predict(means: np.ndarray, covs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One constant-velocity step for a stack of states (N, 8), (N, 8, 8)."""
    h = means[:, 3]
    one = np.ones_like(h)
    std = np.stack([_POS_W * h, _POS_W * h, 1e-2 * one, _POS_W * h,
                    _VEL_W * h, _VEL_W * h, 1e-5 * one, _VEL_W * h], axis=1)
    q = np.zeros((len(h), 8, 8))
    q[:, range(8), range(8)] = std**2
    return means @ _F.T, np.dot(np.dot(_F, covs).transpose((1, 0, 2)), _F.T) + q


def _correct(mean: np.ndarray, cov: np.ndarray, xyah: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Kalman update with a measured (cx, cy, a, h); measurement noise scaled by the height."""
    h = mean[3]
    s = cov[:4, :4] + np.diag(np.square([_POS_W * h, _POS_W * h, 1e-1, _POS_W * h]))
    gain = np.linalg.solve(s, cov[:, :4].T).T
    new_mean = mean + np.dot(xyah - mean[:4], gain.T)
    return new_mean, cov - np.linalg.multi_dot((gain, s, gain.T))


def _xyah(tlwh: np.ndarray) -> np.ndarray:
    out = tlwh.copy()
    out[:2] += out[2:] / 2
    out[2] /= out[3]
    return out


def _cost(a: list[np.ndarray], b: list[np.ndarray]) -> np.ndarray:
    """1 - IoU between two lists of x1y1x2y2 boxes (float32, as the reference computes it)."""
    if not a or not b:
        return np.ones((len(a), len(b)), np.float32)
    p, q = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    iw = (np.minimum(p[:, None, 2], q[:, 2]) - np.maximum(p[:, None, 0], q[:, 0])).clip(0)
    ih = (np.minimum(p[:, None, 3], q[:, 3]) - np.maximum(p[:, None, 1], q[:, 1])).clip(0)
    inter = iw * ih
    union = (q[:, 2] - q[:, 0]) * (q[:, 3] - q[:, 1]) + ((p[:, 2] - p[:, 0]) * (p[:, 3] - p[:, 1]))[:, None] - inter
    return 1 - inter / (union + 1e-7)


def _assign(cost: np.ndarray, gate: float) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Minimum-cost matching with pairs costlier than ``gate`` left out (Jonker-Volgenant, `lap`)."""
    if cost.size == 0:
        return [], list(range(cost.shape[0])), list(range(cost.shape[1]))
    import lap

    _, x, y = lap.lapjv(cost, extend_cost=True, cost_limit=gate)
    return ([(i, int(j)) for i, j in enumerate(x) if j >= 0], [int(i) for i in np.flatnonzero(x < 0)],
            [int(j) for j in np.flatnonzero(y < 0)])


@dataclass(eq=False)
class _Track:
    """One box: a detection until activated, then a Kalman track."""

    tlwh: np.ndarray  # float32, the detection's (x, y, w, h) until the track has a state
    score: np.float32
    idx: int
    mean: np.ndarray | None = None
    cov: np.ndarray | None = None
    track_id: int = 0
    state: int = 0
    activated: bool = False
    frame: int = 0
    start: int = 0

    def box_tlwh(self) -> np.ndarray:
        if self.mean is None:
            return self.tlwh.copy()
        out = self.mean[:4].copy()
        out[2] *= out[3]
        out[:2] -= out[2:] / 2
        return out

    def xyxy(self) -> np.ndarray:
        out = self.box_tlwh()
        out[2:] += out[:2]
        return out

    def absorb(self, det: _Track, frame: int) -> None:
        """Correct the state with a matched detection; the track is (again) tracked."""
        self.mean, self.cov = _correct(self.mean, self.cov, _xyah(det.box_tlwh()))
        self.state, self.activated, self.frame = _TRACKED, True, frame
        self.score, self.idx = det.score, det.idx


class ByteTrack:
    """``update(xyxy, scores) -> (N, 8) float32`` rows [x1, y1, x2, y2, track_id, score, class 0,
    detection index] of the confirmed tracks in this frame (Ultralytics' BYTETracker rows)."""

    def __init__(self, settings: TrackerSettings = TrackerSettings(), frame_rate: int = 30):
        self.s = settings
        # the buffer is in frames at 30 fps, scaled to the camera's rate (ByteTrack's code)
        self.max_lost = int(frame_rate / 30.0 * settings.track_buffer)
        self.reset()

    def reset(self) -> None:
        """Forget every track; ids start again at 1."""
        self.tracked: list[_Track] = []
        self.lost: list[_Track] = []
        self.removed_ids: set[int] = set()
        self.frame = 0
        self._next_id = 0

    def _detections(self, xyxy: np.ndarray, scores: np.ndarray) -> tuple[list[_Track], list[_Track]]:
        b = np.asarray(xyxy, np.float32).reshape(-1, 4)
        conf = np.asarray(scores, np.float32).reshape(-1)
        xywh = np.stack([(b[:, 0] + b[:, 2]) / 2, (b[:, 1] + b[:, 3]) / 2, b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], 1)
        valid = (xywh[:, 2] > 0) & (xywh[:, 3] > 0)  # the state divides by the height
        high = valid & (conf >= self.s.track_high_thresh)
        low = valid & (conf > self.s.track_low_thresh) & (conf < self.s.track_high_thresh)
        c = xywh.astype(np.float64)  # the corner is taken in float64, then stored in float32
        tlwh = np.stack([c[:, 0] - c[:, 2] / 2, c[:, 1] - c[:, 3] / 2, c[:, 2], c[:, 3]], 1).astype(np.float32)

        def make(mask):
            return [_Track(tlwh[i].copy(), conf[i], int(i)) for i in np.flatnonzero(mask)]

        return make(high), make(low)

    def _cost(self, tracks: list[_Track], dets: list[_Track], fuse: bool) -> np.ndarray:
        cost = _cost([t.xyxy() for t in tracks], [d.xyxy() for d in dets])
        if fuse and cost.size:
            cost = 1 - (1 - cost) * np.array([d.score for d in dets])[None]
        return cost

    def update(self, xyxy: np.ndarray, scores: np.ndarray) -> np.ndarray:
        self.frame += 1
        f = self.frame
        high, low = self._detections(xyxy, scores)
        unconfirmed = [t for t in self.tracked if not t.activated]
        pool = [t for t in self.tracked if t.activated]
        ids = {p.track_id for p in pool}
        pool += [t for t in self.lost if t.track_id not in ids]
        if pool:
            means = np.asarray([t.mean for t in pool])
            means[[t.state != _TRACKED for t in pool], 7] = 0  # a lost track's height stops changing
            means, covs = _predict(means, np.asarray([t.cov for t in pool]))
            for t, m, c in zip(pool, means, covs, strict=True):
                t.mean, t.cov = m, c
        activated, refound, lost_now, removed_now = [], [], [], []

        def match(track, det):
            back = track.state != _TRACKED
            track.absorb(det, f)
            (refound if back else activated).append(track)

        pairs, left_tracks, left_dets = _assign(self._cost(pool, high, self.s.fuse_score), self.s.match_thresh)
        for i, j in pairs:
            match(pool[i], high[j])
        still = [pool[i] for i in left_tracks if pool[i].state == _TRACKED]
        unmatched = list(range(len(still)))
        if still and low:
            pairs, unmatched, _ = _assign(self._cost(still, low, False), _SECOND_GATE)
            for i, j in pairs:
                match(still[i], low[j])
        for i in unmatched:
            still[i].state = _LOST
            lost_now.append(still[i])

        high = [high[j] for j in left_dets]
        new = list(range(len(high)))
        if unconfirmed:
            pairs, gone, new = _assign(self._cost(unconfirmed, high, self.s.fuse_score), _UNCONFIRMED_GATE)
            for i, j in pairs:
                unconfirmed[i].absorb(high[j], f)
                activated.append(unconfirmed[i])
            for i in gone:
                unconfirmed[i].state = _REMOVED
                removed_now.append(unconfirmed[i])
        for j in new:
            if high[j].score >= self.s.new_track_thresh:
                self._start(high[j], f)
                activated.append(high[j])
        for t in self.lost:
            if f - t.frame > self.max_lost:
                t.state = _REMOVED
                removed_now.append(t)
        self._merge(activated, refound, lost_now, removed_now)
        rows = [[*t.xyxy().tolist(), t.track_id, t.score, 0.0, t.idx] for t in self.tracked if t.activated]
        return np.asarray(rows, np.float32).reshape(-1, 8)

    def _start(self, det: _Track, frame: int) -> None:
        self._next_id += 1
        det.track_id = self._next_id
        det.mean, det.cov = _initiate(_xyah(det.tlwh))
        det.state, det.frame, det.start = _TRACKED, frame, frame
        det.activated = frame == 1  # later births wait one frame for confirmation

    def _merge(self, activated, refound, lost_now, removed_now) -> None:
        """The frame's bookkeeping; a track removed now leaves the lost list at the next frame,
        as in the reference (its removed list is consulted before this frame's removals join it)."""
        tracked = [t for t in self.tracked if t.state == _TRACKED]
        for group in (activated, refound):
            ids = {t.track_id for t in tracked}
            tracked += [t for t in group if t.track_id not in ids]
        ids = {t.track_id for t in tracked}
        lost = [t for t in self.lost if t.track_id not in ids] + lost_now
        lost = [t for t in lost if t.track_id not in self.removed_ids]
        self.tracked, self.lost = self._drop_duplicates(tracked, lost)
        self.removed_ids.update(t.track_id for t in removed_now)

    @staticmethod
    def _drop_duplicates(tracked: list[_Track], lost: list[_Track]) -> tuple[list[_Track], list[_Track]]:
        cost = _cost([t.xyxy() for t in tracked], [t.xyxy() for t in lost])
        drop_t, drop_l = set(), set()
        for p, q in zip(*np.where(cost < _DUPLICATE_COST), strict=True):
            if tracked[p].frame - tracked[p].start > lost[q].frame - lost[q].start:
                drop_l.add(q)
            else:
                drop_t.add(p)
        return ([t for i, t in enumerate(tracked) if i not in drop_t],
                [t for i, t in enumerate(lost) if i not in drop_l])
