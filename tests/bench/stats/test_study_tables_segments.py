"""Issue 23: the study's line-scan segment regressions (GazeForHRI/Gaze4HRI@main
line_movement_analysis_paper.py:194-525, corners from line_movement_analysis.py:44-98) and
its arc model tiers (head_yaw_model_ranking.py:107-264), each against its definition
recomputed by hand with numpy/scipy on small synthetic data with planted answers: corner
times, segment slopes, a tier split and frame-pooled moments.
"""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gaze4hri_bench.schema import METADATA_KEY, SCHEMA_VERSION
from gaze4hri_bench.stats import analyses as A
from gaze4hri_bench.stats.analysis_profiles import STUDY
from gaze4hri_bench.stats.study_tables import (
    SEGMENT_META_COLUMNS,
    label_segments,
    path_corners,
    pooled_mean_sd,
    segment_meta,
    segment_regressions,
)
from scipy import stats

pytestmark = pytest.mark.unit

FPS = 30.0
T0 = 1_700_000_000_000_000_000


def _raster(axis: str, v: float = 0.1, ramp: float = 0.3, dwell: float = 0.4, noise: float = 0.0, seed: int = 0):
    """A study-like scan (its robot program's shape, line_movement_analysis.py:58-76): three
    passes along the scan axis joined by two short perpendicular moves, each move a trapezoid
    in speed (ramps of ``ramp`` s) so the camera stops at every corner; still for ``dwell`` s
    before and after. Sampled at 30 fps. Returns (t_ns, positions (n, 3), planted corner times
    (ns), segment of each frame by construction)."""
    along, across = (
        (np.array([0, 1.0, 0]), np.array([0, 0, 1.0]))
        if axis == "h"
        else (np.array([0, 0, 1.0]), np.array([0, 1.0, 0]))
    )
    moves = (
        [(-along, 0.5), (-across, 0.1), (along, 0.5), (-across, 0.1), (-along, 0.5)]
        if axis == "h"
        else [(-along, 0.2), (-across, 0.25), (along, 0.2), (-across, 0.25), (-along, 0.2)]
    )
    dt = 1e-3
    vel, seg = [np.zeros((int(dwell / dt), 3))], [np.zeros(int(dwell / dt), int)]
    for k, (d, length) in enumerate(moves):
        T = length / v + ramp
        t = np.arange(0, T, dt)
        s = v * np.minimum(1.0, np.minimum(t / ramp, (T - t) / ramp))
        vel.append(s[:, None] * d)
        seg.append(np.full(t.size, k))
    vel.append(np.zeros((int(dwell / dt), 3)))
    seg.append(np.full(int(dwell / dt), len(moves) - 1))
    vel, seg = np.concatenate(vel), np.concatenate(seg)
    pos = np.array([0.5, 0.25, 1.2]) + np.cumsum(vel, axis=0) * dt
    corners = np.flatnonzero(np.diff(seg) != 0) * dt  # the stop between two moves
    tf = np.arange(0.0, seg.size * dt, 1.0 / FPS)
    idx = np.minimum((tf / dt).round().astype(int), seg.size - 1)
    p = pos[idx] + np.random.default_rng(seed).normal(0, noise, (tf.size, 3))
    return T0 + np.round(tf * 1e9).astype(np.int64), p, T0 + np.round(corners * 1e9).astype(np.int64), seg[idx]


@pytest.mark.parametrize("axis,v,noise", [("h", 0.1, 0.0002), ("v", 0.05, 0.0001), ("h", 0.05, 0.0)])
def test_path_corners_at_the_planted_stops(axis, v, noise):
    """Four corners, each within a frame and a half of the planted stop; the still start and end
    are not corners (line_movement_analysis.py:58-59)."""
    t, p, want, _ = _raster(axis, v=v, noise=noise)
    got = path_corners(t, p)
    assert got.size == 4
    assert np.abs(got - want).max() <= 1.5e9 / FPS


