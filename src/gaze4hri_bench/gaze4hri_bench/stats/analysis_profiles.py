"""Analysis profiles: how video means become subject values and which families are
corrected, as frozen records in a registry (``--profile NAME`` of ``analyze``).

``reference`` keeps this project's definitions (the paper's text: subject mean = mean
of the subject's video means, Sezer et al., arXiv 2605.04770, "Analyses"); ``study``
reproduces what the authors' released scripts compute (GazeForHRI/Gaze4HRI@main):

- subject value = frame-weighted mean of video means, weight = valid frames
  (lighting_analysis.py:798-815 ``_subject_level_video_means``; point_analysis.py:179-197);
- experiment 3 slopes by weighted least squares, weights = valid frames per video
  (head_gaze_conflict_vs_error.py:113-127 ``_weighted_simple_linreg``, :221-245), the
  video's conflict being the mean over all head-pose samples of the video, not only
  the method's valid frames (head_gaze_conflict_vs_error.py:95-111), and only subjects
  with all three head conditions (head_gaze_conflict_vs_error.py:23-45);
- experiment 2 tested per method without a correction across methods
  (camera_viewpoint.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from gaze4hri_core.registry import Registry

__all__ = ["AnalysisProfile", "PROFILES", "get_profile", "register_profile", "profile_names"]

AGGREGATIONS = ("video_mean", "frame_weighted")
SLOPE_FITS = ("ols", "wls")
CONFLICT_SOURCES = ("valid_frames", "all_frames")
CORRECTIONS = ("holm", "none")
LISTWISE = ("analysis", "family")


@dataclass(frozen=True)
class AnalysisProfile:
    """One way of computing the study's statistics; validated on creation.

    aggregation: ``video_mean`` (subject value = mean of video means) or
    ``frame_weighted`` (sum of video mean x valid frames / valid frames).
    conflict_fit: ``ols`` or ``wls`` (weights = valid frames of the video).
    conflict_source: ``valid_frames`` (conflict averaged over the method's valid
    frames) or ``all_frames`` (over every frame of the video with a conflict value).
    conflict_complete_conditions: keep only subjects with videos in all three head
    conditions (left, center, right) in experiment 3.
    viewpoint_correction: ``holm`` across methods or ``none`` in experiment 2.
    exclusions: the exclusion list applied unless ``--exclusions`` names another
    (stats/exclusion_lists/).
    listwise: ``analysis`` (one N per analysis: subjects with a value in every cell
    it compares) or ``family`` (each test family uses the subjects complete in its own
    cells, descriptives every subject with a value, as pingouin's ``pairwise_tests``
    called per family in the study's scripts). Experiment 4.2 keeps the subjects
    complete in all conditions for every method in both (line_movement_analysis_paper.py:67-86).
    """

    name: str
    description: str
    aggregation: str = "video_mean"
    conflict_fit: str = "ols"
    conflict_source: str = "valid_frames"
    conflict_complete_conditions: bool = False
    viewpoint_correction: str = "holm"
    exclusions: str = "none"
    listwise: str = "analysis"

    def __post_init__(self) -> None:
        for attr, allowed in (
            ("aggregation", AGGREGATIONS),
            ("conflict_fit", SLOPE_FITS),
            ("conflict_source", CONFLICT_SOURCES),
            ("viewpoint_correction", CORRECTIONS),
            ("listwise", LISTWISE),
        ):
            v = getattr(self, attr)
            if v not in allowed:
                raise ValueError(f"profile {self.name!r}: {attr} {v!r} is not one of {', '.join(allowed)}")

    @property
    def weighted(self) -> bool:
        return self.aggregation == "frame_weighted"

    @property
    def aggregation_text(self) -> str:
        """How a subject value is formed, for captions."""
        if self.weighted:
            return "subject value = frame-weighted mean of video means (weights: valid frames)"
        return "subject value = mean of video means"

    def caption(self, text: str) -> str:
        """``text`` with the profile named (every caption names it)."""
        return f"[profile {self.name}] {text}"


#: the analysis profiles by name
PROFILES: Registry[AnalysisProfile] = Registry("analysis profile", where="analyze --profile")


def register_profile(p: AnalysisProfile) -> AnalysisProfile:
    """Add a profile to the registry (names are unique)."""
    return PROFILES.add(p.name, p)


def profile_names() -> list[str]:
    return sorted(PROFILES)


def get_profile(name: str | AnalysisProfile) -> AnalysisProfile:
    """The registered profile called ``name``; unknown names fail with the list of names."""
    if isinstance(name, AnalysisProfile):
        return name
    return PROFILES.get(str(name))


REFERENCE = register_profile(
    AnalysisProfile(
        name="reference",
        description="this project's definitions: mean of video means per subject, OLS conflict slopes over the "
        "method's valid frames, "
        "experiment 2 Holm-corrected across methods",
    )
)
STUDY = register_profile(
    AnalysisProfile(
        name="study",
        description="the study's released scripts: frame-weighted subject means, WLS conflict slopes (weights = valid "
        "frames) on "
        "conflict averaged over all frames of the video, subjects complete in all head conditions, experiment 2 "
        "uncorrected, "
        "the study's exclusion list, listwise deletion per test family",
        aggregation="frame_weighted",
        conflict_fit="wls",
        conflict_source="all_frames",
        conflict_complete_conditions=True,
        viewpoint_correction="none",
        exclusions="study",
        listwise="family",
    )
)
