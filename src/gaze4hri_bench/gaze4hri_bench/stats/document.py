"""The report as a document: blocks (headings, paragraphs, tables, figures) rendered to Markdown and
self-contained HTML from one source, with numbered tables and figures, a contents list and human
column headers."""

from __future__ import annotations

import base64
import html
from pathlib import Path

import pandas as pd

from .tables import to_html, to_markdown

__all__ = ["Doc", "humanize", "COLUMN_NAMES", "CSS"]

#: Human headers for the columns that tables.HEADERS does not name (the CSV files keep
#: the column names); any other snake_case column is humanised by :func:`humanize`. A
#: lower-case target is a tables.HEADERS key (its header and integer format apply).
COLUMN_NAMES = {
    "source": "Source",
    "trials": "Trials",
    "median_mm": "Median (mm)",
    "p95_mm": "95th pct. (mm)",
    "max_mm": "Max (mm)",
    "median_deg": "Median (deg)",
    "p95_deg": "95th pct. (deg)",
    "max_deg": "Max (deg)",
    "levels": "Levels (%)",
    "slope": "Slope",
    "intercept": "Intercept",
    "n_subjects": "subjects",
    "n_points": "Points",
    "delta": "Delta (deg)",
    "level_a": "Level A (%)",
    "level_b": "Level B (%)",
    "setting": "Setting",
    "se": "SE",
    "subject_left": "Subject's left",
    "subject_middle": "Middle",
    "subject_right": "Subject's right",
    "target_a": "Point A",
    "target_b": "Point B",
    "column_a": "Column A",
    "column_b": "Column B",
    "row_a": "Row A",
    "row_b": "Row B",
    "n_methods": "Methods",
    "champion_display": "Best method",
    "decisive": "Decisive",
    "lowest": "Lowest",
    "order_by_mean": "Order by mean",
    "n_a": "N A",
    "n_b": "N B",
    "sd_a": "SD A",
    "sd_b": "SD B",
    "cohen_d": "d",
    "pool": "Pool",
    "group": "Group",
    "group_a": "Group A",
    "group_b": "Group B",
    "n_videos": "videos",
    "n_frames": "frames",
    "correction": "Correction",
    "p_adj": "p (adjusted)",
    "segment": "Segment",
    "n_segments": "Segments",
    "axis": "Predictor",
    "fisher_rows": "Videos (n >= 4)",
    "fisher_z": "Fisher z",
    "fisher_z_se": "Fisher z SE",
    "r_pooled": "Pooled r",
    "r_mean": "r mean",
    "r_sd": "r SD",
    "pooled_mean": "Pooled mean",
    "pooled_sd": "Pooled SD",
}
#: Statistical symbols kept as they are.
_SYMBOLS = frozenset({"r", "t", "p", "df", "n", "b", "a", "se"})
#: Identifier columns left out of the rendered table when their display twin is shown.
_ID_TWINS = {"champion": "champion_display"}


def humanize(df: pd.DataFrame) -> pd.DataFrame:
    """The table with human column headers for rendering (Markdown, LaTeX, HTML): names
    from :data:`COLUMN_NAMES`, any other lower-case name as words ("mocap_lost" ->
    "Mocap lost"), statistical symbols (r, t, p) as they are; columns that tables.HEADERS already names,
    and the ``*ci_low`` / ``*ci_high`` pairs that the renderer joins into one CI cell, keep their names."""
    from .tables import HEADERS

    df = df.drop(columns=[c for c, twin in _ID_TWINS.items() if c in df.columns and twin in df.columns])
    ren, taken = {}, set(df.columns)
    for c in df.columns:
        if not isinstance(c, str) or c in HEADERS or c.endswith(("ci_low", "ci_high")):
            continue
        if c in COLUMN_NAMES:
            new = COLUMN_NAMES[c]
        elif c == c.lower() and " " not in c and c not in _SYMBOLS:
            w = c.replace("_", " ")
            new = w[:1].upper() + w[1:]
        else:
            continue
        if new not in taken:
            ren[c] = new
            taken.add(new)
    return df.rename(columns=ren) if ren else df


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


