"""Read a dataset lazily: trials -> frames, per-frame ground truth and validity.

``Dataset(root, ..., format="auto")`` returns a reader backend (backends.base.
DatasetBackend) chosen from what ``root`` holds: our MCAP sessions (``session``:
<root>/<subject>/session.yaml) or the study's released per-trial layout (``study``:
<date>/<subject>/<exp_type>/<point>/<stamp_ms>/, docs/study_dataset.md). Backends are
registered in ``BACKENDS`` (lazy import), not chosen by if/elif on names.

The names this module always exported (SessionDataset internals such as open_bag,
decode_image, build_frame_table, joint_state_cdr) are re-exported for compatibility.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path

from gaze4hri_core.registry import Registry

from .backends.bag import decode_image, open_bag, typestore
from .backends.base import DatasetBackend, FrameSample, SkippedTrial, TrialRef
from .backends.cdr import joint_state_cdr
from .backends.session import TRIAL_STATUSES_READ, SessionDataset, build_frame_table

__all__ = ["Dataset", "TrialRef", "FrameSample", "SkippedTrial", "DatasetBackend", "BACKENDS", "FORMATS",
           "detect_format", "SessionDataset", "open_bag", "decode_image", "build_frame_table", "joint_state_cdr",
           "typestore", "TRIAL_STATUSES_READ"]


@dataclass(frozen=True)
class BackendEntry:
    """A registered reader backend: ``module:attr`` of the class and of its detector."""

    name: str
    target: str
    detector: str
    help: str

    def load(self):
        mod, attr = self.target.split(":")
        return getattr(importlib.import_module(mod, __package__), attr)

    def detect(self, root: Path) -> bool:
        mod, attr = self.detector.split(":")
        return bool(getattr(importlib.import_module(mod, __package__), attr)(root))


#: data format -> reader backend, in detection order (``auto`` is not an entry: it detects)
BACKENDS: Registry[BackendEntry] = Registry("data format", where="--format",
                                            listing="(or auto: detect from the folder)")
BACKENDS.add("session", BackendEntry("session", ".backends.session:SessionDataset", ".backends.session:detect",
                                     "MCAP sessions written by gaze4hri-acq (<root>/<subject>/session.yaml)"))
BACKENDS.add("study", BackendEntry("study", ".backends.study:StudyDataset", ".backends.study:detect",
                                   "the study's released layout (<date>/<subject>/<exp_type>/<point>/<stamp_ms>/)"))
FORMATS = ("auto", *BACKENDS)


def detect_format(root: Path | str) -> str:
    """The backend name whose layout ``root`` holds (first match in BACKENDS order);
    ``session`` when none matches, so that its one-line errors explain what is missing."""
    root = Path(root)
    if root.is_dir():
        for e in BACKENDS.values():
            if e.detect(root):
                return e.name
    return "session"


def Dataset(root: Path | str, subjects: list[str] | None = None, trials: list[str] | None = None, stride: int = 1,
            format: str = "auto", **options) -> DatasetBackend:  # noqa: N802 (kept as the historic class name)
    """Open ``root`` with the backend ``format`` (``auto``: detect_format). Options are the
    backend's own (gt_options, blink_annotations, sim_blinks, ...)."""
    entry = BACKENDS.get(detect_format(root)) if str(format).lower() == "auto" else BACKENDS.get(format)
    return entry.load()(root, subjects=subjects, trials=trials, stride=stride, **options)
