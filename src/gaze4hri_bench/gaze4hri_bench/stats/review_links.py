"""The report's "Review clips" section: links to the clips that ``gaze4hri-bench review RESULTS
--extremes --out REPORT/review`` rendered (each method's best and worst trial), read from their index."""

from __future__ import annotations

import json
from pathlib import Path

from ..report_layout import REVIEW_DIR, REVIEW_INDEX

__all__ = ["report_links"]


def report_links(report_dir: Path) -> tuple[str, str, str] | None:
    """(intro, Markdown, HTML) linking the clips listed in ``<report_dir>/review/index.json``
    (what ``gaze4hri-bench review RESULTS --extremes --out REPORT/review`` writes), or
    None when there is none. Paths stay relative, so the report folder moves as a whole."""
    import html

    idx = Path(report_dir) / REVIEW_DIR / REVIEW_INDEX
    if not idx.is_file():
        return None
    try:
        entries = json.loads(idx.read_text("utf-8"))
    except ValueError:
        return None
    if not entries:
        return None
    md, hs = [], []
    for e in entries:
        mp4, png = f"{REVIEW_DIR}/{e['mp4']}", f"{REVIEW_DIR}/{e['png']}"
        label = (
            f"{e['key']} {e['which']}: {e['subject']}/{e['trial']}, mean {e['mean_error_deg']:.1f} deg "
            f"over {e['valid_frames']} valid frames"
        )
        md.append(f"- {label}: [clip]({mp4}), [contact sheet]({png})")
        hs.append(
            f"<figure class='review'><video controls preload='none' width='480' "
            f"style='max-width:100%;height:auto' src='{html.escape(mp4)}' "
            f"poster='{html.escape(png)}'></video><figcaption>{html.escape(label)} "
            f"(<a href='{html.escape(mp4)}'>clip</a>, <a href='{html.escape(png)}'>contact "
            "sheet</a>)</figcaption></figure>"
        )
    intro = (
        "Each method's best and worst trial (lowest and highest mean angular error over valid frames): ground truth "
        "(green) and the method's gaze arrow from the eye midpoint, the error and each frame's validity reason."
    )
    return intro, "\n".join(md) + "\n", "\n".join(hs)
