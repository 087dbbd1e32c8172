#!/usr/bin/env python3
"""Our segment regressions on the mutual-gaze raster scans (``analyze``'s ``mutual_segment_videos``)
beside the study's own line_movement_analysis_paper.py run on the same per-frame data.

The study's code is read from a fetched mirror of GazeForHRI/Gaze4HRI at run time
(``git -C MIRROR show REV:<file>`` into a temporary folder; never copied into this repository)
and run as it is: ``run_abs_angle_regressions_from_dbs`` (line_movement_analysis_paper.py:194-525)
with its corner finder ``extract_intersection_points`` (line_movement_analysis.py:44-98) and its
data loaders (data_loader.py, frame_db.py, pitch_yaw_stats.py). Its inputs are written in its own
layout from our per-frame data: the frame database (error, is_valid, frame_idx per video and
method), the pitch/yaw database (|pitch|, |yaw| of the ground-truth gaze, timestamp_ms) and each
video's camera_poses.npy (100 Hz, [t_ms, flattened 4x4 pose], the camera positions of the frames
interpolated to the study's 10 ms pose period). Only the site configuration (config.py: the dataset
folder, the methods, the periods) is ours.

The per-frame data: the protocol's four scans (h/v x slow/fast; gaze4hri_core.trajectories: the
raster, the camera at rest at each corner) sampled at 30 fps, recording from the motion's start,
for ``--subjects`` subjects and two methods whose error grows with |yaw| (h) or |pitch| (v), with
about 5 % invalid frames. Pairs (subject, method, scan, segment) are matched and slope, intercept,
r and the frame count compared; the study's aggregate (Fisher z per scan, segment and method) is
compared with ``mutual_segment_meta``.

    .venv/bin/python benchmarks/study_line_movement.py [--mirror /work/.mirror/GazeForHRI+Gaze4HRI/repo]

Exit status: 0 when both ran (the differences are printed; with ``--max-diff`` also when every
difference is within it), 1 when a difference exceeds ``--max-diff`` or nothing matched, 2 when
the study's code or its dependencies are not available.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

DEFAULT_MIRROR = Path("/work/.mirror/GazeForHRI+Gaze4HRI/repo")
#: The study's files the analysis imports (line_movement_analysis_paper.py:39-48 and theirs).
STUDY_FILES = ("line_movement_analysis_paper.py", "line_movement_analysis.py", "data_loader.py", "frame_db.py",
               "pitch_yaw_stats.py", "data_analyer.py", "data_matcher.py", "neutral_eye_position_calculation.py")
METHODS = {"puregaze_eth": (4.0, 0.12), "l2cs_gaze360": (6.0, 0.05)}  # method -> (error at 0 deg, deg per deg)
SCANS = {"h_slow": ("h", 0.05), "h_fast": ("h", 0.1), "v_slow": ("v", 0.05), "v_fast": ("v", 0.1)}
EYE_DISTANCE_M = 0.6
FPS = 30.0
POSE_PERIOD_MS = 10.0

#: Our site configuration for the study's modules (its config.py holds its lab's paths; only the
#: functions the analysis calls are given, each returning what the study's config returns for
#: periods and scan types, config.py:210-220, 356-359).
CONFIG = '''
import json, os
_BASE = os.environ["G4H_STUDY_BASE"]
_MODELS = json.loads(os.environ["G4H_STUDY_MODELS"])
def get_dataset_base_directory(): return _BASE
def get_main_models_included_in_the_paper(): return dict(_MODELS)
def display_model_name(key): return _MODELS.get(key, key)
def is_experiment_directory_excluded_from_eval(path): return False
def get_target_period(): return 10.0
def get_camera_pose_period(): return 10.0
def get_time_diff_max(): return 20.0
def get_line_movement_types(): return ["horizontal", "vertical"]
def get_rgb_fps(): return 30.0
def get_neutral_eye_position_per_subject_csv_path(): return os.path.join(_BASE, "neutral_eye_positions.csv")
def __getattr__(name):
    raise AttributeError(f"benchmark config: the study's config.{name} is not provided")
'''

RUNNER = '''
import json, os, sys
import line_movement_analysis_paper as m
if os.environ.get("G4H_STUDY_CORNERS"):  # --corners ours: our corner times given to the study's partition
    _given = json.loads(open(os.environ["G4H_STUDY_CORNERS"]).read())
    def _ours(dataloader, line_movement_speed, line_movement_type, visualize_for_debug=False):
        rel = os.path.relpath(dataloader.cwd, os.environ["G4H_STUDY_BASE"])
        return _given.get(rel, [])
    m.extract_intersection_points = _ours
rows, agg = m.run_abs_angle_regressions_from_dbs(sys.argv[1])
print(f"study: {len(rows)} segment rows, {len(agg)} aggregate rows")
'''


def study_sources(mirror: Path, rev: str, dest: Path) -> str | None:
    """Write the study's files at ``rev`` into ``dest``; None, or why they are not available."""
    if not (mirror / "HEAD").is_file() and not (mirror / ".git").exists():
        return f"no git mirror at {mirror}"
    for name in STUDY_FILES:
        r = subprocess.run(["git", "-C", str(mirror), "show", f"{rev}:{name}"], capture_output=True)
        if r.returncode:
            return f"{name} not at {rev} in {mirror}: {r.stderr.decode().strip().splitlines()[-1:]}"
        (dest / name).write_bytes(r.stdout)
    return None


