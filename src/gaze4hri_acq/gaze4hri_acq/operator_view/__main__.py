"""``python -m gaze4hri_acq.operator_view --render [HZ]``: the renderer process (RenderProcess starts it)."""
from __future__ import annotations

import sys

from .renderer import render_main

if sys.argv[1:2] == ["--render"]:
    sys.exit(render_main(float(sys.argv[2]) if len(sys.argv) > 2 else 4.0))
sys.exit("usage: python -m gaze4hri_acq.operator_view --render [HZ] (started by the session's operator view)")
