"""The tracked EAR pass: the eye aspect ratio of every frame of a trial at a fraction of
the full face pass's cost, with the same blink decisions.

The full pass (pipeline.face_pass.FaceTrack) detects the face in every frame and runs
the face mesh on its box: ~2/3 of its time is the detector. Here the detector runs only
to find the face (the first frame, or after the mesh lost it); between, the face mesh
tracks it (MediaPipe's tracking mode, faces.mesh_graph) on a crop that follows the
previous landmarks. Landmarks are measured on every ``stride``-th frame; a frame between
two measured ones is measured too when either neighbour may be near a blink (EAR under
``refine_below`` x the running median, or the two differ by over ``refine_jump`` x it) or
lacks a face, else it takes their mean. Those refinements go through the full pass's
own mesh path (detection inside the crop), so near a blink the EAR is measured as the
full pass measures it. EAR: Soukupova & Cech, CVWW 2016, Eq. 1 (faces.landmarks).
benchmarks/face_pass.py measures the cost and the agreement with the full pass.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
from gaze4hri_core.registry import Registry

from .crops import crop_square
from .landmarks import mean_ear, to_image

__all__ = ["EarPassSettings", "TrackedEar", "EAR_PASSES"]


@dataclass(frozen=True)
class EarPassSettings:
    """How the tracked pass samples a trial (defaults measured by benchmarks/face_pass.py)."""

    stride: int = 2  # landmarks on every stride-th frame (1: every frame, tracked)
    refine_below: float = 0.95  # measure a skipped frame when a neighbour's EAR < this x the running median
    refine_jump: float = 0.08  # ... or the neighbours' EARs differ by more than this x the running median
    warmup: int = 30  # frames measured one by one at a trial's start (the running median needs them)
    margin: float = 0.25  # crop = the face box grown by this on each side (as faces.landmarks.FaceMesh)
    side: int = 192  # crop side in pixels: the landmark model's input size


_BOX = ("x1", "y1", "x2", "y2")

#: how a run measures EAR (``gaze4hri-bench run --ear-pass``): the tracked pass's settings,
#: or None for the full pass (detector and face mesh on every frame, pipeline.face_pass.FaceTrack)
EAR_PASSES: Registry[EarPassSettings | None] = Registry("EAR pass", where="--ear-pass")
EAR_PASSES.add("tracked", EarPassSettings())
EAR_PASSES.add("full", None)


class TrackedEar:
    """One trial's EAR rows (pipeline.face_pass.FACE_COLUMNS) from ``step(index, image)``
    called in frame order, then :meth:`rows`. ``detect(image) -> [FaceDetection]`` finds
    the face; ``graph`` is a tracking faces.mesh_graph.MeshGraph; ``refine(image, box)``
    the full pass's landmarker (faces.landmarks.FaceMesh.landmarks)."""

    def __init__(self, detect, graph, refine, settings: EarPassSettings | None = None):
        self.detect, self.graph, self.refine = detect, graph, refine
        self.s = settings or EarPassSettings()
        self.region: np.ndarray | None = None  # square crop for the next tracked frame
        self._fit: tuple[float, np.ndarray] | None = None  # crop side and centre offset per landmark extent
        self._n_faces = 0
        self._rows: dict[int, dict] = {}
        self._ears: list[float] = []  # measured EARs, sorted (the running median)
        self._last: int | None = None  # the last measured frame
        self._pending: list[tuple[int, np.ndarray]] = []  # skipped frames waiting for their next neighbour
        self._count = 0  # frames stepped
        self.measured = self.refined = self.acquired = 0
        graph.forget()  # the graph may still track the last trial's face

    # ------------------------------------------------------------------ measuring
    def _acquire(self, image: np.ndarray) -> np.ndarray | None:
        """The detector's face (the largest: the subject sits closest) -> the crop around it."""
        self.acquired += 1
        dets = self.detect(image)
        self._n_faces = len(dets)
        self._fit = None
        if not dets:
            return None
        b = np.asarray(max(dets, key=lambda d: d.area).box, float)
        s = max(b[2] - b[0], b[3] - b[1]) * (1.0 + 2.0 * self.s.margin)
        c = 0.5 * (b[:2] + b[2:])
        return np.array([c[0] - s / 2, c[1] - s / 2, c[0] + s / 2, c[1] + s / 2])

    def _track(self, image: np.ndarray) -> np.ndarray | None:
        fresh = self.region is None
        if fresh:
            self.region = self._acquire(image)
            if self.region is None:
                return None
        pts = self.graph.run(crop_square(image, self.region, self.s.side))
        if pts is None and not fresh:  # lost: find the face again in this frame
            self.region = self._acquire(image)
            if self.region is None:
                return None
            fresh, pts = True, self.graph.run(crop_square(image, self.region, self.s.side))
        if pts is None:
            self.region = None
            return None
        lm = to_image(pts, self.region)
        lo, hi = lm[:, :2].min(axis=0), lm[:, :2].max(axis=0)
        ext, c = float(max(hi - lo)), 0.5 * (lo + hi)
        if fresh or self._fit is None:  # the crop keeps the detector's framing of this face
            self._fit = ((self.region[2] - self.region[0]) / ext, (0.5 * (self.region[:2] + self.region[2:]) - c) / ext)
        k, off = self._fit
        cc, s = c + off * ext, k * ext
        self.region = np.array([cc[0] - s / 2, cc[1] - s / 2, cc[0] + s / 2, cc[1] + s / 2])
        return lm

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
            r = self.region
            s = (r[2] - r[0]) / (1.0 + 2.0 * self.s.margin)  # the face box inside the crop
            c = 0.5 * (r[:2] + r[2:])
            self._rows[index] = self._row(index, (c[0] - s / 2, c[1] - s / 2, c[0] + s / 2, c[1] + s / 2), mean_ear(lm))
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
        for index, image in pending:
            self.refined += 1
            lm = self.refine(image, box) if box is not None else None
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