def _scan_path(axis: str, speed: float, t: np.ndarray) -> np.ndarray:
    """Camera positions (world = the centre pose's frame, m) of a protocol scan at times ``t`` (s)."""
    from gaze4hri_core.rig import raster_scan_points
    from gaze4hri_core.trajectories import TrajectorySettings, interpolate_path, line_accel, stop_profile
    from gaze4hri_core.transforms import SE3

    st = TrajectorySettings()
    centre = SE3(np.eye(3), np.array([0.0, 0.0, EYE_DISTANCE_M]))
    pts = raster_scan_points(centre, axis, st.line_half_length_h_m, st.line_half_length_v_m)
    cams = [SE3(centre.R, p) for p in pts]
    prof = stop_profile(cams, speed, line_accel(speed, st.motion_accel))
    poses = interpolate_path(cams, prof.s(np.clip(t, 0.0, prof.duration)))
    return np.array([p.t for p in poses]), prof.duration


def per_frame(subjects: int, seed: int) -> pd.DataFrame:
    """The per-frame rows (schema.py columns) of every scan, subject and method."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(1, subjects + 1):
        for cond, (axis, speed) in SCANS.items():
            _, dur = _scan_path(axis, speed, np.zeros(1))
            t = np.arange(0.0, dur, 1.0 / FPS)
            cam, _ = _scan_path(axis, speed, t)
            yaw = np.degrees(np.arctan2(cam[:, 0], EYE_DISTANCE_M))  # the gaze to the camera, seen from the eye
            pitch = np.degrees(np.arctan2(-cam[:, 1], EYE_DISTANCE_M))
            t_ns = (1_700_000_000 + 1000 * s + 100 * list(SCANS).index(cond)) * 1_000_000_000 + np.round(t * 1e9)
            for m, (e0, slope) in METHODS.items():
                x = np.abs(yaw) if axis == "h" else np.abs(pitch)
                err = np.abs(e0 + rng.normal(0, 1.0) + (slope + rng.normal(0, 0.03)) * x + rng.normal(0, 1.5, t.size))
                valid = rng.random(t.size) > 0.05
                rows.append(pd.DataFrame({
                    "subject": f"S{s:02d}", "experiment": "mutual", "condition": cond, "target": "camera",
                    "trial": f"mutual_{cond}", "frame": np.arange(t.size), "t_ns": t_ns.astype(np.int64), "method": m,
                    "input": "crop", "valid": valid, "invalid_reason": np.where(valid, "", "blink"),
                    "gt_pitch_deg": pitch, "gt_yaw_deg": yaw, "error_deg": np.where(valid, err, np.nan),
                    "cam_world_x": cam[:, 0], "cam_world_y": cam[:, 1], "cam_world_z": cam[:, 2]}))
    return pd.concat(rows, ignore_index=True)


def write_results(frames: pd.DataFrame, folder: Path) -> None:
    """Our per-frame results files (one per method), every schema column."""
    from gaze4hri_bench.schema import COLUMNS, METADATA_KEY, SCHEMA_VERSION

    p, y = np.radians(frames["gt_pitch_deg"]), np.radians(frames["gt_yaw_deg"])
    gt = np.c_[-np.cos(p) * np.sin(y), -np.sin(p), -np.cos(p) * np.cos(y)]
    full = frames.assign(gt_x=gt[:, 0], gt_y=gt[:, 1], gt_z=gt[:, 2], pred_x=np.nan, pred_y=np.nan, pred_z=np.nan,
                         head_gaze_conflict_deg=np.nan, camera_yaw_deg=0.0)
    for m, d in full.groupby("method"):
        table = pa.Table.from_pandas(d[list(COLUMNS)], preserve_index=False)
        meta = {"schema": SCHEMA_VERSION, "method": m, "input": "crop",
                "software": {"generator": "benchmarks/study_line_movement.py"}, "git": None}
        table = table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})
        pq.write_table(table, folder / f"{m}__crop.parquet")


def ours(folder: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``mutual_segment_videos`` and ``mutual_segment_meta`` as ``analyze`` makes them (profile study)."""
    from gaze4hri_bench.stats import analyses as A
    from gaze4hri_bench.stats import plan as P

    pre = P.prepare([folder], 0.05, "study")
    a = A.mutual_gaze(pre.ctx.main, pre.ctx.frames, 0.05, profile=pre.profile, min_subjects=3)
    if "mutual_segment_videos" not in a.tables:
        raise SystemExit(f"our analysis made no segment table: {'; '.join(a.skipped)}")
    return a.tables["mutual_segment_videos"], a.tables["mutual_segment_meta"]


