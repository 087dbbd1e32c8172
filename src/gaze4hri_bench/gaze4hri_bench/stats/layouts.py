"""The paper's table layouts built from our tidy tables, with the published values beside ours.

Sezer et al. (arXiv 2605.04770) print experiment 1 as a wide method x level table with
the CV (Table III), crop vs rectified per method (Table S9), efficiency (Table S10) and
the mean ground-truth gaze per target point (Table S11). Each builder returns a
:class:`Layout`: a text frame for Markdown/HTML in which our rows ("ours") alternate
with the paper's rows, labelled ``paper (Sezer et al., Table ...)``, and a paste-ready
LaTeX ``table*`` (booktabs) of our values in the paper's layout. Our cells read
``mean ± SD [95 % CI]`` over subjects (t-based); the LaTeX keeps the paper's ``mean ±
SD``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from . import paper
from .figures import is_baseline, t_ci
from .tables import to_latex

__all__ = ["Layout", "OURS", "table3", "table_s9", "table_s10", "table_s11", "mutual_grid", "gt_per_target", "cell"]

#: Label of our rows beside the paper's.
OURS = "ours"


@dataclass
class Layout:
    """A paper-layout table: the text frame (Markdown/HTML), its caption, row classes and LaTeX."""

    name: str
    frame: pd.DataFrame
    caption: str
    latex: str
    row_class: list[str] = field(default_factory=list)


def _n(x, nd: int = 2) -> str:
    return "" if x is None or not np.isfinite(float(x)) else f"{float(x):.{nd}f}"


def cell(mean, sd=None, n=None, lo=None, hi=None, ci: bool = True) -> str:
    """``mean ± SD [low, high]`` (95 % t CI from SD and n when no bounds are given)."""
    if mean is None or not np.isfinite(float(mean)):
        return ""
    s = _n(mean)
    if sd is not None and np.isfinite(float(sd)):
        s += f" ± {_n(sd)}"
    if ci:
        if lo is None and sd is not None and n is not None:
            lo, hi = (float(v) for v in t_ci(mean, sd, n))
        if lo is not None and np.isfinite(float(lo)) and np.isfinite(float(hi)):
            s += f" [{_n(lo)}, {_n(hi)}]"
    return s


def _drop_empty_paper(df: pd.DataFrame) -> pd.DataFrame:
    """Leave out published-value columns with no value (methods the paper does not have)."""
    empty = [c for c in df.columns if "paper (" in c and (df[c].astype(str) == "").all()]
    return df.drop(columns=empty)


def _latex(name: str, df: pd.DataFrame, caption: str, groups=None) -> str:
    return to_latex(df, caption, label=f"tab:{name}", wide=True, groups=groups, align="l" + "c" * (len(df.columns) - 1))


def _order(methods) -> list[str]:
    from ..specs import SPECS

    ms = list(dict.fromkeys(map(str, methods)))
    return [m for m in SPECS if m in ms] + [m for m in ms if m not in SPECS]


def table3(illum: pd.DataFrame, cv: pd.DataFrame) -> Layout | None:
    """Table III: method x illumination level, mean ± SD [95 % CI] (deg) and CV (%), paper rows beside ours."""
    if illum is None or illum.empty:
        return None
    levels = sorted({int(x) for x in illum["level"]})
    cvd = dict(zip(cv["method"].astype(str), cv["cv_percent"], strict=False)) if cv is not None else {}
    rows, tex, cls = [], [], []
    for m in _order(illum["method"]):
        g = illum[illum["method"].astype(str) == m].set_index("level")
        name = str(g["display"].iloc[0])
        r = {"Method": name, "Source": OURS}
        t = {"Method": name}
        for lv in levels:
            x = g.loc[lv] if lv in g.index else None
            r[f"{lv} %"] = "" if x is None else cell(x["mean"], x["sd"], x["n"], x.get("ci_low"), x.get("ci_high"))
            t[f"{lv} %"] = "" if x is None else cell(x["mean"], x["sd"], ci=False)
        r["CV (%)"] = t["CV (%)"] = _n(cvd.get(m))
        rows.append(r)
        tex.append(t)
        cls.append("ours")
        pub = paper.TABLE_III.get(m)
        if pub is not None:
            p = {"Method": name, "Source": paper.label("III")}
            for lv in levels:
                k = paper.TABLE_III_LEVELS.index(lv) if lv in paper.TABLE_III_LEVELS else None
                p[f"{lv} %"] = "" if k is None else f"{pub[0][k][0]:.2f} ± {pub[0][k][1]:.2f}"
            p["CV (%)"] = f"{pub[1]:.2f}"
            rows.append(p)
            cls.append("paper")
    n = int(illum["n"].max())
    cap = (
        "Table III layout (experiment 1): subject-level mean ± SD [95 % t CI] angular error (deg) per illumination "
        f"level, N = {n}; "
        f"CV (%) of the level means. Rows '{paper.label('III')}' are the published values, not ours."
    )
    tex_df = pd.DataFrame(tex)
    latex = _latex(
        "table3",
        tex_df,
        f"Mean angular error (deg, mean ± SD over N = {n} subjects) per illumination level and CV (%).",
        groups=[("", 1), ("Illumination level (%)", len(levels)), ("", 1)],
    )
    return Layout("table3", pd.DataFrame(rows), cap, latex, cls)


def table_s9(cr: pd.DataFrame) -> Layout | None:
    """Table S9: whole-dataset error, cropped vs rectified, per method; paper columns beside ours."""
    if cr is None or cr.empty:
        return None
    rows, tex = [], []
    for r in cr.itertuples():
        pub = paper.TABLE_S9.get(str(r.method))
        rows.append(
            {
                "Method": r.display,
                "Crop (ours)": cell(r.crop_mean, r.crop_sd, r.n),
                "Rectified (ours)": cell(r.rectified_mean, r.rectified_sd, r.n),
                "Better (ours)": r.better,
                f"Crop, {paper.label('S9')}": _n(pub[0]) if pub else "",
                f"Rectified, {paper.label('S9')}": _n(pub[1]) if pub else "",
            }
        )
        tex.append(
            {
                "Method": r.display,
                "Crop": cell(r.crop_mean, r.crop_sd, ci=False),
                "Rectified": cell(r.rectified_mean, r.rectified_sd, ci=False),
            }
        )
    n = int(cr["n"].min())
    cap = (
        "Table S9 layout: whole-dataset subject-level error (deg), mean ± SD [95 % t CI], cropped vs rectified input "
        f"(N = {n}); "
        f"'Better' from the Holm-corrected paired test. Columns '{paper.label('S9')}' are the published means."
    )
    latex = _latex(
        "table_s9",
        pd.DataFrame(tex),
        f"Whole-dataset mean angular error (deg, mean ± SD over N = {n} subjects), cropped vs rectified input.",
    )
    return Layout("table_s9", _drop_empty_paper(pd.DataFrame(rows)), cap, latex)


def table_s10(eff: pd.DataFrame) -> Layout | None:
    """Table S10: peak memory, network time per frame and FPS; baselines have no network (n/a), the
    pipeline's throughput (frames / wall time, decoding and face detection included) is its own column."""
    if eff is None or eff.empty:
        return None
    rows, tex = [], []
    for r in eff.itertuples():
        m = str(r.method)
        base = is_baseline(m) or str(r.input) == "none"
        ms = (
            float(r.infer_ms_per_frame)
            if r.infer_ms_per_frame is not None and np.isfinite(r.infer_ms_per_frame)
            else np.nan
        )
        net_ms = "n/a (no network)" if base else (_n(ms) if np.isfinite(ms) and ms > 0 else "n/a (not recorded)")
        net_fps = (
            "n/a (no network)" if base else (_n(1000.0 / ms, 1) if np.isfinite(ms) and ms > 0 else "n/a (not recorded)")
        )
        vram = (
            _n(r.peak_vram_mb, 1)
            if r.peak_vram_mb is not None and np.isfinite(r.peak_vram_mb)
            else ("n/a (CPU)" if str(r.device).startswith("cpu") else "n/a")
        )
        fam = paper.TABLE_S10.get(paper.S10_FAMILY.get(m, ""))
        rows.append(
            {
                "Method": r.display,
                "Input": r.input,
                "Device": r.device,
                "Network ms/frame": net_ms,
                "Network FPS": net_fps,
                "Pipeline FPS": _n(r.fps, 1),
                "Peak VRAM (MB)": vram,
                "Peak RSS (MB)": _n(r.peak_rss_mb, 0),
                f"VRAM (MB), {paper.label('S10')}": _n(fam[0]) if fam else "",
                f"ms/frame, {paper.label('S10')}": _n(fam[1]) if fam else "",
                f"FPS, {paper.label('S10')}": _n(fam[2], 1) if fam else "",
            }
        )
        tex.append(
            {"Method": r.display, "Device": r.device, "Peak VRAM (MB)": vram, "ms/frame": net_ms, "FPS": net_fps}
        )
    cap = (
        "Table S10 layout: network inference time per frame and its FPS (1000 / ms; n/a for weight-free baselines, "
        "which run no network), "
        "the pipeline's throughput (frames / wall time, decoding and face detection included) and peak memory, as "
        "recorded on this machine "
        f"(Device). Columns '{paper.label('S10')}' are the published RTX A4000 figures (1000 runs), not comparable "
        "across machines."
    )
    latex = _latex("table_s10", pd.DataFrame(tex), "Efficiency: peak VRAM, network time per frame and FPS.")
    return Layout("table_s10", _drop_empty_paper(pd.DataFrame(rows)), cap, latex)


