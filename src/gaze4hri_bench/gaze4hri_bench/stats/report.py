"""``analyze``: per-frame results -> every analysis of the study -> tables, figures and
a report (Markdown and self-contained HTML) with provenance.

``analyze`` runs the plan of analyses (:data:`.plan.ANALYSES`, one loop), writes every table they
return, draws the figures of :data:`.report_figures.FIGURES` and renders the report from
:data:`SECTIONS`, a table of sections (which tables and figures open each analysis' section, which
paper layouts replace which tidy tables); every further table an analysis returns follows with its
own caption.

Layout of the output folder::

    REPORT/tables/<name>.csv|.md|.tex   tidy tables (docs/statistics.md) and renders
    REPORT/figures/<name>.png|.svg
    REPORT/report.md, report.html       results section, N, exclusions, provenance
    REPORT/summary.json                 what ran, what was skipped and why
"""
from __future__ import annotations

import datetime as _dt
import json
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..schema import SCHEMA_VERSION
from . import layouts as L
from . import plan as P
from .analysis_profiles import get_profile
from .document import Doc, humanize
from .experiments.shared import MIN_SUBJECTS, Analysis, display_name
from .narrative import TEXT, _count, best_grid
from .report_figures import FigureData, draw_figures
from .status import build_status
from .tables import to_latex, to_markdown

__all__ = ["analyze", "SECTIONS", "Section"]

CAPTIONS = {
    "coverage": "Results per method and input: subjects, videos, frames, valid frames; whole-dataset mean error (deg, "
                "mean of subject means).",
    "input_choice": "Input used per method in the main analyses.",
    "illumination": "Experiment 1: subject-level mean angular error (deg) and SD (ddof 1) per method and illumination "
                    "level.",
    "illumination_cv": "Experiment 1: coefficient of variation CV = 100 sigma/mu of the level means (sigma with "
                       "ddof 1, as in the study's Table III).",
    "illumination_pairwise": "Experiment 1: paired t-tests between methods per level; Holm over the pairs of a level; "
                             "effect size Cohen's d_z (also d_av).",
    "viewpoint": "Experiment 2: fixed camera (illumination 100) vs arc, two-sided paired t-test per method; p "
                 "uncorrected, p (Holm) across methods; effect size Cohen's d_z (also d_av), arc - fixed.",
    "conflict": "Experiment 3: subject mean error (deg) and per-subject slopes of video error on video conflict "
                "(deg/deg); one-sided t-test of slopes > 0, Holm across methods.",
    "conflict_slopes": "Experiment 3: per-subject OLS fits error = a + b conflict.",
    "conflict_pairwise": "Experiment 3: paired two-sided t-tests between methods, Holm over all pairs; effect size "
                         "Cohen's d_z (also d_av).",
    "target": "Experiment 4.1: subject-level mean error (deg) and SD per target point (fixed camera, illumination "
              "100).",
    "target_best": "Experiment 4.1: the method with the lowest mean error per point.",
    "target_tests": "Experiment 4.1: paired tests between rows and between left and right columns per method, Holm "
                    "per method and factor; effect size Cohen's d_z (also d_av).",
    "mutual": "Experiment 4.2: subject-level mean error (deg) and SD per mutual-gaze condition.",
    "mutual_pairwise": "Experiment 4.2: paired two-sided t-tests between conditions per method, Holm per method; "
                       "effect size Cohen's d_z (also d_av).",
    "mutual_eccentricity": "Experiment 4.2: per-subject regression E = a + b_pitch |pitch| + b_yaw |yaw| over frames; "
                           "slopes (deg/deg), mean and SD over subjects.",
    "mutual_eccentricity_subjects": "Experiment 4.2: per-subject eccentricity regressions.",
    "crop_vs_rectified": "Table S9: whole-dataset subject-level error, cropped vs rectified input; two-sided paired "
                         "t-test, Holm across methods; effect size Cohen's d_z (also d_av), crop - rectified.",
    "efficiency": "Table S10: pipeline timings per results file.",
    "excluded": "Subjects excluded per analysis and why.",
    "invalid_frames": "Frames left out of the evaluation, by method, input and reason (invalid_reason).",
    "camera_sources": "Camera pose sources per trial: forward kinematics x hand-eye vs the camera's motion-capture "
                      "rigid body (position mm, orientation deg; median, 95th percentile, maximum over the frames "
                      "with both); source: the one the ground truth used.",
    "camera_sources_subjects": "Camera pose sources per subject: forward kinematics x hand-eye vs the camera's rigid "
                               "body, median of the trial medians, largest trial 95th percentile and largest "
                               "disagreement (mm, deg); per trial in tables/camera_sources.csv.",
}
_TESTS = ["t", "dof", "p_unc", "p_holm", "cohen_dz", "cohen_dav", "significant"]
# rendered (md/tex/html) columns per table; CSV keeps all
SHOW = {
    "illumination_pairwise": ["level", "display_a", "display_b", "n", "mean_diff", *_TESTS],
    "conflict": ["display", "n", "mean", "sd", "slope_mean", "slope_sd", "slope_ci_low", "slope_ci_high", "t", "p_holm",
                 "pct_positive", "significant"],
    "conflict_pairwise": ["display_a", "display_b", "n", "mean_diff", *_TESTS],
    "target": ["display", "target", "row", "column", "mean", "sd", "ci_low", "ci_high", "n"],
    "target_tests": ["display", "factor", "a", "b", "n", "mean_a", "mean_b", "t", "p_holm", "cohen_dz", "cohen_dav",
                     "significant"],
    "mutual_pairwise": ["display", "condition_a", "condition_b", "n", "mean_diff", "t", "p_holm", "cohen_dz",
                        "cohen_dav", "significant"],
    "efficiency": ["display", "input", "device", "batch", "frames", "infer_ms_per_frame", "fps", "peak_rss_mb",
                   "peak_vram_mb"],
    "viewpoint": ["display", "n", "fixed_mean", "fixed_sd", "arc_mean", "arc_sd", "t", "dof", "p", "p_holm", "cohen_dz",
                  "cohen_dav", "significant"],
    "crop_vs_rectified": ["display", "n", "crop_mean", "crop_sd", "rectified_mean", "rectified_sd", "t", "p_holm",
                          "cohen_dz", "cohen_dav", "better"],
    "mutual_segment_meta": ["condition", "segment", "display", "subjects", "videos", "fisher_rows", "fisher_z",
                            "fisher_z_se", "r_pooled", "p_unc", "p_holm", "slope_mean", "slope_sd", "r_mean", "r_sd"],
}
#: Tables of one row per subject or video: linked, not printed (the CSV holds them).
DETAIL_SUFFIXES = ("_subjects", "_videos", "_slopes")

