"""The per-trial face pass: detect, track the subject and (with landmarks) the eye
aspect ratio and a landmark head pose, in one pass over a trial's frames; the face
table it yields is cached, and the face models are shared by every trial.

The face table of a trial is computed by the first job that needs it (a crop-input
method, or any method when blinks come from EAR) while that job streams the frames,
then cached under ``<out>/.cache/faces/`` so every later job (and a resumed run)
reuses it. Blinks therefore mask the same frames for every method, baselines included.
"""
from __future__ import annotations

import dataclasses
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
from ..faces.ear_pass import EarPassSettings, TrackedEar
from ..faces.landmarks import mean_ear
from ..faces.normalization import FACE_MODEL_MESH_IDS, head_pose_from_landmarks
from ..faces.tracking import SubjectTracker

__all__ = ["FaceTrack", "track_trial", "FACE_COLUMNS", "FaceModels", "TrialFaces", "face_cache_path",
           "ProfileFaces", "apply_face_rule", "profile_face_table", "ensure_profile_faces", "needs_profile_pass",
           "trial_exclusion"]

FACE_COLUMNS = (["frame", "x1", "y1", "x2", "y2", "score", "track_id", "n_faces", "ear",
                 "lm_face_cx", "lm_face_cy", "lm_face_cz"] + [f"lm_R_head_{i}{j}" for i in range(3) for j in range(3)])

Landmarker = Callable[[np.ndarray, np.ndarray], "np.ndarray | None"]


_NO_MESH_FIX = 'install the faces extra (README, "Install the benchmark alone"), or pass --blinks annotations|off'


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
        return face_table(self._rows)


def face_table(rows: list[dict]) -> pd.DataFrame:
    """Face-table rows -> the table (FACE_COLUMNS, their dtypes; NaN where a row lacks a value)."""
    df = pd.DataFrame(rows, columns=FACE_COLUMNS)
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
    """Where a trial's face table is cached (``detector``: the detector's name and, for a
    profile's rule or the tracked EAR pass, a suffix naming it)."""
    return Path(out) / ".cache" / "faces" / f"{subject}__{trial}__{detector}__s{stride}.parquet"


class FaceModels:
    """The run's face detector and (for detectors without landmarks) face mesh, built
    once on first use and shared by every trial (MediaPipe graphs are costly to build)."""

    def __init__(self, detector: str, conf: float | None = None):
        self.detector_name = detector
        self.conf = conf  # a profile's detector threshold (YOLO detectors; others keep their own)
        self._det = None
        self._mesh = None
        self._ear_mesh = None  # the tracked EAR pass's landmark model (faces.mesh_lite)
        self._ear_det = None  # ... and its detector when the run's is MediaPipe's (faces.blazeface_lite)

    def detector(self):
        if self._det is None:
            from ..faces.detectors import get_detector

            try:
                self._det = get_detector(self.detector_name, **({"conf": self.conf} if self.conf is not None else {}))
            except TypeError:  # a detector without a confidence setting (mediapipe, haar)
                self._det = get_detector(self.detector_name)
        return self._det

    def detector_label(self) -> str:
        """The detector's name as face tables record it (auto's says what it picked), without
        building the run's detector when the tracked pass ran MediaPipe's through LiteRT."""
        if self._det is None and self._ear_det is not None:
            return self._ear_det.name
        return getattr(self.detector(), "name", self.detector_name)

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
                raise Gaze4HRIError(f"EAR blink detection needs MediaPipe's face mesh next to detector {det.name} "
                                    f"({e.what})", "--blinks",
                                    _NO_MESH_FIX
                                    ) from None
        return self._mesh.landmarks

    def ear_pass(self, settings: EarPassSettings) -> TrackedEar:
        """A tracked EAR pass for one trial (faces.ear_pass), on this run's detector and one
        landmark model shared by every trial (faces.mesh_lite). MediaPipe's detector runs
        through LiteRT there with the graph's own rules (faces.blazeface_lite: the same
        boxes), so the default run never imports mediapipe."""
        from ..faces.blazeface_lite import LiteFaces
        from ..faces.detectors import mediapipe_name
        from ..faces.mesh_lite import LiteMesh

        try:
            if self._ear_det is None and (name := mediapipe_name(self.detector_name)) is not None:
                self._ear_det = LiteFaces(name)
            if self._ear_mesh is None:
                self._ear_mesh = LiteMesh()
        except Gaze4HRIError as e:
            raise Gaze4HRIError(f"EAR blink detection needs MediaPipe's face models and LiteRT ({e.what})",
                                "--blinks", _NO_MESH_FIX) from None
        det = self._ear_det if self._ear_det is not None else self.detector()
        return TrackedEar(det.detect, self._ear_mesh.landmarks, settings)

    def close(self) -> None:
        for sib in getattr(self, "_siblings", {}).values():
            sib.close()
        for m in (self._det, self._mesh, self._ear_mesh, self._ear_det):
            if m is not None:
                m.close()
        self._det = self._mesh = self._ear_mesh = self._ear_det = None


