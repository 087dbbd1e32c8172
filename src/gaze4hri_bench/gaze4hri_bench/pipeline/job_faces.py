"""The face tables one trial needs for all its jobs (the run loop, pipeline/engine.py):
each table filled once per frame however many jobs read it (pipeline.face_pass), each
job's view of them chosen by the face rule of its planned profile record."""
from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..faces.ear_pass import EAR_PASSES
from .face_pass import FaceModels, TrialFaces, ensure_profile_faces, face_rule_key, needs_profile_pass
from .frames import StageTimes

if TYPE_CHECKING:
    from .jobs import Job, RunConfig

__all__ = ["JobFaces", "TrialFaceTables"]


class JobFaces:
    """One job's view of a trial's shared face tables: boxes from ``boxes`` (the run's
    common table, or the job's profile rule), EAR from ``ear`` (the common table)."""

    def __init__(self, tables: dict, boxes: str, ear: str | None):
        self.tables, self.boxes, self.ear = tables, boxes, ear

    def table(self) -> pd.DataFrame:
        return self.tables[self.boxes].table()

    def ear_table(self) -> pd.DataFrame:
        return self.tables[self.ear or self.boxes].table()


class TrialFaceTables:
    """The face tables one trial needs for all its jobs, each filled once per frame
    however many jobs read it (pipeline.face_pass): the run's common table (subject
    rule, with EAR when blinks come from it) and one per profile face rule (built by
    its pre-pass, then read from the cache)."""

    def __init__(self, jobs: list[Job | None], ds, tref, cfg: RunConfig, models: FaceModels, ear_here: bool,
                 cache_of, times: StageTimes):
        self.tables: dict[str, TrialFaces] = {}
        self.views: dict[int, JobFaces | None] = {}
        # the tracked EAR pass builds the common table when no job reads its boxes (faces.ear_pass)
        common_boxes = any(j is not None and j.method.needs_face(j.input_type) and not needs_profile_pass(j.record)
                           for j in jobs)
        ear_pass = EAR_PASSES.get(cfg.ear_pass) if ear_here and not common_boxes else None
        common = str(cache_of(cfg.detector + ("+ear" if ear_pass is not None else "")))
        for ji, job in enumerate(jobs):
            if job is None:
                continue
            needs = job.method.needs_face(job.input_type)
            if not (needs or ear_here):
                self.views[ji] = None
                continue
            rec = job.record
            if needs_profile_pass(rec) and needs:
                path = cache_of(cfg.detector + face_rule_key(rec))
                if str(path) not in self.tables:
                    # the profile's face rule (study: the most frequent track needs the whole trial)
                    t0 = time.perf_counter()
                    ensure_profile_faces(ds, tref, path, models.with_conf(rec.detector_conf), rec, False)
                    times.detect_s += time.perf_counter() - t0
                    self.tables[str(path)] = TrialFaces(models, path, landmarks=False)
                if ear_here and common not in self.tables:
                    self.tables[common] = TrialFaces(models, Path(common), landmarks=True, ear_pass=ear_pass)
                self.views[ji] = JobFaces(self.tables, str(path), common if ear_here else None)
            else:
                if common not in self.tables:
                    self.tables[common] = TrialFaces(models, Path(common), landmarks=ear_here, ear_pass=ear_pass)
                self.views[ji] = JobFaces(self.tables, common, None)
        self.common = common

    def step(self, index: int, image: np.ndarray) -> dict[str, np.ndarray | None]:
        """Every table's box in this frame (detect + track once per table)."""
        return {k: tf.box(index, image) for k, tf in self.tables.items()}

    def box(self, ji: int, boxes: dict) -> np.ndarray | None:
        v = self.views.get(ji)
        return boxes.get(v.boxes) if v is not None else None

    def save(self) -> None:
        for tf in self.tables.values():
            tf.save()