#: A section's paper layouts: (analysis, ground truth per target) -> [(layout or None, tidy tables it replaces)].
Layouts = Callable[[Analysis, "pd.DataFrame | None"], list[tuple["L.Layout | None", set[str]]]]


@dataclass(frozen=True)
class Section:
    """One analysis' section of the report: the tables and figures that open it (in this order, after
    its narrative and its paper layouts); every further table of the analysis follows generically."""

    name: str
    tables: tuple[str, ...] = ()
    figures: tuple[str, ...] = ()
    layouts: Layouts | None = None


def _target_layouts(a: Analysis, gt: pd.DataFrame | None) -> list:
    return [(L.table_s11(gt), set())]


#: The report's sections, in order; an analysis of the plan not named here renders generically after them.
SECTIONS: tuple[Section, ...] = (
    Section("illumination", ("illumination_sensitivity",), ("illumination_levels", "illumination_significance"),
            lambda a, gt: [(L.table3(a.tables.get("illumination"), a.tables.get("illumination_cv")),
                            {"illumination", "illumination_cv"})]),
    Section("viewpoint", ("viewpoint",), ("viewpoint",)),
    Section("conflict", ("conflict",), ("conflict_slopes", "conflict_significance")),
    Section("target", ("target_tests", "target_columns", "target_champion", "target_eccentricity"), ("target_heatmap",),
            _target_layouts),
    Section("mutual", ("mutual_eccentricity", "mutual_eccentricity_per_video"),
            ("mutual_conditions", "mutual_significance", "eccentricity"),
            lambda a, gt: [(L.mutual_grid(a.tables.get("mutual")), {"mutual"})]),
    Section("crop_vs_rectified", ("crop_vs_rectified",), ("crop_vs_rectified",),
            lambda a, gt: [(L.table_s9(a.tables.get("crop_vs_rectified")), set())]),
    Section("efficiency", layouts=lambda a, gt: [(L.table_s10(a.tables.get("efficiency")), {"efficiency"})]),
    Section("groups", ("groups", "groups_tests")),
)


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("gaze4hri-bench", "gaze4hri-core", "numpy", "scipy", "pandas", "pyarrow", "matplotlib"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _git() -> str | None:
    import subprocess

    try:
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                           text=True, timeout=5)
        return r.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def _write_table(name: str, df: pd.DataFrame, tdir: Path, caption: str | None = None) -> list[Path]:
    """tables/<name>.csv (every column), .md and .tex (the columns of :data:`SHOW`, human headers)."""
    csv = tdir / f"{name}.csv"
    df.to_csv(csv, index=False, float_format="%.10g")
    view = humanize(df[[c for c in SHOW[name] if c in df.columns]] if name in SHOW else df)
    cap = caption or CAPTIONS.get(name, name)
    (tdir / f"{name}.md").write_text(to_markdown(view, cap))
    (tdir / f"{name}.tex").write_text(to_latex(view, cap, label=f"tab:{name}"))
    return [csv, tdir / f"{name}.md", tdir / f"{name}.tex"]


