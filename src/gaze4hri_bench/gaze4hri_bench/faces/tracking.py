"""Keep the subject's face across frames: ByteTrack (Zhang et al., ECCV 2022; the study's
tracker, Sezer et al. Sec. III-D; faces/bytetrack.py, equal to Ultralytics' BYTETracker) fed our
own detections, plus a subject-selection rule.

Selection: the subject sits in front of the robot, so among the active tracks the
subject is the one with the best mean of (relative box area, centrality) over its
history; once chosen it is kept while it lives (a bystander passing by cannot steal
it), and re-chosen only after it has been lost for ``patience`` frames.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .bytetrack import ByteTrack, TrackerSettings
from .detectors import FaceDetection

__all__ = ["SubjectTracker", "BYTETRACK_DEFAULTS", "track_all", "most_frequent_track", "study_boxes"]

# Ultralytics' bytetrack.yaml defaults (8.4), track_buffer in frames at 30 fps.
BYTETRACK_DEFAULTS = dataclasses.asdict(TrackerSettings())


def _byte_tracker(frame_rate: int, **overrides) -> ByteTrack:
    return ByteTrack(TrackerSettings(**{**BYTETRACK_DEFAULTS, **overrides}), frame_rate=frame_rate)


def _update(tracker: ByteTrack, detections: list[FaceDetection]) -> np.ndarray:
    """(N, 8) rows [x1, y1, x2, y2, track id, score, class, detection index] for one frame."""
    return tracker.update(np.array([d.box for d in detections], np.float32).reshape(-1, 4),
                          np.array([d.score for d in detections], np.float32))


class SubjectTracker:
    """``update(detections, image_shape) -> FaceDetection | None``: the subject's face in
    this frame (the detection matched to the subject's track, its box the tracker's
    smoothed box), or None when the subject is not seen.

    ``frame_rate``: camera rate (ByteTrack scales its buffer); ``patience``: frames a
    lost subject track is waited for before another track may become the subject."""

    def __init__(self, frame_rate: int = 30, patience: int = 30, **bytetrack):
        self.tracker = _byte_tracker(frame_rate, **bytetrack)
        self.patience = patience
        self.subject_id: int | None = None
        self.lost_for = 0
        self.history: dict[int, list[float]] = {}

    @staticmethod
    def _merit(box, shape) -> float:
        H, W = shape[:2]
        x1, y1, x2, y2 = box
        area = max(x2 - x1, 0) * max(y2 - y1, 0) / float(W * H)
        cx, cy = (x1 + x2) / 2 / W - 0.5, (y1 + y2) / 2 / H - 0.5
        central = 1.0 - min(np.hypot(cx, cy) / np.hypot(0.5, 0.5), 1.0)
        return float(np.sqrt(area) + 0.5 * central)

    def update(self, detections: list[FaceDetection], image_shape) -> FaceDetection | None:
        dets = list(detections or [])
        active = {}
        for row in _update(self.tracker, dets):
            tid, idx = int(row[4]), int(row[7])
            active[tid] = (row[:4].astype(float), idx)
            self.history.setdefault(tid, []).append(self._merit(row[:4], image_shape))
        if self.subject_id is not None and self.subject_id not in active:
            self.lost_for += 1
            if self.lost_for > self.patience:
                self.subject_id = None
        if self.subject_id is None and active:
            self.subject_id = max(active, key=lambda t: np.mean(self.history[t][-30:]))
        if self.subject_id is None or self.subject_id not in active:
            return None
        self.lost_for = 0
        box, idx = active[self.subject_id]
        src = dets[idx] if 0 <= idx < len(dets) else None
        return FaceDetection(
            box,
            src.score if src else 0.0,
            src.keypoints if src else None,
            src.landmarks if src else None,
            self.subject_id,
        )

    def reset(self) -> None:
        """Forget every track (call between trials)."""
        self.tracker.reset()
        self.subject_id, self.lost_for, self.history = None, 0, {}


# -- the study's rule (profile ``study``) -----------------------------------------------------
def track_all(detections_per_frame, frame_rate: int = 30, **bytetrack) -> list[list[tuple[np.ndarray, int, float]]]:
    """Run ByteTrack over a whole trial: per frame, every tracked (box, track id, score)."""
    tracker = _byte_tracker(frame_rate, **bytetrack)
    out = []
    for dets in detections_per_frame:
        rows = _update(tracker, list(dets or []))
        out.append([(r[:4].astype(float), int(r[4]), float(r[5])) for r in rows])
    return out


def most_frequent_track(tracks_per_frame) -> int | None:
    """The track id seen in most frames (ties: the id seen first), as the study chose
    its subject (GazeForHRI/Gaze4HRI@main:head_detection.py:136); None without tracks."""
    counts: dict[int, int] = {}
    for frame in tracks_per_frame:
        for _box, tid, _s in frame:
            counts[tid] = counts.get(tid, 0) + 1
    return max(counts, key=lambda t: counts[t]) if counts else None


def study_boxes(tracks_per_frame, shape, margin: float = 0.1) -> tuple[list[np.ndarray | None], int | None]:
    """The study's head_bboxes rule on tracked boxes: the most frequent track's box per
    frame, grown by ``margin`` of its size on every side, clamped to the image and
    truncated to integers (GazeForHRI/Gaze4HRI@main:head_detection.py:111-148); None
    where that track is absent. Works on boxes from any source (detector or dataset)."""
    from .crops import grow_box

    tid = most_frequent_track(tracks_per_frame)
    out: list[np.ndarray | None] = []
    for frame in tracks_per_frame:
        b = next((box for box, t, _s in frame if t == tid), None)
        out.append(None if b is None else np.floor(grow_box(b, margin, shape)))
    return out, tid
