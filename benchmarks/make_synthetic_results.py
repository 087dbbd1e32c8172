#!/usr/bin/env python3
"""Synthetic per-frame results with the study's structure (schema.py), for the
statistics benchmark and tests.

Default size is the study's: 52 subjects, 3,258 videos (52 x 63 minus one subject's
14 conflict videos and another's 4 mutual videos), 620,933 frames, 7 methods x
{crop, rectified} = 14 files, about 8.7 million rows. Errors are built so that the
analyses have something to find: method x illumination means near Table III,
per-input offsets near Table S9, subject and video random effects, a row effect on the
target grid (closest row worst), positive head-gaze conflict slopes, eccentricity
slopes in mutual gaze, and about 4 % blink-invalid frames. Each file carries the
pipeline's metadata (key b"gaze4hri": schema, method, input, software, git, timing).

    .venv/bin/python benchmarks/make_synthetic_results.py --out /tmp/g4h_synth
    .venv/bin/python benchmarks/make_synthetic_results.py --out /tmp/small --subjects 6 --frames 30
"""
from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from gaze4hri_bench.schema import COLUMNS, METADATA_KEY, SCHEMA_VERSION
from gaze4hri_core.protocol import trials

# Table III level means (deg) and Table S9 (crop, rectified) whole-dataset means.
LEVEL_MEANS = {
    "puregaze_eth": (11.73, 11.52, 12.18, 10.19), "gazetr_eth": (11.50, 11.16, 12.45, 11.50),
    "puregaze_gaze360": (16.92, 14.68, 15.13, 17.82), "gazetr_gaze360": (14.73, 13.81, 15.27, 17.17),
    "l2cs_gaze360": (19.61, 17.60, 18.95, 18.99), "mcgaze_gaze360": (19.08, 14.33, 13.24, 14.29),
    "gat_gaze360": (17.93, 16.74, 15.82, 16.35),
}
S9 = {
    "puregaze_eth": (15.41, 9.42),
    "gazetr_eth": (21.80, 11.46),
    "puregaze_gaze360": (15.53, 14.42),
    "gazetr_gaze360": (19.17, 13.73),
    "l2cs_gaze360": (17.58, 17.08),
    "mcgaze_gaze360": (17.71, 57.98),
    "gat_gaze360": (15.69, 24.51),
}
BEST = {
    "puregaze_eth": "rectified",
    "gazetr_eth": "rectified",
    "puregaze_gaze360": "rectified",
    "gazetr_gaze360": "rectified",
    "l2cs_gaze360": "crop",
    "mcgaze_gaze360": "crop",
    "gat_gaze360": "crop",
}
CONFLICT_SLOPE = {
    "puregaze_eth": 0.05,
    "gazetr_eth": 0.12,
    "puregaze_gaze360": 0.2,
    "gazetr_gaze360": 0.15,
    "l2cs_gaze360": 0.25,
    "mcgaze_gaze360": 0.1,
    "gat_gaze360": 0.18,
}
MUTUAL_BASE = {
    "puregaze_eth": 5.3,
    "gazetr_eth": 7.0,
    "puregaze_gaze360": 9.0,
    "gazetr_gaze360": 9.5,
    "l2cs_gaze360": 11.0,
    "mcgaze_gaze360": 10.0,
    "gat_gaze360": 8.5,
}
VIEWPOINT_OFFSET = {
    "puregaze_eth": 0.5,
    "gazetr_eth": 2.5,
    "puregaze_gaze360": -0.3,
    "gazetr_gaze360": 3.0,
    "l2cs_gaze360": 4.0,
    "mcgaze_gaze360": 1.0,
    "gat_gaze360": 2.0,
}
P_GAZE = {
    "P1": (-24.90, -32.35),
    "P2": (-29.48, 0.01),
    "P3": (-26.11, 32.24),
    "P4": (-31.82, -42.05),
    "P5": (-40.69, 0.81),
    "P6": (-32.61, 42.99),
    "P7": (-40.25, -58.69),
    "P8": (-60.29, 4.26),
    "P9": (-39.33, 59.39),
}
ROW_OFFSET = {"P7": 4.0, "P8": 5.0, "P9": 4.0, "P4": 0.5, "P5": 0.0, "P6": 0.8, "P1": -2.0, "P2": -2.5, "P3": -1.5}
H_GAZE = {
    "H1": (-35.0, 30.0),
    "H2": (-35.0, 0.0),
    "H3": (-35.0, -30.0),
    "H4": (-50.0, 30.0),
    "H5": (-50.0, 0.0),
    "H6": (-50.0, -30.0),
}
LEVEL_INDEX = {"10": 0, "25": 1, "50": 2, "100": 3}
STUDY_FRAMES = 620_933