def _why_empty(a: Analysis, tn: str) -> str:
    """Why table ``tn`` of analysis ``a`` has no rows, in words: the conditions or
    methods present when a comparison needs two, else the analysis' own skip reasons
    that name the table's subject, else a generic reason."""
    t = a.tables
    if tn.endswith("_pairwise") and "condition" in t.get(a.name, pd.DataFrame()).columns:
        conds = list(dict.fromkeys(t[a.name]["condition"].astype(str)))
        if len(conds) < 2:
            return (f"only {_count(len(conds), 'condition')} ({', '.join(conds) or 'none'}) in the results; a "
                    "comparison needs two")
    main = t.get(a.name)
    if tn.endswith("_pairwise") and main is not None and "method" in main.columns and main["method"].nunique() < 2:
        return f"only {_count(main['method'].nunique(), 'method')} in the results; a comparison needs two"
    words = [w for w in tn.split("_") if len(w) > 3 and w != a.name]
    hits = [x for x in a.skipped if any(w in x for w in words)]
    if hits:
        return "; ".join(hits)
    return "no method had the subjects, conditions or videos it needs"


def _table_block(doc: Doc, a: Analysis, tn: str) -> None:
    """Render one table of an analysis with its caption (generic: any table an analysis carries);
    an empty one as a sentence that says why. The CI columns travel with the columns
    SHOW picks, so that a caption that promises a CI has one."""
    df = a.tables[tn]
    if tn in SHOW:
        cols = [c for c in SHOW[tn] if c in df.columns]
        cols += [c for c in df.columns if c.endswith(("ci_low", "ci_high")) and c not in cols]
        df = df[cols]
    doc.table(df, a.captions.get(tn) or CAPTIONS.get(tn, tn), file=f"tables/{tn}.csv", empty=_why_empty(a, tn))


def _write_layout(lay: L.Layout, tdir: Path) -> list[Path]:
    """tables/<name>.csv (the text cells), .md and the paste-ready .tex (table*, booktabs)."""
    paths = [tdir / f"{lay.name}.csv", tdir / f"{lay.name}.md", tdir / f"{lay.name}.tex"]
    lay.frame.to_csv(paths[0], index=False)
    paths[1].write_text(to_markdown(lay.frame, lay.caption))
    paths[2].write_text(lay.latex)
    return paths


def _check_args(alpha: float, profile: str, min_subjects: int) -> None:
    """Refuse a bad alpha, profile name or --min-subjects before any file is read."""
    from gaze4hri_core.errors import Gaze4HRIError

    if not 0 < alpha < 1:
        raise Gaze4HRIError(f"alpha {alpha} out of range", "analyze --alpha",
                            "give a significance level between 0 and 1, e.g. 0.05")
    if profile != "auto":
        get_profile(profile)  # an unknown name fails before any file is read
    if min_subjects < 2:
        raise Gaze4HRIError(f"--min-subjects {min_subjects} is too small", "analyze --min-subjects",
                            "give 2 or more (a paired t-test needs 2 subjects; default 3)")


