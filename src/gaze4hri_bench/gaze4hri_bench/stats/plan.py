"""What ``analyze`` runs, in which order, on which data: the pipeline-profile check,
the exclusions, and the registry of analyses (name -> runner), so that the report only
renders what this returns.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.registry import Registry

from ..specs import SPECS
from . import analyses as A
from .analysis_profiles import PROFILES, AnalysisProfile, get_profile
from .exclusions import Exclusions, apply_exclusions, check_known_subjects, load_exclusions, shipped_lists
from .experiments.shared import set_user_table_names
from .load import LoadedResults, load_results

__all__ = [
    "Context",
    "Prepared",
    "ANALYSES",
    "check_pipeline_profiles",
    "resolve_profile",
    "exclude",
    "prepare",
    "isolated",
    "run_analyses",
]


@dataclass(frozen=True)
class Context:
    """Everything an analysis runner may read."""

    main: pd.DataFrame  # videos of each method's chosen input
    videos: pd.DataFrame  # videos of every input (crop vs rectified)
    frames: pd.DataFrame  # valid mutual-gaze frames
    choice: pd.DataFrame
    loaded: LoadedResults
    alpha: float
    profile: AnalysisProfile
    min_subjects: int

    def lacking(self, column: str) -> dict[str, str]:
        chosen = set(zip(self.choice["method"], self.choice["input"], strict=True))
        return {
            m: f"its results lack column {column}"
            for (m, i), cols in self.loaded.missing.items()
            if (m, i) in chosen and column in cols
        }


def _efficiency(c: Context) -> A.Analysis:
    md = [
        {
            "file": Path(i.path).name,
            "method": (i.metadata or {}).get("method", ",".join(i.methods)),
            "input": (i.metadata or {}).get("input", ",".join(i.inputs)),
            "timing": (i.metadata or {}).get("timing"),
        }
        for i in c.loaded.files
        if i.status == "used"
    ]
    return A.efficiency(md)


def _kw(c: Context) -> dict:
    return {"profile": c.profile, "min_subjects": c.min_subjects}


#: name -> runner; the report renders them in this order.
ANALYSES: Registry[Callable[[Context], A.Analysis]] = Registry("analysis")
ANALYSES.add("illumination", lambda c: A.illumination(c.main, c.alpha, **_kw(c)))
ANALYSES.add("viewpoint", lambda c: A.viewpoint(c.main, c.alpha, **_kw(c)))
ANALYSES.add(
    "conflict", lambda c: A.conflict(c.main, c.alpha, skip_methods=c.lacking("head_gaze_conflict_deg"), **_kw(c))
)
ANALYSES.add("target", lambda c: A.target_position(c.main, c.alpha, **_kw(c)))
ANALYSES.add(
    "mutual",
    lambda c: A.mutual_gaze(
        c.main, c.frames, c.alpha, skip_methods={**c.lacking("gt_pitch_deg"), **c.lacking("gt_yaw_deg")}, **_kw(c)
    ),
)
ANALYSES.add("crop_vs_rectified", lambda c: A.crop_vs_rectified(c.videos, c.alpha, **_kw(c)))
ANALYSES.add("efficiency", _efficiency)
ANALYSES.add("groups", lambda c: A.subject_groups(c.main, c.loaded.subjects, c.alpha, **_kw(c)))


def check_pipeline_profiles(loaded: LoadedResults, allow_mixed: bool) -> tuple[list[str], list[str]]:
    """The pipeline profiles of the used files (``reference`` when unnamed); results of
    different pipeline profiles are refused in one analysis unless ``allow_mixed``.
    Returns (profiles, warnings)."""
    used = [i for i in loaded.files if i.status == "used"]
    profs = sorted({i.profile for i in used})
    if len(profs) <= 1:
        return profs, []
    by = {p: [Path(i.path).name for i in used if i.profile == p] for p in profs}
    desc = "; ".join(f"{p}: {', '.join(n[:3])}{' ...' if len(n) > 3 else ''}" for p, n in by.items())
    if not allow_mixed:
        raise Gaze4HRIError(
            f"results come from different pipeline profiles ({desc})",
            "analyze RESULTS",
            "analyse one pipeline profile at a time, or pass --allow-mixed-profiles to compare them in one table",
        )
    return profs, [f"results mix pipeline profiles ({desc}); --allow-mixed-profiles given, so they share the tables"]


def resolve_profile(name: str, pipeline_profiles: list[str]) -> tuple[AnalysisProfile, str]:
    """The analysis profile to use and why: a registered name as given, or for ``auto``
    the results' pipeline profile when it names an analysis profile (results of the
    ``study`` pipeline are analysed as the study does), else ``reference``."""
    if name != "auto":
        return get_profile(name), "--profile"
    if len(pipeline_profiles) == 1 and pipeline_profiles[0] in PROFILES:
        return PROFILES.get(pipeline_profiles[0]), f"auto: the results' pipeline profile {pipeline_profiles[0]!r}"
    return PROFILES["reference"], "auto: default (no single pipeline profile with an analysis profile of its name)"


def exclude(loaded: LoadedResults, excl: Exclusions) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Apply the exclusion list to the videos and mutual-gaze frames (before any analysis)."""
    videos, frames, applied = apply_exclusions(loaded.videos, excl, loaded.mutual_frames)
    return videos, frames, applied


