"""What the study's decoding settings cost a perfect network, on a grid of geometries
(the numbers issue 10 names): M^-1 de-normalization vs distance and off-axis angle,
the missing crop ray correction, L2CS's head order vs gaze angles. Uses the oracle of
gaze4hri_bench.methods.oracle (each setting alone on top of ``reference``).

    .venv/bin/python benchmarks/profile_oracle_effects.py [--out docs/deviations/oracle_effects.md]
"""
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np


def _geo(eye, gaze_to, K, size=(1920, 1080)):
    from gaze4hri_bench.methods.oracle import FrameGeometry, face_box_from_geometry
    from gaze4hri_core.gaze import normalize

    e = np.asarray(eye, float)
    R = np.eye(3)  # upright head facing the camera's axis
    g = normalize(np.asarray(gaze_to, float) - e)
    return FrameGeometry(K, size, e, e, R, g, face_box_from_geometry(K, e, shape=(size[1], size[0])))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("docs/deviations/oracle_effects.md"))
    a = ap.parse_args()
    from gaze4hri_bench.methods.network import OnnxMethod
    from gaze4hri_bench.methods.oracle import oracle_vector
    from gaze4hri_bench.pipeline.deviations import _variants
    from gaze4hri_bench.specs import get_spec
    from gaze4hri_core.gaze import angular_error_deg

    K = np.array([[1380.0, 0, 960.0], [0, 1380.0, 540.0], [0, 0, 1.0]])  # D435i-like at 1920x1080
    var = {label: prof for label, _s, prof in _variants("study")}
    lines = ["# Oracle effects of the study's decoding settings (perfect network)", "",
             "Command: `.venv/bin/python benchmarks/profile_oracle_effects.py`; camera fx = 1380 px at 1920x1080, "
             "upright head, gaze at the camera or at points 0.3 m beside it.", ""]

    def eff(setting, method, it, eye, to):
        m = OnnxMethod(method, get_spec(method), var[setting])
        g = _geo(eye, to, K)
        return float(angular_error_deg(oracle_vector(m, g, it), g.gaze))

    lines += ["## M^-1 = R^T S^-1 instead of R^T (`denorm_inverse_warp`, PureGaze ETH, rectified)", "",
              "| face distance | off-axis angle | gaze at camera | gaze 0.3 m right of camera | gaze 0.3 m above |",
              "|---|---|---|---|---|"]
    for d in (0.5, 0.6, 0.8, 1.0):
        for ang in (0, 10, 20, 30):
            eye = d * np.array([np.sin(np.radians(ang)), 0.0, np.cos(np.radians(ang))])
            cells = [eff("denorm_inverse_warp", "puregaze_eth", "rectified", eye, t)
                     for t in ([0, 0, 0], [0.3, 0, 0], [0, -0.3, 0])]
            lines.append(f"| {d:.1f} m | {ang} deg | " + " | ".join(f"{c:.2f}" for c in cells) + " |")
    lines += ["", "## No crop ray correction (`no_ray_correction`, L2CS, crop)", "",
              "| face distance | off-axis angle | gaze at camera |", "|---|---|---|"]
    for d in (0.6, 0.8):
        for ang in (0, 10, 20, 30):
            eye = d * np.array([np.sin(np.radians(ang)), 0.0, np.cos(np.radians(ang))])
            lines.append(
                f"| {d:.1f} m | {ang} deg | {eff('no_ray_correction', 'l2cs_gaze360', 'crop', eye, [0, 0, 0]):.2f} |"
            )
    lines += [
        "",
        "## L2CS first head read as pitch (`l2cs_first_head_as_pitch`, face on axis at 0.6 m, crop)",
        "",
        "| gaze yaw \\ pitch (deg) | 0 | 10 | 20 | 30 | 40 |",
        "|---|---|---|---|---|---|",
    ]
    eye = np.array([0.0, 0.0, 0.6])
    worst = 0.0
    for yaw in (0, 10, 20, 30, 40):
        row = []
        for pitch in (0, 10, 20, 30, 40):
            p, y = np.radians(pitch), np.radians(yaw)
            to = eye + np.array([-np.cos(p) * np.sin(y), -np.sin(p), -np.cos(p) * np.cos(y)])
            e = eff("l2cs_first_head_as_pitch", "l2cs_gaze360", "crop", eye, to)
            worst = max(worst, e)
            row.append(f"{e:.2f}")
        lines.append(f"| {yaw} | " + " | ".join(row) + " |")
    lines += ["", f"Worst L2CS effect on this grid: {worst:.1f} deg.", ""]
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text("\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