def _write_tables(pre: P.Prepared, results: list[Analysis], tdir: Path) -> list[Path]:
    """Every table the analyses returned, the exclusions they made and the exclusion list applied."""
    prof, choice = pre.profile, pre.ctx.choice
    written = _write_table("coverage", pre.coverage, tdir, prof.caption(CAPTIONS["coverage"]))
    written += _write_table("input_choice", choice, tdir, prof.caption(CAPTIONS["input_choice"]))
    excl = []
    for a in results:
        for name, df in a.tables.items():
            written += _write_table(name, df, tdir, a.captions.get(name) or prof.caption(CAPTIONS.get(name, name)))
        if len(a.excluded):
            excl.append(a.excluded.assign(analysis=a.name)[["analysis", "subject", "reason"]])
    excluded = pd.concat(excl, ignore_index=True) if excl else pd.DataFrame(columns=["analysis", "subject", "reason"])
    written += _write_table("excluded", excluded, tdir, prof.caption(CAPTIONS["excluded"]))
    written += _write_table("exclusions", pre.exclusions_applied, tdir, prof.caption(
        f"Exclusion list {pre.exclusions.name!r} applied before every analysis: videos = video x method rows removed."))
    return written


def _intro(doc: Doc, pre: P.Prepared, alpha: float) -> None:
    """Title, what was analysed and how, the status box, warnings and the contents list."""
    loaded, prof, main = pre.loaded, pre.profile, pre.ctx.main
    doc.h(1, "Gaze4HRI benchmark: results")
    doc.p(f"Generated {_dt.datetime.now(_dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} by gaze4hri-bench analyze. "
          f"{len(loaded.files)} results file(s), {pre.ctx.videos['subject'].nunique()} subjects, "
          f"{main['method'].nunique()} methods, {int(loaded.videos['n_frames'].sum()):,} frame rows. Analysis profile "
          f"{prof.name!r} ({prof.description}). Frames -> video mean over valid frames -> {prof.aggregation_text}; "
          "the subject is the unit of inference (Sezer et al., analyses: all subject-level); "
          f"alpha = {alpha}; multiple comparisons Holm-corrected; SDs with ddof 1; angles in degrees. Effect sizes: "
          "Cohen's d_z (paired differences) is the primary effect size; d_av is given alongside.")
    st = build_status(loaded.files, pre.pipeline_profiles)
    doc.status(st.lines(), st.alarms, st.methods)
    if pre.warnings:
        doc.p("Warnings:", "skip")
        doc.ul(pre.warnings)
    doc.toc()


def _data_section(doc: Doc, pre: P.Prepared, tdir: Path) -> list[Path]:
    """Coverage, input choice, invalid frames, camera sources and the exclusion list; returns the tables written."""
    from .camera_sources import camera_source_subjects, camera_source_table

    loaded, prof, cov, written = pre.loaded, pre.profile, pre.coverage, []
    doc.h(2, "Data")
    doc.table(cov, CAPTIONS["coverage"])
    doc.table(pre.ctx.choice[["display", "input", "available", "rule", "whole_mean"]], CAPTIONS["input_choice"])
    inv = loaded.invalid
    if len(inv):
        rank = {m: k for k, m in enumerate(dict.fromkeys(cov["method"]))}
        inv = inv.sort_values(["method", "input", "reason"], key=lambda c: c.map(rank) if c.name == "method" else c)
        inv = inv.reset_index(drop=True)
        w = inv.pivot_table(index=["method", "input"], columns="reason", values="frames", aggfunc="sum", fill_value=0,
                            sort=False).reset_index()
        w.columns.name = None
        w.insert(1, "display", w["method"].map(display_name))
        frames = inv.assign(display=inv["method"].map(display_name))[["method", "display", "input", "reason", "frames"]]
        written += _write_table("invalid_frames", frames, tdir, prof.caption(CAPTIONS["invalid_frames"]))
        doc.table(w, CAPTIONS["invalid_frames"])
    cams = camera_source_table(loaded.files)
    if cams is not None:  # issue 13: forward kinematics vs the camera's rigid body, where both were recorded
        written += _write_table("camera_sources", cams, tdir, CAPTIONS["camera_sources"])
        doc.table(camera_source_subjects(cams), CAPTIONS["camera_sources_subjects"], file="tables/camera_sources.csv")
    excl, applied = pre.exclusions, pre.exclusions_applied
    doc.h(3, f"Exclusions ({excl.name})")
    doc.p(f"Exclusion list {excl.name!r}{' (' + excl.source + ')' if excl.source else ''}, applied before every "
          f"analysis; {int(applied['videos'].sum())} video x method rows removed.")
    if len(applied):
        doc.table(applied, prof.caption("Excluded subjects and subject x experiment pairs, with reasons."))
    return written


