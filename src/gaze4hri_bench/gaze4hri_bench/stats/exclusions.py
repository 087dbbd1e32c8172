"""Exclusions as data: which subjects, or which experiments (and conditions) of a
subject, are left out of every analysis, with the reason.

A list is a YAML file (``name``, ``description``, ``source``, ``subjects``: [{subject,
reason}], ``experiments``: [{subject, experiment, conditions?, reason}]). Lists ship in
``stats/exclusion_lists/`` (``study``: the study's own, GazeForHRI/Gaze4HRI@main:
config.py:488-520; ``none``) and are picked by name, or by a path to a YAML file.
Subject ids match by their number when both have one (``0017`` = ``S17`` =
``subj_0017``), otherwise exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import yaml
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.protocol import EXPERIMENTS

__all__ = [
    "Exclusions",
    "SubjectExclusion",
    "ExperimentExclusion",
    "load_exclusions",
    "shipped_lists",
    "apply_exclusions",
    "subject_key",
    "unknown_subjects",
    "check_known_subjects",
]

WHERE = "analyze --exclusions"


@dataclass(frozen=True)
class SubjectExclusion:
    subject: str
    reason: str


@dataclass(frozen=True)
class ExperimentExclusion:
    subject: str
    experiment: str
    conditions: tuple[str, ...]  # empty: every condition
    reason: str


@dataclass(frozen=True)
class Exclusions:
    """A validated exclusion list."""

    name: str
    description: str = ""
    source: str = ""
    subjects: tuple[SubjectExclusion, ...] = ()
    experiments: tuple[ExperimentExclusion, ...] = ()

    def table(self) -> pd.DataFrame:
        """The list as a table: subject, experiment ("all" for whole subjects), conditions, reason."""
        rows = [
            {"subject": s.subject, "experiment": "all", "conditions": "all", "reason": s.reason} for s in self.subjects
        ]
        rows += [
            {
                "subject": e.subject,
                "experiment": e.experiment,
                "conditions": ", ".join(e.conditions) or "all",
                "reason": e.reason,
            }
            for e in self.experiments
        ]
        return pd.DataFrame(rows, columns=["subject", "experiment", "conditions", "reason"])


def subject_key(s) -> str:
    """Comparison key of a subject id: its last number without leading zeros, else the id."""
    m = re.findall(r"\d+", str(s))
    return str(int(m[-1])) if m else str(s)


def _keys(subjects: pd.Series) -> pd.Series:
    """subject_key of every row, computed once per distinct id (millions of frame rows)."""
    codes, uniques = pd.factorize(
        subjects.astype(str) if not isinstance(subjects.dtype, pd.CategoricalDtype) else subjects
    )
    keys = pd.array([subject_key(u) for u in uniques] + [""], dtype=object)
    return pd.Series(np.asarray(keys)[codes], index=subjects.index)


def shipped_lists() -> list[str]:
    return sorted(
        p.name[:-5]
        for p in resources.files("gaze4hri_bench.stats.exclusion_lists").iterdir()
        if p.name.endswith(".yaml")
    )


def _field(d: dict, key: str, where: str) -> str:
    v = d.get(key)
    if v is None or (isinstance(v, str) and not v.strip()):
        raise Gaze4HRIError(f"exclusion entry {where} has no {key!r}", WHERE, f"give every entry a {key}")
    return str(v)


def parse_exclusions(data, origin: str) -> Exclusions:
    """Validate a parsed YAML document into :class:`Exclusions` (one-line errors naming ``origin``)."""
    if not isinstance(data, dict):
        raise Gaze4HRIError(
            f"{origin} is not a YAML mapping", WHERE, "see docs/statistics.md, Exclusions, for the format"
        )
    unknown = set(data) - {"name", "description", "source", "subjects", "experiments"}
    if unknown:
        raise Gaze4HRIError(
            f"{origin}: unknown key(s) {', '.join(sorted(unknown))}",
            WHERE,
            "allowed: name, description, source, subjects, experiments",
        )
    subs, exps = [], []
    for i, d in enumerate(data.get("subjects") or []):
        if not isinstance(d, dict):
            raise Gaze4HRIError(
                f"{origin}: subjects[{i}] is not a mapping", WHERE, "write '- subject: \"0017\"' and 'reason: ...'"
            )
        subs.append(
            SubjectExclusion(
                _field(d, "subject", f"{origin} subjects[{i}]"), _field(d, "reason", f"{origin} subjects[{i}]")
            )
        )
    for i, d in enumerate(data.get("experiments") or []):
        if not isinstance(d, dict):
            raise Gaze4HRIError(
                f"{origin}: experiments[{i}] is not a mapping", WHERE, "write subject, experiment, conditions, reason"
            )
        exp = _field(d, "experiment", f"{origin} experiments[{i}]")
        if exp not in EXPERIMENTS:
            raise Gaze4HRIError(
                f"{origin}: experiments[{i}] has experiment {exp!r}", WHERE, f"use one of {', '.join(EXPERIMENTS)}"
            )
        conds = d.get("conditions") or ()
        if isinstance(conds, str):
            conds = (conds,)
        exps.append(
            ExperimentExclusion(
                _field(d, "subject", f"{origin} experiments[{i}]"),
                exp,
                tuple(str(c) for c in conds),
                _field(d, "reason", f"{origin} experiments[{i}]"),
            )
        )
    return Exclusions(
        name=str(data.get("name") or origin),
        description=str(data.get("description") or ""),
        source=str(data.get("source") or ""),
        subjects=tuple(subs),
        experiments=tuple(exps),
    )


def load_exclusions(spec: str | Path) -> Exclusions:
    """A shipped list by name (``study``, ``none``) or a YAML file by path."""
    s = str(spec)
    if s in shipped_lists():
        text = resources.files("gaze4hri_bench.stats.exclusion_lists").joinpath(f"{s}.yaml").read_text()
        origin = f"exclusion list {s!r}"
    else:
        p = Path(s)
        if not p.is_file():
            raise Gaze4HRIError(
                f"no exclusion list {s!r}", WHERE, f"name a shipped list ({', '.join(shipped_lists())}) or a YAML file"
            )
        text, origin = p.read_text(), str(p)
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise Gaze4HRIError(
            f"{origin} is not valid YAML ({str(e).splitlines()[0]})", WHERE, "fix the file's syntax"
        ) from None
    return parse_exclusions(data, origin)


def unknown_subjects(excl: Exclusions, subjects) -> list[str]:
    """The subject ids an exclusion list names (whole subjects or experiments) that match
    no subject of the results (by :func:`subject_key`), in the list's order."""
    have = {subject_key(s) for s in pd.unique(pd.Series(list(subjects), dtype=object).astype(str))}
    named = [s.subject for s in excl.subjects] + [e.subject for e in excl.experiments]
    return list(dict.fromkeys(s for s in named if subject_key(s) not in have))