def _exp_dir(subject: str, cond: str) -> str:
    """A video's folder in the study's layout: <date>/<subject>/line_movement_<speed>/<horizontal|vertical>/<run>."""
    axis, speed = SCANS[cond]
    exp_type = f"line_movement_{'slow' if speed < 0.075 else 'fast'}"
    return f"2025-01-01/{subject}/{exp_type}/{'horizontal' if axis == 'h' else 'vertical'}/run0"


def study_inputs(frames: pd.DataFrame, base: Path) -> None:
    """The study's frame database, pitch/yaw database and camera poses, in its layout, from ``frames``."""
    fdb = base / "frame_db" / "parquet" / "gaze_evaluation_results_by_frame"
    pdb = base / "pitch_yaw_stats_db"
    fdb.mkdir(parents=True)
    pdb.mkdir(parents=True)
    f, py = [], []
    for (s, cond), v in frames.groupby(["subject", "condition"], sort=True):
        exp_dir = _exp_dir(s, cond)
        _, _, exp_type, point, _ = exp_dir.split("/")
        one = v[v["method"] == v["method"].iloc[0]].sort_values("frame")
        t_ms = (one["t_ns"].to_numpy() - one["t_ns"].iloc[0]) / 1e6
        grid = np.arange(0.0, t_ms[-1] + 1e-9, POSE_PERIOD_MS)
        poses = np.zeros((grid.size, 17))
        poses[:, 0] = grid
        T = np.tile(np.eye(4), (grid.size, 1, 1))
        for k, c in enumerate(("cam_world_x", "cam_world_y", "cam_world_z")):
            T[:, k, 3] = np.interp(grid, t_ms, one[c].to_numpy())
        poses[:, 1:] = T.reshape(grid.size, 16)
        (base / exp_dir).mkdir(parents=True)
        np.save(base / exp_dir / "camera_poses.npy", poses)
        py.append(pd.DataFrame({"subject": f"2025-01-01/{s}", "experiment_type": exp_type, "point": point,
                                "exp_dir_rel": exp_dir, "frame_idx": one["frame"].to_numpy(), "timestamp_ms": t_ms,
                                "gaze_pitch": one["gt_pitch_deg"].to_numpy(),
                                "gaze_yaw": one["gt_yaw_deg"].to_numpy()}))
        for m, d in v.groupby("method"):
            d = d.sort_values("frame")
            f.append(pd.DataFrame({"subject_dir": f"2025-01-01/{s}", "exp_type": exp_type, "point": point,
                                   "subject_name": s, "gender": "", "birthyear": 0, "glasses": False, "height_cm": 0.0,
                                   "gaze_model": m, "error": d["error_deg"].fillna(0.0).to_numpy(),
                                   "is_valid": d["valid"].astype(int).to_numpy(), "frame_idx": d["frame"].to_numpy(),
                                   "exp_dir": exp_dir}))
    pd.concat(f, ignore_index=True).to_parquet(fdb / "part0.parquet", index=False)
    pd.concat(py, ignore_index=True).to_parquet(pdb / "part0.parquet", index=False)