def gt_per_target(paths: list[Path]) -> pd.DataFrame:
    """Mean ground-truth gaze pitch and yaw (deg) per target point across subjects (Table S11).

    Read from the first results file that has ``gt_pitch_deg`` and ``gt_yaw_deg``
    (the ground truth is the same for every method): frames of the fixed-camera
    illumination trials with finite ground truth -> subject mean per point -> mean and
    SD over subjects. Columns: target, n, pitch_mean, pitch_sd, yaw_mean, yaw_sd.
    """
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    cols = ["subject", "experiment", "target", "gt_pitch_deg", "gt_yaw_deg"]
    for p in paths:
        try:
            if not set(cols) <= set(pq.read_schema(p).names):
                continue
            t = pq.read_table(p, columns=cols, filters=[("experiment", "=", "illumination")])
        except (OSError, ValueError):
            continue
        t = t.filter(pc.and_(pc.is_finite(t["gt_pitch_deg"]), pc.is_finite(t["gt_yaw_deg"])))
        if t.num_rows == 0:
            continue
        g = t.group_by(["subject", "target"]).aggregate([("gt_pitch_deg", "mean"), ("gt_yaw_deg", "mean")]).to_pandas()
        g = g[g["target"].astype(str).str.fullmatch(r"P[1-9]")]
        out = (
            g.groupby("target")
            .agg(
                n=("subject", "nunique"),
                pitch_mean=("gt_pitch_deg_mean", "mean"),
                pitch_sd=("gt_pitch_deg_mean", "std"),
                yaw_mean=("gt_yaw_deg_mean", "mean"),
                yaw_sd=("gt_yaw_deg_mean", "std"),
            )
            .reset_index()
        )
        return out.sort_values("target", key=lambda s: s.str[1:].astype(int)).reset_index(drop=True)
    return pd.DataFrame(columns=["target", "n", "pitch_mean", "pitch_sd", "yaw_mean", "yaw_sd"])