def test_path_corners_none_on_a_single_line_or_a_still_camera():
    """One straight move has no corner (one segment; our scans are rasters with four,
    tests/bench/stats/test_line_scan_corners.py); a still camera has none either."""
    t = T0 + np.round(np.arange(0, 4, 1 / FPS) * 1e9).astype(np.int64)
    s = np.clip((t - T0) / 1e9 - 0.5, 0, 3) / 3  # still, 3 s move, still
    p = np.column_stack([np.full(t.size, 0.5), 0.25 - 0.5 * s, np.full(t.size, 1.2)])
    assert path_corners(t, p).size == 0
    assert path_corners(t, np.tile([0.5, 0.0, 1.2], (t.size, 1))).size == 0
    assert path_corners(t[:3], p[:3]).size == 0
    q = p.copy()
    q[::2] = np.nan  # NaN rows are left out, the rest still has no corner
    assert path_corners(t, q).size == 0


def test_label_segments_study_boundaries():
    """Segment 0 = [t_first, c1], segment s = (c_s, c_s+1] (line_movement_analysis_paper.py:318-330):
    a frame exactly at a corner stays in the earlier segment; a video without a path gets -1."""
    t, p, _, _ = _raster("h")
    c = path_corners(t, p)
    paths = pd.DataFrame(
        {
            "subject": "S1",
            "trial": "mutual_h_fast",
            "t_ns": t,
            "cam_world_x": p[:, 0],
            "cam_world_y": p[:, 1],
            "cam_world_z": p[:, 2],
        }
    )
    probe = np.r_[t[0], c, c + 1, t[-1]]
    frames = pd.DataFrame(
        {"subject": ["S1"] * probe.size + ["S2"], "trial": "mutual_h_fast", "t_ns": np.r_[probe, t[0]]}
    )
    out = label_segments(paths, frames)
    assert out["segment"].tolist() == [0, 0, 1, 2, 3, 1, 2, 3, 4, 4, -1]
    assert out["n_segments"].tolist() == [5] * probe.size + [0]


def _segment_frames(seed=1):
    """Valid frames with known segments: on the main segments (even) error = a + b x + noise with
    b planted per method and axis (x = |yaw| on h scans, |pitch| on v), the connectors (odd) a
    different relation that must not enter; one main segment with 2 valid frames (dropped, under
    3) and one with 3 (a row, but out of the Fisher pooling, under 4)."""
    rng = np.random.default_rng(seed)
    slopes = {("m1", "h"): 0.30, ("m2", "h"): 0.0, ("m1", "v"): 0.10, ("m2", "v"): -0.2}
    rows = []
    for s in range(6):
        for m in ("m1", "m2"):
            for cond in ("h_fast", "v_slow"):
                ax = cond[0]
                for seg in range(5):
                    n = (
                        2
                        if (s == 0 and m == "m1" and cond == "h_fast" and seg == 2)
                        else 3
                        if (s == 1 and m == "m2" and seg == 4)
                        else 25 + 3 * s
                    )
                    x = rng.uniform(0, 25, n)
                    e = 5 + slopes[(m, ax)] * x + rng.normal(0, 0.5 + 0.2 * s, n) if seg % 2 == 0 else 40 - 1.0 * x
                    other = rng.uniform(0, 10, n)
                    rows.append(
                        pd.DataFrame(
                            {
                                "subject": f"S{s}",
                                "method": m,
                                "condition": cond,
                                "trial": f"mutual_{cond}",
                                "segment": seg,
                                "n_segments": 5,
                                "error_deg": e,
                                "abs_yaw_deg": x if ax == "h" else other,
                                "abs_pitch_deg": other if ax == "h" else x,
                            }
                        )
                    )
    return pd.concat(rows, ignore_index=True), slopes


