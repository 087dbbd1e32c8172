"""The study's analyses, one module per experiment, each a pure function of the video-level table
(Sezer et al., arXiv 2605.04770, experiments 1-4; docs/statistics.md):

- :mod:`.shared`: the :class:`~.shared.Analysis` record, subject-level aggregation, listwise
  deletion, descriptives and the paired-test helpers every experiment uses;
- :mod:`.illumination` (experiment 1), :mod:`.viewpoint` (2), :mod:`.conflict` (3),
  :mod:`.target` (4.1), :mod:`.mutual` (4.2);
- :mod:`.dataset`: input choice, coverage, cropped vs rectified, subject groups, efficiency.

:mod:`gaze4hri_bench.stats.plan` names which of them ``analyze`` runs, in which order.
"""
