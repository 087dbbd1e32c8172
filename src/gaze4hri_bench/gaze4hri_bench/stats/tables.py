"""One renderer for every table: tidy DataFrame -> formatted text -> Markdown, LaTeX
(booktabs) or HTML. CSV files keep full precision; the rendered forms round for
reading (means, SDs, slopes, t and d to 2 decimals; p to 3 significant digits).
"""

from __future__ import annotations

import html
import math
import re

import numpy as np
import pandas as pd

__all__ = ["format_frame", "to_markdown", "to_latex", "to_html", "HEADERS"]

#: Column -> header shown in rendered tables (CSV keeps the column names).
HEADERS = {
    "display": "Method",
    "display_a": "Method A",
    "display_b": "Method B",
    "method": "method id",
    "level": "Level (%)",
    "mean": "Mean",
    "sd": "SD",
    "n": "N",
    "cv_percent": "CV (%)",
    "n_levels": "Levels",
    "mean_a": "Mean A",
    "mean_b": "Mean B",
    "mean_diff": "Diff.",
    "t": "t",
    "dof": "df",
    "p_unc": "p",
    "p": "p",
    "p_holm": "p (Holm)",
    "cohen_dz": "d_z",
    "cohen_dav": "d_av",
    "significant": "Sig.",
    "fixed_mean": "Fixed mean",
    "fixed_sd": "Fixed SD",
    "arc_mean": "Arc mean",
    "arc_sd": "Arc SD",
    "slope_mean": "Slope mean",
    "slope_sd": "Slope SD",
    "pct_positive": "% slope > 0",
    "target": "Point",
    "row": "Row",
    "column": "Column",
    "best_display": "Best method",
    "best_mean": "Best mean",
    "factor": "Factor",
    "a": "A",
    "b": "B",
    "condition": "Condition",
    "condition_a": "Cond. A",
    "condition_b": "Cond. B",
    "intercept_mean": "Intercept",
    "b_pitch_mean": "b_pitch mean",
    "b_pitch_sd": "b_pitch SD",
    "b_yaw_mean": "b_yaw mean",
    "b_yaw_sd": "b_yaw SD",
    "crop_mean": "Crop mean",
    "crop_sd": "Crop SD",
    "rectified_mean": "Rect. mean",
    "rectified_sd": "Rect. SD",
    "better": "Better",
    "input": "Input",
    "available": "Inputs",
    "rule": "Rule",
    "whole_mean": "Whole-dataset mean",
    "subjects": "Subjects",
    "videos": "Videos",
    "frames": "Frames",
    "valid_frames": "Valid frames",
    "valid_pct": "Valid (%)",
    "device": "Device",
    "batch": "Batch",
    "infer_ms_per_frame": "ms/frame",
    "fps": "FPS",
    "peak_vram_mb": "Peak VRAM (MB)",
    "peak_rss_mb": "Peak RSS (MB)",
    "subject": "Subject",
    "reason": "Reason",
    "pool": "Pool",
    "tier": "Tier",
    "group": "Group",
    "points": "Points",
    "se": "SE",
    "setting": "Setting",
    "conditions": "Conditions",
    "n_fixed": "N fixed",
    "n_arc": "N arc",
    "n_valid": "Valid frames",
    "error_mean": "Mean error",
    "conflict": "Conflict",
    "n_points_won": "Points won",
    "points_won": "Won",
    "n_points_tied_topmean": "Lowest, no champion",
    "points_tied_topmean": "Lowest at",
    "weights": "Weights",
    "detector": "Detector",
    "data": "Data",
    "profile": "Pipeline profile",
    "coef": "Coefficient",
    "estimate": "Pooled slope",
    "z": "z",
    "prop_pos": "Share > 0",
    "ci": "95 % CI",
    "slope_ci": "Slope 95 % CI",
    "fixed_ci": "Fixed 95 % CI",
    "arc_ci": "Arc 95 % CI",
    "crop_ci": "Crop 95 % CI",
    "rectified_ci": "Rect. 95 % CI",
    "b_pitch_ci": "b_pitch 95 % CI",
    "b_yaw_ci": "b_yaw 95 % CI",
}
_INT = {
    "n",
    "dof",
    "tier",
    "n_fixed",
    "n_arc",
    "n_valid",
    "n_points_won",
    "n_points_tied_topmean",
    "n_levels",
    "subjects",
    "videos",
    "frames",
    "valid_frames",
    "batch",
    "level",
    "n_videos",
    "n_frames",
}


