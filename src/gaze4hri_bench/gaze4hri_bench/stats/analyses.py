"""The study's analyses under one name: re-exports the per-experiment modules of
:mod:`gaze4hri_bench.stats.experiments` (shared, illumination, viewpoint, conflict, target,
mutual, dataset), for the code and tests that call them as ``analyses.<name>``."""

from __future__ import annotations

from .experiments.conflict import conflict
from .experiments.dataset import TIMING_FIELDS, coverage, crop_vs_rectified, efficiency, select_inputs, subject_groups
from .experiments.illumination import illumination
from .experiments.mutual import MUTUAL_CONDITIONS, MUTUAL_POOLS, mutual_gaze
from .experiments.shared import (
    DZ_NOTE,
    MIN_SUBJECTS,
    PAIRED_EFFECT,
    Analysis,
    complete_subjects,
    display_name,
    subject_means,
)
from .experiments.target import COLUMNS, ROWS, SUBJECT_VIEW, target_position
from .experiments.viewpoint import viewpoint

__all__ = [
    "Analysis",
    "MIN_SUBJECTS",
    "DZ_NOTE",
    "PAIRED_EFFECT",
    "display_name",
    "select_inputs",
    "subject_means",
    "complete_subjects",
    "illumination",
    "viewpoint",
    "conflict",
    "target_position",
    "mutual_gaze",
    "crop_vs_rectified",
    "subject_groups",
    "efficiency",
    "coverage",
    "TIMING_FIELDS",
    "MUTUAL_CONDITIONS",
    "MUTUAL_POOLS",
    "ROWS",
    "COLUMNS",
    "SUBJECT_VIEW",
]
