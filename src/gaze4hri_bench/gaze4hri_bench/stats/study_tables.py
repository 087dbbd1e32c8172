"""Tables only the study's released analyser writes (GazeForHRI/Gaze4HRI@main), as pure
functions of subject-level wide tables or of the analyses' own tables. Each restates
one output file of a script (cited per function; no code copied); the analyses in
:mod:`.analyses` add them to their tables, and tests/bench/stats/test_study_tables.py
checks each against its definition recomputed by hand.
"""

from __future__ import annotations

import hashlib
import warnings

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.signal import savgol_filter
from scipy.stats import norm, pearsonr
from statsmodels.stats.meta_analysis import combine_effects

from .extended import ci95
from .inference import holm

__all__ = [
    "STUDY_ROWS",
    "describe",
    "group_descriptives",
    "wins_tally",
    "tiers",
    "paired_matrix",
    "slope_meta",
    "SLOPE_COEFS",
    "SLOPE_META_COLUMNS",
    "fixed_effect",
    "path_corners",
    "label_segments",
    "segment_regressions",
    "segment_meta",
    "SEGMENT_COLUMNS",
    "SEGMENT_META_COLUMNS",
    "CAM_COLUMNS",
    "pooled_mean_sd",
]

#: The study's target rows (point_analysis.py:332-349): R1 = P1, P2, P3 (farthest from the
#: subject), R2 = P4, P5, P6, R3 = P7, P8, P9 (closest).
STUDY_ROWS = {"R1": ("P1", "P2", "P3"), "R2": ("P4", "P5", "P6"), "R3": ("P7", "P8", "P9")}

DESC_COLUMNS = ["n", "mean", "sd", "se", "ci_low", "ci_high"]


def describe(x) -> dict:
    """n, mean, SD (ddof 1), SE and the 95 % t CI over the finite values of ``x``: the
    study's subject-level summary (e.g. point_analysis.py:882-914 ``_summ``,
    camera_viewpoint.py:138-172, line_movement_analysis_paper.py:655-716)."""
    x = np.asarray(x, float)
    x = x[np.isfinite(x)]
    n = x.size
    sd = float(x.std(ddof=1)) if n > 1 else np.nan
    lo, hi = ci95(x)
    return {
        "n": int(n),
        "mean": float(x.mean()) if n else np.nan,
        "sd": sd,
        "se": sd / np.sqrt(n) if n > 1 else np.nan,
        "ci_low": lo,
        "ci_high": hi,
    }


def group_descriptives(
    wide: pd.DataFrame, methods: list[str], groups: dict[str, tuple[str, ...]], factor: str
) -> pd.DataFrame:
    """Per method and group (a row R1-R3 or a column C1-C3 of the target grid) the subject-level
    descriptives of ``wide`` (index subject, columns (method, group)): the study's
    ``row_subject_level_descriptives`` / ``col_subject_level_descriptives`` files
    (point_analysis.py:332-368 for the groups, :882-914 for the summary, :940-950 for the calls).
    Returns method, factor, group, points, n, mean, sd, se, ci_low, ci_high."""
    rows = []
    for m in methods:
        for g, pts in groups.items():
            x = wide[(m, g)] if (m, g) in wide.columns else pd.Series(dtype=float)
            rows.append({"method": m, "factor": factor, "group": g, "points": ", ".join(pts), **describe(x)})
    return pd.DataFrame(rows, columns=["method", "factor", "group", "points", *DESC_COLUMNS])


