"""The per-trial face pass: detect, track the subject and (with landmarks) the eye
aspect ratio and a landmark head pose, in one pass over a trial's frames; the face
table it yields is cached, and the face models are shared by every trial.

The face table of a trial is computed by the first job that needs it (a crop-input
method, or any method when blinks come from EAR) while that job streams the frames,
then cached under ``<out>/.cache/faces/`` so every later job (and a resumed run)
reuses it. Blinks therefore mask the same frames for every method, baselines included.
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from gaze4hri_core.errors import Gaze4HRIError

from ..faces.detectors import Detector, FaceDetection
from ..faces.landmarks import mean_ear
from ..faces.normalization import FACE_MODEL_MESH_IDS, head_pose_from_landmarks
from ..faces.tracking import SubjectTracker

__all__ = ["FaceTrack", "track_trial", "FACE_COLUMNS", "FaceModels", "TrialFaces", "face_cache_path",
           "study_face_table", "ensure_study_faces", "trial_exclusion"]

FACE_COLUMNS = (["frame", "x1", "y1", "x2", "y2", "score", "track_id", "n_faces", "ear",
                 "lm_face_cx", "lm_face_cy", "lm_face_cz"] + [f"lm_R_head_{i}{j}" for i in range(3) for j in range(3)])

Landmarker = Callable[[np.ndarray, np.ndarray], "np.ndarray | None"]


class FaceTrack:
    """Frame-by-frame face state of one trial (call :meth:`step` in frame order).

    ``landmarker(image, box) -> (N >= 468, 2|3) | None`` supplies face-mesh points
    when the detector has none (YOLOv8-face, Haar), so EAR exists for every detector;
    ``intrinsics`` (3x3 K) adds the solvePnP landmark head pose."""

    def __init__(self, detector: Detector, tracker: SubjectTracker | None = None, intrinsics=None,
                 landmarker: Landmarker | None = None):
        self.detector = detector
        self.tracker = tracker or SubjectTracker()
        self.intrinsics = intrinsics
        self.landmarker = landmarker
        self._rows: list[dict] = []

    def step(self, index: int, image: np.ndarray) -> FaceDetection | None:
        """Detect and track on one frame; record its row; return the subject (or None)."""
        dets = self.detector.detect(image)
        s = self.tracker.update(dets, image.shape)
        row = {"frame": int(index), "n_faces": len(dets)}
        if s is not None:
            row.update(x1=s.box[0], y1=s.box[1], x2=s.box[2], y2=s.box[3], score=s.score, track_id=s.track_id)
            lm = s.landmarks
            if lm is None and self.landmarker is not None:
                lm = self.landmarker(image, s.box)
            if lm is not None:
                row["ear"] = mean_ear(lm)
                if self.intrinsics is not None:
                    try:
                        R, _t, c = head_pose_from_landmarks(lm[list(FACE_MODEL_MESH_IDS), :2], self.intrinsics)
                        row.update(lm_face_cx=c[0], lm_face_cy=c[1], lm_face_cz=c[2])
                        row.update({f"lm_R_head_{i}{j}": R[i, j] for i in range(3) for j in range(3)})
                    except ValueError:
                        pass
        self._rows.append(row)
        return s

    def table(self) -> pd.DataFrame:
        """The rows so far (FACE_COLUMNS; NaN where no subject / no landmarks)."""
        df = pd.DataFrame(self._rows, columns=FACE_COLUMNS)
        df["frame"] = df["frame"].astype(np.int64)
        df["track_id"] = df["track_id"].astype("Int64")
        df["n_faces"] = df["n_faces"].astype(np.int64)
        for c in FACE_COLUMNS:
            if c not in ("frame", "track_id", "n_faces"):
                df[c] = df[c].astype(float)
        return df


def track_trial(frames: Iterable, detector: Detector, tracker: SubjectTracker | None = None, intrinsics=None,
                landmarker: Landmarker | None = None) -> pd.DataFrame:
    """Per frame (FrameSample-like: ``index``, ``image``): the subject's box, score,
    track id, number of faces seen, mean EAR of both eyes (NaN without landmarks) and,
    when ``intrinsics`` is given and landmarks exist, the solvePnP head pose against the
    generic face model (faces.normalization). Columns: FACE_COLUMNS."""
    ft = FaceTrack(detector, tracker, intrinsics, landmarker)
    for fs in frames:
        ft.step(fs.index, fs.image)
    return ft.table()





def face_cache_path(out: Path, subject: str, trial: str, detector: str, stride: int) -> Path:
    return Path(out) / ".cache" / "faces" / f"{subject}__{trial}__{detector}__s{stride}.parquet"


class FaceModels:
    """The run's face detector and (for detectors without landmarks) face mesh, built
    once on first use and shared by every trial (MediaPipe graphs are costly to build)."""

    def __init__(self, detector: str, conf: float | None = None):
        self.detector_name = detector
        self.conf = conf  # a profile's detector threshold (YOLO detectors; others keep their own)
        self._det = None
        self._mesh = None

    def detector(self):
        if self._det is None:
            from ..faces.detectors import get_detector

            try:
                self._det = get_detector(self.detector_name, **({"conf": self.conf} if self.conf is not None else {}))
            except TypeError:  # a detector without a confidence setting (mediapipe, haar)
                self._det = get_detector(self.detector_name)
        return self._det

    def with_conf(self, conf: float | None) -> FaceModels:
        """The same detector at another confidence threshold (built once, closed with this one)."""
        if conf == self.conf:
            return self
        sib = getattr(self, "_siblings", {})
        self._siblings = sib
        if conf not in sib:
            sib[conf] = FaceModels(self.detector_name, conf)
        return sib[conf]

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
        for sib in getattr(self, "_siblings", {}).values():
            sib.close()
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


# -- the study's face boxes (profile record: track_rule most_frequent) ------------------------
def study_face_table(frames: Iterable, detector: Detector, margin: float, landmarker: Landmarker | None = None,
                     frame_rate: int = 30) -> pd.DataFrame:
    """The study's head_bboxes rule over a whole trial (two passes over the detections:
    ByteTrack, then the most frequent track; faces.tracking.study_boxes), as a face
    table (FACE_COLUMNS; EAR from ``landmarker`` on the kept box when given)."""
    from ..faces.tracking import study_boxes, track_all

    idx, dets, images_shape, lms = [], [], None, []
    for fs in frames:
        d = detector.detect(fs.image)
        idx.append(int(fs.index))
        dets.append(d)
        images_shape = fs.image.shape
        lms.append((fs.image, d) if landmarker is not None else None)
    tracks = track_all(dets, frame_rate)
    boxes, tid = study_boxes(tracks, images_shape or (0, 0), margin)
    rows = []
    for i, f in enumerate(idx):
        row = {"frame": f, "n_faces": len(dets[i])}
        b = boxes[i]
        if b is not None:
            score = next((s for _b, t, s in tracks[i] if t == tid), np.nan)
            row.update(x1=b[0], y1=b[1], x2=b[2], y2=b[3], score=score, track_id=tid)
            if landmarker is not None:
                lm = landmarker(lms[i][0], b)
                if lm is not None:
                    row["ear"] = mean_ear(lm)
        rows.append(row)
    return _typed(pd.DataFrame(rows, columns=FACE_COLUMNS))


def ensure_study_faces(ds, tref, cache: Path, models: FaceModels, margin: float, landmarks: bool,
                       prefer_dataset: bool = True) -> None:
    """Build the trial's study face table in a pre-pass (the most frequent track needs
    the whole video) and cache it where :class:`TrialFaces` reads it. With
    ``prefer_dataset`` (record face_boxes ``dataset``) and a dataset that has released
    boxes (``ds.face_boxes(tref)`` -> (F, 6) [x1, y1, x2, y2, track_id, frame] or
    None), those boxes are used as they are (they carry the margin already)."""
    if cache.is_file():
        return
    lm = models.landmarker() if landmarks else None
    released = getattr(ds, "face_boxes", None)  # the data layer's released boxes (study layout: head_bboxes.npy)
    boxes = released(tref) if callable(released) and prefer_dataset else None
    if boxes is not None:
        table = dataset_face_table(ds.iter_frames(tref), boxes, lm)
    else:
        table = study_face_table(ds.iter_frames(tref), models.detector(), margin, lm)
    t = pa.Table.from_pandas(table, preserve_index=False)
    md = {"landmarks": landmarks, "detector": getattr(models.detector(), "name", models.detector_name), "rule": "study"}
    t = t.replace_schema_metadata({**(t.schema.metadata or {}), b"gaze4hri_faces": json.dumps(md).encode()})
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(t, tmp)
        os.replace(tmp, cache)
    finally:
        tmp.unlink(missing_ok=True)


def dataset_face_table(frames: Iterable, boxes, landmarker: Landmarker | None = None) -> pd.DataFrame:
    """Face table from released boxes (F, 6) [x1, y1, x2, y2, track_id, frame]."""
    b = np.asarray(boxes, float).reshape(-1, 6)
    by_frame = {int(r[5]): r for r in b}
    rows = []
    for fs in frames:
        f = int(fs.index)
        row = {"frame": f, "n_faces": int(f in by_frame)}
        r = by_frame.get(f)
        if r is not None:
            row.update(x1=r[0], y1=r[1], x2=r[2], y2=r[3], score=np.nan, track_id=int(r[4]))
            if landmarker is not None:
                lm = landmarker(fs.image, r[:4])
                if lm is not None:
                    row["ear"] = mean_ear(lm)
        rows.append(row)
    return _typed(pd.DataFrame(rows, columns=FACE_COLUMNS))


def _typed(df: pd.DataFrame) -> pd.DataFrame:
    df["frame"] = df["frame"].astype(np.int64)
    df["track_id"] = df["track_id"].astype("Int64")
    df["n_faces"] = df["n_faces"].astype(np.int64)
    for c in FACE_COLUMNS:
        if c not in ("frame", "track_id", "n_faces"):
            df[c] = df[c].astype(float)
    return df


def trial_exclusion(frames, faces: pd.DataFrame) -> str | None:
    """The study's trial rule (GazeForHRI/GazeModels@l2cs:gaze_estimation.py:300-301: a
    frame without the kept track's box raises, so the video is dropped): the reason
    when some frame in ``frames`` has no box, else None."""
    have = dict(zip(faces["frame"].to_numpy(), faces["x1"].notna().to_numpy(), strict=True))
    missing = [int(f) for f in frames if not have.get(int(f), False)]
    if not missing:
        return None
    return f"{len(missing)} frame(s) without the kept track's face box (first: frame {missing[0]}); the study drops such a trial"
