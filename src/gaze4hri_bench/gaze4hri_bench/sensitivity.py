"""The pipeline-sensitivity tables that ``gaze4hri-bench deviations`` writes, summarised
per setting (oracle and networks) and read back for the analysis report's "Pipeline
sensitivity" section. Below both the statistics (stats.report reads the section) and
the pipeline (pipeline.deviations writes the tables): plain pandas, no analysis, no run."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["REPORT_SUBDIR", "summary", "network_summary", "report_section"]

REPORT_SUBDIR = "deviations"  # <report>/deviations: where `deviations --out` puts its tables for the report


def summary(tab: pd.DataFrame) -> pd.DataFrame:
    """One row per setting: methods affected and the effect over all experiments."""
    rows = []
    for s, g in tab.groupby("setting", sort=False):
        seen = g[(g["max_deg"] > 1e-3) | (g["not_scored"] > 0 if "not_scored" in g.columns else False)]
        rows.append({"setting": s, "verdict": g["verdict"].iloc[0], "methods": ", ".join(sorted(set(g["method"]))),
                     "methods affected (oracle)": (", ".join(sorted(set(seen["method"])))
                                                   or "none (perfect network blind)"),
                     "median_deg (max over rows)": round(float(g["median_deg"].max()), 3),
                     "p95_deg (max over rows)": round(float(g["p95_deg"].max()), 3),
                     "frames not scored % (max over rows)": round(float(g["not_scored_pct"].max()), 2)
                     if "not_scored_pct" in g.columns else 0.0})
    return pd.DataFrame(rows)


def network_summary(net: pd.DataFrame, sig: pd.DataFrame | None) -> pd.DataFrame:
    """One row per setting of the runs with the networks: methods, worst median / p95 of
    the prediction change, worst mean error change, significant results changed."""
    rows = []
    for s, g in net.groupby("setting", sort=False):
        e = g["error_change_deg"].abs()
        worst = g.loc[e.idxmax(), "error_change_deg"] if e.notna().any() else np.nan
        rows.append({"setting": s, "networks": ", ".join(sorted(set(g["method"] + " (" + g["network"] + ")"))),
                     "median_deg (max over rows)": round(float(g["median_deg"].max()), 3),
                     "p95_deg (max over rows)": round(float(g["p95_deg"].max()), 3),
                     "error change deg (largest)": round(float(worst), 3)})
    out = pd.DataFrame(rows)
    if sig is not None and len(sig) and len(out):
        lab = sig.set_index("setting").apply(
            lambda r: r["note"] if r["note"] else f"{int(r['changed'])} of {int(r['tested'])}", axis=1)
        out["significant results changed"] = out["setting"].map(lab).fillna("-")
    return out


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
    summ = summary(tab).drop(columns=["methods"])
    net = _read_optional(d / "network.parquet")
    sig = _read_optional(d / "significance.parquet")
    intro = ("Each documented setting of the study profile alone on top of `reference`, measured with the oracle "
             "(a perfect network in each method's raw output convention, on these sessions' per-frame geometry): "
             "the angle between "
             "the gaze it then reports and what `reference` reports, worst method and experiment. Settings a perfect "
             "network cannot see (image appearance, crop and face-box rules, clip windows) show 0 there. ")
    if net is not None and len(net):
        ns = network_summary(net, sig).rename(columns={
            "median_deg (max over rows)": "network median deg", "p95_deg (max over rows)": "network p95 deg",
            "error change deg (largest)": "error change deg"})
        summ = summ.merge(ns, on="setting", how="outer", sort=False)
        intro += ("The network columns run each setting through the whole pipeline with the networks named there "
                  "(random weights are not gaze estimators: input sensitivity only), with the change in mean error "
                  "and how many of this report's tested results change outcome. ")
    else:
        intro += ("No run with network weights: their effect, and whether a setting changes a significant result, "
                  "is not measured. ")
    intro += f"Per experiment and input: `{REPORT_SUBDIR}/deviations.md`."
    png = d / "deviations.png"
    return intro, summ, (png if png.is_file() else None)


def _read_optional(f: Path) -> pd.DataFrame | None:
    try:
        return pd.read_parquet(f) if f.is_file() else None
    except (OSError, ValueError):
        return None