def table_s11(gt: pd.DataFrame) -> Layout | None:
    """Table S11: mean ground-truth gaze (pitch, yaw) per target point; the paper's values beside ours."""
    if gt is None or gt.empty:
        return None
    from gaze4hri_core.protocol import P_GRID

    pos = {p: (row, col) for row, cols in P_GRID.items() for col, p in cols.items()}
    rows, tex = [], []
    for r in gt.itertuples():
        pub = paper.TABLE_S11.get(str(r.target))
        row, col = pos.get(str(r.target), ("", ""))
        rows.append(
            {
                "Point": r.target,
                "Row (from subject)": row,
                "Column (from camera)": col,
                "N": int(r.n),
                "Pitch (ours)": cell(r.pitch_mean, r.pitch_sd, r.n),
                "Yaw (ours)": cell(r.yaw_mean, r.yaw_sd, r.n),
                f"Pitch, {paper.label('S11')}": _n(pub[0]) if pub else "",
                f"Yaw, {paper.label('S11')}": _n(pub[1]) if pub else "",
            }
        )
        tex.append({"Point": r.target, "Pitch": _n(r.pitch_mean), "Yaw": _n(r.yaw_mean)})
    n = int(gt["n"].max())
    cap = (
        "Table S11 layout: mean ground-truth gaze pitch and yaw (deg) per target point, mean ± SD [95 % t CI] over N "
        f"= {n} subjects of each "
        "subject's mean over the fixed-camera illumination trials (camera frame, this project's pitch/yaw convention, "
        "docs/results_schema.md). "
        f"Columns '{paper.label('S11')}' are the published means."
    )
    latex = _latex(
        "table_s11", pd.DataFrame(tex), f"Mean ground-truth gaze (deg) per target point across N = {n} subjects."
    )
    return Layout("table_s11", _drop_empty_paper(pd.DataFrame(rows)), cap, latex)


def mutual_grid(mutual: pd.DataFrame) -> Layout | None:
    """Experiment 4.2 as a method x condition grid, mean ± SD [95 % CI] (deg)."""
    if mutual is None or mutual.empty:
        return None
    conds = list(dict.fromkeys(mutual["condition"].astype(str)))
    rows, tex = [], []
    for m in _order(mutual["method"]):
        g = mutual[mutual["method"].astype(str) == m]
        g = g.set_index(g["condition"].astype(str))
        r = {"Method": str(g["display"].iloc[0])}
        t = dict(r)
        for c in conds:
            x = g.loc[c] if c in g.index else None
            r[c] = "" if x is None else cell(x["mean"], x["sd"], x["n"], x.get("ci_low"), x.get("ci_high"))
            t[c] = "" if x is None else cell(x["mean"], x["sd"], ci=False)
        rows.append(r)
        tex.append(t)
    n = int(mutual["n"].max())
    cap = (
        f"Mutual gaze (experiment 4.2) per method and condition: subject-level mean ± SD [95 % t CI] (deg), N = {n}; "
        "h/v: horizontal/vertical scan, slow 0.05 m/s, fast 0.1 m/s."
    )
    latex = _latex(
        "mutual_grid",
        pd.DataFrame(tex),
        f"Mutual-gaze error (deg, mean ± SD over N = {n} subjects) per camera scan.",
        groups=[("", 1), ("Camera scan", len(conds))],
    )
    return Layout("mutual_grid", pd.DataFrame(rows), cap, latex)