def _section(doc: Doc, sec: Section, a: Analysis, figs: dict, gt: pd.DataFrame | None, alpha: float,
             tdir: Path) -> list[Path]:
    """One analysis' section: narrative, skips, paper layouts, its opening tables and figures, every further
    table, exclusions and notes; returns the layout files written."""
    written: list[Path] = []
    doc.h(2, a.title)
    if a.status in ("skipped", "failed"):
        doc.p(f"{a.status.capitalize()}: " + "; ".join(a.skipped) + ".", "skip")
        return written
    for s in TEXT.get(sec.name, lambda a, alpha: [])(a, alpha):
        doc.p(s)
    if a.skipped:
        doc.p("Partly skipped: " + "; ".join(a.skipped) + ".", "skip")
    shown = set(sec.tables)
    for lay, covers in (sec.layouts(a, gt) if sec.layouts else []):
        if lay is None:
            continue
        doc.table(lay.frame, lay.caption, file=f"tables/{lay.name}.csv", row_class=lay.row_class, human=False)
        written.extend(_write_layout(lay, tdir))
        shown |= covers
    if sec.name == "target" and (g := best_grid(a)) is not None:
        doc.table(g, "Best method per point (mean deg) as the subject sees the table: farthest row on top, the "
                  "subject's left is the camera's right.")
        shown.add("target_best")
    for tn in sec.tables:
        if tn in a.tables:
            _table_block(doc, a, tn)
    for fk in sec.figures:
        if fk in figs:
            doc.fig(figs[fk][0][0], figs[fk][1])
    for tn in a.tables:  # every further table, with its own caption (profile, aggregation, family, effect size)
        if tn not in shown and not tn.endswith(DETAIL_SUFFIXES):
            _table_block(doc, a, tn)
    if len(a.excluded):
        doc.p(f"Excluded subjects ({len(a.excluded)}): "
              + "; ".join(f"{r.subject} ({r.reason})" for r in a.excluded.itertuples()))
    for n in a.notes:
        doc.p(n)
    detail = [t for t in a.tables if t.endswith(DETAIL_SUFFIXES) and t not in shown]
    if detail:
        doc.p("Per-subject and per-video tables: " + ", ".join(f"`tables/{t}.csv`" for t in detail) + ".")
    return written


def _closing(doc: Doc, out: Path, loaded, t0: float) -> None:
    """Review clips and pipeline sensitivity when their folders exist, then provenance."""
    from ..sensitivity import report_section
    from .review_links import report_links

    clips = report_links(out)  # written by `gaze4hri-bench review RESULTS --extremes --out REPORT/review` (issue 15)
    if clips is not None:
        doc.h(2, "Review clips")
        doc.p(clips[0])
        doc.blocks.append(("raw", clips[1], clips[2]))
    sens = report_section(out)  # written by `gaze4hri-bench deviations --out REPORT/deviations` (issue 10)
    if sens is not None:
        doc.h(2, "Pipeline sensitivity")
        doc.p(sens[0])
        doc.table(sens[1], "Effect of each study-profile setting on a perfect network (deg; median and 95th percentile "
                  "over frames, worst method and experiment).")
        if sens[2] is not None:
            doc.fig(sens[2], "Effect of each study-profile setting on a perfect network, per setting and input (deg).")
    doc.h(2, "Provenance")
    software = ", ".join(f"{k} {v}" for k, v in _versions().items())
    git = f"; git {_git()}" if _git() else ""
    doc.p(f"Results schema {SCHEMA_VERSION}. Analysis software: {software}{git}.")
    prov = pd.DataFrame([
        {"File": i.path, "SHA256": i.sha256, "Rows": i.rows, "Schema": i.schema or "(no metadata)",
         "Methods": ", ".join(i.methods), "Inputs": ", ".join(i.inputs),
         "Written by": json.dumps((i.metadata or {}).get("software")) if (i.metadata or {}).get("software") else "",
         "Git": str((i.metadata or {}).get("git") or ""), "Status": i.status + (f": {i.reason}" if i.reason else "")}
        for i in loaded.files
    ])
    doc.table(prov, "Inputs and their SHA-256.")
    doc.p(f"Analysis time {time.perf_counter() - t0:.1f} s.")