def our_corners(frames: pd.DataFrame, path: Path) -> None:
    """Our corner times (stats.study_tables.path_corners) per video as the study's velocity indices: the
    study takes the pose at index + 1 as the corner (line_movement_analysis_paper.py:294-302); the pose
    grid is 10 ms from the first frame, so index = ceil(t / 10 ms) - 1 keeps the corner frame in the
    segment it ends (segment 0 = [t_first, c1], :306-315)."""
    from gaze4hri_bench.stats.study_tables import path_corners

    out = {}
    for (s, cond), v in frames.groupby(["subject", "condition"], sort=True):
        one = v[v["method"] == v["method"].iloc[0]].sort_values("frame")
        c = path_corners(one["t_ns"].to_numpy(), one[["cam_world_x", "cam_world_y", "cam_world_z"]].to_numpy())
        ms = (c - one["t_ns"].iloc[0]) / 1e6
        out[_exp_dir(s, cond)] = [int(np.ceil(x / POSE_PERIOD_MS - 1e-9)) - 1 for x in ms]
    path.write_text(json.dumps(out))


def run_study(src: Path, base: Path, out: Path, corners: Path | None = None) -> tuple[pd.DataFrame, pd.DataFrame] | str:
    """The study's regressions on ``base``; its two CSVs, or why it did not run."""
    from gaze4hri_bench.stats.analyses import display_name

    (src / "config.py").write_text(CONFIG)
    (src / "run_study.py").write_text(RUNNER)
    env = {**os.environ, "PYTHONPATH": str(src), "MPLBACKEND": "Agg", "G4H_STUDY_BASE": str(base),
           "G4H_STUDY_MODELS": json.dumps({m: display_name(m) for m in METHODS}),
           "G4H_STUDY_CORNERS": str(corners) if corners else ""}
    r = subprocess.run([sys.executable, "run_study.py", str(out)], cwd=src, env=env, capture_output=True, text=True)
    if r.returncode:
        return "the study's script failed:\n" + (r.stderr or r.stdout).strip()[-2000:]
    print(r.stdout.strip().splitlines()[-1])
    return (pd.read_csv(out / "line_movement__abs_angle_regressions_rows_DB.csv"),
            pd.read_csv(out / "line_movement__abs_angle_regressions_agg_DB.csv"))


