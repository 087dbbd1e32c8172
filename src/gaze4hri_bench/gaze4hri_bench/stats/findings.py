"""The significant results of a report as one keyed table, and what differs between two
reports: ``gaze4hri-bench deviations`` asks whether a pipeline setting changes any
significant result (issue 10; the tests and Holm families of docs/statistics.md).

A finding is one row of an analysis table that carries a corrected p-value
(``p_holm``, or ``p_adj`` where the profile corrects otherwise): its key is the row's
identifying columns (method, level, condition, point, pair ...), its outcome whether
p < alpha and, where the table has a mean difference, the sign of that difference.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["findings", "changed_findings", "P_COLUMNS"]

#: corrected p-value columns, first present wins
P_COLUMNS = ("p_holm", "p_adj")
#: signed effect columns, first present wins (the direction of a significant result;
#: the conflict table's slope test is one-sided, its mean slope the direction)
_DIRECTION = ("mean_diff", "slope_mean")
#: identifying columns that hold numbers
_NUMERIC_KEYS = ("level", "row", "col", "level_a", "level_b", "point", "point_a", "point_b")
#: labels that are derived from other columns, not identity
_NOT_KEYS = ("significant", "better", "champion")


def _key_columns(df: pd.DataFrame) -> list[str]:
    keys = []
    for c in df.columns:
        if c.startswith("display") or c in _NOT_KEYS or c in P_COLUMNS:
            continue
        if c in _NUMERIC_KEYS or not pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]):
            keys.append(c)
    return keys


def findings(analyses, alpha: float) -> pd.DataFrame:
    """One row per tested row (finite corrected p) of every analysis table: analysis, table, key (``col=value;
    ...``), p, significant, direction (-1/0/+1 of the signed effect, 0 if none)."""
    rows = []
    for a in analyses:
        for name, df in (getattr(a, "tables", None) or {}).items():
            pcol = next((c for c in P_COLUMNS if c in df.columns), None)
            if pcol is None or df.empty:
                continue
            keys = _key_columns(df)
            dcol = next((c for c in _DIRECTION if c in df.columns and pd.api.types.is_numeric_dtype(df[c])), None)
            for d in df.to_dict("records"):
                p = float(d[pcol]) if d[pcol] is not None and np.isfinite(d[pcol]) else np.nan
                if not np.isfinite(p):  # no test ran for this row (too few subjects or pairs)
                    continue
                rows.append({"analysis": a.name, "table": name, "key": "; ".join(f"{k}={d[k]}" for k in keys),
                             "p": p, "significant": bool(p < alpha),
                             "direction": int(np.sign(d[dcol])) if dcol and np.isfinite(d[dcol]) else 0})
    return pd.DataFrame(rows, columns=["analysis", "table", "key", "p", "significant", "direction"])


def changed_findings(ref: pd.DataFrame, var: pd.DataFrame) -> pd.DataFrame:
    """Findings whose outcome differs: significant in one report only, or significant in
    both with opposite directions, or tested in one report only while significant there.
    Columns: analysis, table, key, change (e.g. ``significant -> not significant``),
    p_reference, p_variant."""
    m = ref.merge(var, on=["analysis", "table", "key"], how="outer", suffixes=("_ref", "_var"), indicator="where")
    out = []
    for r in m.itertuples(index=False):
        sr = bool(r.significant_ref) if r.where != "right_only" else None
        sv = bool(r.significant_var) if r.where != "left_only" else None
        if sr is None or sv is None:
            if sr or sv:
                change = "significant -> not tested" if sr else "not tested -> significant"
            else:
                continue
        elif sr != sv:
            change = "significant -> not significant" if sr else "not significant -> significant"
        elif sr and sv and r.direction_ref != r.direction_var:
            change = "significant, direction reversed"
        else:
            continue
        out.append({"analysis": r.analysis, "table": r.table, "key": r.key, "change": change,
                    "p_reference": r.p_ref, "p_variant": r.p_var})
    return pd.DataFrame(out, columns=["analysis", "table", "key", "change", "p_reference", "p_variant"])
