"""Faces in the run loop: where blinks come from, the per-trial face table (boxes for
crop inputs, EAR for blinks) computed once and cached, and the shared face models.

The face table of a trial is computed by the first job that needs it (a crop-input
method, or any method when blinks come from EAR) while that job streams the frames,
then cached under ``<out>/.cache/faces/`` so every later job (and a resumed run)
reuses it. Blinks therefore mask the same frames for every method, baselines included.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["BlinkSource", "BLINK_SOURCES", "blink_source", "FaceModels", "TrialFaces", "face_cache_path"]


@dataclass(frozen=True)
class BlinkSource:
    """Where the ``blink`` reason comes from (``gaze4hri-bench run --blinks``)."""

    name: str
    annotations: bool  # human annotation files (<session>/annotations/blinks.yaml|csv) decide listed trials
    sim: bool  # the simulator's blink truth (/sim/truth/blink) decides unannotated simulated trials
    ear: bool  # eye aspect ratio from face-mesh landmarks decides the remaining trials
    help: str


BLINK_SOURCES: dict[str, BlinkSource] = {b.name: b for b in (
    BlinkSource("auto", True, False, True, "human annotation where a trial has one, else EAR (default)"),
    BlinkSource("annotations", True, False, False, "human annotations only; unannotated trials keep blink frames"),
    BlinkSource("ear", False, False, True, "EAR for every trial, annotation files ignored"),
    BlinkSource("sim", True, True, False, "simulator truth in simulated sessions (human annotation first)"),
    BlinkSource("off", False, False, False, "no blink masking"),
)}


def blink_source(name: str) -> BlinkSource:
    try:
        return BLINK_SOURCES[name]
    except KeyError:
        raise Gaze4HRIError(f"unknown blink source {name!r}", "--blinks", f"choose one of {', '.join(BLINK_SOURCES)}") from None


def face_cache_path(out: Path, subject: str, trial: str, detector: str, stride: int) -> Path:
    return Path(out) / ".cache" / "faces" / f"{subject}__{trial}__{detector}__s{stride}.parquet"


class FaceModels:
    """The run's face detector and (for detectors without landmarks) face mesh, built
    once on first use and shared by every trial (MediaPipe graphs are costly to build)."""

    def __init__(self, detector: str):
        self.detector_name = detector
        self._det = None
        self._mesh = None

    def detector(self):
        if self._det is None:
            from ..faces.detectors import get_detector

            self._det = get_detector(self.detector_name)
        return self._det

    def landmarker(self):
        """None when the detector gives face-mesh landmarks itself."""
        det = self.detector()
        if getattr(det, "has_landmarks", False):
            return None
        if self._mesh is None:
            from ..faces.landmarks import FaceMesh

            try:
                self._mesh = FaceMesh()
            except Gaze4HRIError as e:
                raise Gaze4HRIError(f"EAR blink detection needs MediaPipe's face mesh next to detector {det.name} ({e.what})",
                                    "--blinks", "install mediapipe (requirements/nodeps.txt), or pass --blinks annotations|off") from None
        return self._mesh.landmarks

    def close(self) -> None:
        for m in (self._det, self._mesh):
            if m is not None:
                m.close()
        self._det = self._mesh = None


class TrialFaces:
    """The face table of one trial: read from ``cache`` when it is there (and has EAR if
    ``landmarks``), else built frame by frame through :meth:`box` and saved with :meth:`save`."""

    def __init__(self, models: FaceModels, cache: Path | None, landmarks: bool):
        self.models = models
        self.cache = cache
        self.landmarks = landmarks
        self._table: pd.DataFrame | None = None
        self._boxes: dict[int, np.ndarray | None] = {}
        self._track = None
        self._built: pd.DataFrame | None = None
        if cache is not None and cache.is_file():
            try:
                md = json.loads((pq.read_schema(cache).metadata or {}).get(b"gaze4hri_faces", b"{}"))
                if md.get("landmarks") or not landmarks:
                    self._table = pd.read_parquet(cache)
            except (OSError, ValueError, pa.ArrowException):  # an unreadable cache is rebuilt, not fatal
                self._table = None
            if self._table is not None:
                xy = self._table[["x1", "y1", "x2", "y2"]].to_numpy(float)
                self._boxes = {int(f): (b if np.isfinite(b).all() else None)
                               for f, b in zip(self._table["frame"].to_numpy(), xy, strict=True)}

    @property
    def cached(self) -> bool:
        return self._table is not None

    def box(self, index: int, image: np.ndarray) -> np.ndarray | None:
        """The subject's face box (x1, y1, x2, y2) in this frame, or None."""
        if self._table is not None:
            return self._boxes.get(index)
        if self._track is None:
            from ..faces.track import FaceTrack

            lm = self.models.landmarker() if self.landmarks else None
            self._track = FaceTrack(self.models.detector(), landmarker=lm)
        s = self._track.step(index, image)
        if s is None:
            return None
        b = np.asarray(s.box, float).reshape(-1)[:4]
        return b if np.isfinite(b).all() else None

    def table(self) -> pd.DataFrame:
        """The trial's face table; once the frames are streamed (built once, then kept)."""
        if self._table is not None:
            return self._table
        if self._track is None:
            from ..faces.track import FACE_COLUMNS

            return pd.DataFrame(columns=FACE_COLUMNS)
        if self._built is None:
            self._built = self._track.table()
        return self._built

    def save(self) -> None:
        """Write the freshly built table to the cache (atomic); nothing when it came from there."""
        if self.cache is None or self._table is not None or self._track is None:
            return
        t = pa.Table.from_pandas(self.table(), preserve_index=False)
        md = {"landmarks": self.landmarks, "detector": getattr(self.models.detector(), "name", self.models.detector_name)}
        t = t.replace_schema_metadata({**(t.schema.metadata or {}), b"gaze4hri_faces": json.dumps(md).encode()})
        self.cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cache.with_name(f".{self.cache.name}.{os.getpid()}.tmp")
        try:
            pq.write_table(t, tmp)
            os.replace(tmp, self.cache)
        finally:
            tmp.unlink(missing_ok=True)