def compare(seg: pd.DataFrame, meta: pd.DataFrame, rows: pd.DataFrame, agg: pd.DataFrame) -> dict:
    """Matched rows and the largest differences of slope, intercept, r and frame count."""
    cond = {("slow", "horizontal"): "h_slow", ("fast", "horizontal"): "h_fast", ("slow", "vertical"): "v_slow",
            ("fast", "vertical"): "v_fast"}
    st = rows.assign(subject=rows["subject_dir"].str.split("/").str[-1],
                     condition=[cond[(s, m)] for s, m in zip(rows["speed"], rows["movement_type"], strict=True)],
                     method=rows["gaze_model"], segment=rows["segment_id"])
    key = ["subject", "method", "condition", "segment"]
    m = seg.merge(st, on=key, how="outer", suffixes=("", "_study"), indicator=True)
    both = m[m["_merge"] == "both"]
    diff = {c: float(np.nanmax(np.abs(both[c] - both[s]))) if len(both) else float("nan")
            for c, s in (("slope", "slope_study"), ("intercept", "intercept_study"), ("r", "pearson_r"),
                         ("n_frames", "n_frames_study"))}
    per = both.assign(d_n=(both["n_frames"] - both["n_frames_study"]).abs(),
                      d_slope=(both["slope"] - both["slope_study"]).abs())
    by_scan = per.groupby(["condition", "segment"])[["d_n", "d_slope"]].max().reset_index()
    sa = agg.assign(condition=[cond[(s, m)] for s, m in zip(agg["speed"], agg["movement_type"], strict=True)],
                    segment=agg["segment_id"])
    mm = meta.merge(sa, left_on=["condition", "segment", "display"],
                    right_on=["condition", "segment", "gaze_model_display"], suffixes=("", "_study"))
    agg_diff = {c: float(np.nanmax(np.abs(mm[c] - mm[s]))) if len(mm) else float("nan")
                for c, s in (("fisher_z", "fisher_z_mean"), ("r_pooled", "fisher_r_mean_bktr"),
                             ("p_unc", "fisher_z_p_two_sided"), ("p_holm", "p_holm_study"))}
    return {"ours_rows": len(seg), "study_rows": len(rows), "matched": len(both),
            "only_ours": int((m["_merge"] == "left_only").sum()),
            "only_study": int((m["_merge"] == "right_only").sum()),
            "max_abs_diff": diff,
            "by_scan_segment": [{k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()}
                                for r in by_scan.to_dict("records")],
            "aggregate_rows_matched": len(mm), "aggregate_max_abs_diff": agg_diff}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--mirror", type=Path, default=DEFAULT_MIRROR, help="git mirror of GazeForHRI/Gaze4HRI")
    ap.add_argument("--rev", default="HEAD", help="the study's revision (default HEAD of the mirror)")
    ap.add_argument("--subjects", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-diff", type=float, default=None, help="fail when slope, intercept or r differ by more")
    ap.add_argument("--corners", choices=("study", "ours"), default="study",
                    help="study: the study's corner finder (its fixed index windows); ours: our corner times given "
                         "to the study's partition and regressions")
    ap.add_argument("--json", type=Path, default=None, help="also write the comparison here")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="g4h_study_lm_") as tmp:
        tmp = Path(tmp)
        src = tmp / "study"
        src.mkdir()
        why = study_sources(a.mirror, a.rev, src)
        if why:
            print(f"study code not available: {why}; fetch GazeForHRI/Gaze4HRI (e.g. git clone --mirror "
                  "https://github.com/GazeForHRI/Gaze4HRI) and pass --mirror", file=sys.stderr)
            return 2
        frames = per_frame(a.subjects, a.seed)
        (tmp / "results").mkdir()
        write_results(frames, tmp / "results")
        seg, meta = ours(tmp / "results")
        study_inputs(frames, tmp / "base")
        (tmp / "out").mkdir()
        corners = None
        if a.corners == "ours":
            corners = tmp / "corners.json"
            our_corners(frames, corners)
        got = run_study(src, tmp / "base", tmp / "out", corners)
        if isinstance(got, str):
            print(f"study code not runnable here: {got}", file=sys.stderr)
            return 2
        res = compare(seg, meta, *got)
    res = {"corners": a.corners, "subjects": a.subjects, "study_rev": a.rev, **res}
    print(json.dumps(res, indent=2))
    d = res["max_abs_diff"]
    print(f"{res['matched']} of {res['ours_rows']} segment rows matched (corners: {a.corners}); largest |difference| "
          f"slope {d['slope']:.3g} deg/deg, intercept {d['intercept']:.3g} deg, r {d['r']:.3g}, frames "
          f"{d['n_frames']:.0f}")
    if a.json:
        a.json.write_text(json.dumps(res, indent=2))
    if not res["matched"]:
        print("no segment row matched between the two", file=sys.stderr)
        return 1
    worst = max(res["max_abs_diff"][c] for c in ("slope", "intercept", "r"))
    if a.max_diff is not None and not worst <= a.max_diff:
        print(f"largest difference {worst:.3g} exceeds --max-diff {a.max_diff}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