class TrialFaces:
    """The face table of one trial: read from ``cache`` when it is there (and has EAR if
    ``landmarks``), else built frame by frame through :meth:`box` and saved with :meth:`save`."""

    def __init__(self, models: FaceModels, cache: Path | None, landmarks: bool,
                 ear_pass: EarPassSettings | None = None):
        self.models = models
        self.cache = cache
        self.landmarks = landmarks
        self.ear_pass = ear_pass  # an EAR-only table built by the tracked pass (faces.ear_pass): no boxes read
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
        if self.ear_pass is not None:
            if self._track is None:
                self._track = self.models.ear_pass(self.ear_pass)
            self._track.step(index, image)
            return None
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
            self._built = face_table(self._track.rows()) if self.ear_pass is not None else self._track.table()
        return self._built

    def ear_table(self) -> pd.DataFrame:
        """The table EAR blinks are read from (this one)."""
        return self.table()

    def save(self) -> None:
        """Write the freshly built table to the cache (atomic); nothing when it came from there."""
        if self.cache is None or self._table is not None or self._track is None:
            return
        t = pa.Table.from_pandas(self.table(), preserve_index=False)
        md = {"landmarks": self.landmarks,
              "detector": self.models.detector_label(),
              "ear_pass": dataclasses.asdict(self.ear_pass) if self.ear_pass is not None else "full"}
        t = t.replace_schema_metadata({**(t.schema.metadata or {}), b"gaze4hri_faces": json.dumps(md).encode()})
        self.cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.cache.with_name(f".{self.cache.name}.{os.getpid()}.tmp")
        try:
            pq.write_table(t, tmp)
            os.replace(tmp, self.cache)
        finally:
            tmp.unlink(missing_ok=True)


class ProfileFaces:
    """A trial's faces under a profile with its own face rule: boxes (and the trial rule)
    from ``boxes`` (the profile's cached table), EAR blinks from ``ear`` (the run's
    common table, streamed alongside when not cached), so blinks mask the same frames
    for every method whatever its profile record."""

    def __init__(self, boxes: TrialFaces, ear: TrialFaces | None):
        self.boxes, self.ear = boxes, ear

    def box(self, index: int, image: np.ndarray) -> np.ndarray | None:
        if self.ear is not None and not self.ear.cached:
            self.ear.box(index, image)
        return self.boxes.box(index, image)

    def table(self) -> pd.DataFrame:
        return self.boxes.table()

    def ear_table(self) -> pd.DataFrame:
        return (self.ear or self.boxes).table()

    def save(self) -> None:
        self.boxes.save()
        if self.ear is not None:
            self.ear.save()


# -- face boxes by a profile record's rule (profiles.MethodProfile) ---------------------------
def needs_profile_pass(record) -> bool:
    """Whether a record's face settings differ from the streaming subject rule (then
    the trial's face table is built in a pre-pass by :func:`apply_face_rule`)."""
    return record is not None and (record.track_rule != "subject" or bool(record.box_margin)
                                   or record.detector_conf is not None or record.face_boxes == "dataset")


def apply_face_rule(record, detections_per_frame: list, shape, dataset_boxes=None, frame_ids=None,
                    frame_rate: int = 30) -> tuple[list[np.ndarray | None], list[int | None], list[float]]:
    """Per-frame face boxes of one trial by the record's rule: the dataset's released
    boxes (``face_boxes`` dataset, when given: (F, 6) [x1, y1, x2, y2, track_id,
    frame], used as they are) or the detections (score >= ``detector_conf``) tracked by
    ``track_rule`` (``subject``: faces.tracking.SubjectTracker; ``most_frequent``: the
    study's ByteTrack id seen in most frames, faces.tracking.study_boxes), grown by
    ``box_margin`` per side and clamped. Returns (boxes or None, track ids, scores)."""
    from ..faces.crops import grow_box
    from ..faces.tracking import SubjectTracker, study_boxes, track_all

    n = len(detections_per_frame)
    ids = list(frame_ids) if frame_ids is not None else list(range(n))
    if record.face_boxes == "dataset" and dataset_boxes is not None:
        arr = np.asarray(dataset_boxes, float)
        if arr.ndim == 2 and arr.shape[1] == 5:  # one row per frame slot, NaN without a box (data.backends.study)
            by = {i: r for i, r in enumerate(arr) if np.isfinite(r[:4]).all()}
        else:
            by = {int(r[5]): r for r in arr.reshape(-1, 6)}
        rows = [by.get(int(f)) for f in ids]
        return ([None if r is None else r[:4].copy() for r in rows], [None if r is None else int(r[4]) for r in rows],
                [np.nan] * n)
    conf = record.detector_conf
    dets = [[d for d in (ds or []) if conf is None or d.score >= conf] for ds in detections_per_frame]
    if record.track_rule == "most_frequent":
        tracks = track_all(dets, frame_rate)
        boxes, tid = study_boxes(tracks, shape, record.box_margin)
        scores = [next((s for _b, t, s in fr if t == tid), np.nan) for fr in tracks]
        return boxes, [tid if b is not None else None for b in boxes], scores
    tr = SubjectTracker(frame_rate)
    boxes, tids, scores = [], [], []
    for d in dets:
        sub = tr.update(d, shape)
        b = None if sub is None else np.asarray(sub.box, float)
        if b is not None and record.box_margin:
            b = grow_box(b, record.box_margin, shape)
        boxes.append(b)
        tids.append(None if sub is None else sub.track_id)
        scores.append(np.nan if sub is None else float(sub.score))
    return boxes, tids, scores


