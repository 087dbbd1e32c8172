"""``gaze4hri-bench deviations``: how much each documented setting of a pipeline
profile moves the gaze a perfect network would report, on real trial geometry.

For every setting of the profile (default ``study``) alone on top of ``reference``,
and for the whole profile, every affected method and input type: each frame's truth
(motion-capture gaze, eye midpoint, face centre, head rotation, intrinsics) goes
through the oracle (methods.oracle: a perfect network in the method's own raw output
convention), decoded by the modified profile; the angle to the ``reference`` oracle's
answer (the truth) is the setting's effect. ``clip_shift`` moves the output to a later
frame (effect: the gaze change over the shift). Settings a perfect network is blind to
(colour, mean/std, crop rule, clip windows, face-box rules, rectification centre and
head axes under R^T) show 0 and say so: their effect needs real weights.

Writes ``deviations.csv``, ``deviations.parquet``, ``deviations.md`` and ``deviations.png``;
written into REPORT/deviations, ``analyze``'s report shows them as its "Pipeline
sensitivity" section (report_section).
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["add_arguments", "main", "deviation_table", "frame_geometries", "report_section", "DEFAULT_OUT", "REPORT_SUBDIR"]

DEFAULT_OUT = Path("out/deviations")
#: where ``analyze``'s report looks for this command's output: REPORT/deviations
REPORT_SUBDIR = "deviations"


def frame_geometries(ds, tref) -> tuple[list, pd.DataFrame]:
    """(FrameGeometry per valid frame, the matching ground-truth rows)."""
    from ..methods.oracle import FrameGeometry, face_box_from_geometry

    gt = ds.trial_ground_truth(tref)
    need = ["gt_x", "gt_y", "gt_z", "eye_cx", "eye_cy", "eye_cz", "face_cx", "face_cy", "face_cz"]
    if any(c not in gt.columns for c in need):
        raise Gaze4HRIError(f"ground truth of {tref.subject}/{tref.trial} lacks {need}", "deviations",
                            "update the data reader (data.groundtruth.GT_COLUMNS)")
    intr = ds.camera_info(tref) if callable(getattr(ds, "camera_info", None)) else tref.calibration.intrinsics
    K = np.asarray(intr.K, float)
    size = (int(intr.width), int(intr.height))
    rows = gt[gt["valid"].astype(bool)].reset_index(drop=True)
    R = rows[[f"R_head_{i}{j}" for i in range(3) for j in range(3)]].to_numpy(float).reshape(-1, 3, 3)
    g = rows[["gt_x", "gt_y", "gt_z"]].to_numpy(float)
    e = rows[["eye_cx", "eye_cy", "eye_cz"]].to_numpy(float)
    c = rows[["face_cx", "face_cy", "face_cz"]].to_numpy(float)
    geos = [FrameGeometry(K, size, e[i], c[i], R[i], g[i], face_box_from_geometry(K, c[i], shape=(size[1], size[0])))
            for i in range(len(rows))]
    return geos, rows


def _sequence(m, geos, frames, sel, it) -> np.ndarray:
    """The oracle outputs a run would report for frames ``sel`` (indices into geos):
    with the record's temporal smoothing (over the neighbouring frames) and clip shift
    (frame f shows the output for frame f - shift)."""
    from ..methods.clips import smooth_sequence
    from ..methods.oracle import oracle_vector

    pos = {int(f): i for i, f in enumerate(frames)}
    st = m.settings
    cache: dict[int, np.ndarray] = {}

    def at(j):
        if j not in cache:
            cache[j] = oracle_vector(m, geos[j], it)
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
    return np.asarray(out, float)


def _variants(profile_name: str):
    """(label, setting or None, per-method records): each setting alone, then all."""
    from ..profiles import get_profile, make_profile

    prof = get_profile(profile_name)
    out = [(s.name, s, make_profile(f"{profile_name}:{s.name}", "", (s,))) for s in prof.settings]
    out.append((f"{profile_name} (all)", None, prof))
    return out


def deviation_table(ds, trefs, methods: list[str], profile: str = "study", inputs=("crop", "rectified"),
                    stride: int = 1, log=print) -> pd.DataFrame:
    """Per (setting, method, input, experiment): frames, median and 95th percentile of
    the angular effect (deg: the variant's output vs ``reference``'s, both with the
    oracle), and whether a perfect network sees the setting. ``ds`` is read at full
    rate (a shift or smoothing is in frames); every ``stride``-th valid frame is
    evaluated."""
    from gaze4hri_core.gaze import angular_error_deg
    from gaze4hri_core.protocol import trial_by_id

    from ..methods.network import OnnxMethod
    from ..profiles import get_profile
    from ..specs import get_spec

    variants = _variants(profile)
    recs = []
    for t in trefs:
        geos, rows = frame_geometries(ds, t)
        if not geos:
            continue
        try:
            exp = trial_by_id(t.trial).experiment
        except KeyError:
            exp = "unknown"
        frames = rows["frame"].to_numpy(np.int64)
        sel = np.arange(0, len(geos), stride)
        ref = {(name, it): _sequence(OnnxMethod(name, get_spec(name), get_profile("reference")), geos, frames, sel, it)
               for name in methods for it in inputs}
        for label, setting, prof in variants:
            for name in methods:
                if setting is not None and setting.methods != ("*",) and name not in setting.methods:
                    continue
                m = OnnxMethod(name, get_spec(name), prof)
                for it in inputs:
                    v = _sequence(m, geos, frames, sel, it)
                    eff = np.asarray(angular_error_deg(v, ref[(name, it)]), float)
                    eff = eff[np.isfinite(eff)]
                    recs.append({"setting": label, "field": setting.field if setting else "(all)",
                                 "verdict": setting.verdict if setting else "", "method": name, "input": it,
                                 "experiment": exp, "subject": t.subject, "trial": t.trial, "effects": eff})
        log(f"{t.subject}/{t.trial}: {len(sel)} frame(s)")
    if not recs:
        raise Gaze4HRIError("no valid frames in the selected trials", "--data", "check --subjects/--trials")
    df = pd.DataFrame(recs)
    out = []
    for key, grp in df.groupby(["setting", "field", "verdict", "method", "input", "experiment"], sort=False):
        eff = np.concatenate(list(grp["effects"]))
        out.append(dict(zip(["setting", "field", "verdict", "method", "input", "experiment"], key, strict=True),
                        frames=int(eff.size), median_deg=float(np.median(eff)) if eff.size else np.nan,
                        p95_deg=float(np.percentile(eff, 95)) if eff.size else np.nan,
                        max_deg=float(np.max(eff)) if eff.size else np.nan))
    tab = pd.DataFrame(out)
    tab["oracle_sees"] = tab.groupby(["setting"])["max_deg"].transform(lambda x: bool((x.fillna(0) > 1e-3).any()))
    return tab


def _summary(tab: pd.DataFrame) -> pd.DataFrame:
    """One row per setting: methods affected and the effect over all experiments."""
    rows = []
    for s, g in tab.groupby("setting", sort=False):
        seen = g[g["max_deg"] > 1e-3]
        rows.append({"setting": s, "verdict": g["verdict"].iloc[0], "methods": ", ".join(sorted(set(g["method"]))),
                     "methods affected (oracle)": ", ".join(sorted(set(seen["method"]))) or "none (perfect network blind)",
                     "median_deg (max over rows)": round(float(g["median_deg"].max()), 3),
                     "p95_deg (max over rows)": round(float(g["p95_deg"].max()), 3)})
    return pd.DataFrame(rows)


def _markdown(tab: pd.DataFrame, command: str, profile: str) -> str:
    summ = _summary(tab)
    lines = ["## Pipeline sensitivity", "",
             f"Each documented setting of profile `{profile}` alone on top of `reference`, with the oracle (a "
             "perfect network); effect = angle between the gaze it then reports and what `reference` reports (the "
             "truth, except MCGaze's official smoothing), over valid frames. "
             "Settings a perfect network cannot see (image appearance, crop and face-box rules, clip windows) show 0: "
             "their effect needs real weights. Whether a setting changes a significant result of the report is not "
             "computed here.", "", f"Command: `{command}`", "",
             "| setting | verdict | methods affected (oracle) | median deg (worst row) | p95 deg (worst row) |",
             "|---|---|---|---|---|"]
    for r in summ.itertuples(index=False):
        lines.append(f"| `{r[0]}` | {r[1] or '-'} | {r[3]} | {r[4]:.3f} | {r[5]:.3f} |")
    lines += ["", "Per experiment (median / p95 deg, both input types, methods the setting applies to):", "",
              "| setting | input | " + " | ".join(sorted(tab["experiment"].unique())) + " |",
              "|---|---|" + "---|" * tab["experiment"].nunique()]
    for (s, it), g in tab.groupby(["setting", "input"], sort=False):
        cells = []
        for e in sorted(tab["experiment"].unique()):
            ge = g[g["experiment"] == e]
            cells.append(f"{ge['median_deg'].max():.2f} / {ge['p95_deg'].max():.2f}" if len(ge) else "-")
        lines.append(f"| `{s}` | {it} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def report_section(report_dir: Path) -> tuple[str, pd.DataFrame, Path | None] | None:
    """(intro, one row per setting, figure or None) for the report's "Pipeline
    sensitivity" section, from ``<report_dir>/deviations/deviations.parquet`` (what
    ``gaze4hri-bench deviations --out REPORT/deviations`` writes); None when absent."""
    d = Path(report_dir) / REPORT_SUBDIR
    f = d / "deviations.parquet"
    if not f.is_file():
        return None
    try:
        tab = pd.read_parquet(f)
    except (OSError, ValueError):
        return None
    need = {"setting", "verdict", "method", "input", "experiment", "median_deg", "p95_deg", "max_deg"}
    if tab.empty or not need <= set(tab.columns):
        return None
    summ = _summary(tab).drop(columns=["methods"])
    intro = ("Each documented setting of the study profile alone on top of `reference`, measured with the oracle (a perfect "
             "network in each method's raw output convention, on these sessions' per-frame geometry): the angle between "
             "the gaze it then reports and what `reference` reports, worst method and experiment. Settings a perfect "
             "network cannot see (image appearance, crop and face-box rules, clip windows) show 0: their effect needs real "
             "weights, and whether a setting changes a significant result is not computed here. Per experiment and input: "
             f"`{REPORT_SUBDIR}/deviations.md`.")
    png = d / "deviations.png"
    return intro, summ, (png if png.is_file() else None)


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

    p.add_argument("--data", type=Path, default=DEFAULT_DATA, metavar="DIR", help=f"recorded sessions (default {DEFAULT_DATA})")
    p.add_argument("--format", choices=("auto", "session", "study"), default="auto", dest="data_format",
                   help="dataset layout of --data: our MCAP sessions, the study's released per-trial folders, or auto-detected (default auto)")
    p.add_argument("--profile", default="study", metavar="NAME", help="profile whose settings are measured (default study)")
    p.add_argument("--method", "-m", action="append", dest="methods", metavar="NAME",
                   help=f"networks (default all: {', '.join(SPECS)})")
    p.add_argument("--subjects", nargs="+", metavar="ID", help="only these subjects (default: every subject in --data)")
    p.add_argument("--trials", nargs="+", metavar="TRIAL", help="only these trial ids, e.g. illum100_P5 arc_P3 (default: every trial)")
    p.add_argument("--stride", type=int, default=5, metavar="N", help="every N-th frame (default 5)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="DIR", help=f"output folder (default {DEFAULT_OUT})")


def main(args: argparse.Namespace) -> int:
    import shlex
    import sys

    from ..data.reader import Dataset
    from ..profiles import get_profile
    from ..specs import SPECS, get_spec

    get_profile(args.profile)
    methods = [get_spec(m).name for m in (args.methods or list(SPECS))]
    if args.stride < 1:
        raise Gaze4HRIError("--stride must be >= 1", "gaze4hri-bench deviations", "e.g. --stride 5")
    if not args.data.is_dir():
        raise Gaze4HRIError(f"data folder {args.data} does not exist", "--data",
                            "pass a folder of recorded sessions, or create the demo data with `gaze4hri-bench demo`")
    ds = Dataset(args.data, subjects=args.subjects, trials=args.trials, stride=1, format=args.data_format)
    trefs = [t for t in ds.trials() if getattr(t, "status", "done") in ("done", "incomplete")]
    if not trefs:
        raise Gaze4HRIError(f"no recorded trials under {args.data}", "--data", "check --subjects/--trials")
    tab = deviation_table(ds, trefs, methods, args.profile, stride=args.stride)
    args.out.mkdir(parents=True, exist_ok=True)
    command = "gaze4hri-bench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
    tab.to_csv(args.out / "deviations.csv", index=False)
    tab.to_parquet(args.out / "deviations.parquet", index=False)
    (args.out / "deviations.md").write_text(_markdown(tab, command, args.profile))
    _figure(tab, args.out / "deviations.png")
    print(_summary(tab).to_string(index=False))
    print(f"wrote {args.out}/deviations.{{md,csv,parquet,png}}")
    return 0