def test_segment_regressions_and_meta_by_hand():
    """line_movement_analysis_paper.py:334-525: per video and main segment (0, 2, 4) OLS slope and
    Pearson r over at least 3 valid frames; per (condition, segment) and method Fisher z of r with
    weights n - 3 over rows with n >= 4, normal two-sided z-test, tanh back; unweighted slope/r
    mean and SD over all rows; Holm across the methods of the family. Planted slopes recovered."""
    f, slopes = _segment_frames()
    rows = segment_regressions(f)
    assert set(rows["segment"]) == {0, 2, 4}
    assert len(rows) == 6 * 2 * 2 * 3 - 1  # the 2-frame segment is dropped
    ref = {}
    for (s, m, c, seg), g in f[f.segment % 2 == 0].groupby(["subject", "method", "condition", "segment"]):
        if len(g) < 3:
            continue
        x = (g.abs_yaw_deg if c.startswith("h") else g.abs_pitch_deg).to_numpy()
        y = g.error_deg.to_numpy()
        b, a = np.polyfit(x, y, 1)
        r = np.corrcoef(x, y)[0, 1]
        n = len(g)
        tt = r * np.sqrt((n - 2) / (1 - r**2))
        ref[(s, m, c, seg)] = (n, b, a, r, 2 * stats.t.sf(abs(tt), n - 2))
    got = rows.set_index(["subject", "method", "condition", "segment"])
    for k, (n, b, a, r, p) in ref.items():
        g = got.loc[k]
        assert g.n_frames == n and (g.slope, g.intercept, g.r) == pytest.approx((b, a, r), rel=1e-9, abs=1e-12)
        assert g.p == pytest.approx(p, rel=1e-6, abs=1e-300)
        assert g.axis == ("abs_yaw" if k[2].startswith("h") else "abs_pitch")
    meta = segment_meta(rows)
    assert list(meta.columns) == SEGMENT_META_COLUMNS and len(meta) == 2 * 3 * 2
    mi = meta.set_index(["condition", "segment", "method"])
    for (c, seg), fam in rows.groupby(["condition", "segment"]):
        for m, g in fam.groupby("method"):
            ok = g[g.n_frames >= 4]
            z = np.arctanh(ok.r.to_numpy())
            w = ok.n_frames.to_numpy() - 3.0
            zbar, se = (w * z).sum() / w.sum(), 1 / np.sqrt(w.sum())
            r_ = mi.loc[(c, seg, m)]
            assert (r_.rows, r_.fisher_rows, r_.subjects, r_.videos) == (
                len(g),
                len(ok),
                g.subject.nunique(),
                g.subject.nunique(),
            )
            assert (r_.fisher_z, r_.fisher_z_se, r_.r_pooled) == pytest.approx((zbar, se, np.tanh(zbar)), rel=1e-9)
            assert r_.p_unc == pytest.approx(2 * stats.norm.sf(abs(zbar / se)), rel=1e-6, abs=1e-300)
            assert (r_.slope_mean, r_.slope_sd, r_.r_mean, r_.r_sd) == pytest.approx(
                (g.slope.mean(), g.slope.std(ddof=1), g.r.mean(), g.r.std(ddof=1))
            )
            assert r_.slope_mean == pytest.approx(slopes[(m, c[0])], abs=0.05)  # the planted slope
        p = mi.loc[(c, seg)].p_unc.to_numpy()
        o = np.argsort(p)
        assert mi.loc[(c, seg)].p_holm.to_numpy()[o] == pytest.approx(
            np.minimum(np.maximum.accumulate(p[o] * [2, 1]), 1)
        )


def _write(path, df, method):
    meta = {"schema": SCHEMA_VERSION, "method": method, "input": "crop", "software": "test", "git": None}
    pq.write_table(
        pa.Table.from_pandas(df, preserve_index=False).replace_schema_metadata(
            {METADATA_KEY: json.dumps(meta).encode()}
        ),
        path,
    )