def _fmt_p(x: float) -> str:
    if not np.isfinite(x):
        return ""
    if x < 0.001:
        return "< .001"
    return f"{x:.3f}"


def _fmt(col: str, x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return ""
    if isinstance(x, (bool, np.bool_)):
        return "*" if x else ""
    if col in ("p", "p_unc", "p_holm"):
        return _fmt_p(float(x))
    if isinstance(x, (int, np.integer)) or (
        col in _INT and isinstance(x, (float, np.floating)) and float(x).is_integer()
    ):
        return f"{int(x)}"
    if isinstance(x, (float, np.floating)):
        return f"{x:.2f}"
    return str(x)


def _ci_pairs(cols: list[str]) -> dict[str, str]:
    """``<prefix>ci_low`` -> ``<prefix>ci_high`` for every CI pair present."""
    return {
        c: c[: -len("ci_low")] + "ci_high"
        for c in cols
        if c.endswith("ci_low") and c[: -len("ci_low")] + "ci_high" in cols
    }


def _ci_cell(lo, hi) -> str:
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return ""
    return f"[{lo:.2f}, {hi:.2f}]"


def _cells(df: pd.DataFrame) -> tuple[list[str], list[list[str]], list[bool]]:
    """Headers, formatted rows and right-alignment flags (plain lists: cheap for many small tables).

    ``method`` ids (and ``file``) are left out when a ``display`` name is present; a
    ``ci_low``/``ci_high`` pair (any prefix) is shown as one "95 % CI" cell ``[low, high]``.
    """
    cols = [
        c
        for c in df.columns
        if not (
            c in ("method", "method_a", "method_b", "file") and any(d in df.columns for d in ("display", "display_a"))
        )
    ]
    pairs = _ci_pairs(cols)
    cols = [c for c in cols if c not in set(pairs.values())]
    values = [
        [_ci_cell(lo, hi) for lo, hi in zip(df[c].tolist(), df[pairs[c]].tolist(), strict=True)]
        if c in pairs
        else [_fmt(c, x) for x in df[c].tolist()]
        for c in cols
    ]
    rows = [list(r) for r in zip(*values, strict=True)] if cols else []
    num = [pd.api.types.is_numeric_dtype(df[c]) and df[c].dtype != bool and c not in pairs for c in cols]
    return (
        [HEADERS.get(c, c) if c not in pairs else (HEADERS.get(c[: -len("ci_low")] + "ci", "95 % CI")) for c in cols],
        rows,
        num,
    )


def format_frame(df: pd.DataFrame) -> pd.DataFrame:
    """The table as rendered: display headers, rounded strings (see module docstring)."""
    head, rows, _ = _cells(df)
    return pd.DataFrame(rows, columns=head, dtype=object)


def to_markdown(df: pd.DataFrame, caption: str | None = None) -> str:
    """GitHub-flavoured Markdown table (numeric columns right-aligned)."""
    head, rows, num = _cells(df)
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---:" if n else "---" for n in num) + "|"]
    lines += ["| " + " | ".join(s.replace("|", "\\|") for s in row) + " |" for row in rows]
    return (f"*{caption}*\n\n" if caption else "") + "\n".join(lines) + "\n"


_TEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\^{}",
}


def _tex(s: str) -> str:
    s = "".join(_TEX.get(ch, ch) for ch in s)
    return s.replace("< .001", "$<$ .001").replace("±", r"$\pm$")


