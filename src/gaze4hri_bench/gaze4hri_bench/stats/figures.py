"""Figures of the report (matplotlib Figure objects, no pyplot state), each written as PNG and SVG.

Every function takes the tidy tables of :mod:`gaze4hri_bench.stats.experiments` and a
path stem, writes ``stem.png`` and ``stem.svg`` and returns the two paths.

Colour is keyed, never positional (the colour table is :mod:`gaze4hri_bench.style`, shared with
the review clips): :func:`method_color` gives a method the same colour in every figure, and
conditions (fixed camera / arc, crop / rectified, mutual-gaze scans) take :data:`CONDITION_COLORS`,
a separate palette of greys and earth tones that shares no hue with the methods'. Baselines
(weight-free methods: ``head_pose``, ``straight``) are drawn as dashed reference lines, not bars,
and never set the scale: a baseline far above the networks is written at the top edge ("off scale").
Spread is the subject-level 95 % t confidence interval everywhere (figures and tables
alike): mean +/- t(0.975, n-1) SD / sqrt(n) over subjects (Sezer et al.: the subject is
the unit of analysis).
"""

from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.protocol import P_GRID

from ..style import BASELINES, CONDITION_COLORS, METHOD_COLORS, condition_color, contrast_ratio, method_color

__all__ = [
    "METHOD_COLORS",
    "CONDITION_COLORS",
    "BASELINES",
    "method_color",
    "condition_color",
    "star_color",
    "is_baseline",
    "t_ci",
    "SUBJECT_VIEW_GRID",
    "illumination_levels",
    "target_heatmap",
    "conflict_slopes",
    "eccentricity",
    "paired_bars",
    "condition_bars",
    "significance_matrix",
]

STYLE = {
    "svg.hashsalt": "gaze4hri",
    "svg.fonttype": "none",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
}

_HATCH = ("", "//", "..", "xx", "\\\\", "++")
#: The 3x3 grid as the subject sees the table: top row farthest, the subject's left is
#: the camera's right (protocol.P_GRID names columns from the camera).
SUBJECT_VIEW_GRID = (
    ("farthest", ("right", "middle", "left")),
    ("middle", ("right", "middle", "left")),
    ("closest", ("right", "middle", "left")),
)
_SUBJECT_COLS = ("subject's left", "middle", "subject's right")


def star_color(rgba) -> str:
    """Black or white, whichever contrasts more with a cell of colour ``rgba`` (0-1
    floats): significance stars stay legible on the darkest cells of a diverging scale
    (WCAG 2 relative luminance; black wins above about 0.18)."""
    c = np.asarray(rgba, float)[:3] * 255.0
    return "#000000" if contrast_ratio(c, (0, 0, 0)) >= contrast_ratio(c, (255, 255, 255)) else "#ffffff"


@functools.lru_cache(maxsize=256)
def is_baseline(method: str) -> bool:
    """Weight-free baseline (head_pose, straight, or registered as kind ``baseline``)."""
    m = str(method)
    if m in BASELINES:
        return True
    try:
        from ..methods import METHODS

        return METHODS.get(m).kind == "baseline"
    except Exception:  # noqa: BLE001 - unknown names are networks for drawing purposes
        return False


def t_ci(mean, sd, n) -> tuple[np.ndarray, np.ndarray]:
    """95 % t confidence interval over subjects from mean, SD (ddof 1) and n (NaN where n < 2)."""
    from scipy import stats

    mean, sd, n = (np.asarray(x, dtype=float) for x in (mean, sd, n))
    with np.errstate(invalid="ignore", divide="ignore"):
        h = stats.t.ppf(0.975, np.where(n >= 2, n - 1, np.nan)) * sd / np.sqrt(n)
    return mean - h, mean + h


def _ci_cols(
    t: pd.DataFrame, mean: str = "mean", sd: str = "sd", lo: str = "ci_low", hi: str = "ci_high"
) -> tuple[np.ndarray, np.ndarray]:
    if lo in t and hi in t:
        return t[lo].to_numpy(float), t[hi].to_numpy(float)
    n = t["n"] if "n" in t else np.full(len(t), np.nan)
    return t_ci(t[mean], t[sd], n)


def _figure(**kw):
    """A pyplot-free Figure: no global backend switch, no figure registry to leak into."""
    from matplotlib.figure import Figure

    return Figure(**kw)