def _unit(pitch_deg, yaw_deg):
    p, y = np.radians(pitch_deg), np.radians(yaw_deg)
    return np.stack([-np.cos(p) * np.sin(y), -np.sin(p), -np.cos(p) * np.cos(y)], axis=-1)


def _angle(a, b):
    return np.degrees(np.arccos(np.clip((a * b).sum(-1), -1.0, 1.0)))


def layout(n_subjects: int, frames: float | None, rng: np.random.Generator, study_drops: bool = True) -> dict:
    """Frame-level ground truth shared by every method: one entry per column."""
    tr = trials()
    subjects = [f"S{i + 1:02d}" for i in range(n_subjects)]
    vids = [(s, t) for s in subjects for t in tr]
    if study_drops and n_subjects >= 4:  # the study's recording errors: one subject's exp 3, another's exp 4.2
        vids = [
            (s, t)
            for s, t in vids
            if not (s == subjects[-1] and t.experiment == "conflict")
            and not (s == subjects[-2] and t.experiment == "mutual")
        ]
    nv = len(vids)
    if frames is None:
        per = rng.integers(STUDY_FRAMES // nv - 20, STUDY_FRAMES // nv + 21, nv)
        diff = STUDY_FRAMES - int(per.sum())
        per += diff // nv
        per[: diff % nv] += 1
    else:
        per = np.full(nv, int(frames))
    total = int(per.sum())
    vid = np.repeat(np.arange(nv), per)
    frame = np.arange(total) - np.repeat(np.cumsum(per) - per, per)
    frac = frame / np.repeat(np.maximum(per - 1, 1), per)
    subj = np.array([s for s, _ in vids])
    tt = [t for _, t in vids]
    exp = np.array([t.experiment for t in tt])
    cond = np.array([t.condition for t in tt])
    targ = np.array([t.target for t in tt])
    tid = np.array([t.trial_id for t in tt])
    # ground-truth gaze (pitch, yaw) per video, jittered per subject and frame
    sub_idx = np.array([subjects.index(s) for s in subj])
    sj = rng.normal(0, 2.0, (n_subjects, 2))
    vp = np.zeros(nv)
    vy = np.zeros(nv)
    head_yaw = np.zeros(nv)
    for k, t in enumerate(tt):
        if t.target in P_GAZE:
            vp[k], vy[k] = P_GAZE[t.target]
        elif t.target in H_GAZE:
            vp[k], vy[k] = H_GAZE[t.target]
        head_yaw[k] = t.head_yaw_deg if t.head_yaw_deg is not None else 0.0
    pitch = vp[vid] + sj[sub_idx[vid], 0] + rng.normal(0, 1.0, total)
    yaw = vy[vid] + sj[sub_idx[vid], 1] + rng.normal(0, 1.0, total)
    mutual = exp[vid] == "mutual"
    is_h = np.char.startswith(cond[vid].astype(str), "h_")
    pitch = np.where(mutual, np.where(is_h, rng.normal(0, 2, total), -20 + 40 * frac), pitch)
    yaw = np.where(mutual, np.where(is_h, -25 + 50 * frac, rng.normal(0, 2, total)), yaw)
    gt = _unit(pitch, yaw)
    # head forward: fixed yaw in exp 3; otherwise the head turns part-way to the target
    free = exp[vid] != "conflict"
    hp = np.where(free, 0.6 * pitch, 0.0) + rng.normal(0, 2, total)
    hy = np.where(free, 0.6 * yaw, head_yaw[vid]) + rng.normal(0, 2, total)
    conflict = _angle(_unit(hp, hy), gt)
    valid = rng.random(total) > 0.04
    reason = np.where(valid, "", "blink")
    cam_yaw = np.where(exp[vid] == "viewpoint", -30 + 60 * frac, 0.0)
    # camera in the world (m): 0.5 m in front of eyes at (0, 0, 1.2), world x forward, y left,
    # z up; on the arc at cam_yaw; mutual gaze: one line scan, +-0.25 m (h) or +-0.10 m (v)
    line = np.where(mutual, 1.0 - 2.0 * frac, 0.0)
    cam = np.column_stack(
        [
            0.5 * np.cos(np.radians(cam_yaw)),
            0.5 * np.sin(np.radians(cam_yaw)) + np.where(is_h, 0.25 * line, 0.0),
            1.2 + np.where(is_h, 0.0, 0.10 * line),
        ]
    )
    return {
        "vid": vid,
        "n_videos": nv,
        "total": total,
        "subj": subj,
        "sub_idx": sub_idx,
        "exp": exp,
        "cond": cond,
        "targ": targ,
        "tid": tid,
        "frame": frame,
        "pitch": pitch,
        "yaw": yaw,
        "gt": gt,
        "conflict": conflict,
        "valid": valid,
        "reason": reason,
        "cam_yaw": cam_yaw,
        "cam": cam,
        "n_subjects": n_subjects,
        # subject metadata as in the dataset's subject_info.json; balanced and crossed here so that
        # small sets can still test both attributes (the study: 24 of 52 with glasses, 13 women)
        "subject_info": {
            s: {"glasses": bool(i % 2), "gender": "female" if (i // 2) % 2 == 0 else "male"}
            for i, s in enumerate(subjects)
        },
    }


def errors(L: dict, method: str, inp: str, rng: np.random.Generator) -> np.ndarray:
    """Per-frame angular error (deg) of one (method, input) on the layout."""
    vid, nv = L["vid"], L["n_videos"]
    lm = LEVEL_MEANS.get(method, (15.0, 15.0, 15.0, 15.0))
    exp, cond, targ = L["exp"], L["cond"], L["targ"]
    base = np.empty(nv)
    for k in range(nv):
        e = exp[k]
        if e == "illumination":
            base[k] = lm[LEVEL_INDEX[cond[k]]] + ROW_OFFSET.get(targ[k], 0.0)
        elif e == "viewpoint":
            base[k] = lm[3] + VIEWPOINT_OFFSET.get(method, 1.0) + ROW_OFFSET.get(targ[k], 0.0)
        elif e == "conflict":
            base[k] = lm[3]
        else:
            base[k] = MUTUAL_BASE.get(method, 9.0)
    crop, rect = S9.get(method, (15.0, 15.0))
    best = BEST.get(method, "crop")
    if inp != best:
        base += (crop - rect) if inp == "crop" else (rect - crop)
    subj_re = rng.normal(0, 4.0, L["n_subjects"])
    vid_re = rng.normal(0, 2.5, nv)
    slope_s = CONFLICT_SLOPE.get(method, 0.1) + rng.normal(0, 0.12, L["n_subjects"])
    si = L["sub_idx"][vid]
    e = base[vid] + subj_re[si] + vid_re[vid]
    isc = exp[vid] == "conflict"
    e = e + np.where(isc, slope_s[si] * (L["conflict"] - 30.0), 0.0)
    ism = exp[vid] == "mutual"
    bp = 0.08 + rng.normal(0, 0.04, L["n_subjects"])
    by = 0.12 + rng.normal(0, 0.05, L["n_subjects"])
    e = e + np.where(ism, bp[si] * np.abs(L["pitch"]) + by[si] * np.abs(L["yaw"]) - 3.0, 0.0)
    e = np.abs(e + rng.normal(0, 3.0, L["total"])) + 0.2
    return e


def _pred(gt: np.ndarray, err_deg: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Rotate each ground-truth unit vector by err_deg about a random perpendicular axis."""
    r = rng.normal(size=gt.shape)
    r -= (r * gt).sum(-1, keepdims=True) * gt
    r /= np.linalg.norm(r, axis=-1, keepdims=True)
    a = np.radians(err_deg)[:, None]
    return np.cos(a) * gt + np.sin(a) * r


def _strings(values: np.ndarray, idx: np.ndarray | None = None) -> pa.Array:
    """Dictionary-build a string column from per-video values (fast), stored as plain string."""
    cats, codes = np.unique(values, return_inverse=True)
    if idx is not None:
        codes = codes[idx]
    return pa.DictionaryArray.from_arrays(pa.array(codes.astype(np.int32)), pa.array(cats.astype(str))).cast(
        pa.string()
    )


def write_file(L: dict, method: str, inp: str, path: Path, rng: np.random.Generator, timing: bool = True) -> int:
    err = errors(L, method, inp, rng)
    pred = _pred(L["gt"], err, rng)
    valid = L["valid"]
    n, vid = L["total"], L["vid"]
    t_ns = 1_700_000_000_000_000_000 + vid.astype(np.int64) * 60_000_000_000 + L["frame"].astype(np.int64) * 33_333_333
    cols = {
        "subject": _strings(L["subj"], vid),
        "experiment": _strings(L["exp"], vid),
        "condition": _strings(L["cond"], vid),
        "target": _strings(L["targ"], vid),
        "trial": _strings(L["tid"], vid),
        "frame": pa.array(L["frame"].astype(np.int64)),
        "t_ns": pa.array(t_ns),
        "method": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([method])).cast(pa.string()),
        "input": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([inp])).cast(pa.string()),
        "valid": pa.array(valid),
        "invalid_reason": _strings(L["reason"]),
        "gt_x": pa.array(L["gt"][:, 0]),
        "gt_y": pa.array(L["gt"][:, 1]),
        "gt_z": pa.array(L["gt"][:, 2]),
        "gt_pitch_deg": pa.array(L["pitch"]),
        "gt_yaw_deg": pa.array(L["yaw"]),
        "pred_x": pa.array(pred[:, 0]),
        "pred_y": pa.array(pred[:, 1]),
        "pred_z": pa.array(pred[:, 2]),
        "error_deg": pa.array(np.where(valid, err, np.nan)),
        "head_gaze_conflict_deg": pa.array(L["conflict"]),
        "camera_yaw_deg": pa.array(L["cam_yaw"]),
        "cam_world_x": pa.array(L["cam"][:, 0]),
        "cam_world_y": pa.array(L["cam"][:, 1]),
        "cam_world_z": pa.array(L["cam"][:, 2]),
    }
    assert list(cols) == list(COLUMNS)
    meta = {
        "schema": SCHEMA_VERSION,
        "method": method,
        "input": inp,
        "software": {"generator": "benchmarks/make_synthetic_results.py"},
        "git": None,
    }
    if L.get("subject_info"):
        meta["subjects"] = L["subject_info"]
    if timing:
        ms = {"puregaze": 1.93, "gazetr": 1.84, "l2cs": 1.92, "mcgaze": 51.09, "gat": 14.8}.get(
            method.split("_")[0], 5.0
        )
        infer = n * ms / 1000
        meta["timing"] = {
            "frames": n,
            "decode_s": n * 0.004,
            "detect_s": n * 0.006,
            "preprocess_s": n * 0.001,
            "infer_s": infer,
            "infer_ms_per_frame": ms,
            "fps": 1000.0 / ms,
            "peak_rss_mb": 2100.0,
            "peak_vram_mb": None,
            "device": "cpu",
            "batch": 32,
        }
    table = pa.table(cols).replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})
    pq.write_table(table, path, compression="zstd", row_group_size=256_000)
    return n


def make_results(
    out: Path,
    subjects: int = 52,
    frames: float | None = None,
    methods: list[str] | None = None,
    inputs: tuple[str, ...] = ("crop", "rectified"),
    seed: int = 0,
    timing: bool = True,
    study_drops: bool = True,
) -> list[Path]:
    """Write one Parquet per (method, input) under ``out``; returns the paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    L = layout(subjects, frames, rng, study_drops=study_drops)
    paths = []
    for m in methods or list(LEVEL_MEANS):
        for i in inputs:
            p = out / f"{m}__{i}.parquet"
            write_file(L, m, i, p, np.random.default_rng([seed, zlib.crc32(f"{m}/{i}".encode())]), timing=timing)
            paths.append(p)
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out", type=Path, required=True, help="output folder (one Parquet per method and input)")
    ap.add_argument("--subjects", type=int, default=52)
    ap.add_argument(
        "--frames", type=float, default=None, help="frames per video (default: the study's 620,933 frames in total)"
    )
    ap.add_argument("--methods", nargs="*", default=None, help=f"default: {' '.join(LEVEL_MEANS)}")
    ap.add_argument("--inputs", nargs="*", default=["crop", "rectified"])
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    t0 = time.perf_counter()
    paths = make_results(a.out, a.subjects, a.frames, a.methods, tuple(a.inputs), a.seed)
    rows = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    print(f"wrote {len(paths)} files, {rows:,} rows to {a.out} in {time.perf_counter() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
