"""The report with partial data (issue 24, item 4): sentences that read right with one
method, one level or one condition; no table printed as a header without rows (a
sentence says why instead); captions that promise a CI have one; human column
headers; significance stars that contrast with their cell.

End to end on synthetic results cut down to what a new user's first run holds (one
baseline, two illumination levels, one mutual-gaze scan; figures off for speed), and
on the shared full report (``small_report``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from gaze4hri_bench.stats import analyze
from gaze4hri_bench.stats.document import Doc as _Doc
from gaze4hri_bench.stats.document import humanize as _human
from gaze4hri_bench.stats.narrative import _count, _span

#: Rendered headers that stay as they are: symbols, and the codes that a caption defines
#: (mutual-gaze scans: "h/v: horizontal/vertical scan, slow 0.05 m/s, fast 0.1 m/s").
KEEP = {"r", "t", "p", "df", "d", "d_z", "d_av", "p (Holm)", "method id", "h_slow", "h_fast", "v_slow", "v_fast"}


def tables_of(md: str) -> list[tuple[str, list[str], list[str]]]:
    """(caption, headers, rows) of every Markdown table in a report."""
    lines = md.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.startswith("| ") and i + 1 < len(lines) and lines[i + 1].startswith("|--"):
            cap = next((lines[j] for j in range(i - 1, max(-1, i - 4), -1) if lines[j].startswith("*")), "")
            n = 0
            while i + 2 + n < len(lines) and lines[i + 2 + n].startswith("|"):
                n += 1
            out.append((cap, [h.strip() for h in line.strip().strip("|").split("|")], lines[i + 2 : i + 2 + n]))
    return out


def check_report(md: str) -> list[str]:
    """Every defect of issue 24's list found in a report.md."""
    bad = []
    for cap, heads, rows in tables_of(md):
        name = cap[:60]
        if not rows:
            bad.append(f"table without rows: {name}")
        ci_cells = any(re.search(r"\[-?[\d.]+, -?[\d.]+\]", r) for r in rows)  # the layouts' "m ± sd [lo, hi]" cells
        if re.search(r"\b(95 % (t )?)?CI\b", cap) and not (ci_cells or any("CI" in h for h in heads)):
            bad.append(f"caption promises a CI the columns lack: {name}")
        raw = [
            h
            for h in heads
            if h not in KEEP
            and not h.startswith(("b_pitch", "b_yaw"))
            and re.fullmatch(r"[a-z0-9]+(_[a-z0-9]+)+|[a-z]+", h)
        ]
        if raw:
            bad.append(f"raw column names {raw}: {name}")
    for m in re.finditer(r"from (-?[\d.]+)( ?%| deg)?(?: \([^)]*\))? to \1(?![\d])|\b([\d.]+)-\3 deg", md):
        bad.append(f"a range of one value: {m.group(0)}")
    if re.search(r"across the four (levels|conditions)", md) and not re.search(
        r"\| 10 % \| 25 % \| 50 % \| 100 %|h_slow.*h_fast.*v_slow.*v_fast", md
    ):
        bad.append("'across the four' without four")
    return bad


@pytest.mark.unit
def test_counts_and_ranges_read_right():
    assert (
        _count(1, "condition") == "one condition"
        and _count(4, "level") == "four levels"
        and _count(12, "pair") == "12 pairs"
    )
    assert _span(20.831, 20.829, " %") == "20.83 %" and _span(3.26, 6.11, " deg") == "from 3.26 deg to 6.11 deg"


@pytest.mark.unit
def test_an_empty_table_is_a_sentence_that_says_why():
    import pandas as pd

    doc = _Doc()
    doc.table(
        pd.DataFrame(columns=["display", "condition_a", "condition_b"]),
        "Experiment 4.2: paired tests between conditions.",
        empty="only one condition (h_slow) in the results",
    )
    doc.table(
        pd.DataFrame({"level_a": [10], "median_mm": [0.1], "mocap_lost": [3], "r": [0.5], "display": ["x"]}),
        "Some table.",
    )
    md = doc.markdown(Path("."))
    assert (
        "Not tabulated (Experiment 4.2: paired tests between conditions): only one condition (h_slow) in the results."
        in md
    )
    assert (
        "Table 2" not in md and "| Level A (%) | Median (mm) | Mocap lost | r | Method |" in md
    )  # only the second is a table
    assert list(_human(pd.DataFrame(columns=["ci_low", "ci_high", "n_subjects"])).columns) == [
        "ci_low",
        "ci_high",
        "subjects",
    ]


