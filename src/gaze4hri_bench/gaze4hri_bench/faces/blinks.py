"""Blinks: where the ``blink`` reason comes from (``gaze4hri-bench run --blinks``), the
eye-aspect-ratio rule on a trial's face table (Soukupova & Cech 2016; data.validity),
and the face-based validity reasons (blink, no_face) added to the ground truth.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from gaze4hri_core.registry import Registry

__all__ = ["BlinkSource", "BLINK_SOURCES", "blink_source", "ear_blinks", "face_reasons"]


@dataclass(frozen=True)
class BlinkSource:
    """Where the ``blink`` reason comes from (``gaze4hri-bench run --blinks``)."""

    name: str
    annotations: bool  # human annotation files (<session>/annotations/blinks.yaml|csv) decide listed trials
    sim: bool  # the simulator's blink truth (/sim/truth/blink) decides unannotated simulated trials
    ear: bool  # eye aspect ratio from face-mesh landmarks decides the remaining trials
    help: str


BLINK_SOURCES: Registry[BlinkSource] = Registry("blink source", where="--blinks")
for _b in (
    BlinkSource("auto", True, False, True, "human annotation where a trial has one, else EAR (default)"),
    BlinkSource("annotations", True, False, False, "human annotations only; unannotated trials keep blink frames"),
    BlinkSource("ear", False, False, True, "EAR for every trial, annotation files ignored"),
    BlinkSource("sim", True, True, False, "simulator truth in simulated sessions (human annotation first)"),
    BlinkSource("off", False, False, False, "no blink masking"),
):
    BLINK_SOURCES.add(_b.name, _b)


def blink_source(name: str) -> BlinkSource:
    """The blink source named ``name``; an unknown name is the registry's one-line error."""
    return BLINK_SOURCES.get(name)


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
