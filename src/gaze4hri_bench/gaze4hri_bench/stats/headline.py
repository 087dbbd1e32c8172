"""The headline results of a report, printed at the end of ``gaze4hri-bench analyze``
(as lm-evaluation-harness prints its results table after every run): per experiment and
condition the best network (lowest subject-level mean error; a weight-free baseline is
never "best" unless there is nothing else), its error with the 95 % t CI and N, and what
is significant after Holm (or the profile's correction in experiment 2).

Read back from the written ``tables/*.csv`` only, so it shows exactly what the report
holds; a table that is absent (analysis skipped) gives no row.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pandas as pd

from .figures import t_ci

__all__ = ["headline", "render"]

COLUMNS = ["experiment", "condition", "best", "mean", "ci_low", "ci_high", "n", "significant"]


def _read(tdir: Path, name: str) -> pd.DataFrame | None:
    p = tdir / f"{name}.csv"
    if not p.is_file():
        return None
    df = pd.read_csv(p)
    return df if len(df) else None


def _nets(df: pd.DataFrame, col: str = "method") -> pd.DataFrame:
    from .figures import is_baseline

    b = df[col].astype(str).map(is_baseline).to_numpy(bool)
    return df if b.all() else df[~b]


def _name(df: pd.DataFrame, row, col: str = "method") -> str:
    d = "display" if col == "method" else col.replace("method", "display")
    return str(row[d]) if d in df.columns and isinstance(row[d], str) else str(row[col])


def _wins(pairs: pd.DataFrame | None, best: str, alpha: float, sel=None) -> str:
    """'better than k of K (Holm)' for ``best`` in a method-pair table (method_a/method_b, mean_diff = a - b)."""
    if pairs is None:
        return ""
    p = pairs if sel is None else pairs[sel(pairs)]
    p = p[(p["method_a"].astype(str) == best) | (p["method_b"].astype(str) == best)]
    if not len(p):
        return ""
    if not np.isfinite(p["p_holm"]).any():
        return "not tested (too few subjects)"
    sign = np.where(p["method_a"].astype(str) == best, -1.0, 1.0)  # > 0: best lower
    won = int(((p["p_holm"] < alpha) & (sign * p["mean_diff"] > 0)).sum())
    return f"lower than {won} of {len(p)} others (Holm)"


def _row(experiment: str, condition: str, g: pd.DataFrame, b: pd.Series, significant: str, ci=None) -> dict:
    """One headline row for the best method ``b`` of table ``g`` (its own CI columns unless ``ci``)."""
    lo, hi = ci if ci is not None else (b["ci_low"], b["ci_high"])
    return {
        "experiment": experiment,
        "condition": condition,
        "best": _name(g, b),
        "mean": b["mean"],
        "ci_low": lo,
        "ci_high": hi,
        "n": int(b["n"]),
        "significant": significant,
    }


def headline(tables: Path, alpha: float = 0.05) -> pd.DataFrame:
    """The headline rows from a report's ``tables/`` folder: experiment, condition, best
    (display name), mean, ci_low, ci_high, n, significant (text)."""
    tdir = Path(tables)
    rows: list[dict] = []
    ill = _read(tdir, "illumination")
    if ill is not None:
        pw = _read(tdir, "illumination_pairwise")
        for lv, g in _nets(ill).groupby("level", sort=True):
            b = g.loc[g["mean"].idxmin()]
            sig = _wins(pw, str(b["method"]), alpha, lambda d, lv=lv: d["level"] == lv)
            rows.append(_row("1 illumination", f"{lv} %", g, b, sig))
    vd, vp = _read(tdir, "viewpoint_descriptives"), _read(tdir, "viewpoint")
    if vd is not None:
        for setting in ("fixed", "arc"):
            g = _nets(vd[vd["setting"] == setting])
            if not len(g):
                continue
            b = g.loc[g["mean"].idxmin()]
            sig = ""
            if vp is not None and setting == "arc":
                pcol = "p_adj" if "p_adj" in vp.columns else "p_holm"
                tested = vp[np.isfinite(vp[pcol])]
                if len(tested):
                    worse = tested[(tested[pcol] < alpha) & (tested["mean_diff"] > 0)]
                    better = tested[(tested[pcol] < alpha) & (tested["mean_diff"] < 0)]
                    corr = str(vp["correction"].iloc[0]) if "correction" in vp.columns else "holm"
                    how = "Holm" if corr == "holm" else "uncorrected"
                    sig = f"arc worse for {len(worse)}, better for {len(better)} of {len(tested)} methods ({how})"
                else:
                    sig = "not tested (too few subjects)"
            rows.append(_row("2 viewpoint", setting, g, b, sig))
    cf = _read(tdir, "conflict")
    if cf is not None:
        g = _nets(cf)
        b = g.loc[g["mean"].idxmin()]
        lo, hi = t_ci(b["mean"], b["sd"], b["n"])  # the conflict table has no CI columns
        tested = cf[np.isfinite(cf["p_holm"])]
        sig = (
            f"slope > 0 for {int((tested['p_holm'] < alpha).sum())} of {len(tested)} methods (Holm)"
            if len(tested)
            else "not tested (too few subjects)"
        )
        rows.append(_row("3 conflict", "left, center, right", g, b, sig, ci=(float(lo), float(hi))))
    tg = _read(tdir, "target")
    if tg is not None:
        g = _nets(tg)
        whole = g.groupby("method", sort=False)["mean"].mean()
        m = str(whole.idxmin())
        ch = _read(tdir, "target_champion")
        if ch is not None:
            champs = ch[ch["decisive"].astype(str).str.lower() == "true"]
            sig = f"champion at {len(champs)} of {len(ch)} points" + (
                ": " + ", ".join(f"{r.target} {r.champion_display}" for r in champs.itertuples()) if len(champs) else ""
            )
        else:
            sig = ""
        rows.append(
            {
                "experiment": "4.1 target",
                "condition": "mean of the 9 points",
                "best": _name(g, g[g["method"].astype(str) == m].iloc[0]),
                "mean": float(whole.min()),
                "ci_low": np.nan,
                "ci_high": np.nan,
                "n": int(g["n"].max()),
                "significant": sig,
            }
        )
    mu = _read(tdir, "mutual")
    if mu is not None:
        mp = _read(tdir, "mutual_method_pairs")
        for cond, g in _nets(mu).groupby("condition", sort=False):
            b = g.loc[g["mean"].idxmin()]
            sig = _wins(mp, str(b["method"]), alpha, lambda d, c=cond: d["pool"] == c)
            rows.append(_row("4.2 mutual gaze", str(cond), g, b, sig))
    return pd.DataFrame(rows, columns=COLUMNS)


def render(df: pd.DataFrame, title: str = "Headline results", width: int = 140) -> str:
    """The headline table as console text (rich), widths fixed so that captured output does not wrap."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=title, title_justify="left")
    for c, just in (
        ("Experiment", "left"),
        ("Condition", "left"),
        ("Best method", "left"),
        ("Error (deg)", "right"),
        ("95 % CI", "right"),
        ("N", "right"),
        ("Significant after correction", "left"),
    ):
        t.add_column(c, justify=just)
    for r in df.itertuples(index=False):
        ci = f"[{r.ci_low:.2f}, {r.ci_high:.2f}]" if np.isfinite(r.ci_low) and np.isfinite(r.ci_high) else ""
        t.add_row(
            str(r.experiment),
            str(r.condition),
            str(r.best),
            f"{r.mean:.2f}",
            ci,
            str(int(r.n)) if np.isfinite(r.n) else "",
            str(r.significant),
        )
    buf = io.StringIO()
    Console(width=width, file=buf, color_system=None).print(t)
    return buf.getvalue()