def check_known_subjects(excl: Exclusions, subjects, origin: str) -> None:
    """Refuse a list that names subjects the results do not have (a typo would exclude
    nobody, silently): one-line error naming the ids, the list and the fix."""
    bad = unknown_subjects(excl, subjects)
    if bad:
        have = sorted(pd.unique(pd.Series(list(subjects), dtype=object).astype(str)))
        shown = ", ".join(have[:6]) + (" ..." if len(have) > 6 else "")
        raise Gaze4HRIError(
            f"{origin} names subject(s) {', '.join(bad[:6])}{' ...' if len(bad) > 6 else ''} that are not in the "
            f"results (they have {shown})",
            WHERE,
            "correct the ids (0017 = S17 = subj_0017 match) or remove those entries",
        )


def apply_exclusions(
    videos: pd.DataFrame, excl: Exclusions, frames: pd.DataFrame | None = None
) -> tuple[pd.DataFrame, pd.DataFrame | None, pd.DataFrame]:
    """Drop the excluded videos (and mutual-gaze frames) before any analysis.

    Returns the kept videos, the kept frames and a table of what was applied:
    subject (as in the results), experiment, conditions, reason, videos (how many
    video x method rows it removed; 0 when the subject is not in the results).
    """
    key = _keys(videos["subject"])
    exp = videos["experiment"].astype(str)
    cond = videos["condition"].astype(str)
    drop = pd.Series(False, index=videos.index)
    rows = []
    names = dict(zip(key, videos["subject"].astype(str), strict=False))
    for s in excl.subjects:
        m = key == subject_key(s.subject)
        drop |= m
        rows.append(
            {
                "subject": names.get(subject_key(s.subject), s.subject),
                "experiment": "all",
                "conditions": "all",
                "reason": s.reason,
                "videos": int(m.sum()),
            }
        )
    fdrop = []
    for e in excl.experiments:
        m = (key == subject_key(e.subject)) & (exp == e.experiment)
        if e.conditions:
            m &= cond.isin(e.conditions)
        drop |= m
        fdrop.append(e)
        rows.append(
            {
                "subject": names.get(subject_key(e.subject), e.subject),
                "experiment": e.experiment,
                "conditions": ", ".join(e.conditions) or "all",
                "reason": e.reason,
                "videos": int(m.sum()),
            }
        )
    applied = pd.DataFrame(rows, columns=["subject", "experiment", "conditions", "reason", "videos"])
    kept = videos[~drop.to_numpy()]
    if frames is not None and len(frames):
        fk = _keys(frames["subject"])
        fd = fk.isin({subject_key(s.subject) for s in excl.subjects})
        for e in fdrop:
            if e.experiment == "mutual":
                m = fk == subject_key(e.subject)
                if e.conditions:
                    m &= frames["condition"].astype(str).isin(e.conditions)
                fd |= m
        frames = frames[~fd.to_numpy()]
    return kept, frames, applied