def _summary(pre: P.Prepared, results: list[Analysis], written: list[Path], figs: dict, paths: tuple[Path, Path],
             min_subjects: int, t0: float) -> dict:
    """What ran, what was skipped and why, and where everything was written (summary.json)."""
    st = build_status(pre.loaded.files, pre.pipeline_profiles)
    return {
        "analyses": {a.name: {"status": a.status, "reasons": a.skipped, "n": a.n, "excluded": len(a.excluded),
                              "tables": sorted(a.tables)} for a in results},
        "report_md": str(paths[0]), "report_html": str(paths[1]),
        "tables": [str(p) for p in written if p.suffix == ".csv"],
        "figures": [str(p) for v in figs.values() for p in v[0]], "warnings": pre.warnings,
        "subjects": int(pre.ctx.videos["subject"].nunique()), "methods": sorted(pre.ctx.main["method"].unique()),
        "seconds": round(time.perf_counter() - t0, 3), "profile": pre.profile.name,
        "profile_source": pre.profile_source, "pipeline_profiles": pre.pipeline_profiles, "min_subjects": min_subjects,
        "status": {"data": st.data, "simulated": st.simulated, "alarms": st.alarms, "detectors": st.detectors,
                   "blinks": st.blinks},
        "exclusions": {"name": pre.exclusions.name, "source": pre.exclusions.source,
                       "applied": pre.exclusions_applied.to_dict("records")},
        "inputs": [{"path": i.path, "sha256": i.sha256, "status": i.status, "reason": i.reason}
                   for i in pre.loaded.files],
    }


def analyze(inputs: list[Path], out: Path, alpha: float = 0.05, *, figures: bool = True, profile: str = "auto",
            exclusions: str | None = None, min_subjects: int = MIN_SUBJECTS,
            allow_mixed_profiles: bool = False) -> dict:
    """Run every analysis of the study on per-frame results and write the report.

    Parameters
    ----------
    inputs : per-frame results Parquet files (schema.py) or folders holding them.
    out : report folder (created); tables/, figures/, report.md, report.html,
        summary.json.
    alpha : significance level for the Holm-corrected tests (Sezer et al.: 0.05).
    figures : write figures (PNG and SVG).
    profile : analysis profile (stats/analysis_profiles.py: ``reference``, ``study``), or ``auto``:
        the results' pipeline profile when it names one, else ``reference``.
    exclusions : exclusion list name or YAML path (default: the profile's).
    min_subjects : fewest subjects for an inferential analysis (fewer: skipped, descriptives stay).
    allow_mixed_profiles : analyse results of different pipeline profiles together.

    Returns
    -------
    dict: ``analyses`` (name -> status ran|partial|skipped|failed, reasons, n,
    tables), ``report_md``, ``report_html``, ``tables``, ``figures``, ``warnings``,
    ``seconds``.

    Raises
    ------
    Gaze4HRIError : nothing can be analysed (no usable file, mixed schema versions).
    """
    t0 = time.perf_counter()
    _check_args(alpha, profile, min_subjects)
    out = Path(out)
    tdir, fdir = out / "tables", out / "figures"
    tdir.mkdir(parents=True, exist_ok=True)
    fdir.mkdir(parents=True, exist_ok=True)
    pre = P.prepare([Path(p) for p in inputs], alpha, profile, exclusions, min_subjects, allow_mixed_profiles)
    results = P.run_analyses(pre.ctx)  # the plan (plan.ANALYSES), run in one loop
    written = _write_tables(pre, results, tdir)
    by = {a.name: a for a in results}
    data = FigureData(pre.ctx.main, pre.ctx.frames, pre.ctx.choice, pre.profile, alpha)
    figs = draw_figures(by, data, fdir, pre.warnings) if figures else {}
    doc = Doc()
    doc.profile = pre.profile.name
    _intro(doc, pre, alpha)
    written += _data_section(doc, pre, tdir)
    named = {s.name for s in SECTIONS}
    sections = [s for s in SECTIONS if s.name in by] + [Section(a.name) for a in results if a.name not in named]
    used = [Path(i.path) for i in pre.loaded.files if i.status == "used"]
    gt = L.gt_per_target(used) if "target" in by else None
    for sec in sections:
        written += _section(doc, sec, by[sec.name], figs, gt, alpha, tdir)
    _closing(doc, out, pre.loaded, t0)
    md, hp = out / "report.md", out / "report.html"
    md.write_text(doc.markdown(out))
    hp.write_text(doc.html("Gaze4HRI results"))
    summary = _summary(pre, results, written, figs, (md, hp), min_subjects, t0)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


if __name__ == "__main__":  # pragma: no cover
    print(json.dumps(analyze([Path(p) for p in sys.argv[1:-1]], Path(sys.argv[-1])), indent=2))