def profile_face_table(frames: Iterable, detector: Detector, record, landmarker: Landmarker | None = None,
                       dataset_boxes=None) -> pd.DataFrame:
    """A trial's face table (FACE_COLUMNS) by the record's rule (:func:`apply_face_rule`);
    EAR from ``landmarker`` on the kept box when given. Frames are read once; only the
    images whose EAR is needed are kept until the boxes are known."""
    idx, dets, shape, imgs = [], [], (0, 0), []
    use_dataset = record.face_boxes == "dataset" and dataset_boxes is not None
    for fs in frames:
        idx.append(int(fs.index))
        dets.append([] if use_dataset else detector.detect(fs.image))
        shape = fs.image.shape
        imgs.append(fs.image if landmarker is not None else None)
    boxes, tids, scores = apply_face_rule(record, dets, shape, dataset_boxes, idx)
    rows = []
    for i, f in enumerate(idx):
        row = {"frame": f, "n_faces": len(dets[i]) if not use_dataset else int(boxes[i] is not None)}
        b = boxes[i]
        if b is not None:
            row.update(x1=b[0], y1=b[1], x2=b[2], y2=b[3], score=scores[i], track_id=tids[i])
            if landmarker is not None:
                lm = landmarker(imgs[i], b)
                if lm is not None:
                    row["ear"] = mean_ear(lm)
        rows.append(row)
    return face_table(rows)


def ensure_profile_faces(ds, tref, cache: Path, models: FaceModels, record, landmarks: bool) -> None:
    """Build the trial's face table by the record's rule in a pre-pass (the most
    frequent track needs the whole video) and cache it where :class:`TrialFaces` reads
    it. Released boxes come from ``ds.face_boxes(tref)`` ((F, 5) [x1, y1, x2, y2,
    track_id] per frame slot with NaN rows, or (N, 6) with a frame column, or None; the
    study layout's head_bboxes.npy) when the record asks for them (``face_boxes``
    dataset)."""
    if cache.is_file():
        return
    lm = models.landmarker() if landmarks else None
    released = getattr(ds, "face_boxes", None)
    boxes = released(tref) if callable(released) and record.face_boxes == "dataset" else None
    det = models.detector() if boxes is None else None
    table = profile_face_table(ds.iter_frames(tref), det, record, lm, boxes)
    t = pa.Table.from_pandas(table, preserve_index=False)
    md = {"landmarks": landmarks,
          "detector": "dataset" if boxes is not None else getattr(det, "name", models.detector_name),
          "rule": {"track_rule": record.track_rule, "box_margin": record.box_margin,
                   "detector_conf": record.detector_conf, "face_boxes": record.face_boxes}}
    t = t.replace_schema_metadata({**(t.schema.metadata or {}), b"gaze4hri_faces": json.dumps(md).encode()})
    cache.parent.mkdir(parents=True, exist_ok=True)
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    try:
        pq.write_table(t, tmp)
        os.replace(tmp, cache)
    finally:
        tmp.unlink(missing_ok=True)


def face_rule_key(record) -> str:
    """Cache-name suffix of a record's face rule ('' for the streaming subject rule)."""
    if not needs_profile_pass(record):
        return ""
    conf = record.detector_conf if record.detector_conf is not None else "d"
    return f"-{record.track_rule}-m{record.box_margin:g}-c{conf}-{record.face_boxes}"


def trial_exclusion(frames, faces: pd.DataFrame) -> str | None:
    """The study's trial rule (GazeForHRI/GazeModels@l2cs:gaze_estimation.py:300-301: a
    frame without the kept track's box raises, so the video is dropped): the reason
    when some frame in ``frames`` has no box, else None."""
    have = dict(zip(faces["frame"].to_numpy(), faces["x1"].notna().to_numpy(), strict=True))
    missing = [int(f) for f in frames if not have.get(int(f), False)]
    if not missing:
        return None
    return (f"{len(missing)} frame(s) without the kept track's face box (first: frame {missing[0]}); "
            "the study drops such a trial")