def _styled(fn):
    """Run a figure function under the report's style without touching global rcParams."""

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


def _split(table: pd.DataFrame, col: str = "method") -> tuple[pd.DataFrame, pd.DataFrame]:
    """(networks, baselines); with no network the baselines are the data."""
    b = table[col].astype(str).map(is_baseline).to_numpy(bool) if col in table else np.zeros(len(table), bool)
    if b.all():
        return table, table.iloc[0:0]
    return table[~b], table[b]


def _reference_lines(ax, refs: list[tuple[str, float, str]], top: float) -> str:
    """Baselines as dashed horizontal lines; those above ``top`` are returned as a note
    ("off scale (baselines): ...") for the title instead of stretching the axis."""
    off = []
    for lab, v, color in refs:
        if not np.isfinite(v):
            continue
        if v <= top:
            ax.axhline(v, color=color, ls="--", lw=1.1, zorder=1)
            ax.annotate(
                f"{lab} {v:.1f}",
                (0.0, v),
                xycoords=("axes fraction", "data"),
                xytext=(2, 1),
                textcoords="offset points",
                fontsize=7,
                color=color,
                va="bottom",
                ha="left",
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8},
            )
        else:
            off.append(f"{lab} {v:.1f}")
    return ("off scale (baselines): " + "; ".join(off)) if off else ""


def _top(values) -> float:
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    return float(v.max()) * 1.08 if v.size else 1.0


@_styled
def illumination_levels(table: pd.DataFrame, stem: Path) -> list[Path]:
    """Mean error by illumination level, one line per network in its colour, 95 % t CI over subjects;
    baselines as dashed lines."""
    fig = _figure(figsize=(6.4, 3.6), layout="constrained")
    ax = fig.subplots()
    nets, base = _split(table)
    levels = sorted({int(x) for x in table["level"]})
    pos = {lv: k for k, lv in enumerate(levels)}
    top = []
    for k, (m, g) in enumerate(nets.groupby("method", sort=False)):
        g = g.sort_values("level")
        lo, hi = _ci_cols(g)
        x = np.array([pos[int(lv)] for lv in g["level"]]) + (k - (nets["method"].nunique() - 1) / 2) * 0.04
        ax.errorbar(
            x,
            g["mean"],
            yerr=[g["mean"] - lo, hi - g["mean"]],
            marker="o",
            ms=4,
            capsize=2,
            lw=1.3,
            color=method_color(m),
            label=g["display"].iloc[0] if "display" in g else m,
        )
        top.extend(hi)
    limit = _top(top)
    off = []
    for m, g in base.groupby("method", sort=False):
        g = g.sort_values("level")
        name = g["display"].iloc[0] if "display" in g else m
        if g["mean"].max() <= limit:
            ax.plot(
                [pos[int(lv)] for lv in g["level"]],
                g["mean"],
                ls="--",
                marker="",
                lw=1.1,
                color=method_color(m),
                label=f"{name} (baseline)",
            )
        else:
            off.append((f"{name} (mean of levels)", float(g["mean"].mean()), method_color(m)))
    note = _reference_lines(ax, off, limit)
    ax.set_xticks(range(len(levels)), [str(lv) for lv in levels])
    ax.set_ylim(bottom=0, top=limit)
    ax.set_xlabel("illumination level (%)")
    ax.set_ylabel("angular error (deg), mean and 95 % CI")
    ax.legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("Error by illumination level (experiment 1)" + (f"\n{note}" if note else ""), fontsize=9)
    return _save(fig, stem)


