"""``gaze4hri-bench deviations``: how much each documented setting of a pipeline
profile moves the gaze a perfect network would report, on real trial geometry.

For every setting of the profile (default ``study``) alone on top of ``reference``,
and for the whole profile, every affected method and input type: each frame's truth
(motion-capture gaze, eye midpoint, face centre, head rotation, intrinsics) goes
through the oracle (methods.oracle: a perfect network in the method's own raw output
convention), decoded by the modified profile; the angle to the ``reference`` oracle's
answer (the truth) is the setting's effect. ``clip_shift`` moves the output to a later
frame (effect: the gaze change over the shift); a setting that leaves frames unscored
(``unscored_tail``, ``pose_match``) counts them (``not_scored``, ``not_scored_pct``).
Settings a perfect network is blind to
(colour, mean/std, crop rule, clip windows, face-box rules, rectification centre and
head axes under R^T) show 0 and say so: their effect needs real weights.

Writes ``deviations.csv``, ``deviations.parquet``, ``deviations.md`` and ``deviations.png``;
written into REPORT/deviations, ``analyze``'s report shows them as its "Pipeline
sensitivity" section (sensitivity.report_section).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.errors import Gaze4HRIError

from ..sensitivity import REPORT_SUBDIR, network_summary, report_section, summary

__all__ = ["add_arguments", "main", "deviation_table", "frame_geometries", "trial_truths", "origin_table",
           "report_section", "DEFAULT_OUT", "REPORT_SUBDIR"]

DEFAULT_OUT = Path("out/deviations")
#: where ``analyze``'s report looks for this command's output: REPORT/deviations


def frame_geometries(ds, tref) -> tuple[list, pd.DataFrame]:
    """(FrameGeometry per valid frame, the matching ground-truth rows)."""
    from ..methods.oracle import FrameGeometry, face_box_from_geometry

    gt = ds.trial_ground_truth(tref)
    need = ["gt_x", "gt_y", "gt_z", "eye_cx", "eye_cy", "eye_cz", "face_cx", "face_cy", "face_cz"]
    if any(c not in gt.columns for c in need):
        raise Gaze4HRIError(f"ground truth of {tref.subject}/{tref.trial} lacks {need}", "deviations",
                            "update the data reader (data.frame_truth.GT_COLUMNS)")
    intr = ds.camera_info(tref) if callable(getattr(ds, "camera_info", None)) else tref.calibration.intrinsics
    K = np.asarray(intr.K, float)
    size = (int(intr.width), int(intr.height))
    rows = _with_pose_match(ds, tref, gt)
    R = rows[[f"R_head_{i}{j}" for i in range(3) for j in range(3)]].to_numpy(float).reshape(-1, 3, 3)
    g = rows[["gt_x", "gt_y", "gt_z"]].to_numpy(float)
    e = rows[["eye_cx", "eye_cy", "eye_cz"]].to_numpy(float)
    c = rows[["face_cx", "face_cy", "face_cz"]].to_numpy(float)
    geos = [FrameGeometry(K, size, e[i], c[i], R[i], g[i], face_box_from_geometry(K, c[i], shape=(size[1], size[0])))
            for i in range(len(rows))]
    return geos, rows


_PM = (["eye_cx", "eye_cy", "eye_cz", "face_cx", "face_cy", "face_cz"]
       + [f"R_head_{i}{j}" for i in range(3) for j in range(3)])


def _with_pose_match(ds, tref, gt: pd.DataFrame) -> pd.DataFrame:
    """The valid rows of ``gt`` with ``trial_last_frame`` (the trial's last frame slot)
    and ``pm_*`` columns: the rectification geometry of the study's nearest-sample
    matching (data.frame_truth.pose_match_options; NaN where no sample lies within
    20 ms), for the ``pose_match`` setting."""
    from ..data.frame_truth import pose_match_options

    out = gt.copy()
    out["trial_last_frame"] = int(gt["frame"].max()) if len(gt) else -1
    opt = pose_match_options(type("R", (), {"pose_match": "nearest_20ms"})(), "rectified",
                             getattr(ds, "gt_options", None))
    try:
        near = ds.trial_ground_truth(tref, options=opt)
    except TypeError:  # a dataset without ground-truth options: no pose-match geometry
        near = None
    for c in _PM:
        out[f"pm_{c}"] = np.nan
    if near is not None and len(near) == len(gt) and (near["frame"].to_numpy() == gt["frame"].to_numpy()).all():
        ok = (near["invalid_reason"].astype(str) != "interp_gap").to_numpy()
        for c in _PM:
            out[f"pm_{c}"] = np.where(ok, near[c].to_numpy(float), np.nan)
    return out[out["valid"].astype(bool)].reset_index(drop=True)


def _pose_matched(geo, row) -> object | None:
    """``geo`` with the eye midpoint, face centre and head rotation of the pose-matched
    sample (``pm_*`` of a trial_truths row); None where there is none (not scored)."""
    from dataclasses import replace

    v = np.array([row[f"pm_{c}"] for c in _PM], float)
    if not np.isfinite(v).all():
        return None
    return replace(geo, eye_center=v[0:3], face_center=v[3:6], R_head=v[6:].reshape(3, 3))


def trial_truths(ds, trefs, progress: bool = False, log=print) -> list[tuple]:
    """(trial ref, experiment, FrameGeometry per valid frame, valid ground-truth rows) per
    trial with valid frames: each trial's ground truth is computed once, for the oracle
    table and the origin table alike. ``progress``: `run`'s overall bar (trials i/N,
    frames, rate, ETA; pipeline.progress.RunProgress) on stderr; else a line every 10 s."""
    from gaze4hri_core.protocol import trial_by_id

    from .progress import RunProgress

    out = []
    with RunProgress(progress, log=log) as bars:
        job = bars.job("deviations: ground truth", list(trefs))
        for t in trefs:
            with job.trial(t) as bar:
                geos, rows = frame_geometries(ds, t)
                bar.total = len(geos)
                bar.update(len(geos))
            if not geos:
                continue
            try:
                exp = trial_by_id(t.trial).experiment
            except KeyError:
                exp = "unknown"
            out.append((t, exp, geos, rows))
        job.close()
    return out


def _sequence(job, geos, frames, sel, rows: pd.DataFrame | None = None) -> np.ndarray:
    """The oracle outputs a run would report for frames ``sel`` (indices into geos):
    with the record's temporal smoothing (over the neighbouring frames) and clip shift
    (frame f shows the output for frame f - shift); NaN for frames the record does not
    score (profiles.not_scored_mask: ``unscored_tail``; ``pose_match``, whose geometry
    comes from the ``pm_*`` columns of ``rows``)."""
    from ..methods.clips import smooth_sequence
    from ..methods.oracle import oracle_vector

    pos = {int(f): i for i, f in enumerate(frames)}
    m, it, st = job.method, job.input_type, job.record  # planned as for a run (pipeline.jobs.plan_job)
    cache: dict[int, np.ndarray] = {}
    matched = (rows is not None and it == "rectified" and getattr(st, "pose_match", "interpolate") != "interpolate"
               and "pm_eye_cx" in rows.columns)

    def at(j):
        if j not in cache:
            g = _pose_matched(geos[j], rows.iloc[j]) if matched else geos[j]
            v = oracle_vector(m, g, it) if g is not None else None
            cache[j] = np.full(3, np.nan) if v is None else v
        return cache[j]

    out = []
    for i in sel:
        j = pos.get(int(frames[i]) - st.clip_shift)
        if j is None:
            out.append(np.full(3, np.nan))
            continue
        if st.smoothing is None:
            out.append(at(j))
            continue
        nb = [k for k in (pos.get(int(frames[j]) - 1), j, pos.get(int(frames[j]) + 1)) if k is not None]
        sm = smooth_sequence([at(k) for k in nb], st.smoothing)
        out.append(sm[nb.index(j)])
    out = np.asarray(out, float).reshape(-1, 3)
    if getattr(st, "unscored_tail", 0) and len(sel):
        from ..profiles import not_scored_mask

        has_last = rows is not None and "trial_last_frame" in rows.columns
        last = int(rows["trial_last_frame"].iloc[0]) if has_last else None
        out[not_scored_mask(np.asarray(frames)[sel], st, it, last_frame=last)] = np.nan
    return out


def _variants(profile_name: str):
    """(label, setting or None, per-method records): each setting alone, then all."""
    from ..profiles import get_profile

    prof = get_profile(profile_name)
    out = [(s.name, s, get_profile(f"{prof.name}:{s.name}")) for s in prof.settings]
    out.append((f"{prof.name} (all)", None, prof))
    return out


def deviation_table(truths: list[tuple], methods: list[str], profile: str = "study", inputs=("crop", "rectified"),
                    stride: int = 1, log=print) -> pd.DataFrame:
    """Per (setting, method, input, experiment): frames, median and 95th percentile of
    the angular effect (deg: the variant's output vs ``reference``'s, both with the
    oracle), and whether a perfect network sees the setting. ``truths``: trial_truths of
    data read at full rate (a shift or smoothing is in frames); every ``stride``-th
    valid frame is evaluated."""
    from gaze4hri_core.gaze import angular_error_deg

    from .jobs import plan_job

    variants = _variants(profile)
    recs = []
    for t, exp, geos, rows in truths:
        frames = rows["frame"].to_numpy(np.int64)
        sel = np.arange(0, len(geos), stride)
        ref = {(name, it): _sequence(plan_job(name, it, "reference", model=False), geos, frames, sel, rows)
               for name in methods for it in inputs}
        for label, setting, prof in variants:
            for name in methods:
                if setting is not None and setting.methods != ("*",) and name not in setting.methods:
                    continue
                for it in inputs:
                    v = _sequence(plan_job(name, it, prof, model=False), geos, frames, sel, rows)
                    r = ref[(name, it)]
                    eff = np.asarray(angular_error_deg(v, r), float)
                    eff = eff[np.isfinite(eff)]
                    lost = int((np.isfinite(r).all(axis=1) & ~np.isfinite(v).all(axis=1)).sum())
                    recs.append({"setting": label, "field": setting.field if setting else "(all)",
                                 "verdict": setting.verdict if setting else "", "method": name, "input": it,
                                 "experiment": exp, "subject": t.subject, "trial": t.trial, "effects": eff,
                                 "not_scored": lost, "scored_ref": int(np.isfinite(r).all(axis=1).sum())})
        log(f"{t.subject}/{t.trial}: {len(sel)} frame(s)")
    if not recs:
        raise Gaze4HRIError("no valid frames in the selected trials", "--data", "check --subjects/--trials")
    df = pd.DataFrame(recs)
    out = []
    for key, grp in df.groupby(["setting", "field", "verdict", "method", "input", "experiment"], sort=False):
        eff = np.concatenate(list(grp["effects"]))
        nref = int(grp["scored_ref"].sum())
        out.append(dict(zip(["setting", "field", "verdict", "method", "input", "experiment"], key, strict=True),
                        frames=int(eff.size), median_deg=float(np.median(eff)) if eff.size else np.nan,
                        p95_deg=float(np.percentile(eff, 95)) if eff.size else np.nan,
                        max_deg=float(np.max(eff)) if eff.size else np.nan,
                        not_scored=int(grp["not_scored"].sum()),
                        not_scored_pct=100.0 * int(grp["not_scored"].sum()) / nref if nref else 0.0))
    tab = pd.DataFrame(out)
    seen = (tab["max_deg"].fillna(0) > 1e-3) | (tab["not_scored"] > 0)
    tab["oracle_sees"] = seen.groupby(tab["setting"]).transform("any").astype(bool)
    return tab


def origin_table(truths: list[tuple]) -> pd.DataFrame:
    """Where rectified predictions start: per experiment, the angle between the gaze from
    the ETH face centre to the target (what a perfect network trained on normalized labels
    answers on a patch centred there: Zhang, Sugano, Bulling, ETRA 2018, Sec. 3, labels
    g_n = R (t - c) with c the face centre) and the ground truth from the eye midpoint
    (Sezer et al., the ground-truth gaze vector); valid frames of ``truths``
    (trial_truths), deg. Under ``study`` (rect_eye_midpoint) the patch is centred on the
    eye midpoint and this cost is ~0."""
    from gaze4hri_core.gaze import angular_error_deg, normalize

    need = ["target_cx", "target_cy", "target_cz", "face_cx", "face_cy", "face_cz", "gt_x", "gt_y", "gt_z"]
    recs = []
    for _t, exp, _geos, r in truths:
        if any(c not in r.columns for c in need):
            continue
        tgt = r[need[:3]].to_numpy(float)
        face = r[need[3:6]].to_numpy(float)
        ok = np.isfinite(tgt).all(1) & np.isfinite(face).all(1)
        if ok.any():
            ang = angular_error_deg(normalize(tgt[ok] - face[ok]), r[need[6:]].to_numpy(float)[ok])
            recs.append((exp, np.asarray(ang, float).reshape(-1)))
    rows = []
    for exp in sorted({e for e, _ in recs}):
        a = np.concatenate([x for e, x in recs if e == exp])
        rows.append({"experiment": exp, "frames": int(a.size), "median_deg": float(np.median(a)),
                     "p95_deg": float(np.percentile(a, 95)), "max_deg": float(np.max(a))})
    return pd.DataFrame(rows, columns=["experiment", "frames", "median_deg", "p95_deg", "max_deg"])


def _markdown(tab: pd.DataFrame, command: str, profile: str, net: pd.DataFrame | None = None,
              sig: pd.DataFrame | None = None, changes: pd.DataFrame | None = None,
              origin: pd.DataFrame | None = None) -> str:
    summ = summary(tab)
    lines = ["## Pipeline sensitivity", "",
             f"Each documented setting of profile `{profile}` alone on top of `reference`, with the oracle (a "
             "perfect network); effect = angle between the gaze it then reports and what `reference` reports (the "
             "truth, except MCGaze's official smoothing), over valid frames. "
             "Settings a perfect network cannot see (image appearance, crop and face-box rules, clip windows) show 0: "
             "their effect needs real weights: see the section with the networks below, when weights were present.",
             "", f"Command: `{command}`", "",
             "| setting | verdict | methods affected (oracle) | median deg (worst row) | p95 deg (worst row) "
             "| frames not scored % (worst row) |",
             "|---|---|---|---|---|---|"]
    for r in summ.itertuples(index=False):
        lines.append(f"| `{r[0]}` | {r[1] or '-'} | {r[3]} | {r[4]:.3f} | {r[5]:.3f} | {r[6]:.2f} |")
    lines += ["", "Per experiment (median / p95 deg, both input types, methods the setting applies to):", "",
              "| setting | input | " + " | ".join(sorted(tab["experiment"].unique())) + " |",
              "|---|---|" + "---|" * tab["experiment"].nunique()]
    for (s, it), g in tab.groupby(["setting", "input"], sort=False):
        cells = []
        for e in sorted(tab["experiment"].unique()):
            ge = g[g["experiment"] == e]
            cells.append(f"{ge['median_deg'].max():.2f} / {ge['p95_deg'].max():.2f}" if len(ge) else "-")
        lines.append(f"| `{s}` | {it} | " + " | ".join(cells) + " |")
    if origin is not None and len(origin):
        lines += ["", "### Where rectified predictions start", "",
                  "`reference` centres the normalized camera on the ETH face centre, so a perfect network trained on "
                  "ETH-XGaze labels (which run from the face centre) answers the gaze from the face centre; the ground "
                  "truth runs from the eye midpoint. Cost to that perfect network, deg (under `study`'s "
                  "`rect_eye_midpoint` the patch is centred on the eye midpoint and the cost is ~0):", "",
                  "| experiment | frames | median | p95 | max |", "|---|---|---|---|---|"]
        for r in origin.itertuples(index=False):
            lines.append(f"| {r.experiment} | {r.frames} | {r.median_deg:.2f} | {r.p95_deg:.2f} | {r.max_deg:.2f} |")
    lines += ["", "### With the networks", ""]
    if net is None or net.empty:
        lines.append("Not run: no network weights were present (`gaze4hri-bench models` lists where to get them), or "
                     "`--network off`.")
        return "\n".join(lines) + "\n"
    lines += ["Each setting alone (`run --profile " + profile + ":SETTING`) and the whole profile, run with the "
              "networks through the full pipeline on the same sessions as `reference`: the angle between the two "
              "predictions of a frame (median / p95, worst method, input and experiment), the mean change in angular "
              "error (variant - "
              "reference, frames valid in both), and how many of the report's tested results (Holm-corrected, "
              "`reference` analysis profile) change outcome. Networks marked *random weights* are not gaze "
              "estimators: their rows measure how much a setting changes a network's input, not accuracy.", "",
              "| setting | networks | median deg | p95 deg | error change deg | significant results changed |",
              "|---|---|---|---|---|---|"]
    for r in network_summary(net, sig).to_dict("records"):
        lines.append(f"| `{r['setting']}` | {r['networks']} | {r['median_deg (max over rows)']:.3f} | "
                     f"{r['p95_deg (max over rows)']:.3f} | {r['error change deg (largest)']:+.3f} | "
                     f"{r.get('significant results changed', '-')} |")
    if changes is not None and len(changes):
        lines += ["", "Changed results:", "",
                  "| setting | analysis | table | result | change | p reference | p variant |",
                  "|---|---|---|---|---|---|---|"]
        for r in changes.itertuples(index=False):
            lines.append(f"| `{r.setting}` | {r.analysis} | {r.table} | {r.key} | {r.change} | {r.p_reference:.3g} | "
                         f"{r.p_variant:.3g} |")
    return "\n".join(lines) + "\n"


def _figure(tab: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    g = tab.groupby(["setting", "input"], sort=False)[["median_deg", "p95_deg"]].max().reset_index()
    labels = [f"{s} ({i})" for s, i in zip(g["setting"], g["input"], strict=True)]
    fig, ax = plt.subplots(figsize=(8, 0.28 * len(labels) + 1.2))
    y = np.arange(len(labels))
    ax.barh(y, g["p95_deg"], color="#c6dbef", label="95th percentile")
    ax.barh(y, g["median_deg"], color="#2171b5", label="median")
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("angular effect on a perfect network (deg, worst method and experiment)")
    ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..specs import SPECS
    from .cli_run import DEFAULT_DATA
    from .jobs import DEFAULT_DETECTOR

    p.add_argument("--data", type=Path, default=DEFAULT_DATA, metavar="DIR",
                   help=f"recorded sessions (default {DEFAULT_DATA})")
    p.add_argument("--format", choices=("auto", "session", "study"), default="auto", dest="data_format",
                   help="dataset layout of --data: our MCAP sessions, the study's released per-trial folders, "
                        "or auto-detected (default auto)")
    p.add_argument("--profile", default="study", metavar="NAME",
                   help="profile whose settings are measured (default study)")
    p.add_argument("--method", "-m", action="append", dest="methods", metavar="NAME",
                   help=f"networks (default all: {', '.join(SPECS)})")
    p.add_argument("--subjects", nargs="+", metavar="ID", help="only these subjects (default: every subject in --data)")
    p.add_argument("--trials", nargs="+", metavar="TRIAL",
                   help="only these trial ids, e.g. illum100_P5 arc_P3 (default: every trial)")
    p.add_argument("--stride", type=int, default=5, metavar="N",
                   help="the oracle: every N-th frame (default 5; the runs with the networks use every frame)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR",
                   help=f"output folder (default {DEFAULT_OUT})")
    g = p.add_argument_group("with the networks (each setting through `run`, where weights are present)")
    g.add_argument("--network", choices=("auto", "on", "off"), default="auto",
                   help="auto: also run every setting with the networks whose weights are present; on: every named "
                        "network must have weights; off: the oracle only (default auto)")
    g.add_argument("--runs", type=Path, default=None, metavar="DIR",
                   help="where the per-setting runs go (default OUT/runs; re-running resumes)")
    g.add_argument("--models-dir", type=Path, default=None, metavar="DIR", help="ONNX models folder (default models/)")
    g.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda", "tensorrt"),
                   help="inference device (default auto)")
    g.add_argument("--batch", type=int, default=8, metavar="N", help="frames per inference batch (default 8)")
    g.add_argument("--detector", default=DEFAULT_DETECTOR, metavar="NAME",
                   help=f"face detector (default {DEFAULT_DETECTOR})")
    g.add_argument("--alpha", type=float, default=0.05, help="significance level of the report's tests (default 0.05)")
    g.add_argument("--min-subjects", type=int, default=3, metavar="N", help="fewest subjects for a test (default 3)")


def main(args: argparse.Namespace) -> int:
    """The command; Ctrl-C ends with how to resume (exit 130 from the CLI)."""
    import sys

    try:
        return _main(args)
    except KeyboardInterrupt:
        runs = args.runs or args.out / "runs"
        print(f"deviations interrupted: re-run the same command to resume; the finished per-setting runs under {runs} "
              "are kept (each resumes like `gaze4hri-bench run`), the ground-truth pass is quick to redo",
              file=sys.stderr, flush=True)
        raise


def _main(args: argparse.Namespace) -> int:
    import shlex
    import sys

    from ..data.reader import Dataset
    from ..methods import METHODS, get_entry
    from ..methods.plugins import user_method
    from ..profiles import get_profile
    from ..specs import SPECS
    from ..zoo.store import models_dir
    from . import deviations_real as R

    get_profile(args.profile)
    methods = []
    for m in args.methods or list(SPECS):
        e = get_entry(user_method(METHODS, m, models_dir(args.models_dir)))  # a spec file: registered here
        if e.kind != "onnx":
            raise Gaze4HRIError(f"{e.name} is a weight-free baseline: no pipeline setting applies to it", "--method",
                                f"name networks (default all: {', '.join(SPECS)})")
        methods.append(e.name)
    if args.stride < 1:
        raise Gaze4HRIError("--stride must be >= 1", "gaze4hri-bench deviations", "e.g. --stride 5")
    if not 0 < args.alpha < 1 or args.min_subjects < 2 or args.batch < 1:
        raise Gaze4HRIError(f"--alpha {args.alpha}, --min-subjects {args.min_subjects}, --batch {args.batch}: "
                            "out of range",
                            "gaze4hri-bench deviations", "alpha in (0, 1) e.g. 0.05, --min-subjects >= 2, --batch >= 1")
    if not args.data.is_dir():
        raise Gaze4HRIError(f"data folder {args.data} does not exist", "--data",
                            "pass a folder of recorded sessions, or create the demo data with `gaze4hri-bench demo`")
    present, missing = ({}, {}) if args.network == "off" else R.networks_present(methods, args.models_dir)
    if args.network == "on" and missing:
        raise next(iter(missing.values()))
    ds = Dataset(args.data, subjects=args.subjects, trials=args.trials, stride=1, format=args.data_format)
    trefs = [t for t in ds.trials() if getattr(t, "status", "done") in ("done", "incomplete")]
    if not trefs:
        raise Gaze4HRIError(f"no recorded trials under {args.data}", "--data", "check --subjects/--trials")
    bars = sys.stderr.isatty()
    truths = trial_truths(ds, trefs, progress=bars, log=lambda m: print(m, flush=True))
    tab = deviation_table(truths, methods, args.profile, stride=args.stride)
    origin = origin_table(truths)
    args.out.mkdir(parents=True, exist_ok=True)
    origin.to_csv(args.out / "origin.csv", index=False)
    command = "gaze4hri-bench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    tab.to_csv(args.out / "deviations.csv", index=False)
    tab.to_parquet(args.out / "deviations.parquet", index=False)
    _figure(tab, args.out / "deviations.png")
    print(summary(tab).to_string(index=False))
    net = sig = changes = None
    if args.network != "off" and not present:
        print(f"with the networks: skipped, no weights present for {', '.join(methods)} "
              f"(`gaze4hri-bench models` lists where to get them); the oracle table above stands alone")
    elif present:
        if missing:
            print(f"with the networks: {', '.join(present)} (no weights: {', '.join(missing)})")
        vs = R.variants(args.profile, list(present))
        runs = args.runs or args.out / "runs"
        folders = R.run_variants(vs, args.data, runs, models_dir=args.models_dir, device=args.device, batch=args.batch,
                                 detector=args.detector, subjects=args.subjects, trials=args.trials,
                                 data_format=args.data_format, log=lambda m: print(m, flush=True),
                                 progress=bars)
        net = pd.concat([R.frame_effects(folders["reference"], folders[v.label], v, present) for v in vs[1:]],
                        ignore_index=True)
        sig, changes = R.significance_changes(folders["reference"], folders, vs, args.alpha, args.min_subjects)
        net.to_csv(args.out / "network.csv", index=False)
        net.to_parquet(args.out / "network.parquet", index=False)
        sig.to_csv(args.out / "significance.csv", index=False)
        sig.to_parquet(args.out / "significance.parquet", index=False)
        changes.to_csv(args.out / "findings_changed.csv", index=False)
        print(network_summary(net, sig).to_string(index=False))
    (args.out / "deviations.md").write_text(_markdown(tab, command, args.profile, net, sig, changes, origin))
    extra = " and network.*, significance.*, findings_changed.csv" if net is not None else ""
    print(f"wrote {args.out}/deviations.{{md,csv,parquet,png}}" + extra)
    return 0
