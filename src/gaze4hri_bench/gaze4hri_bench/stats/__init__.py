"""Subject-level statistics, tables, figures and report from per-frame results
(Sezer et al., Gaze4HRI, arXiv 2605.04770, the analyses of experiments 1-4 and Tables III-VII, S9, S10;
docs/statistics.md).

Public entry point: :func:`analyze`. The pure analysis functions live in
:mod:`.analyses` (tables in, tables out) and :mod:`.inference` (tests, Holm, effect
sizes); imports are lazy so that ``import gaze4hri_bench.stats`` stays light.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["analyze"]


def analyze(inputs: list[Path], out: Path, alpha: float = 0.05, **kw) -> dict:
    """Per-frame results -> tables, figures, report.md/html; see :func:`.report.analyze`."""
    from .report import analyze as _analyze

    return _analyze(inputs, out, alpha, **kw)