def wins_tally(champions: pd.DataFrame, means: pd.DataFrame) -> pd.DataFrame:
    """The study's wins tally over the target points (point_analysis.py:504-620,
    ``pointwise_wins_tally``): per method the points where it is the champion, and, among
    the points without a champion, those where its mean is the lowest (ties within 1e-9 deg
    all count).

    champions: target, champion ("a; b" or ""), decisive. means: target, method, mean.
    Returns method, n_points_won, points_won, n_points_tied_topmean, points_tied_topmean,
    sorted by points won, then points tied at the top (both descending), then method."""
    won: dict[str, list[str]] = {m: [] for m in dict.fromkeys(means["method"].astype(str))}
    tied: dict[str, list[str]] = {m: [] for m in won}
    for r in champions.itertuples(index=False):
        if bool(r.decisive) and str(r.champion):
            for c in str(r.champion).split("; "):
                won.setdefault(c, []).append(str(r.target))
            continue
        g = means[means["target"].astype(str) == str(r.target)]
        if not len(g):
            continue
        best = g["mean"].min()
        for m in g.loc[np.isclose(g["mean"], best, rtol=0.0, atol=1e-9), "method"].astype(str):
            tied.setdefault(m, []).append(str(r.target))

    def key(p: str) -> tuple:
        return (int(p[1:]),) if p[1:].isdigit() else (10**9, p)

    out = pd.DataFrame(
        [
            {
                "method": m,
                "n_points_won": len(won[m]),
                "points_won": ", ".join(sorted(won[m], key=key)),
                "n_points_tied_topmean": len(tied.get(m, [])),
                "points_tied_topmean": ", ".join(sorted(tied.get(m, []), key=key)),
            }
            for m in won
        ],
        columns=["method", "n_points_won", "points_won", "n_points_tied_topmean", "points_tied_topmean"],
    )
    return out.sort_values(
        ["n_points_won", "n_points_tied_topmean", "method"], ascending=[False, False, True], kind="stable"
    ).reset_index(drop=True)


def tiers(pairs: pd.DataFrame, means: pd.Series, alpha: float) -> list[list[str]]:
    """The study's tiered model ranking (line_movement_analysis_paper.py:743-852
    ``_induce_preference_tiers``; the same rule in head_yaw_model_ranking.py:209-260):
    methods walked by ascending subject-level mean; a method joins the current tier unless
    it and the tier's last method differ significantly (Holm p < alpha, the higher mean
    the worse), then it opens the next tier.

    pairs: method_a, method_b, p_holm. means: method -> subject-level mean."""
    p = {
        frozenset((str(a), str(b))): float(q)
        for a, b, q in zip(pairs["method_a"], pairs["method_b"], pairs["p_holm"], strict=True)
    }
    order = [str(m) for m in means.dropna().sort_values(kind="stable").index]
    out: list[list[str]] = []
    for m in order:
        if out:
            prev = out[-1][-1]
            q = p.get(frozenset((prev, m)), np.nan)
            if not (np.isfinite(q) and q < alpha and means[m] != means[prev]):
                out[-1].append(m)
                continue
        out.append([m])
    return out


def paired_matrix(wide: pd.DataFrame, methods: list[str], a: str, b: str) -> pd.DataFrame:
    """Subject x condition matrix of the subjects with both conditions per method: the
    study's ``camera_viewpoint_subject_level_matrix.csv`` (camera_viewpoint.py:242-272).
    wide: index subject, columns (method, condition). Returns method, subject, a, b."""
    parts = []
    for m in methods:
        w = wide[m][[a, b]].dropna()
        parts.append(
            pd.DataFrame({"method": m, "subject": w.index.astype(str), a: w[a].to_numpy(), b: w[b].to_numpy()})
        )
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=["method", "subject", a, b])


#: The four coefficients of the study's per-video two-predictor fits: raw slopes (deg of error
#: per deg of abs(yaw) / abs(pitch)) and standardized betas (every variable z-scored within the video).
SLOPE_COEFS = ("b_yaw", "b_pitch", "beta_yaw", "beta_pitch")
SLOPE_META_COLUMNS = [
    "condition",
    "coef",
    "method",
    "videos",
    "frames",
    "estimate",
    "se",
    "z",
    "p_unc",
    "p_holm",
    "ci_low",
    "ci_high",
    "mean",
    "sd",
    "prop_pos",
]


def _zscore(x: np.ndarray) -> np.ndarray:
    s = x.std()  # population SD (ddof 0), as the study's _standardize
    return (x - x.mean()) / s if np.isfinite(s) and s > 0 else np.full_like(x, np.nan)


