#!/usr/bin/env python3
"""Regenerate the report screenshots in docs/img/ (docs/statistics.md, "How the report reads").

Synthetic results (benchmarks/make_synthetic_results.py: 12 subjects, the seven networks
x crop/rectified, and the two baselines with errors far above the networks, as in the
study) -> ``gaze4hri-bench analyze`` -> headless Chromium screenshots (Debian package
``chromium``) of the top of report.html and of three sections (the page is cut so that
the section starts at the top).

    .venv/bin/python benchmarks/report_screenshots.py            # writes docs/img/report_*.png
    .venv/bin/python benchmarks/report_screenshots.py --out /tmp/shots
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
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
#: file name -> (element id the shot starts at, or None for the top; window height px)
SHOTS = {
    "report_top": (None, 1350),
    "report_illumination": ("illumination-experiment-1-table-iii", 1500),
    "report_target": ("figure-6", 1000),
    "report_mutual": ("figure-7", 700),
}
# drop every block before the element with the given id (so a section opens the page)
CUT = (
    "<script>window.addEventListener('DOMContentLoaded',()=>{const t=document.getElementById('%s');if(!t)return;"
    "let n=document.body.firstElementChild;while(n&&n!==t&&!n.contains(t))"
    "{const x=n.nextElementSibling;n.remove();n=x;}});</script>"
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=REPO / "docs" / "img", help="folder for the PNGs (default docs/img)")
    ap.add_argument("--subjects", type=int, default=12)
    args = ap.parse_args(argv)
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print(
            "report_screenshots: chromium not found: "
            "install it (apt-get install -y chromium; scripts/bootstrap.sh does)",
            file=sys.stderr,
        )
        return 1
    sys.path.insert(0, str(REPO / "benchmarks"))
    import make_synthetic_results as synth
    from gaze4hri_bench.stats import analyze

    work = Path(tempfile.mkdtemp(prefix="g4h_shots_"))
    res = work / "results"
    synth.make_results(res, subjects=args.subjects, frames=10, seed=5)
    synth.LEVEL_MEANS["head_pose"], synth.LEVEL_MEANS["straight"] = (38.0, 37.0, 38.0, 37.5), (31.0, 30.0, 31.0, 30.5)
    synth.make_results(
        res, subjects=args.subjects, frames=10, seed=5, methods=["head_pose", "straight"], inputs=("none",)
    )
    analyze([res], work / "report")
    html = (work / "report" / "report.html").read_text()
    args.out.mkdir(parents=True, exist_ok=True)
    for name, (anchor, height) in SHOTS.items():
        page = work / f"{name}.html"
        page.write_text(html.replace("</head>", (CUT % anchor if anchor else "") + "</head>"))
        png = args.out / f"{name}.png"
        subprocess.run(
            [
                chromium,
                *FLAGS,
                f"--user-data-dir={work / ('profile_' + name)}",
                f"--window-size=1280,{height}",
                f"--screenshot={png}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            timeout=120,
        )
        print(f"wrote {png}")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
