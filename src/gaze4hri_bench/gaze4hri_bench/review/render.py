"""Render one trial's review: results rows (one Parquet file per method and input) +
the trial's frames and ground truth from the dataset -> MP4 + contact sheet PNG.

Each frame shows the ground-truth arrow (green) and every selected method's arrow from
the eye midpoint (motion capture, ``data.frame_truth``), a legend with each method's
angular error or its own validity reason (e.g. ``no_face``), and the frame's data
validity reason (blink, mocap_lost, dropped_frame, ...) from the results rows."""

from __future__ import annotations

import re
import shlex
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
from gaze4hri_core.errors import Gaze4HRIError

from .overlay import ARROW_LENGTH_M, frame_arrows

__all__ = ["ReviewConfig", "ReviewOutput", "review_trial", "result_files", "data_root", "trial_rows"]

_ROW_COLS = [
    "subject",
    "trial",
    "frame",
    "t_ns",
    "method",
    "input",
    "valid",
    "invalid_reason",
    "gt_x",
    "gt_y",
    "gt_z",
    "pred_x",
    "pred_y",
    "pred_z",
    "error_deg",
]


@dataclass(frozen=True)
class ReviewConfig:
    """What to render: ``results`` folder, ``trial`` id (``subject`` when several
    subjects recorded it), ``methods`` (names or ``method__input`` keys; None: all),
    ``data`` (default: the run's --data from the results metadata), ``out`` folder."""

    results: Path
    trial: str
    subject: str | None = None
    methods: tuple[str, ...] | None = None
    data: Path | None = None
    out: Path | None = None
    length_m: float = ARROW_LENGTH_M
    sheet_frames: int = 12
    fps: float | None = None
    max_frames: int | None = None


@dataclass(frozen=True)
class ReviewOutput:
    mp4: Path
    png: Path
    frames: int
    seconds: float

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else float("nan")


def result_files(results: Path, methods: tuple[str, ...] | None = None) -> dict[str, Path]:
    """``method__input`` -> results file, filtered by method names or keys."""
    results = Path(results)
    if not results.is_dir():
        raise Gaze4HRIError("results folder not found", str(results), "pass the --out folder of `gaze4hri-bench run`")
    files = {p.stem: p for p in sorted(results.glob("*__*.parquet"))}
    if not files:
        raise Gaze4HRIError(
            "no results files (<method>__<input>.parquet)", str(results), "run `gaze4hri-bench run --out` into it first"
        )
    if methods:
        keep = {}
        for m in methods:
            hit = {k: p for k, p in files.items() if k == m or k.split("__")[0] == m}
            if not hit:
                import difflib

                names = sorted({k.split("__")[0] for k in files})
                near = difflib.get_close_matches(m, names, n=1)
                raise Gaze4HRIError(
                    f"no results for method {m!r}",
                    str(results),
                    (f"did you mean {near[0]}? " if near else "") + f"results hold: {', '.join(sorted(files))}",
                )
            keep.update(hit)
        files = keep
    return files


def data_root(files: dict[str, Path]) -> Path:
    """The run's --data folder, read from a results file's command line."""
    from ..schema import METADATA_KEY

    for p in files.values():
        import json

        key = METADATA_KEY if isinstance(METADATA_KEY, bytes) else METADATA_KEY.encode()
        md = json.loads((pq.read_schema(p).metadata or {}).get(key, b"{}"))
        cl = str(md.get("command_line", ""))
        try:
            args = shlex.split(cl)
        except ValueError:
            args = cl.split()
        for i, a in enumerate(args):
            if a == "--data" and i + 1 < len(args):
                return Path(args[i + 1])
            if a.startswith("--data="):
                return Path(a.split("=", 1)[1])
    raise Gaze4HRIError(
        "the results do not say where the data is",
        str(next(iter(files.values()))),
        "pass --data with the sessions folder the run read",
    )


def trial_rows(files: dict[str, Path], trial: str, subject: str | None) -> tuple[str, dict[str, pd.DataFrame]]:
    """(subject, key -> that trial's rows sorted by frame)."""
    out: dict[str, pd.DataFrame] = {}
    for k, p in files.items():
        df = pd.read_parquet(p, columns=_ROW_COLS, filters=[("trial", "==", trial)])
        if subject is not None:
            df = df[df["subject"] == subject]
        out[k] = df
    subjects = sorted({s for df in out.values() for s in df["subject"].unique()})
    if not subjects:
        import difflib

        trials = sorted(
            {str(t) for p in files.values() for t in pd.read_parquet(p, columns=["trial"])["trial"].unique()}
        )
        near = difflib.get_close_matches(trial, trials, n=1)
        raise Gaze4HRIError(
            f"trial {trial!r} is not in the results" + (f" for subject {subject}" if subject else ""),
            "--trial",
            (f"did you mean {near[0]}? " if near else "") + f"results hold {len(trials)} trials",
        )
    if len(subjects) > 1:
        raise Gaze4HRIError(
            f"trial {trial} was recorded by {len(subjects)} subjects",
            "--trial",
            f"add --subject, one of {', '.join(subjects)}",
        )
    s = subjects[0]
    return s, {k: df[df["subject"] == s].sort_values("frame").set_index("frame") for k, df in out.items()}