def _fit2(y: np.ndarray, yaw: np.ndarray, pitch: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """OLS y = a + b_yaw yaw + b_pitch pitch (statsmodels); (slopes, their SEs), NaN when degenerate."""
    X = np.column_stack([np.ones(y.size), yaw, pitch])
    if not (np.isfinite(X).all() and np.isfinite(y).all()) or y.size <= 3 or np.linalg.matrix_rank(X) < 3:
        return np.full(2, np.nan), np.full(2, np.nan)
    r = sm.OLS(y, X).fit()
    return np.asarray(r.params[1:], float), np.asarray(r.bse[1:], float)


def slope_meta(frames: pd.DataFrame, min_frames: int = 8) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The study's meta-analysis of per-video slopes in experiment 4.2
    (GazeForHRI/Gaze4HRI line_movement_analysis_paper.py:996-1208,
    ``run_twovar_abs_pitch_yaw_regressions_from_dbs``):

    - per video (subject, method, condition, trial) with at least ``min_frames`` valid frames
      (:1076-1078), OLS error = a + b_yaw abs(yaw) + b_pitch abs(pitch) of the ground-truth gaze
      (:1080-1084, ``_ols_2pred`` :88-142: classical SEs, s^2 (X'X)^-1 with n - 3 df), and the
      same fit on the variables z-scored within the video with the population SD (:1086-1090,
      ``_standardize`` :144-150), giving the standardized betas;
    - per (condition, method) and coefficient, the fixed-effect inverse-variance meta-analysis
      over the videos with a finite slope and SE > 0 (:1135-1175, ``_meta_one_coef``): weights
      1/SE^2, pooled estimate sum(w b)/sum(w), SE 1/sqrt(sum(w)) (:func:`fixed_effect`, statsmodels'
      ``combine_effects``), two-sided z-test against 0 with the normal distribution; also the unweighted mean
      and SD (ddof 1) of the slopes and
      the share of positive slopes;
    - Holm across the methods of one (condition, coefficient) (:1190-1200).

    The study restricts subjects to those with all four conditions for every method
    (:1044-1047); the caller passes those subjects' frames. ``ci_low``/``ci_high`` are the
    normal 95 % interval estimate +- 1.96 SE (not in the study's file).

    frames: subject, method, condition, trial, error_deg, abs_pitch_deg, abs_yaw_deg (valid frames).
    Returns (per-video fits: subject, method, condition, trial, n_frames and per coefficient the
    value and ``se_<coef>``; the meta table with :data:`SLOPE_META_COLUMNS`).
    """
    keys = ["subject", "method", "condition", "trial"]
    d = frames.dropna(subset=["error_deg", "abs_pitch_deg", "abs_yaw_deg"])
    rows = []
    for k, g in d.groupby(keys, sort=False, observed=True):
        if len(g) < min_frames:
            continue
        y, yaw, pitch = (g[c].to_numpy(float) for c in ("error_deg", "abs_yaw_deg", "abs_pitch_deg"))
        b, se = _fit2(y, yaw, pitch)
        bs, ses = _fit2(_zscore(y), _zscore(yaw), _zscore(pitch))
        rows.append(
            {
                **dict(zip(keys, k, strict=True)),
                "n_frames": len(g),
                "b_yaw": b[0],
                "se_b_yaw": se[0],
                "b_pitch": b[1],
                "se_b_pitch": se[1],
                "beta_yaw": bs[0],
                "se_beta_yaw": ses[0],
                "beta_pitch": bs[1],
                "se_beta_pitch": ses[1],
            }
        )
    vids = pd.DataFrame(rows, columns=[*keys, "n_frames"] + [c for b in SLOPE_COEFS for c in (b, f"se_{b}")])
    meta = []
    for (cond, m), g in vids.groupby(["condition", "method"], sort=False):
        for coef in SLOPE_COEFS:
            th, se = g[coef].to_numpy(float), g[f"se_{coef}"].to_numpy(float)
            ok = np.isfinite(th) & np.isfinite(se) & (se > 0)
            th, se, n = th[ok], se[ok], g["n_frames"].to_numpy()[ok]
            r = {"condition": cond, "coef": coef, "method": m, "videos": int(th.size), "frames": int(n.sum())}
            if th.size:
                est, s = fixed_effect(th, se**2)
                z = est / s
                r.update(
                    {
                        "estimate": est,
                        "se": s,
                        "z": z,
                        "p_unc": float(2.0 * norm.sf(abs(z))),
                        "ci_low": est - norm.ppf(0.975) * s,
                        "ci_high": est + norm.ppf(0.975) * s,
                        "mean": float(th.mean()),
                        "sd": float(th.std(ddof=1)) if th.size > 1 else np.nan,
                        "prop_pos": float((th > 0).mean()),
                    }
                )
            meta.append(r)
    out = pd.DataFrame(meta, columns=SLOPE_META_COLUMNS)
    for _, idx in out.groupby(["condition", "coef"], sort=False).groups.items():
        out.loc[idx, "p_holm"] = holm(out.loc[idx, "p_unc"].to_numpy(float))
    return vids, out


def fixed_effect(theta, variance) -> tuple[float, float]:
    """Fixed-effect inverse-variance pooling of the effects ``theta`` with sampling
    variances ``variance`` (weights 1/variance): (estimate sum(w theta)/sum(w), SE
    1/sqrt(sum(w))), as the study's ``_meta_one_coef`` (line_movement_analysis_paper.py:1135-1175)
    and its Fisher-z pooling (:419-503), computed by statsmodels' ``combine_effects``
    (``mean_effect_fe``, ``sd_eff_w_fe``). One effect gives itself and its SE."""
    theta, variance = np.asarray(theta, float), np.asarray(variance, float)
    with warnings.catch_warnings():  # one effect: the random-effects part divides by k - 1 = 0 (unused here)
        warnings.simplefilter("ignore", RuntimeWarning)
        r = combine_effects(theta, variance, method_re="chi2")
    return float(r.mean_effect_fe), float(r.sd_eff_w_fe)


# ------------------------------------------------------------------ line-scan segments
#: results columns of the camera's optical centre in the world (m), schema.py
CAM_COLUMNS = ("cam_world_x", "cam_world_y", "cam_world_z")
#: the study's Savitzky-Golay smoothing of the camera velocity: 21 samples of its 10 ms camera
#: poses, polynomial order 3 (line_movement_analysis.py:79-81; config.py:214-216), i.e. 0.21 s
SMOOTH_S, SMOOTH_ORDER = 0.21, 3
#: below this 95th-percentile speed (m/s) the camera counts as still (ours: the study's scans run
#: at 0.05 and 0.1 m/s, config.py:339-354; motion-capture noise smoothed over 0.21 s stays under it)
MIN_MOVING_MPS = 0.02


def path_corners(t_ns, pos, stop_frac: float = 0.2) -> np.ndarray:
    """Times (ns) where the moving camera momentarily stops between two moves: the corners
    of the study's line-scan paths (line_movement_analysis.py:44-98, ``extract_intersection_points``).

    As the study: the camera velocity from its positions (finite differences), smoothed by a
    Savitzky-Golay filter of order 3 over 0.21 s (its 21 samples at 100 Hz, :79-81), and a
    corner at the speed minimum (:85-98). The study searches fixed index windows tuned to its
    robot program's timing (:65-76); here (ours, for any path and frame rate) a stop is a run
    of frames slower than ``stop_frac`` x the path's 95th-percentile speed, a corner the
    slowest frame of each stop with motion before and after it (the path's start and end do
    not count, :58-59). Moves shorter than the smoothing window between stops or at the path's
    ends (noise, the filter's edges) count as stop; a
    path whose 95th-percentile speed is under :data:`MIN_MOVING_MPS` has no corner. A corner
    needs the camera to slow down (the study's robot stops at each, :56): a turn at full speed
    is not found.
    t_ns: (n,) frame times; pos: (n, 3) positions (NaN rows are left out). Sorted corner times.
    """
    t = np.asarray(t_ns, np.int64)
    p = np.asarray(pos, float).reshape(len(t), 3)
    ok = np.isfinite(p).all(axis=1)
    t, p = t[ok], p[ok]
    if t.size < 5:
        return np.zeros(0, np.int64)
    o = np.argsort(t, kind="stable")
    t, p = t[o], p[o]
    keep = np.r_[True, np.diff(t) > 0]  # one position per stamp
    t, p = t[keep], p[keep]
    if t.size < 5:
        return np.zeros(0, np.int64)
    ts = (t - t[0]) / 1e9
    v = np.gradient(p, ts, axis=0)
    dt = float(np.median(np.diff(ts)))
    win = int(round(SMOOTH_S / dt)) if dt > 0 else 0
    win = min(win + (1 - win % 2), t.size - (1 - t.size % 2))  # odd, at most the path's length
    if win > SMOOTH_ORDER:
        v = savgol_filter(v, win, SMOOTH_ORDER, axis=0)
    speed = np.linalg.norm(v, axis=1)
    peak = float(np.percentile(speed, 95))
    if not peak > MIN_MOVING_MPS:  # a still camera (float or sensor noise): no path to cut
        return np.zeros(0, np.int64)
    moving = speed > stop_frac * peak
    # runs of equal state: [start, end) per run
    edges = np.flatnonzero(np.diff(moving.astype(np.int8))) + 1
    starts, ends = np.r_[0, edges], np.r_[edges, moving.size]
    short = max(win, 1)
    last = starts.size - 1
    for k in range(starts.size):  # a blip of motion within a stop, or at the path's ends, is stop
        if (
            moving[starts[k]]
            and ends[k] - starts[k] < short
            and (k == 0 or not moving[starts[k - 1]])
            and (k == last or not moving[starts[k + 1]])
        ):
            moving[starts[k] : ends[k]] = False
    edges = np.flatnonzero(np.diff(moving.astype(np.int8))) + 1
    starts, ends = np.r_[0, edges], np.r_[edges, moving.size]
    out = [
        t[a + int(np.argmin(speed[a:b]))]
        for a, b in zip(starts, ends, strict=True)
        if not moving[a] and a > 0 and b < moving.size
    ]
    return np.asarray(out, np.int64)


_CORNERS: dict[bytes, np.ndarray] = {}


def _corners_memo(t: np.ndarray, p: np.ndarray) -> np.ndarray:
    """:func:`path_corners` remembered by the path's bytes: every (method, input) file of a run
    holds the same camera path per video, so it is cut once."""
    key = hashlib.blake2b(
        np.ascontiguousarray(t).tobytes() + np.ascontiguousarray(p).tobytes(), digest_size=16
    ).digest()
    c = _CORNERS.get(key)
    if c is None:
        if len(_CORNERS) > 50_000:
            _CORNERS.clear()
        c = _CORNERS[key] = path_corners(t, p)
    return c


def label_segments(paths: pd.DataFrame, frames: pd.DataFrame, keys=("subject", "trial")) -> pd.DataFrame:
    """Each frame's segment of its video's camera path: the study's partition of a video by
    the corner times (line_movement_analysis_paper.py:306-330): segment 0 = [t_first, c1],
    segment s = (c_s, c_s+1], the last up to the video's last frame.

    paths: every frame of the videos (valid or not) with ``keys``, t_ns and :data:`CAM_COLUMNS`;
    frames: the frames to label (``keys``, t_ns). Returns ``frames`` with ``segment`` (int,
    -1 when its video has no path) and ``n_segments`` (corners + 1)."""
    keys = list(keys)
    corners = {}
    pt, pp = paths["t_ns"].to_numpy(np.int64), paths[list(CAM_COLUMNS)].to_numpy(float)
    for k, idx in paths.groupby(keys, sort=False, observed=True).indices.items():
        corners[k if isinstance(k, tuple) else (k,)] = _corners_memo(pt[idx], pp[idx])
    seg = np.full(len(frames), -1, np.int64)
    nseg = np.zeros(len(frames), np.int64)
    t = frames["t_ns"].to_numpy(np.int64)
    for k, idx in frames.groupby(keys, sort=False, observed=True).indices.items():
        c = corners.get(k if isinstance(k, tuple) else (k,))
        if c is None:
            continue
        seg[idx] = np.searchsorted(c, t[idx], side="left")  # t == c_s stays in the earlier segment
        nseg[idx] = c.size + 1
    return frames.assign(segment=seg, n_segments=nseg)


SEGMENT_COLUMNS = [
    "subject",
    "method",
    "condition",
    "trial",
    "segment",
    "n_segments",
    "axis",
    "n_frames",
    "slope",
    "intercept",
    "r",
    "p",
]
SEGMENT_META_COLUMNS = [
    "condition",
    "segment",
    "method",
    "subjects",
    "videos",
    "rows",
    "fisher_rows",
    "fisher_z",
    "fisher_z_se",
    "z",
    "p_unc",
    "p_holm",
    "r_pooled",
    "slope_mean",
    "slope_sd",
    "r_mean",
    "r_sd",
]


def _ols1(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Slope and intercept of y = a + b x (the study's ``_ols_fit``, line_movement_analysis_paper.py:158-175:
    at least 3 points, NaN when x is constant)."""
    if x.size < 3:
        return np.nan, np.nan
    sxx = float(((x - x.mean()) ** 2).sum())
    if not sxx > 0:
        return np.nan, np.nan
    b = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    return b, float(y.mean() - b * x.mean())


def _pearson(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Pearson r and its two-sided p (scipy), NaN under 3 points or for a constant variable
    (the study's ``_pearson``, line_movement_analysis_paper.py:177-192)."""
    if x.size < 3 or not (np.ptp(x) > 0 and np.ptp(y) > 0):
        return np.nan, np.nan
    r = pearsonr(x, y)
    return float(r.statistic), float(r.pvalue)


def segment_regressions(frames: pd.DataFrame, min_frames: int = 3) -> pd.DataFrame:
    """The study's per-segment regressions of the line scans (line_movement_analysis_paper.py:194-403,
    ``run_abs_angle_regressions_from_dbs``): per video and main segment (the passes along the
    scan axis: segments 0, 2, 4 of the study's five, :334; here every even segment), over its
    valid frames (at least ``min_frames``, :340-344), OLS error = a + b x and Pearson's r, with
    x = abs(ground-truth yaw) on horizontal scans and abs(pitch) on vertical ones (:346-356).

    frames: valid frames with subject, method, condition (``h_*``/``v_*``), trial, segment,
    n_segments (:func:`label_segments`), error_deg, abs_pitch_deg, abs_yaw_deg.
    Returns :data:`SEGMENT_COLUMNS`, one row per (video, main segment)."""
    keys = ["subject", "method", "condition", "trial", "segment"]
    d = frames[(frames["segment"] >= 0) & (frames["segment"] % 2 == 0)].dropna(
        subset=["error_deg", "abs_pitch_deg", "abs_yaw_deg"]
    )
    rows = []
    for k, g in d.groupby(keys, sort=False, observed=True):
        if len(g) < min_frames:
            continue
        horizontal = str(k[2]).startswith("h")
        x = g["abs_yaw_deg" if horizontal else "abs_pitch_deg"].to_numpy(float)
        y = g["error_deg"].to_numpy(float)
        b, a = _ols1(x, y)
        r, p = _pearson(x, y)
        rows.append(
            {
                **dict(zip(keys, k, strict=True)),
                "n_segments": int(g["n_segments"].iloc[0]),
                "axis": "abs_yaw" if horizontal else "abs_pitch",
                "n_frames": len(g),
                "slope": b,
                "intercept": a,
                "r": r,
                "p": p,
            }
        )
    out = pd.DataFrame(rows, columns=SEGMENT_COLUMNS)
    return out.astype({"segment": "int64", "n_segments": "int64", "n_frames": "int64"})


def segment_meta(rows: pd.DataFrame) -> pd.DataFrame:
    """The study's aggregation of the segment regressions (line_movement_analysis_paper.py:403-525,
    ``_agg_one_family``): per (condition, segment) family and method, the per-video Pearson r
    of the rows with at least 4 frames Fisher-transformed, z = atanh(r) (r clipped to
    +-0.999999), pooled with fixed-effect weights n - 3 (:func:`fixed_effect` with variance
    1/(n - 3)), a two-sided normal z-test of the pooled z against 0, r_pooled = tanh(z);
    the unweighted mean and SD (ddof 1) of the slopes and of r over all the method's rows
    (:471-485); Holm across the methods of the family (:406-417, :501-503).

    rows: :func:`segment_regressions`. Returns :data:`SEGMENT_META_COLUMNS`."""
    out = []
    for (cond, seg), fam in rows.groupby(["condition", "segment"], sort=False, observed=True):
        part = []
        for m, g in fam.groupby("method", sort=False, observed=True):
            ok = g[np.isfinite(g["r"].to_numpy(float)) & (g["n_frames"] >= 4)]
            rec = {
                "condition": cond,
                "segment": int(seg),
                "method": m,
                "subjects": int(g["subject"].nunique()),
                "videos": int(g[["subject", "trial"]].drop_duplicates().shape[0]),
                "rows": len(g),
                "fisher_rows": len(ok),
            }
            if len(ok):
                zi = np.arctanh(np.clip(ok["r"].to_numpy(float), -0.999999, 0.999999))
                zbar, se = fixed_effect(zi, 1.0 / (ok["n_frames"].to_numpy(float) - 3.0))
                z = zbar / se
                rec.update(
                    {
                        "fisher_z": zbar,
                        "fisher_z_se": se,
                        "z": z,
                        "p_unc": float(2.0 * norm.sf(abs(z))),
                        "r_pooled": float(np.tanh(zbar)),
                    }
                )
            for c in ("slope", "r"):
                x = g[c].to_numpy(float)
                x = x[np.isfinite(x)]
                rec[f"{c}_mean"] = float(x.mean()) if x.size else np.nan
                rec[f"{c}_sd"] = float(x.std(ddof=1)) if x.size > 1 else np.nan
            part.append(rec)
        f = pd.DataFrame(part, columns=SEGMENT_META_COLUMNS)
        f["p_holm"] = holm(f["p_unc"].to_numpy(float))
        out.append(f)
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=SEGMENT_META_COLUMNS)


def pooled_mean_sd(videos: pd.DataFrame) -> tuple[float, float, int]:
    """Frame-pooled mean and SD of the error over every valid frame of ``videos`` from the
    videos' frame counts n_i, means m_i and population variances s_i^2: mean = sum(n m)/N,
    var = (sum(n s^2) + sum(n m^2) - N mean^2)/N (the study's ``_weighted_pooled_mean_std``,
    head_yaw_model_ranking.py:107-149). videos: n_valid, error_mean and (for the SD) error_var.
    Returns (mean, sd, N); SD NaN without error_var."""
    v = videos[np.isfinite(videos["error_mean"].to_numpy(float)) & (videos["n_valid"].to_numpy(float) > 0)]
    n, m = v["n_valid"].to_numpy(float), v["error_mean"].to_numpy(float)
    N = float(n.sum())
    if not N:
        return np.nan, np.nan, 0
    mean = float((n * m).sum() / N)
    s2 = v["error_var"].to_numpy(float) if "error_var" in v else np.full(n.size, np.nan)
    var = ((n * s2).sum() + (n * m**2).sum() - N * mean**2) / N
    return mean, float(np.sqrt(max(var, 0.0))) if np.isfinite(var) else np.nan, int(N)