def isolated(fn, *args, name: str, **kw) -> A.Analysis:
    """Run one analysis so that a failure in it leaves the others standing (reported as
    status ``failed`` with the error, not hidden)."""
    try:
        return fn(*args, **kw)
    except Exception as e:  # noqa: BLE001 - isolation by design, the error is reported
        a = A.Analysis(name, name)
        a.status = "failed"
        a.skipped = [f"{type(e).__name__}: {e}"]
        return a


def run_analyses(ctx: Context, run: Callable[..., A.Analysis] = isolated) -> list[A.Analysis]:
    """Every registered analysis through ``run(fn, ctx, name=...)`` (default: :func:`isolated`)."""
    return [run(fn, ctx, name=name) for name, fn in ANALYSES.items()]


@dataclass(frozen=True)
class Prepared:
    """Results loaded, profile-checked and exclusion-filtered, ready for the analyses."""

    ctx: Context
    loaded: LoadedResults
    coverage: pd.DataFrame
    pipeline_profiles: list[str]
    profile: AnalysisProfile
    profile_source: str
    exclusions: Exclusions
    exclusions_applied: pd.DataFrame
    warnings: list[str]


def user_table_names(loaded: LoadedResults) -> dict[str, str]:
    """method -> its spec's ``table_name`` for the methods outside specs.SPECS (a user's spec
    file, issue 30), from each used file's provenance."""
    names = {}
    for f in loaded.files:
        spec = (f.metadata or {}).get("spec") if f.status == "used" else None
        if isinstance(spec, dict) and spec.get("table_name") and not SPECS.find(str(spec.get("name"))):
            for m in f.methods:
                names[str(m)] = str(spec["table_name"])
    return names


def prepare(
    inputs: list[Path],
    alpha: float,
    profile: str = "auto",
    exclusions: str | None = None,
    min_subjects: int = A.MIN_SUBJECTS,
    allow_mixed: bool = False,
) -> Prepared:
    """Load per-frame results, check their pipeline profiles, resolve the analysis
    profile, apply its exclusion list, choose each method's input: everything
    ``analyze`` and ``gaze4hri-bench deviations`` run the analyses on."""
    loaded = load_results([Path(p) for p in inputs])
    set_user_table_names(user_table_names(loaded))
    pipeline_profiles, warnings = check_pipeline_profiles(loaded, allow_mixed)
    prof, profile_source = resolve_profile(profile, pipeline_profiles)
    excl_list = load_exclusions(exclusions or prof.exclusions)
    if exclusions and str(exclusions) not in shipped_lists():
        # a list written for this data: a subject it names that the results lack is a typo, refused
        # (shipped lists, e.g. the study's, may name subjects a partial data set does not have)
        check_known_subjects(
            excl_list,
            loaded.videos["subject"].cat.categories
            if hasattr(loaded.videos["subject"], "cat")
            else loaded.videos["subject"],
            str(exclusions),
        )
    warnings = [f"{Path(i.path).name} not used: {i.reason}" for i in loaded.files if i.status != "used"] + warnings
    loaded.videos, loaded.mutual_frames, excl_applied = exclude(loaded, excl_list)
    videos = loaded.videos
    if loaded.duplicates:
        warnings.append(
            f"{loaded.duplicates} video(s) appear in more than one results file: the first file's copy is used"
        )
    if loaded.no_valid:
        bad = set(loaded.no_valid)
        for m, i in sorted(bad):
            warnings.append(f"{A.display_name(m)} ({i}) has no valid frames: left out of every analysis")
        key = pd.MultiIndex.from_frame(videos[["method", "input"]].astype(str))
        videos = videos[~key.isin(list(bad))]
    if videos.empty:
        raise Gaze4HRIError(
            "no method has valid frames", "analyze RESULTS", "check the results' valid and error_deg columns"
        )
    cov = A.coverage(loaded.videos)
    main, choice = A.select_inputs(videos)
    n_subj = int(main["subject"].nunique())
    if n_subj < min_subjects:
        warnings.append(
            f"only {n_subj} subject(s), fewer than --min-subjects {min_subjects}: inferential analyses skipped, "
            "descriptive tables only"
        )
    ctx = Context(main, videos, loaded.mutual_frames, choice, loaded, alpha, prof, min_subjects)
    return Prepared(ctx, loaded, cov, pipeline_profiles, prof, profile_source, excl_list, excl_applied, warnings)