def to_latex(
    df: pd.DataFrame,
    caption: str | None = None,
    label: str | None = None,
    *,
    wide: bool = False,
    groups: list[tuple[str, int]] | None = None,
    align: str | None = None,
) -> str:
    """LaTeX tabular with booktabs rules (\\toprule, \\midrule, \\bottomrule), paste-ready.

    ``wide``: a ``table*`` spanning both columns of a two-column paper (as the study's
    Table III). ``groups``: a header row above the column names, (label, span) from left
    to right with \\cmidrule under each labelled group (e.g. ``[("", 1), ("Illumination
    level (%)", 4), ("", 1)]``). ``align``: column spec overriding the default (l for
    text, r for numbers).
    """
    head, rows, num = _cells(df)
    spec = align or "".join("r" if n else "l" for n in num)
    env = "table*" if wide else "table"
    lines = [r"% needs \usepackage{booktabs}", r"\begin{" + env + "}[t]", r"\centering"]
    if caption:
        lines.append(r"\caption{" + _tex(caption) + "}")
    if label:
        lines.append(r"\label{" + label + "}")
    lines += [r"\begin{tabular}{" + spec + "}", r"\toprule"]
    if groups:
        cells, rules, col = [], [], 1
        for lab, span in groups:
            cells.append(r"\multicolumn{" + str(span) + "}{c}{" + _tex(lab) + "}" if lab and span > 1 else _tex(lab))
            if lab:
                rules.append(r"\cmidrule(lr){" + f"{col}-{col + span - 1}" + "}")
            col += span
        lines += [" & ".join(cells) + r" \\", " ".join(rules)]
    lines += [" & ".join(_tex(c) for c in head) + r" \\", r"\midrule"]
    lines += [" & ".join(_tex(s) for s in row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{" + env + "}"]
    return "\n".join(lines) + "\n"


_NBSP = "\u00a0"


def _keep_together(s: str) -> str:
    """``12.90 ± 3.38 [10.75, 15.04]`` may break only before the CI: no break around ± or inside [..];
    short cells do not break at all."""
    if len(s) <= 16:  # short labels ("PureGaze (E)", "h_slow") stay on one line
        return s.replace(" ", _NBSP)
    if "±" not in s and "[" not in s:
        return s
    s = s.replace(" ± ", f"{_NBSP}±{_NBSP}")
    return re.sub(r"\[([^\]]*)\]", lambda m: "[" + m.group(1).replace(" ", _NBSP) + "]", s)


def _td_class(s: str, numeric: bool) -> str:
    """``num`` right-aligns; ``wrap`` lets a cell with a long unbroken token (hash, path) break anywhere."""
    cls = ["num"] if numeric else []
    if any(len(tok) > 24 for tok in s.split()):
        cls.append("wrap")
    return " ".join(cls)


def to_html(
    df: pd.DataFrame, caption: str | None = None, *, table_id: str | None = None, row_class: list[str] | None = None
) -> str:
    """HTML table for the self-contained report, inside a horizontally scrolling container
    (``div.tw``) so that a wide table never widens the page; long unbroken cells
    (hashes, paths) may wrap anywhere. ``row_class``: a CSS class per row (e.g. the
    paper's published rows)."""
    head, rows, num = _cells(df)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    th = "".join(f"<th>{html.escape(c)}</th>" for c in head)
    rc = row_class or [""] * len(rows)
    body = "".join(
        (f'<tr class="{html.escape(k)}">' if k else "<tr>")
        + "".join(
            f'<td class="{_td_class(s, n)}">{html.escape(_keep_together(s))}</td>'
            for s, n in zip(row, num, strict=True)
        )
        + "</tr>"
        for row, k in zip(rows, rc, strict=True)
    )
    tid = f' id="{html.escape(table_id)}"' if table_id else ""
    return f'<div class="tw"><table{tid}>{cap}<thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>\n'
