"""One trial's faces in one pass: detect, track the subject, and (with landmarks) the eye
aspect ratio and a landmark head pose for normalization without motion capture.

The result is a small per-frame table that the validity step (blink from EAR, no_face)
and the pre-processing (face box, or landmark head pose) both read, so detection runs
once per trial whatever the number of methods.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd

from .detectors import Detector, FaceDetection
from .landmarks import mean_ear
from .normalization import FACE_MODEL_MESH_IDS, head_pose_from_landmarks
from .tracking import SubjectTracker

__all__ = ["FaceTrack", "track_trial", "FACE_COLUMNS", "face_reasons", "ear_blinks"]

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


def ear_blinks(gt: pd.DataFrame, faces: pd.DataFrame, threshold: float | None = None,
               relative: float | None = None) -> np.ndarray:
    """Blink mask aligned with ``gt`` rows from the face table's EAR (data.validity.
    blink_from_ear; default rule EAR_RELATIVE x the trial median). Frames the face table
    lacks count as unknown (not a blink)."""
    from ..data import validity

    ear = gt[["frame"]].merge(faces[["frame", "ear"]], on="frame", how="left")["ear"].to_numpy(float)
    if threshold is None and relative is None:
        relative = validity.EAR_RELATIVE
    return validity.blink_from_ear(ear, threshold, relative=relative)


def face_reasons(gt: pd.DataFrame, faces: pd.DataFrame, annotated: bool, threshold: float | None = None,
                 relative: float | None = None) -> pd.DataFrame:
    """Add ``blink`` (from EAR, only when the trial has no annotation: annotations take
    precedence) and ``no_face`` (no subject box) to the ground truth (data reasons win);
    see data.validity."""
    from ..data import validity

    f = gt[["frame"]].merge(faces[["frame", "x1"]], on="frame", how="left")
    no_face = f["x1"].isna().to_numpy()
    blink = None if annotated else ear_blinks(gt, faces, threshold, relative)
    return validity.apply_face_reasons(gt, blink=blink, no_face=no_face)
