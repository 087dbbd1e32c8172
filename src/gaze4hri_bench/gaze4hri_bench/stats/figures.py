"""Figures of the report (matplotlib Figure objects, no pyplot state), each written as PNG and SVG.

Every function takes the tidy tables of :mod:`gaze4hri_bench.stats.analyses` and a
path stem, writes ``stem.png`` and ``stem.svg`` and returns the two paths.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.protocol import P_GRID

__all__ = ["illumination_levels", "target_heatmap", "conflict_slopes", "eccentricity", "paired_bars"]


STYLE = {"svg.hashsalt": "gaze4hri", "font.size": 9, "axes.spines.top": False, "axes.spines.right": False}


def _figure(**kw):
    """A pyplot-free Figure: no global backend switch, no figure registry to leak into."""
    from matplotlib.figure import Figure

    return Figure(**kw)


def _styled(fn):
    """Run a figure function under the report's style without touching global rcParams."""
    import functools

    @functools.wraps(fn)
    def wrap(*args, **kw):
        import matplotlib

        with matplotlib.rc_context(STYLE):
            return fn(*args, **kw)

    return wrap


def _save(fig, stem: Path) -> list[Path]:
    stem.parent.mkdir(parents=True, exist_ok=True)
    out = [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    fig.savefig(out[0], dpi=110, bbox_inches="tight")
    fig.savefig(out[1], bbox_inches="tight", metadata={"Date": None})
    return out


def _grid(n: int) -> tuple[int, int]:
    cols = min(n, 4)
    return int(np.ceil(n / cols)), cols


@_styled
def illumination_levels(table: pd.DataFrame, stem: Path) -> list[Path]:
    """Mean error (+/- SEM over subjects) by illumination level, one line per method."""
    fig = _figure(figsize=(6, 3.6))
    ax = fig.subplots()
    for name, g in table.groupby("display", sort=False):
        g = g.sort_values("level")
        sem = g["sd"] / np.sqrt(g["n"])
        ax.errorbar(g["level"].astype(str), g["mean"], yerr=sem, marker="o", capsize=3, label=name)
    ax.set_xlabel("illumination level (%)")
    ax.set_ylabel("angular error (deg), mean +/- SEM")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Error by illumination level (experiment 1)")
    return _save(fig, stem)


@_styled
def target_heatmap(table: pd.DataFrame, stem: Path) -> list[Path]:
    """3x3 heat map of the mean error per target point, one panel per method, in the study's layout."""
    rows, cols = list(P_GRID), list(next(iter(P_GRID.values())))
    methods = list(dict.fromkeys(table["display"]))
    nr, nc = _grid(len(methods))
    fig = _figure(figsize=(2.9 * nc, 2.6 * nr))
    axes = fig.subplots(nr, nc, squeeze=False)
    vmin, vmax = float(table["mean"].min()), float(table["mean"].max())
    im = None
    for k, (ax, m) in enumerate(zip(axes.flat, methods, strict=False)):
        g = table[table["display"] == m].set_index("target")["mean"]
        grid = np.array([[g.get(P_GRID[r][c], np.nan) for c in cols] for r in rows])
        im = ax.imshow(grid, cmap="viridis_r", vmin=vmin, vmax=vmax)
        for i, r in enumerate(rows):
            for j, c in enumerate(cols):
                if np.isfinite(grid[i, j]):
                    ax.text(j, i, f"{P_GRID[r][c]}\n{grid[i, j]:.1f}", ha="center", va="center", fontsize=7, color="w" if grid[i, j] > (vmin + vmax) / 2 else "k")
        ax.set_xticks(range(3), cols, fontsize=7)
        ax.set_yticks(range(3), rows if k % nc == 0 else [], fontsize=7)
        ax.set_title(m, fontsize=8)
    for ax in axes.flat[len(methods):]:
        ax.axis("off")
    if im is not None:
        fig.colorbar(im, ax=axes, shrink=0.7, label="mean error (deg)")
    fig.suptitle("Error per target point (experiment 4.1; columns seen from the camera, camera beyond the farthest row)", fontsize=9)
    return _save(fig, stem)


@_styled
def conflict_slopes(videos: pd.DataFrame, slopes: pd.DataFrame, order: list[str] | None, stem: Path) -> list[Path]:
    """Video mean error vs video mean conflict with each subject's fitted line, one panel per method (``order``: display names)."""
    from matplotlib.collections import LineCollection

    methods = [m for m in (order or []) if m in set(slopes["display"])] or list(dict.fromkeys(slopes["display"]))
    nr, nc = _grid(len(methods))
    fig = _figure(figsize=(3 * nc, 2.6 * nr))
    axes = fig.subplots(nr, nc, squeeze=False, sharex=True)
    xr = np.array([np.nanmin(videos["conflict_mean"]), np.nanmax(videos["conflict_mean"])])
    for ax, m in zip(axes.flat, methods, strict=False):
        s = slopes[slopes["display"] == m]
        v = videos[videos["method"].astype(str) == s["method"].iloc[0]]
        ax.scatter(v["conflict_mean"], v["error_mean"], s=4, alpha=0.35, color="0.4", linewidths=0)
        xs = np.repeat(xr[None, :], len(s), 0)
        ys = s["intercept"].to_numpy()[:, None] + s["slope"].to_numpy()[:, None] * xs
        ax.add_collection(LineCollection(np.stack([xs, ys], axis=-1), colors="tab:blue", alpha=0.25, linewidths=0.7))
        ax.plot(xr, s["intercept"].mean() + s["slope"].mean() * xr, color="tab:red", lw=2, label=f"mean slope {s['slope'].mean():.2f}")
        ax.set_title(m, fontsize=8)
        ax.legend(fontsize=6, frameon=False)
    for ax in axes.flat[len(methods):]:
        ax.axis("off")
    fig.supxlabel("video mean head-gaze conflict (deg)")
    fig.supylabel("video mean error (deg)")
    fig.suptitle("Error vs head-gaze conflict with subject slopes (experiment 3)", fontsize=9)
    return _save(fig, stem)


@_styled
def eccentricity(frames: pd.DataFrame, stem: Path, bin_deg: float = 2.5) -> list[Path]:
    """Mean error in bins of |yaw| and |pitch| of the ground-truth gaze during mutual gaze, per method."""
    fig = _figure(figsize=(8, 3.2))
    axes = fig.subplots(1, 2, sharey=True)
    for ax, col, lab in ((axes[0], "abs_yaw_deg", "|yaw| (deg)"), (axes[1], "abs_pitch_deg", "|pitch| (deg)")):
        b = (frames[col] // bin_deg) * bin_deg + bin_deg / 2
        g = frames.assign(bin=b).groupby(["display", "bin"], observed=True, sort=False)["error_deg"].agg(["mean", "count"]).reset_index()
        for name, gg in g.groupby("display", sort=False):
            gg = gg[gg["count"] >= 20].sort_values("bin")
            ax.plot(gg["bin"], gg["mean"], marker=".", label=name)
        ax.set_xlabel(lab)
    axes[0].set_ylabel("mean error (deg)")
    axes[1].legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Mutual gaze: error vs eccentricity (experiment 4.2)", fontsize=9)
    return _save(fig, stem)


@_styled
def paired_bars(table: pd.DataFrame, pairs: list[tuple[str, str, str]], title: str, stem: Path, ylabel: str = "angular error (deg)") -> list[Path]:
    """Grouped bars (mean +/- SD) per method for several settings; pairs: (mean col, sd col, label)."""
    fig = _figure(figsize=(max(5, 0.9 * len(table)), 3.4))
    ax = fig.subplots()
    x = np.arange(len(table))
    w = 0.8 / len(pairs)
    for k, (mc, sc, lab) in enumerate(pairs):
        ax.bar(x + (k - (len(pairs) - 1) / 2) * w, table[mc], w, yerr=table[sc] if sc else None, capsize=2, label=lab)
    ax.set_xticks(x, table["display"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, frameon=False)
    ax.set_title(title, fontsize=9)
    return _save(fig, stem)
