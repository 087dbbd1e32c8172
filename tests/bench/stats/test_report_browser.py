"""report.html as a person sees it: rendered by headless Chromium (Debian package
``chromium``, installed by scripts/bootstrap.sh), which must show no horizontal
overflow and no broken image.

A script injected into a copy of the report runs after the page has loaded and
writes what it finds into the DOM; ``chromium --headless --dump-dom`` returns it.
Checked: the page does not scroll sideways; no element sticks out of the page unless
it is inside a scroll container; no text block (caption, paragraph, figure caption,
heading, list item) is cut off at the edge of a scroll container it sits in (a table's
caption on a phone); no box's content is wider than the box where the box does not
scroll; every ``<img>`` decoded (naturalWidth > 0). The report is checked at a
phone's 390 px, 800 px and 1280 px in one browser start: a wrapper page holds the
report in three iframes of those widths, each posts its findings to the wrapper. The
negative controls show that the check fails on the defects it looks for.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.replay,
    pytest.mark.skipif(
        shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
        reason="Debian's chromium is not installed (scripts/bootstrap.sh installs it: apt-get install -y chromium)",
    ),
]

#: Flags for a headless, offline, throw-away browser (a fresh profile per run).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--virtual-time-budget=8000",
]

CHECK_JS = r"""
window.addEventListener('load', () => {
  const W = document.documentElement.clientWidth;
  const bad = [], scrolls = [];
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\s+/).join('.') : '');
  const scroller = el => { for (let p = el.parentElement; p; p = p.parentElement) {
    const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return p;
    } return null; };
  const inScroller = el => scroller(el) !== null;
  const TEXT = new Set(['CAPTION', 'P', 'FIGCAPTION', 'H1', 'H2', 'H3', 'LI', 'SUMMARY']);
  const flagged = new Set();
  for (const el of document.body.querySelectorAll('*')) {
    if (el.id === 'g4h-check') continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // not rendered (e.g. inside a closed <details>)
    if (el.parentElement && flagged.has(el.parentElement)) { flagged.add(el); continue; }  // report the outermost only
    const ox = getComputedStyle(el).overflowX;
    if ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth + 1) { scrolls.push(name(el)); continue; }
    if (ox === 'visible' && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) {
      bad.push('content wider than its box: ' + name(el) + ' ' + el.scrollWidth + ' > ' + el.clientWidth + ': ' +
        (el.textContent || '').slice(0, 50));
      flagged.add(el); continue; }
    const sc = TEXT.has(el.tagName) ? scroller(el) : null;
    if (sc && r.right > sc.getBoundingClientRect().right + 1) {
      bad.push('text cut off by its scroll container: ' + name(el) + ': ' + (el.textContent || '').slice(0, 50));
      flagged.add(el); continue; }
    if (!inScroller(el) && r.right > W + 1) {
      bad.push('sticks out of the page: ' + name(el) + ' right ' + Math.round(r.right) + ' > ' + W + ': ' +
        (el.textContent || '').slice(0, 50));
      flagged.add(el); }
  }
  if (document.documentElement.scrollWidth > W + 1)
    bad.push('page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + W);
  const imgs = [];
  for (const img of document.images) { imgs.push(img.naturalWidth);
    if (!img.complete || img.naturalWidth === 0) bad.push('image failed to load: ' + (img.alt || img.src.slice(0, 60)));
    }
  const res = JSON.stringify({bad: bad, scrolls: scrolls, images: imgs, width: W,
    tables: document.querySelectorAll('table').length, figures: document.querySelectorAll('figure').length,
    videos: Array.from(document.querySelectorAll('video')).map(v => Math.round(v.getBoundingClientRect().width)),
    status: !!document.getElementById('status'), toc: document.querySelectorAll('nav.toc a').length});
  if (window.parent !== window) { window.parent.postMessage(res, '*'); return; }
  const pre = document.createElement('pre'); pre.id = 'g4h-check';
  pre.textContent = res;
  document.body.appendChild(pre);
});
"""

#: The wrapper page: one iframe per width, each report posts its findings here.
FRAMES_JS = r"""
const got = [];
window.addEventListener('message', e => {
  got.push(JSON.parse(e.data));
  if (got.length === N_FRAMES) { const pre = document.createElement('pre');
    pre.id = 'g4h-check'; pre.textContent = JSON.stringify(got);
    document.body.appendChild(pre); }
});
"""


def _chromium() -> str:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browser_check(html_path: Path, work: Path, width: int = 1280) -> dict:
    """Render ``html_path`` (a copy with CHECK_JS injected) at ``width`` px and return the check's findings."""
    work.mkdir(parents=True, exist_ok=True)
    page = work / "page.html"
    page.write_text(html_path.read_text().replace("</body>", f"<script>{CHECK_JS}</script></body>"))
    r = subprocess.run(
        [
            _chromium(),
            *FLAGS,
            f"--user-data-dir={work / 'profile'}",
            f"--window-size={width},900",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    m = re.search(r'<pre id="g4h-check">(.*?)</pre>', r.stdout, re.S)
    assert m, f"chromium wrote no check result (rc {r.returncode}): {r.stderr[-800:]}"
    import html

    return json.loads(html.unescape(m.group(1)))


def browser_check_widths(html_path: Path, work: Path, widths=(390, 800, 1280)) -> dict[int, dict]:
    """The check at several widths in one browser start: width -> findings."""
    work.mkdir(parents=True, exist_ok=True)
    page = work / "page.html"
    page.write_text(html_path.read_text().replace("</body>", f"<script>{CHECK_JS}</script></body>"))
    frames = "".join(
        f"<iframe src='{page.name}' width='{w}' height='900' style='border:0;display:block'></iframe>" for w in widths
    )
    wrap = work / "frames.html"
    wrap.write_text(
        "<!DOCTYPE html><html><body "
        f"style='margin:0'><script>{FRAMES_JS.replace('N_FRAMES', str(len(widths)))}</script>{frames}</body></html>"
    )
    r = subprocess.run(
        [
            _chromium(),
            *FLAGS,
            f"--user-data-dir={work / 'profile'}",
            f"--window-size={max(widths) + 40},900",
            "--dump-dom",
            wrap.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    m = re.search(r'<pre id="g4h-check">(.*?)</pre>', r.stdout, re.S)
    assert m, f"chromium wrote no check result (rc {r.returncode}): {r.stderr[-800:]}"
    import html

    return {d["width"]: d for d in json.loads(html.unescape(m.group(1)))}


def screenshot(html_path: Path, png: Path, work: Path, width: int = 1280, height: int = 1400) -> Path:
    """A PNG of the top ``height`` px of the rendered page (docs/img/report_*.png are made with this)."""
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            _chromium(),
            *FLAGS,
            f"--user-data-dir={work / 'profile_shot'}",
            f"--window-size={width},{height}",
            f"--screenshot={png}",
            html_path.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return png


def _with_review_clips(report: Path, work: Path) -> Path:
    """A copy of the report with the "Review clips" section that ``analyze`` adds when
    ``review --extremes`` ran (stats.review_links.report_links: the real markup)."""
    from gaze4hri_bench.report_layout import REVIEW_INDEX as INDEX
    from gaze4hri_bench.stats.review_links import report_links

    (work / "review").mkdir(parents=True, exist_ok=True)
    (work / "review" / INDEX).write_text(
        json.dumps(
            [
                {
                    "key": "l2cs_gaze360__crop",
                    "which": which,
                    "subject": "S01",
                    "trial": "arc_P5",
                    "mean_error_deg": 4.2,
                    "valid_frames": 300,
                    "mp4": f"l2cs/{which}.mp4",
                    "png": f"l2cs/{which}.png",
                }
                for which in ("best", "worst")
            ]
        )
    )
    intro, _, html_clips = report_links(work)
    page = work / "report.html"
    page.write_text(report.read_text().replace("</body>", f"<h2>Review clips</h2><p>{intro}</p>{html_clips}</body>"))
    return page


def test_report_renders_without_overflow_or_broken_images(small_report, tmp_path):
    """At a phone's 390 px, 800 px and 1280 px: tables may scroll inside their container,
    but the page never does, no caption is cut off, and the review videos shrink to the
    page (they are 480 px wide on a wide screen)."""
    out, summary = small_report
    page = _with_review_clips(out / "report.html", tmp_path / "report")
    found = browser_check_widths(page, tmp_path)
    assert sorted(found) == [390, 800, 1280]
    pngs = [p for p in summary["figures"] if p.endswith(".png")]
    for w, res in found.items():
        assert res["bad"] == [], f"{w} px:\n" + "\n".join(res["bad"][:15])
        assert len(res["images"]) == len(pngs) >= 8 and min(res["images"]) > 100
        assert len(res["videos"]) == 2 and max(res["videos"]) <= min(480, w), (w, res["videos"])
    res = found[1280]
    assert res["status"] and res["toc"] >= res["tables"] - 2  # status box; the contents list links (nearly) every table
    # the provenance and status tables fit the page: no sideways scrolling needed to read them
    assert not any("status" in s for s in res["scrolls"]), res["scrolls"]
    assert found[390]["videos"][0] < 390 and found[1280]["videos"][0] == 480


def test_check_catches_overflow_and_broken_images(tmp_path):
    """Negative controls: the old report's unwrapped wide table, an image that does not
    decode, a caption inside a table wider than its scroll container (cut off on a
    phone), and a video of a fixed 1400 px width (wider than the page)."""
    wide = "<table><tr>" + "".join(f"<td>{'x' * 40}{k}</td>" for k in range(12)) + "</tr></table>"
    cut = (
        "<div style='overflow-x:auto'><table><caption>A caption long enough to wrap over several lines of the wide "
        "table</caption><tr>" + "".join(f"<td>{'y' * 40}{k}</td>" for k in range(12)) + "</tr></table></div>"
    )
    video = "<figure><video width='1400' preload='none'></video></figure>"
    page = tmp_path / "bad.html"
    page.write_text(
        f"<!DOCTYPE html><html><body style='max-width:1100px'>{wide}<img alt='broken' "
        f"src='data:image/png;base64,AAAA'>{cut}{video}</body></html>"
    )
    res = browser_check(page, tmp_path / "w")
    assert any("sticks out of the page" in b for b in res["bad"]), res
    assert any("page scrolls sideways" in b for b in res["bad"]), res
    assert any("image failed to load: broken" in b for b in res["bad"]), res
    assert any("text cut off by its scroll container: caption" in b for b in res["bad"]), res
    assert any("content wider than its box: figure 1400" in b for b in res["bad"]), res  # the fixed-width video
    assert len(res["bad"]) < 10  # outermost offenders only


def test_screenshot_is_written(small_report, tmp_path):
    out, _ = small_report
    png = screenshot(out / "report.html", tmp_path / "top.png", tmp_path, height=600)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (w, h) == (1280, 600)
