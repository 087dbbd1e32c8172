"""One trial's faces in one pass: detect, track the subject, and (with landmarks) the eye
aspect ratio and a landmark head pose for normalization without motion capture.

The result is a small per-frame table that the validity step (blink from EAR, no_face)
and the pre-processing (face box, or landmark head pose) both read, so detection runs
once per trial whatever the number of methods.
"""
from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd

from .detectors import Detector
from .landmarks import mean_ear
from .normalization import FACE_MODEL_MESH_IDS, head_pose_from_landmarks
from .tracking import SubjectTracker

__all__ = ["track_trial", "FACE_COLUMNS", "face_reasons"]

FACE_COLUMNS = (["frame", "x1", "y1", "x2", "y2", "score", "track_id", "n_faces", "ear",
                 "lm_face_cx", "lm_face_cy", "lm_face_cz"] + [f"lm_R_head_{i}{j}" for i in range(3) for j in range(3)])


def track_trial(frames: Iterable, detector: Detector, tracker: SubjectTracker | None = None, intrinsics=None) -> pd.DataFrame:
    """Per frame (FrameSample-like: ``index``, ``image``): the subject's box, score,
    track id, number of faces seen, mean EAR of both eyes (NaN without landmarks) and,
    when ``intrinsics`` is given and landmarks exist, the solvePnP head pose against the
    generic face model (faces.normalization). Columns: FACE_COLUMNS."""
    trk = tracker or SubjectTracker()
    rows = []
    for fs in frames:
        dets = detector.detect(fs.image)
        s = trk.update(dets, fs.image.shape)
        row = {"frame": int(fs.index), "n_faces": len(dets)}
        if s is not None:
            row.update(x1=s.box[0], y1=s.box[1], x2=s.box[2], y2=s.box[3], score=s.score, track_id=s.track_id)
            if s.landmarks is not None:
                row["ear"] = mean_ear(s.landmarks)
                if intrinsics is not None:
                    try:
                        R, _t, c = head_pose_from_landmarks(s.landmarks[list(FACE_MODEL_MESH_IDS), :2], intrinsics)
                        row.update(lm_face_cx=c[0], lm_face_cy=c[1], lm_face_cz=c[2])
                        row.update({f"lm_R_head_{i}{j}": R[i, j] for i in range(3) for j in range(3)})
                    except ValueError:
                        pass
        rows.append(row)
    df = pd.DataFrame(rows, columns=FACE_COLUMNS)
    df["frame"] = df["frame"].astype(np.int64)
    df["track_id"] = df["track_id"].astype("Int64")
    return df


def face_reasons(gt: pd.DataFrame, faces: pd.DataFrame, annotated: bool, threshold: float | None = None,
                 relative: float | None = None) -> pd.DataFrame:
    """Add ``blink`` (EAR below the threshold, only when the trial has no human
    annotation: annotations take precedence) and ``no_face`` (no subject box) to the
    ground truth (data reasons win); see data.validity."""
    from ..data import validity

    f = gt[["frame"]].merge(faces, on="frame", how="left")
    no_face = f["x1"].isna().to_numpy()
    blink = None
    if not annotated:
        blink = validity.blink_from_ear(f["ear"].to_numpy(float), threshold if threshold is not None else validity.EAR_THRESHOLD,
                                        relative=relative)
    return validity.apply_face_reasons(gt, blink=blink, no_face=no_face)