def _intrinsics(ds, tref, shape) -> np.ndarray:
    cam = getattr(ds, "camera_info", None)
    intr = cam(tref) if callable(cam) else getattr(getattr(tref, "calibration", None), "intrinsics", None)
    if intr is None:
        raise Gaze4HRIError(
            "no camera intrinsics for this trial",
            f"{tref.subject}/{tref.trial}",
            "the session needs calibration/camera_info.yaml",
        )
    h, w = shape[:2]
    if (intr.width, intr.height) != (w, h):
        intr = intr.scaled(w, h)
    return np.asarray(intr.K, float)


def _colors(keys: list[str]) -> dict[str, tuple[int, int, int]]:
    from ..style import hex_rgb, method_color

    return {k: hex_rgb(method_color(k.split("__")[0])) for k in keys}


def review_trial(cfg: ReviewConfig, log=print, dataset=None) -> ReviewOutput:
    """Render the review of one trial; returns the MP4 and PNG paths and the speed."""
    from ..data.reader import Dataset
    from .draw import draw_frame
    from .video import Mp4Writer, contact_sheet, write_png

    files = result_files(cfg.results, cfg.methods)
    subject, rows = trial_rows(files, cfg.trial, cfg.subject)
    ds = (
        dataset
        if dataset is not None
        else Dataset(cfg.data or data_root(files), subjects=[subject], trials=[cfg.trial])
    )
    refs = [t for t in ds.trials() if t.subject == subject and t.trial == cfg.trial]
    if not refs:
        raise Gaze4HRIError(
            f"trial {subject}/{cfg.trial} is not in the data",
            str(cfg.data or "--data"),
            "pass --data with the sessions the run read",
        )
    tref = refs[0]
    gt = ds.trial_ground_truth(tref).set_index("frame")
    keys = list(rows)
    colors = _colors(keys)
    first = rows[keys[0]]
    t = first["t_ns"].to_numpy(np.int64)
    fps = cfg.fps or (float(1e9 / np.median(np.diff(t))) if len(t) > 2 else 30.0)
    out = Path(cfg.out or Path(cfg.results) / "review")
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{subject}__{cfg.trial}")
    writer = Mp4Writer(out / f"{stem}.mp4", fps)
    n_total = len(gt)
    picks = set(
        np.linspace(0, max(n_total - 1, 0), min(cfg.sheet_frames, max(n_total, 1))).round().astype(int).tolist()
    )
    sheet: list[np.ndarray] = []
    t0 = time.perf_counter()
    n = 0
    K = None
    try:
        for pos, fs in enumerate(ds.iter_frames(tref)):
            if cfg.max_frames is not None and n >= cfg.max_frames:
                break
            if K is None:
                K = _intrinsics(ds, tref, fs.image.shape)
            f = fs.index
            g = gt.loc[f] if f in gt.index else None
            eye = np.array([g["eye_cx"], g["eye_cy"], g["eye_cz"]], float) if g is not None else np.full(3, np.nan)
            r0 = first.loc[f] if f in first.index else None
            gvec = np.array([r0["gt_x"], r0["gt_y"], r0["gt_z"]], float) if r0 is not None else np.full(3, np.nan)
            preds, errs, legend, reasons = {}, {}, [("gt", "ground truth")], []
            for k in keys:
                r = rows[k].loc[f] if f in rows[k].index else None
                if r is None:
                    legend.append((k, f"{k}: no row"))
                    continue
                if bool(r["valid"]):
                    preds[k] = np.array([r["pred_x"], r["pred_y"], r["pred_z"]], float)
                    errs[k] = float(r["error_deg"])
                    legend.append((k, f"{k}: {errs[k]:.1f} deg"))
                else:
                    reasons.append(str(r["invalid_reason"]))
                    if np.isfinite([r["pred_x"], r["pred_y"], r["pred_z"]]).all():
                        preds[k] = np.array([r["pred_x"], r["pred_y"], r["pred_z"]], float)
                    legend.append((k, f"{k}: {r['invalid_reason'] or 'invalid'}"))
            arrows = frame_arrows(K, eye, gvec, preds, errs, cfg.length_m)
            reason = ", ".join(sorted(set(x for x in reasons if x)))
            img = draw_frame(fs.image, arrows, colors, f"{subject} {cfg.trial} frame {f}", reason, legend)
            writer.write(img)
            if pos in picks:
                sheet.append(img)
            n += 1
        mp4 = writer.close()
    except BaseException:
        writer.abort()
        raise
    png = write_png(out / f"{stem}.png", contact_sheet(sheet or [img]))
    secs = time.perf_counter() - t0
    log(f"review: {n} frames -> {mp4} and {png} ({n / secs:.1f} frames/s)")
    return ReviewOutput(mp4, png, n, secs)
