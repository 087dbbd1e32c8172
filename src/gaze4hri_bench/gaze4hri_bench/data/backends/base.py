"""The reader seam: what every dataset backend provides, and the records it returns.

Downstream code (pipeline, stats, export) only uses this interface, so an MCAP
session folder (``session`` backend) and the study's released per-trial layout
(``study`` backend, GazeForHRI/Gaze4HRI) are interchangeable. A backend is a class
registered in ``BACKENDS`` with a ``detect(root)`` predicate; ``data.reader.Dataset``
picks one from what the folder holds or from ``format=``.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd
from gaze4hri_core.protocol import Trial

__all__ = ["TrialRef", "FrameSample", "DatasetBackend", "SkippedTrial", "FACE_BOX_COLUMNS"]

#: columns of ``DatasetBackend.face_boxes`` (pixels of the recorded image; track id -1 when unknown)
FACE_BOX_COLUMNS = ("x1", "y1", "x2", "y2", "track_id")


@dataclass(frozen=True)
class TrialRef:
    """One recorded trial. ``trial`` is the trial id (e.g. ``illum025_P3``); ``protocol``
    the core protocol Trial (experiment, condition, target, camera motion); ``status``
    (``done``/``incomplete``/...); ``calibration`` the session's snapshot with the
    subject's eye-head transform (a per-trial equivalent for the study layout).

    ``bag_dir`` is the folder holding the trial's data (the MCAP bag, or the study's
    stamp folder); ``session_dir`` the subject's folder. ``subject_info``: subject
    metadata (study: subject_info.json, e.g. glasses, gender), empty when unknown;
    ``rerecordings``: earlier stamp folders of the same trial (study layout), not read;
    ``camera_pose_source``, ``session_backend``: the manifest's camera pose source and
    acquisition backend (read once, at listing)."""

    subject: str
    trial: str
    protocol: Trial
    session_dir: Path
    bag_dir: Path
    status: str
    calibration: object
    record: object = field(default=None, compare=False, repr=False)
    subject_info: dict = field(default_factory=dict, compare=False, repr=False)
    rerecordings: tuple[Path, ...] = field(default=(), compare=False, repr=False)
    backend: str = field(default="session", compare=False)
    #: where the recording took the camera pose from (session.yaml settings.camera_pose_source)
    camera_pose_source: str = field(default="fk", compare=False)
    #: the acquisition backend that recorded it (session.yaml ``backend``: sim, real, ...)
    session_backend: str = field(default="unknown", compare=False)

    @property
    def experiment(self) -> str:
        return self.protocol.experiment

    @property
    def condition(self) -> str:
        return str(self.protocol.condition)

    @property
    def target(self) -> str:
        return self.protocol.target

    @property
    def key(self) -> str:
        return f"{self.subject}/{self.trial}"


@dataclass
class FrameSample:
    """One decoded frame: ``index`` = ground-truth ``frame`` (slot in recording order),
    ``t_ns`` capture stamp (host clock), ``image`` RGB uint8 (H, W, 3), ``frame_number``
    the camera's counter (-1 when not recorded)."""

    index: int
    t_ns: int
    image: np.ndarray
    frame_number: int


@dataclass(frozen=True)
class SkippedTrial:
    """A trial a backend could not use, with the one-line reason (Gaze4HRIError.line())."""

    subject: str
    trial: str
    where: str
    reason: str
    #: recorded data found damaged (an MCAP CRC mismatch): ``run`` exits 1. A study-layout
    #: trial the reader refuses (a file the release lacks) is listed, and the run exits 0.
    damaged: bool = False


@runtime_checkable
class DatasetBackend(Protocol):
    """The reader interface (data.reader.Dataset returns one of these).

    Trials are cheap to list; frames are decoded lazily, one at a time; ground truth
    is one row per selected frame (data.frame_truth.GT_COLUMNS) with validity reasons.
    ``skipped`` lists trials left out for bad input (the run goes on without them)."""

    name: str
    root: Path
    stride: int
    skipped: list[SkippedTrial]

    def trials(self) -> list[TrialRef]: ...

    def subjects(self) -> list[str]: ...

    def frame_table(self, ref: TrialRef): ...

    def iter_frames(self, ref: TrialRef) -> Iterator[FrameSample]: ...

    def camera_info(self, ref: TrialRef): ...

    def trial_ground_truth(self, ref: TrialRef, options=None) -> pd.DataFrame:
        """Ground-truth table (frame_truth.GT_COLUMNS); ``options`` (a GTOptions) instead
        of the dataset's own gt_options."""
        ...

    def blinks_annotated(self, ref: TrialRef) -> bool: ...

    def validity_report(self, refs: list[TrialRef] | None = None) -> pd.DataFrame: ...

    def face_boxes(self, ref: TrialRef) -> np.ndarray | None:
        """Per-frame face boxes recorded with the data, (len(frame_table), 5) float
        [x1, y1, x2, y2, track_id] indexed by the ``frame`` slot, NaN where the frame
        has none; None when the dataset has no boxes for this trial."""
        ...

    def subject_info(self, subject: str) -> dict: ...