def test_segments_from_results_files(tmp_path):
    """End to end through the reader: results files carrying the camera path (cam_world_*) give the
    frames their segment (load.py), and the mutual-gaze analysis writes ``mutual_segment_videos`` and
    ``mutual_segment_meta`` equal to the regressions over each video's segments cut at the
    corners of its whole path (invalid frames included), within two frames of the planted ones."""
    from gaze4hri_bench.stats.load import load_results

    rng = np.random.default_rng(4)
    planted = []
    for m, b in (("m1", 0.3), ("m2", 0.05)):
        parts = []
        for s in range(4):
            for cond in ("h_slow", "h_fast", "v_slow", "v_fast"):
                t, p, _, seg = _raster(cond[0], v=0.1 if cond.endswith("fast") else 0.05, noise=0.0001, seed=s)
                n = t.size
                x = rng.uniform(0, 30, n)
                valid = rng.random(n) > 0.1
                err = np.where(valid, 5 + b * x + rng.normal(0, 1, n), np.nan)
                yaw, pitch = (x, rng.uniform(0, 5, n)) if cond[0] == "h" else (rng.uniform(0, 5, n), x)
                parts.append(
                    pd.DataFrame(
                        {
                            "subject": f"S{s}",
                            "experiment": "mutual",
                            "condition": cond,
                            "target": "camera",
                            "trial": f"mutual_{cond}",
                            "frame": np.arange(n),
                            "t_ns": t,
                            "method": m,
                            "input": "crop",
                            "valid": valid,
                            "error_deg": err,
                            "gt_pitch_deg": -pitch,
                            "gt_yaw_deg": yaw,
                            "cam_world_x": p[:, 0],
                            "cam_world_y": p[:, 1],
                            "cam_world_z": p[:, 2],
                        }
                    )
                )
                c = path_corners(t, p)  # found on every frame of the video, valid or not
                mine = (t[:, None] > c[None, :]).sum(axis=1)  # the study's (c_s, c_s+1] by hand
                assert c.size == 4 and (mine != seg).sum() <= 4 * 2  # within a frame or two of the planted corners
                planted.append(parts[-1].assign(segment=mine, n_segments=5))
        _write(tmp_path / f"{m}__crop.parquet", pd.concat(parts, ignore_index=True), m)
    L = load_results([tmp_path])
    a = A.mutual_gaze(L.videos, L.mutual_frames, profile=STUDY)
    got = a.tables["mutual_segment_meta"].set_index(["condition", "segment", "method"]).sort_index()
    f = pd.concat(planted, ignore_index=True)
    f = f[f.valid].assign(abs_pitch_deg=lambda d: d.gt_pitch_deg.abs(), abs_yaw_deg=lambda d: d.gt_yaw_deg.abs())
    want = segment_meta(segment_regressions(f)).set_index(["condition", "segment", "method"]).sort_index()
    assert got.index.equals(want.index) and len(got) == 4 * 3 * 2
    for c in ("rows", "fisher_z", "fisher_z_se", "p_holm", "slope_mean", "r_sd"):
        assert got[c].to_numpy(float) == pytest.approx(want[c].to_numpy(float), rel=1e-9), c
    assert set(a.tables["mutual_segment_videos"]["n_segments"]) == {5}
    assert got.xs("m1", level="method").slope_mean.to_numpy() == pytest.approx(0.3, abs=0.05)


def test_segments_skipped_without_camera_position():
    """Results without the camera path: the tables are absent and the analysis says why."""
    from .test_extended import _mutual_frames, _videos

    a = A.mutual_gaze(_videos(), _mutual_frames(8), profile=STUDY)
    assert "mutual_segment_meta" not in a.tables
    assert any("cam_world" in s for s in a.skipped)


def _arc_videos(seed=2):
    """Per subject and method: the fixed-camera baseline (illumination 100) and arc trials at P1..P3
    built from frames, so each video's n, mean and population variance are exact. Planted: a and b
    within 0.1 deg of each other, c 8 deg worse."""
    rng = np.random.default_rng(seed)
    rows, frames = [], []
    for s in range(7):
        su = rng.normal(0, 2)
        for m, off in (("a", 0.0), ("b", 0.1), ("c", 8.0)):
            for exp, cond, tgt in [
                ("illumination", "100", "P1"),
                ("viewpoint", "arc", "P1"),
                ("viewpoint", "arc", "P2"),
                ("viewpoint", "arc", "P3"),
            ]:
                n = int(rng.integers(20, 60))
                e = np.abs(10 + su + off + rng.normal(0, 3, n))
                trial = f"illum100_{tgt}" if exp == "illumination" else f"arc_{tgt}"
                rows.append(
                    {
                        "subject": f"S{s}",
                        "method": m,
                        "input": "crop",
                        "experiment": exp,
                        "condition": cond,
                        "target": tgt,
                        "trial": trial,
                        "error_mean": e.mean(),
                        "error_var": e.var(),
                        "n_valid": n,
                        "n_frames": n,
                    }
                )
                frames.append(
                    pd.DataFrame(
                        {"subject": f"S{s}", "method": m, "trial": trial, "target": tgt, "experiment": exp, "e": e}
                    )
                )
    return pd.DataFrame(rows), pd.concat(frames, ignore_index=True)