@pytest.mark.unit
def test_significance_stars_contrast_with_their_cell(tmp_path):
    """The stars' colour, read back from the SVG, against the cell colour the scale gives them."""
    import pandas as pd
    from gaze4hri_bench.stats import figures as F
    from gaze4hri_bench.style import contrast_ratio
    from matplotlib import colormaps
    from matplotlib.colors import TwoSlopeNorm

    pw = pd.DataFrame(
        {
            "display_a": ["A", "A", "B"],
            "display_b": ["B", "C", "C"],
            "mean_diff": [8.0, 0.5, -8.0],
            "p_holm": [1e-4, 1e-4, 1e-4],
            "method_a": ["a", "a", "b"],
            "method_b": ["b", "c", "c"],
        }
    )
    paths = F.significance_matrix(pw, tmp_path / "sig", "test", alpha=0.05)
    svg = next(p for p in paths if p.suffix == ".svg").read_text()
    styles = re.findall(r'<text[^>]*style="([^"]*)"[^>]*>\*\*\*</text>', svg)
    fills = [(re.findall(r"fill: (#[0-9a-f]{6})", st) or ["#000000"])[0] for st in styles]  # SVG default: black
    assert len(fills) == 6, fills  # three pairs, both triangles
    norm, cmap = TwoSlopeNorm(0.0, -8.0, 8.0), colormaps["RdBu_r"]
    for d in (8.0, -8.0, 0.5):  # the darkest red, the darkest blue, a pale cell
        cell = np.array(cmap(norm(d))[:3]) * 255
        star = F.star_color(cmap(norm(d)))
        assert star in fills and contrast_ratio([int(star[i : i + 2], 16) for i in (1, 3, 5)], cell) >= 4.5, (d, star)
    assert (
        fills.count("#ffffff") == 4 and fills.count("#000000") == 2
    )  # white on the 4 dark cells, black on the 2 pale ones


def _partial(src: Path, out: Path) -> Path:
    """The synthetic results cut to one baseline, illumination 10 and 100 and one mutual scan."""
    out.mkdir(parents=True, exist_ok=True)
    t = pq.read_table(src / "head_pose__crop.parquet")
    exp, cond = pc.cast(t["experiment"], pa.string()), pc.cast(t["condition"], pa.string())
    keep = pc.or_(
        pc.and_(pc.equal(exp, "illumination"), pc.is_in(cond, value_set=pa.array(["10", "100"]))),
        pc.or_(
            pc.and_(pc.equal(exp, "mutual"), pc.equal(cond, "h_slow")),
            pc.is_in(exp, value_set=pa.array(["viewpoint", "target"])),
        ),
    )
    pq.write_table(t.filter(keep), out / "head_pose__crop.parquet")
    return out


@pytest.mark.unit
def test_partial_results_read_right(synth, tmp_path):
    src = tmp_path / "full"
    synth.make_results(src, subjects=3, frames=6, methods=["head_pose"], inputs=("crop",), seed=5, study_drops=False)
    rep = tmp_path / "report"
    analyze([_partial(src, tmp_path / "partial")], rep, figures=False)
    md = (rep / "report.md").read_text()
    assert check_report(md) == []
    assert "across the two levels was" in md and "in the one condition present, h_slow" in md
    assert re.search(
        r"Not tabulated \(Experiment 4\.2: paired two-sided t-tests between the conditions[^)]*\): only one condition "
        r"\(h_slow\)",
        md,
    )
    html = (rep / "report.html").read_text()
    assert "<caption>" not in html and "class='tcap'" in html  # captions above the scroll container: they wrap


def test_full_report_has_no_empty_table_and_captions_match(small_report):
    out, _ = small_report
    assert check_report((out / "report.md").read_text()) == []


@pytest.mark.unit
def test_the_check_finds_each_defect():
    """Negative control: the defects of issue 24's list, each found."""
    md = (
        "*Table 1. mean, SD and 95 % CI per point.*\n\n| Method | level_a | Mean |\n|---|---|---:|\n\n"
        "The coefficient of variation across the four levels ranged from 20.83 % (x) to 20.83 % (x).\n"
        "Lowest: x (7.52-7.52 deg across the four conditions).\n"
    )
    bad = check_report(md)
    assert any("without rows" in b for b in bad) and any("promises a CI" in b for b in bad)
    assert any("raw column names ['level_a']" in b for b in bad) and any(
        "'across the four' without four" in b for b in bad
    )
    assert sum("a range of one value" in b for b in bad) == 2
