"""report.html as a person sees it: rendered by headless Chromium (Debian package
``chromium``, installed by scripts/bootstrap.sh), which must show no horizontal
overflow and no broken image.

A script injected into a copy of the report runs after the page has loaded and
writes what it finds into the DOM; ``chromium --headless --dump-dom`` returns it.
Checked: the page does not scroll sideways; no element sticks out of the page unless
it is inside a scroll container; no box's content is wider than the box where the
box does not scroll; every ``<img>`` decoded (naturalWidth > 0). The negative
controls show that the check fails on the defects it looks for.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.replay,
              pytest.mark.skipif(shutil.which("chromium") is None and shutil.which("chromium-browser") is None,
                                 reason="Debian's chromium is not installed (scripts/bootstrap.sh installs it: apt-get install -y chromium)")]

#: Flags for a headless, offline, throw-away browser (a fresh profile per run).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--hide-scrollbars", "--virtual-time-budget=8000"]

CHECK_JS = r"""
window.addEventListener('load', () => {
  const W = document.documentElement.clientWidth;
  const bad = [], scrolls = [];
  const name = el => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') + (typeof el.className === 'string' && el.className ? '.' + el.className.trim().split(/\s+/).join('.') : '');
  const inScroller = el => { for (let p = el.parentElement; p; p = p.parentElement) { const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll' || o === 'hidden') return true; } return false; };
  const flagged = new Set();
  for (const el of document.body.querySelectorAll('*')) {
    if (el.id === 'g4h-check') continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;  // not rendered (e.g. inside a closed <details>)
    if (el.parentElement && flagged.has(el.parentElement)) { flagged.add(el); continue; }  // report the outermost only
    const ox = getComputedStyle(el).overflowX;
    if ((ox === 'auto' || ox === 'scroll') && el.scrollWidth > el.clientWidth + 1) { scrolls.push(name(el)); continue; }
    if (ox === 'visible' && el.clientWidth > 0 && el.scrollWidth > el.clientWidth + 1) { bad.push('content wider than its box: ' + name(el) + ' ' + el.scrollWidth + ' > ' + el.clientWidth + ': ' + (el.textContent || '').slice(0, 50)); flagged.add(el); continue; }
    if (!inScroller(el) && r.right > W + 1) { bad.push('sticks out of the page: ' + name(el) + ' right ' + Math.round(r.right) + ' > ' + W + ': ' + (el.textContent || '').slice(0, 50)); flagged.add(el); }
  }
  if (document.documentElement.scrollWidth > W + 1) bad.push('page scrolls sideways: ' + document.documentElement.scrollWidth + ' > ' + W);
  const imgs = [];
  for (const img of document.images) { imgs.push(img.naturalWidth); if (!img.complete || img.naturalWidth === 0) bad.push('image failed to load: ' + (img.alt || img.src.slice(0, 60))); }
  const pre = document.createElement('pre'); pre.id = 'g4h-check';
  pre.textContent = JSON.stringify({bad: bad, scrolls: scrolls, images: imgs, width: W,
    tables: document.querySelectorAll('table').length, figures: document.querySelectorAll('figure').length,
    status: !!document.getElementById('status'), toc: document.querySelectorAll('nav.toc a').length});
  document.body.appendChild(pre);
});
"""


def _chromium() -> str:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def browser_check(html_path: Path, work: Path, width: int = 1280) -> dict:
    """Render ``html_path`` (a copy with CHECK_JS injected) at ``width`` px and return the check's findings."""
    work.mkdir(parents=True, exist_ok=True)
    page = work / "page.html"
    page.write_text(html_path.read_text().replace("</body>", f"<script>{CHECK_JS}</script></body>"))
    r = subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={work / 'profile'}", f"--window-size={width},900", "--dump-dom", page.as_uri()],
                       capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="g4h-check">(.*?)</pre>', r.stdout, re.S)
    assert m, f"chromium wrote no check result (rc {r.returncode}): {r.stderr[-800:]}"
    import html

    return json.loads(html.unescape(m.group(1)))


def screenshot(html_path: Path, png: Path, work: Path, width: int = 1280, height: int = 1400) -> Path:
    """A PNG of the top ``height`` px of the rendered page (docs/img/report_*.png are made with this)."""
    work.mkdir(parents=True, exist_ok=True)
    subprocess.run([_chromium(), *FLAGS, f"--user-data-dir={work / 'profile_shot'}", f"--window-size={width},{height}", f"--screenshot={png}", html_path.as_uri()],
                   capture_output=True, text=True, timeout=120, check=True)
    return png


def test_report_renders_without_overflow_or_broken_images(small_report, tmp_path):
    out, summary = small_report
    res = browser_check(out / "report.html", tmp_path)
    assert res["bad"] == [], "\n".join(res["bad"][:15])
    pngs = [p for p in summary["figures"] if p.endswith(".png")]
    assert len(res["images"]) == len(pngs) >= 8 and min(res["images"]) > 100
    assert res["status"] and res["toc"] >= res["tables"] - 2  # status box; the contents list links (nearly) every table
    # the provenance and status tables fit the page: no sideways scrolling needed to read them
    assert not any("status" in s for s in res["scrolls"]), res["scrolls"]


def test_report_fits_a_narrow_window(small_report, tmp_path):
    """At 800 px wide tables may scroll inside their container, but the page itself never does."""
    out, _ = small_report
    res = browser_check(out / "report.html", tmp_path, width=800)
    assert res["bad"] == [], "\n".join(res["bad"][:15])


def test_check_catches_overflow_and_broken_images(tmp_path):
    """Negative controls: the old report's unwrapped wide table, and an image that does not decode."""
    wide = "<table><tr>" + "".join(f"<td>{'x' * 40}{k}</td>" for k in range(12)) + "</tr></table>"
    page = tmp_path / "bad.html"
    page.write_text(f"<!DOCTYPE html><html><body style='max-width:1100px'>{wide}<img alt='broken' src='data:image/png;base64,AAAA'></body></html>")
    res = browser_check(page, tmp_path / "w")
    assert any("sticks out of the page" in b for b in res["bad"]), res
    assert any("page scrolls sideways" in b for b in res["bad"]), res
    assert any("image failed to load: broken" in b for b in res["bad"]), res
    assert len(res["bad"]) < 10  # outermost offenders only


def test_screenshot_is_written(small_report, tmp_path):
    out, _ = small_report
    png = screenshot(out / "report.html", tmp_path / "top.png", tmp_path, height=600)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
    w, h = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    assert (w, h) == (1280, 600)