CSS = (
    "body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:0;font-size:13px}caption{text-align:left;font-style:italic;padding:4px "
    "0;caption-side:top}"
    "th,td{border-bottom:1px solid #ccc;padding:3px "
    "8px;vertical-align:top}td.num{text-align:right}th{border-bottom:2px solid #444}"
    "td.wrap{overflow-wrap:anywhere;min-width:8em}.tw{overflow-x:auto;max-width:100%;margin:1em 0}"
    "tr.paper td{color:#555;font-style:italic;background:#f6f6f6}"
    "img,video{max-width:100%;height:auto}figure{margin:1em "
    "0}figcaption{font-style:italic;font-size:13px;overflow-wrap:break-word}"
    ".tcap{font-style:italic;font-size:13px;margin:1em 0 4px;overflow-wrap:break-word}.tcap+.tw{margin-top:0}"
    "h1,h2,h3{overflow-wrap:break-word}"
    "code{background:#f4f4f4;overflow-wrap:anywhere}.skip{color:#a33}p,li{overflow-wrap:anywhere}"
    ".status{border:2px solid #444;border-radius:6px;padding:.5em 1em;margin:1em 0;background:#fafafa}"
    ".status.alarm{border-color:#c00;background:#fff3f3}.status .alarm{color:#c00;font-weight:bold}"
    "nav.toc{font-size:14px}nav.toc ul{margin:.1em 0;padding-left:1.4em}nav.toc "
    "li{line-height:1.35}details{margin:1em 0}summary{cursor:pointer;font-style:italic}"
)


def _html_table(df: pd.DataFrame, caption: str, anchor: str, row_class: list[str] | None = None) -> str:
    """tables.to_html with the caption lifted out of the table into a paragraph above its
    scroll container (``p.tcap``, which carries the anchor): a caption inside a table
    that is wider than a phone's screen is as wide as the table and is cut off at the
    container's edge, mid-word; above it, it wraps at the page width."""
    import re

    t = to_html(df, caption, row_class=row_class)
    m = re.search(r"<caption>(.*?)</caption>", t, re.S)
    if not m:
        return t
    t = t.replace(m.group(0), "", 1).replace("<table", f"<table aria-labelledby='{anchor}'", 1)
    return f"<p class='tcap' id='{anchor}'>{m.group(1)}</p>{t}"


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "s"