@_styled
def target_heatmap(table: pd.DataFrame, stem: Path) -> list[Path]:
    """3x3 heat map of the mean error per point, one panel per method, laid out as the subject sees the table.

    Top row: farthest from the subject (the camera is beyond it); the subject's left is
    the camera's right. The colour scale spans the networks only, so that they can be
    told apart; baselines are printed on a blank grid, not coloured.
    """
    nets, base = _split(table)
    methods = list(dict.fromkeys(nets["method"].astype(str))) + list(dict.fromkeys(base["method"].astype(str)))
    disp = dict(
        zip(table["method"].astype(str), table["display"] if "display" in table else table["method"], strict=False)
    )
    nr, nc = _grid(len(methods))
    fig = _figure(figsize=(2.7 * nc + 0.8, 2.5 * nr + 0.5), layout="constrained")
    axes = fig.subplots(nr, nc, squeeze=False)
    vmin, vmax = float(nets["mean"].min()), float(nets["mean"].max())
    if not vmax > vmin:
        vmax = vmin + 1.0
    im = None
    for k, (ax, m) in enumerate(zip(axes.flat, methods, strict=False)):
        g = table[table["method"].astype(str) == m].set_index("target")["mean"]
        pts = [[P_GRID[r][c] for c in cols] for r, cols in SUBJECT_VIEW_GRID]
        grid = np.array([[g.get(p, np.nan) for p in row] for row in pts], dtype=float)
        ref = m in set(base["method"].astype(str))
        if ref:
            ax.imshow(np.zeros_like(grid), cmap="Greys", vmin=0, vmax=10)
        else:
            im = ax.imshow(grid, cmap="viridis_r", vmin=vmin, vmax=vmax)
        for i in range(3):
            for j in range(3):
                if np.isfinite(grid[i, j]):
                    dark = not ref and grid[i, j] > (vmin + vmax) / 2
                    ax.text(
                        j,
                        i,
                        f"{pts[i][j]}\n{grid[i, j]:.1f}",
                        ha="center",
                        va="center",
                        fontsize=7,
                        color="w" if dark else "k",
                    )
        ax.set_xticks(range(3), _SUBJECT_COLS if k // nc == nr - 1 or k + nc >= len(methods) else [], fontsize=6)
        ax.set_yticks(range(3), [r for r, _ in SUBJECT_VIEW_GRID] if k % nc == 0 else [], fontsize=7)
        ax.set_title(
            f"{disp.get(m, m)}" + (" (baseline, not on scale)" if ref else ""),
            fontsize=8,
            color=method_color(m) if not ref else "#333333",
        )
    for ax in axes.flat[len(methods) :]:
        ax.axis("off")
    if im is not None:
        fig.colorbar(im, ax=axes, shrink=0.7, label="mean error (deg)" + (", networks only" if len(base) else ""))
    fig.suptitle(
        "Error per target point (experiment 4.1), seen from the subject: top row farthest, camera beyond it", fontsize=9
    )
    return _save(fig, stem)


@_styled
def conflict_slopes(videos: pd.DataFrame, slopes: pd.DataFrame, order: list[str] | None, stem: Path) -> list[Path]:
    """Video mean error vs video mean conflict with each subject's fitted line, one panel per method
    (``order``: display names)."""
    from matplotlib.collections import LineCollection

    methods = [m for m in (order or []) if m in set(slopes["display"])] or list(dict.fromkeys(slopes["display"]))
    nr, nc = _grid(len(methods))
    fig = _figure(figsize=(3 * nc, 2.6 * nr + 0.6), layout="constrained")
    axes = fig.subplots(nr, nc, squeeze=False, sharex=True)
    xcol = "conflict_mean"
    xr = np.array([np.nanmin(videos[xcol]), np.nanmax(videos[xcol])])
    for ax, m in zip(axes.flat, methods, strict=False):
        s = slopes[slopes["display"] == m]
        mid = str(s["method"].iloc[0])
        col = method_color(mid)
        v = videos[videos["method"].astype(str) == mid]
        ax.scatter(v[xcol], v["error_mean"], s=4, alpha=0.35, color="0.4", linewidths=0)
        xs = np.repeat(xr[None, :], len(s), 0)
        ys = s["intercept"].to_numpy()[:, None] + s["slope"].to_numpy()[:, None] * xs
        ax.add_collection(LineCollection(np.stack([xs, ys], axis=-1), colors=col, alpha=0.3, linewidths=0.7))
        ax.plot(
            xr,
            s["intercept"].mean() + s["slope"].mean() * xr,
            color=col,
            lw=2.2,
            label=f"mean slope {s['slope'].mean():.2f}",
        )
        ax.set_title(m + (" (baseline)" if is_baseline(mid) else ""), fontsize=8)
        ax.legend(fontsize=6, frameon=False, loc="best")
    for ax in axes.flat[len(methods) :]:
        ax.axis("off")
    fig.supxlabel("video mean head-gaze conflict (deg)", fontsize=8)
    fig.supylabel("video mean error (deg)", fontsize=8)
    fig.suptitle("Error vs head-gaze conflict with subject slopes (experiment 3)", fontsize=9)
    return _save(fig, stem)


@_styled
def eccentricity(frames: pd.DataFrame, stem: Path, bin_deg: float = 2.5, min_frames: int = 20) -> list[Path]:
    """Error in bins of |yaw| and |pitch| of the ground-truth gaze during mutual gaze, per method.

    Subject level, as everywhere in the report: each subject's mean error in a bin, then
    the mean over subjects with its 95 % t CI (band; networks only, baselines dashed).
    Bins with fewer than ``min_frames`` frames or 2 subjects are left out.
    """
    fig = _figure(figsize=(8.4, 3.3), layout="constrained")
    axes = fig.subplots(1, 2, sharey=True)
    for ax, col, lab in ((axes[0], "abs_yaw_deg", "|yaw| (deg)"), (axes[1], "abs_pitch_deg", "|pitch| (deg)")):
        b = (frames[col] // bin_deg) * bin_deg + bin_deg / 2
        keys = ["method", "display", "bin"]
        per = (
            frames.assign(bin=b)
            .groupby([*keys, "subject"], observed=True, sort=False)["error_deg"]
            .agg(["mean", "count"])
            .reset_index()
        )
        g = (
            per.groupby(keys, observed=True, sort=False)
            .agg(mean=("mean", "mean"), sd=("mean", "std"), n=("subject", "nunique"), frames=("count", "sum"))
            .reset_index()
        )
        for (m, name), gg in g.groupby(["method", "display"], sort=False, observed=True):
            gg = gg[(gg["frames"] >= min_frames) & (gg["n"] >= 2)].sort_values("bin")
            ref = is_baseline(m)
            ax.plot(
                gg["bin"],
                gg["mean"],
                marker="" if ref else ".",
                ls="--" if ref else "-",
                color=method_color(m),
                label=name + (" (baseline)" if ref else ""),
            )
            if not ref and len(gg):
                lo, hi = t_ci(gg["mean"], gg["sd"], gg["n"])
                ax.fill_between(gg["bin"], lo, hi, color=method_color(m), alpha=0.12, linewidth=0)
        ax.set_xlabel(lab)
    axes[0].set_ylabel("error (deg), mean over subjects, 95 % CI")
    axes[1].legend(fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.suptitle("Mutual gaze: error vs eccentricity (experiment 4.2)", fontsize=9)
    return _save(fig, stem)


@_styled
def condition_bars(
    table: pd.DataFrame,
    settings: list[tuple[str, str, str]],
    title: str,
    stem: Path,
    ylabel: str = "angular error (deg)",
) -> list[Path]:
    """Grouped bars per network, one bar per condition in the condition's colour (not a method colour), 95 % t CI.

    ``settings``: (mean column, SD column, label) per condition; the CI uses the
    table's ``n`` (subjects). Baseline rows are dashed reference lines per condition.
    """
    nets, base = _split(table)
    fig = _figure(figsize=(max(5.5, 0.95 * len(nets) + 2.5), 3.6), layout="constrained")
    ax = fig.subplots()
    x = np.arange(len(nets))
    w = 0.8 / len(settings)
    n = nets["n"] if "n" in nets else pd.Series(np.nan, index=nets.index)
    top = []
    for k, (mc, sc, lab) in enumerate(settings):
        lo, hi = t_ci(nets[mc], nets[sc], n) if sc else (nets[mc].to_numpy(float), nets[mc].to_numpy(float))
        err = np.vstack([nets[mc] - lo, hi - nets[mc]])
        ax.bar(
            x + (k - (len(settings) - 1) / 2) * w,
            nets[mc],
            w,
            yerr=np.where(np.isfinite(err), err, 0),
            capsize=2,
            label=lab,
            color=condition_color(lab),
            edgecolor="#222222",
            linewidth=0.5,
            hatch=_HATCH[k % len(_HATCH)],
            error_kw={"lw": 0.8},
        )
        top.extend(np.where(np.isfinite(hi), hi, nets[mc]))
    limit = _top(top)
    # one line per baseline: its mean over the conditions (each condition's value is in the table)
    many = len(settings) > 1
    refs = [
        (
            f"{r.display if 'display' in base else r.method}" + (" (mean over conditions)" if many else ""),
            float(np.nanmean([float(getattr(r, mc)) for mc, _sc, _lab in settings])),
            method_color(r.method),
        )
        for r in base.itertuples()
    ]
    note = _reference_lines(ax, refs, limit)
    ax.set_ylim(0, limit)
    names = nets["display"] if "display" in nets else nets["method"]
    ax.set_xticks(x, names, rotation=30, ha="right", fontsize=8)
    for tick, m in zip(ax.get_xticklabels(), nets["method"].astype(str), strict=False):
        tick.set_color(method_color(m))
    ax.set_ylabel(ylabel + ", mean and 95 % CI" if settings[0][1] else ylabel)
    ax.legend(
        fontsize=7, frameon=False, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="condition", title_fontsize=7
    )
    ax.set_title(title + (f"\n{note}" if note else ""), fontsize=9)
    return _save(fig, stem)


#: Former name of :func:`condition_bars` (same arguments).
paired_bars = condition_bars


@_styled
def significance_matrix(
    pw: pd.DataFrame,
    stem: Path,
    title: str,
    facet: str | None = None,
    alpha: float = 0.05,
    a: str = "display_a",
    b: str = "display_b",
    p: str = "p_holm",
) -> list[Path]:
    """Pairwise tests as a method x method matrix: colour = mean difference (row - column, deg),
    stars = Holm-corrected p (* < alpha, ** < 0.01, *** < 0.001); one panel per ``facet`` value.
    Networks only when the table has networks (baseline pairs stay in the tables)."""
    from matplotlib.colors import TwoSlopeNorm

    ma, mb = a.replace("display", "method"), b.replace("display", "method")
    if ma in pw and mb in pw:  # networks only: baselines would set the colour scale (they are in the tables)
        nb = ~(pw[ma].astype(str).map(is_baseline) | pw[mb].astype(str).map(is_baseline))
        if nb.any():
            pw = pw[nb]
    groups = list(pw.groupby(facet, sort=False)) if facet else [(None, pw)]
    names = list(dict.fromkeys(list(pw[a]) + list(pw[b])))
    nc = min(len(groups), 2)
    nr = int(np.ceil(len(groups) / nc))
    side = 0.42 * len(names) + 1.4
    fig = _figure(figsize=(side * nc + 0.9, side * nr + 0.4), layout="constrained")
    axes = fig.subplots(nr, nc, squeeze=False)
    lim = float(np.nanmax(np.abs(pw["mean_diff"]))) if len(pw) and np.isfinite(pw["mean_diff"]).any() else 1.0
    norm = TwoSlopeNorm(0.0, -max(lim, 1e-9), max(lim, 1e-9))
    im = None
    for k, (ax, (key, g)) in enumerate(zip(axes.flat, groups, strict=False)):
        idx = {n: i for i, n in enumerate(names)}
        mat = np.full((len(names), len(names)), np.nan)
        star = np.full(mat.shape, "", dtype=object)
        for r in g.itertuples():
            i, j = idx[getattr(r, a)], idx[getattr(r, b)]
            d, pv = float(r.mean_diff), float(getattr(r, p))
            s = "***" if pv < 0.001 else "**" if pv < 0.01 else "*" if pv < alpha else ""
            mat[i, j], mat[j, i] = d, -d
            star[i, j] = star[j, i] = s
        im = ax.imshow(mat, cmap="RdBu_r", norm=norm)
        ax.imshow(np.where(np.eye(len(names), dtype=bool), 1.0, np.nan), cmap="Greys", vmin=0, vmax=4)
        for i in range(len(names)):
            for j in range(len(names)):
                if star[i, j]:  # white on the dark ends of the scale, black elsewhere (contrast >= 4.5:1)
                    ax.text(
                        j,
                        i,
                        star[i, j],
                        ha="center",
                        va="center",
                        fontsize=7,
                        color=star_color(im.cmap(norm(mat[i, j]))),
                    )
        show_x = k // nc == nr - 1 or k + nc >= len(groups)
        ax.set_xticks(range(len(names)), names if show_x else [], rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(names)), names if k % nc == 0 else [], fontsize=7)
        if key is not None:
            ax.set_title(f"{facet} {key}", fontsize=8)
    for ax in axes.flat[len(groups) :]:
        ax.axis("off")
    if im is not None:
        fig.colorbar(im, ax=axes, shrink=0.7, label="mean difference row - column (deg)")
    fig.suptitle(f"{title}; * p < {alpha}, ** p < 0.01, *** p < 0.001 ({p.replace('_', ' ')})", fontsize=9)
    return _save(fig, stem)
