"""The tracked EAR pass: the eye aspect ratio of every frame of a trial at a fraction of
the full face pass's cost, with the same blink decisions.

The full pass (pipeline.face_pass.FaceTrack) detects the face in every frame and runs
the face mesh on its box: ~2/3 of its time is the detector. Here the detector runs only
to find the face (the first frame, or after the mesh lost it); between, the face mesh
tracks it: each frame's region comes from the last landmarks (MediaPipe Face Mesh's
tracking; faces.mesh_lite runs its landmark model on that region directly). Landmarks
are measured on every ``stride``-th frame; a frame between two measured ones is measured
too when either neighbour may be near a blink (EAR under ``refine_below`` x the running
median, or the two differ by over ``refine_jump`` x it) or lacks a face, else it takes
their mean. EAR: Soukupova & Cech, CVWW 2016, Eq. 1 (faces.landmarks).
benchmarks/face_pass.py measures the cost and the agreement with the full pass.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
from gaze4hri_core.registry import Registry

from .landmarks import mean_ear
from .mesh_lite import Roi, roi_from_box, roi_from_landmarks

__all__ = ["EarPassSettings", "TrackedEar", "EAR_PASSES"]


@dataclass(frozen=True)
class EarPassSettings:
    """How the tracked pass samples a trial (defaults measured by benchmarks/face_pass.py)."""

    stride: int = 2  # landmarks on every stride-th frame (1: every frame, tracked)
    refine_below: float = 0.95  # measure a skipped frame when a neighbour's EAR < this x the running median
    refine_jump: float = 0.08  # ... or the neighbours' EARs differ by more than this x the running median
    warmup: int = 30  # frames measured one by one at a trial's start (the running median needs them)
    margin: float = 0.25  # region = the face box grown by this on each side: 1.5 x, MediaPipe's (mesh_lite.ROI_SCALE)


_BOX = ("x1", "y1", "x2", "y2")

#: how a run measures EAR (``gaze4hri-bench run --ear-pass``): the tracked pass's settings,
#: or None for the full pass (detector and face mesh on every frame, pipeline.face_pass.FaceTrack)
EAR_PASSES: Registry[EarPassSettings | None] = Registry("EAR pass", where="--ear-pass")
EAR_PASSES.add("tracked", EarPassSettings())
EAR_PASSES.add("full", None)


class TrackedEar:
    """One trial's EAR rows (pipeline.face_pass.FACE_COLUMNS) from ``step(index, image)``
    called in frame order, then :meth:`rows`. ``detect(image) -> [FaceDetection]`` finds
    the face; ``mesh(image, roi) -> landmarks | None`` measures it in a region
    (faces.mesh_lite.LiteMesh.landmarks)."""

    def __init__(self, detect, mesh, settings: EarPassSettings | None = None):
        self.detect, self.mesh = detect, mesh
        self.s = settings or EarPassSettings()
        self._scale = 1.0 + 2.0 * self.s.margin  # region side / face box side
        self.roi: Roi | None = None  # the region of the next measured frame
        self._n_faces = 0
        self._rows: dict[int, dict] = {}
        self._ears: list[float] = []  # measured EARs, sorted (the running median)
        self._last: int | None = None  # the last measured frame
        self._pending: list[tuple[int, np.ndarray]] = []  # skipped frames waiting for their next neighbour
        self._count = 0  # frames stepped
        self.measured = self.refined = self.acquired = 0

    # ------------------------------------------------------------------ measuring
    def _acquire(self, image: np.ndarray) -> Roi | None:
        """The detector's face (the largest: the subject sits closest) -> the region around it."""
        self.acquired += 1
        dets = self.detect(image)
        self._n_faces = len(dets)
        if not dets:
            return None
        return roi_from_box(max(dets, key=lambda d: d.area).box, self._scale)

    def _track(self, image: np.ndarray) -> np.ndarray | None:
        """This frame's landmarks from the tracked region (the detector's when there is none,
        or when the mesh lost the face); the next region from them."""
        fresh = self.roi is None
        if fresh:
            self.roi = self._acquire(image)
            if self.roi is None:
                return None
        lm = self.mesh(image, self.roi)
        if lm is None and not fresh:  # lost: find the face again in this frame
            self.roi = self._acquire(image)
            lm = self.mesh(image, self.roi) if self.roi is not None else None
        self.roi = roi_from_landmarks(lm, self._scale) if lm is not None else None
        return lm

    def _box(self, roi: Roi) -> tuple[float, ...]:
        """The face box inside a region (the region without its margin; axis-aligned)."""
        h = 0.5 * roi.side / self._scale
        return roi.cx - h, roi.cy - h, roi.cx + h, roi.cy + h

    def _row(self, index: int, box=None, ear: float | None = None) -> dict:
        """A face-table row: the frame alone, or with the face's box and EAR (no detector
        score between detections; one track)."""
        row = {"frame": int(index), "n_faces": self._n_faces}
        if box is not None and ear is not None:
            row.update(zip(("x1", "y1", "x2", "y2"), (float(v) for v in box), strict=True), score=np.nan,
                       track_id=1, ear=float(ear))
        return row

    def _measure(self, index: int, image: np.ndarray) -> None:
        self.measured += 1
        lm = self._track(image)
        if lm is None:
            self._rows[index] = self._row(index)
        else:
            self._rows[index] = self._row(index, self._box(self.roi), mean_ear(lm))
            bisect.insort(self._ears, self._rows[index]["ear"])
        self._last = index

    def _median(self) -> float:
        return self._ears[len(self._ears) // 2] if self._ears else float("nan")

    def _settle(self, after: int | None) -> None:
        """The skipped frames between the last measured frame and ``after`` (None: the
        trial ended): each measured (refined), or all linearly between their neighbours."""
        pending, self._pending = self._pending, []
        first = pending[0][0]
        a = self._rows.get(first - 1)
        b = self._rows.get(after) if after is not None else None
        ea, eb = (r.get("ear", np.nan) if r else np.nan for r in (a, b))
        med = self._median()
        if np.isfinite(ea) and np.isfinite(eb) and np.isfinite(med) \
                and min(ea, eb) >= self.s.refine_below * med and abs(ea - eb) <= self.s.refine_jump * med:
            ba, bb = (np.array([r[k] for k in _BOX]) for r in (a, b))
            for index, _ in pending:
                w = (index - (first - 1)) / (after - (first - 1))
                self._rows[index] = self._row(index, (1 - w) * ba + w * bb, (1 - w) * ea + w * eb)
            return
        boxes = [np.array([r[k] for k in _BOX]) for r in (a, b) if r and "x1" in r]
        box = np.mean(boxes, axis=0) if boxes else None
        # measured in the region tracked from the later neighbour, else around the neighbours' box
        roi = None if box is None else self.roi if self.roi is not None else roi_from_box(box, self._scale)
        for index, image in pending:
            self.refined += 1
            lm = self.mesh(image, roi) if roi is not None else None
            self._rows[index] = self._row(index, box, mean_ear(lm) if lm is not None else None)

    # ------------------------------------------------------------------ the pass
    def step(self, index: int, image: np.ndarray) -> None:
        """Frame ``index`` (frames in order; a stride of the reader may skip indices)."""
        self._count += 1
        prev = self._pending[-1][0] if self._pending else self._last
        if (self.s.stride > 1 and self._count > self.s.warmup and prev is not None and index == prev + 1
                and len(self._pending) < self.s.stride - 1):
            self._pending.append((index, image))
            return
        self._measure(index, image)
        if self._pending:
            self._settle(index)

    def rows(self) -> list[dict]:
        """Every frame's row, in frame order (settles a frame still waiting)."""
        if self._pending:
            self._settle(None)
        return [self._rows[k] for k in sorted(self._rows)]