def test_viewpoint_tiers_by_hand():
    """head_yaw_model_ranking.py:154-264: subject-level (frame-weighted, :85-103) means per method,
    paired t-tests between methods, Holm over the pairs, tiers walking the methods by ascending
    mean (a new tier where the Holm p with the tier's last method is < alpha); the frame-pooled
    mean and SD (:107-149) equal the mean and population SD of all the pool's frames."""
    v, fr = _arc_videos()
    a = A.viewpoint(v, profile=STUDY)
    tt = a.tables["viewpoint_tiers"]
    assert list(tt.pool.unique()) == ["arc", "P1", "P2", "P3"]
    for pool in ("arc", "P2"):
        x = v[(v.experiment == "viewpoint") & ((v.target == pool) if pool != "arc" else True)]
        sm = (
            x.groupby(["subject", "method"])
            .apply(lambda g: np.average(g.error_mean, weights=g.n_valid), include_groups=False)
            .unstack()
        )
        means = sm.mean()
        p = {}
        for m1, m2 in combinations(["a", "b", "c"], 2):
            p[frozenset((m1, m2))] = stats.ttest_rel(sm[m1], sm[m2]).pvalue
        keys = list(p)
        raw = np.array([p[k] for k in keys])
        o = np.argsort(raw)
        adj = np.empty(3)
        adj[o] = np.minimum(np.maximum.accumulate(raw[o] * [3, 2, 1]), 1)
        ph = dict(zip(keys, adj, strict=True))
        want = []
        for m in means.sort_values().index:
            if want and not ph[frozenset((want[-1][-1], m))] < 0.05:
                want[-1].append(m)
            else:
                want.append([m])
        g = tt[tt.pool == pool]
        assert [list(t.method) for _, t in g.groupby("tier", sort=True)] == want
        if pool == "arc":
            assert [sorted(t) for t in want] == [["a", "b"], ["c"]]  # the planted split
        gi = g.set_index("method")
        for m in "abc":
            e = fr[
                (fr.method == m) & (fr.experiment == "viewpoint") & ((fr.target == pool) if pool != "arc" else True)
            ].e.to_numpy()
            assert (gi.loc[m, "pooled_mean"], gi.loc[m, "pooled_sd"], gi.loc[m, "frames"]) == pytest.approx(
                (e.mean(), e.std(), e.size), rel=1e-9
            )
            assert (gi.loc[m, "mean"], gi.loc[m, "sd"], gi.loc[m, "n"]) == pytest.approx(
                (means[m], sm[m].std(ddof=1), 7)
            )
    pw = a.tables["viewpoint_method_pairs"]
    assert set(pw.pool) == {"arc", "P1", "P2", "P3"} and (pw.groupby("pool").size() == 3).all()


def test_pooled_mean_sd_without_variance():
    """Without per-video variances the pooled SD is unknown (NaN), the mean still exact."""
    v = pd.DataFrame({"error_mean": [1.0, 4.0, np.nan], "n_valid": [1, 3, 5]})
    m, sd, n = pooled_mean_sd(v)
    assert (m, n) == (pytest.approx(13 / 4), 4) and np.isnan(sd)


def test_segments_leave_out_a_method_without_camera_position(tmp_path):
    """One method's file lacks cam_world_* (written before the column existed): its frames get no
    segment, the tables hold the other method only, and the analysis names the one left out."""
    from gaze4hri_bench.stats.load import load_results

    rng = np.random.default_rng(6)
    for m in ("m1", "m2"):
        parts = []
        for s in range(3):
            t, p, _, _ = _raster("h", noise=0.0001, seed=s)
            n = t.size
            x = rng.uniform(0, 30, n)
            d = pd.DataFrame(
                {
                    "subject": f"S{s}",
                    "experiment": "mutual",
                    "condition": "h_fast",
                    "target": "camera",
                    "trial": "mutual_h_fast",
                    "frame": np.arange(n),
                    "t_ns": t,
                    "method": m,
                    "input": "crop",
                    "valid": True,
                    "error_deg": 5 + 0.2 * x + rng.normal(0, 1, n),
                    "gt_pitch_deg": rng.uniform(-5, 0, n),
                    "gt_yaw_deg": x,
                }
            )
            if m == "m1":
                d = d.assign(cam_world_x=p[:, 0], cam_world_y=p[:, 1], cam_world_z=p[:, 2])
            parts.append(d)
        _write(tmp_path / f"{m}__crop.parquet", pd.concat(parts, ignore_index=True), m)
    L = load_results([tmp_path])
    a = A.mutual_gaze(L.videos, L.mutual_frames, profile=STUDY)
    assert set(a.tables["mutual_segment_meta"]["method"]) == {"m1"} and set(
        a.tables["mutual_segment_meta"]["segment"]
    ) == {0, 2, 4}
    assert any("leave out m2" in s and "cam_world" in s for s in a.skipped)
