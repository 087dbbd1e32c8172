"""The one table renderer (Markdown, LaTeX booktabs, HTML)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.stats.tables import format_frame, to_html, to_latex, to_markdown

pytestmark = pytest.mark.unit

DF = pd.DataFrame(
    {
        "method": ["puregaze_eth", "x_net"],
        "display": ["PureGaze (E)", "x_net"],
        "mean": [10.1234, np.nan],
        "n": [52, 50],
        "p_holm": [0.0004, 0.04567],
        "cohen_dz": [1.234, -0.5],
        "significant": [True, False],
    }
)


def test_format_rounds_and_hides_ids():
    f = format_frame(DF)
    assert list(f.columns) == ["Method", "Mean", "N", "p (Holm)", "d_z", "Sig."]
    assert f.iloc[0].tolist() == ["PureGaze (E)", "10.12", "52", "< .001", "1.23", "*"]
    assert f.iloc[1].tolist() == ["x_net", "", "50", "0.046", "-0.50", ""]


def test_markdown_table():
    md = to_markdown(DF, "cap")
    lines = md.strip().splitlines()
    assert lines[0] == "*cap*" and lines[2].startswith("| Method | Mean |")
    assert lines[3] == "|---|---:|---:|---:|---:|---|"
    assert len(lines) == 6


def test_latex_booktabs_and_escaping():
    tex = to_latex(DF.assign(display=["PureGaze (E)", "x_net"]), "10 % & more", label="tab:x")
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert "\\begin{tabular}{lrrrrl}" in tex
    assert "x\\_net" in tex and "10 \\% \\& more" in tex and "$<$ .001" in tex
    assert tex.count("\\\\") == 3  # header + 2 rows


def test_html_escapes():
    h = to_html(pd.DataFrame({"display": ["<b>"], "mean": [1.0]}))
    assert "&lt;b&gt;" in h and "<b>" not in h.replace("<tbody>", "")