class Doc:
    """The report as blocks rendered to Markdown and HTML from one source.

    Tables and figures are numbered in order of appearance ("Table 3.", "Figure 2.");
    ``toc()`` marks where the contents list (sections, tables, figures, with links) goes.
    Tables longer than ``LONG`` rows are folded (HTML ``<details>``; Markdown: a link to
    the table's file) so that the pairwise families do not bury the text.
    """

    LONG = 40

    def __init__(self) -> None:
        self.blocks: list[tuple] = []
        self.profile = ""  # every caption names the analysis profile

    def h(self, level: int, text: str) -> None:
        self.blocks.append(("h", level, text))

    def p(self, text: str, cls: str = "") -> None:
        self.blocks.append(("p", text, cls))

    def ul(self, items: list[str]) -> None:
        if items:
            self.blocks.append(("ul", items))

    def toc(self) -> None:
        self.blocks.append(("toc",))

    def status(self, lines: list[str], alarms: list[str], table: pd.DataFrame | None) -> None:
        self.blocks.append(("status", lines, alarms, table))

    def table(
        self,
        df: pd.DataFrame,
        caption: str,
        *,
        file: str | None = None,
        row_class: list[str] | None = None,
        empty: str | None = None,
        human: bool = True,
    ) -> None:
        """A numbered table; ``file``: the table's CSV under tables/ (linked from a folded long table).

        A table without rows is never printed as a bare header: a sentence names it and
        says why it is empty (``empty``, else a generic reason). ``human``: headers
        through :func:`humanize` (the paper's layouts name their own columns)."""
        if not len(df):
            why = (empty or "the results hold none of the data it needs").rstrip(".")
            self.blocks.append(("p", f"Not tabulated ({self._short(caption)}): {why}.", "skip"))
            return
        if self.profile and not caption.startswith("[profile"):
            caption = f"[profile {self.profile}] {caption}"
        self.blocks.append(("table", humanize(df) if human else df, caption, file, row_class))

    def fig(self, path: Path, caption: str) -> None:
        self.blocks.append(("fig", path, caption))

    def _numbered(self) -> list[tuple]:
        """Blocks with their number (tables and figures) and anchor."""
        out, nt, nf = [], 0, 0
        for b in self.blocks:
            if b[0] == "table":
                nt += 1
                out.append((b, f"Table {nt}", f"table-{nt}"))
            elif b[0] == "fig":
                nf += 1
                out.append((b, f"Figure {nf}", f"figure-{nf}"))
            elif b[0] == "h":
                out.append((b, "", _slug(b[2])))
            else:
                out.append((b, "", ""))
        return out

    @staticmethod
    def _short(caption: str) -> str:
        c = caption.split("] ", 1)[-1] if caption.startswith("[profile") else caption
        c = c.split(". ")[0].split("; ")[0].rstrip(".")
        return c if len(c) <= 80 else c[:80].rsplit(" ", 1)[0] + " …"

    def _toc_items(self, nb) -> list[tuple[int, str, str]]:
        """(depth, text, anchor): sections (h2) with their tables and figures."""
        items = []
        for b, num, anchor in nb:
            if b[0] == "h" and b[1] == 2:
                items.append((0, b[2], anchor))
            elif num:
                items.append((1, f"{num}. {self._short(b[2])}", anchor))
        return items

    def markdown(self, root: Path) -> str:
        out = []
        nb = self._numbered()
        for b, num, anchor in nb:
            if b[0] == "h":
                out.append((f'<a id="{anchor}"></a>\n\n' if b[1] == 2 else "") + "#" * b[1] + " " + b[2] + "\n")
            elif b[0] == "p":
                out.append(b[1] + "\n")
            elif b[0] == "ul":
                out.append("\n".join(f"- {x}" for x in b[1]) + "\n")
            elif b[0] == "toc":
                out.append(
                    "**Contents**\n\n"
                    + "\n".join(("  " * d) + f"- [{t}](#{a})" for d, t, a in self._toc_items(nb))
                    + "\n"
                )
            elif b[0] == "status":
                lines = [f"> **{x}**" for x in b[2]] + [f"> {x}" for x in b[1]]
                out.append("> **Status**\n>\n" + "\n>\n".join(lines) + "\n")
                if b[3] is not None and len(b[3]):
                    out.append(to_markdown(humanize(b[3]), "Weights and inputs per results file."))
            elif b[0] == "table":
                df, cap, file = b[1], b[2], b[3]
                out.append(f'<a id="{anchor}"></a>\n')
                if len(df) > self.LONG and file:
                    out.append(f"*{num}. {cap}* ({len(df)} rows: [`{file}`]({file}))\n")
                else:
                    out.append(to_markdown(df, f"{num}. {cap}"))
            elif b[0] == "fig":
                out.append(
                    f'<a id="{anchor}"></a>\n\n![{num}. {b[2]}]({b[1].relative_to(root).as_posix()})\n\n*{num}. '
                    f"{b[2]}*\n"
                )
            elif b[0] == "raw":  # pre-rendered (markdown, html), e.g. review clip links
                out.append(b[1])
        return "\n".join(out)

    def html(self, title: str) -> str:
        out = [
            "<!DOCTYPE html><html><head><meta charset='utf-8'><meta name='viewport' content='width=device-width, "
            "initial-scale=1'>"
            f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>"
        ]
        esc = lambda x: html.escape(x).replace("`", "")  # noqa: E731
        nb = self._numbered()
        for b, num, anchor in nb:
            if b[0] == "h":
                out.append(f"<h{b[1]} id='{anchor}'>{html.escape(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                out.append(f"<p class='{b[2]}'>{esc(b[1])}</p>")
            elif b[0] == "ul":
                out.append("<ul>" + "".join(f"<li>{esc(x)}</li>" for x in b[1]) + "</ul>")
            elif b[0] == "toc":
                items, html_toc, depth = self._toc_items(nb), ["<nav class='toc'><strong>Contents</strong><ul>"], 0
                for d, t, a in items:
                    if d > depth:
                        html_toc.append("<ul>")
                    elif d < depth:
                        html_toc.append("</ul>")
                    depth = d
                    html_toc.append(f"<li><a href='#{a}'>{html.escape(t)}</a></li>")
                html_toc.append("</ul>" * (depth + 1) + "</nav>")
                out.append("".join(html_toc))
            elif b[0] == "status":
                cls = "status alarm" if b[2] else "status"
                body = (
                    "".join(f"<p class='alarm'>{esc(x)}</p>" for x in b[2])
                    + "<ul>"
                    + "".join(f"<li>{esc(x)}</li>" for x in b[1])
                    + "</ul>"
                )
                if b[3] is not None and len(b[3]):
                    body += _html_table(humanize(b[3]), "Weights and inputs per results file.", "status-table")
                out.append(f"<section class='{cls}' id='status'><strong>Status</strong>{body}</section>")
            elif b[0] == "table":
                df, cap, rc = b[1], b[2], b[4]
                t = _html_table(df, f"{num}. {cap}", anchor, rc)
                if len(df) > self.LONG:
                    head = f"{html.escape(num)}. {html.escape(self._short(cap))} ({len(df)} rows; click to show)"
                    t = f"<details id='{anchor}-fold'><summary>{head}</summary>{t}</details>"
                out.append(t)
            elif b[0] == "fig":
                out.append(
                    f"<figure id='{anchor}'><img alt='{html.escape(b[2])}' src='data:image/png;base64,{_b64(b[1])}'>"
                    f"<figcaption>{html.escape(num)}. {html.escape(b[2])}</figcaption></figure>"
                )
            elif b[0] == "raw":
                out.append(b[2])
        out.append("</body></html>")
        return "\n".join(out)
