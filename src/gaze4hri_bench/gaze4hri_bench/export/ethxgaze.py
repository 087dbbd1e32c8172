"""Export a dataset (either reader backend) as ETH-XGaze-style HDF5 training sets.

ETH-XGaze (Zhang et al., ECCV 2020) ships one HDF5 file per subject with
``face_patch`` (N, 224, 224, 3) uint8 **BGR** normalized faces, ``face_gaze`` (N, 2)
and ``face_head_pose`` (N, 2) float32 [pitch, yaw] in radians, plus
``train_test_split.json`` naming the files of each split, the files under ``train/``
and ``test/`` as ETH-XGaze ships them (its loader opens ``<dir>/<split>/<file>`` with
``swmr=True``: xucong-zhang/ETH-XGaze data_loader.py:31-42, 87-88, 125-126; validation
subjects go to ``train/``, listed under ``val``). Code that reads this layout: ETH-XGaze's
own trainer (its data_loader.py / trainer.py) and trainers written against it. The
official PureGaze and GazeTR code does NOT read it: their readers take GazeHub's
processed layout, image files plus label text lines (yihuacheng/GazeTR reader/reader.py
``trainloader``; yihuacheng/PureGaze model/reader/reader_adap.py), so training them on
this export needs an adapter (docs/study_dataset.md). Patches come
from the project's data normalization (faces.normalization, Zhang et al. 2018, Sec. 3:
f = 960, d = 600 mm, 224 px by default) with the motion-capture face centre and head
rotation of the ground truth; labels: g_n = R g (Frame A pitch/yaw,
gaze4hri_core.gaze.vector_to_pitchyaw); head: the z axis of R_n = R R_head as
[asin(z_y), atan2(z_x, z_z)] (GazeHub's HeadTo2d convention, a frontal head is
(0, 0)). Extra datasets: ``face_mat_norm`` (N, 3, 3), ``frame_index`` (N, 1),
``trial`` (N,) and ``t_ns`` (N,). Only valid frames are written (data reasons and blinks:
a session's annotations, or in a simulated session the simulator's blink truth); files grow in chunks
so memory stays flat whatever the trial length.
"""
from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.gaze import vector_to_pitchyaw

from ..faces import normalization as N

__all__ = ["export_ethxgaze", "EthExportResult", "head_pitchyaw", "split_folder"]


@dataclass
class EthExportResult:
    files: dict[str, Path]
    counts: dict[str, int]
    split: dict[str, list[str]]
    skipped: list[str]


def split_folder(subject: str, test_subjects=()) -> str:
    """ETH-XGaze's folder of a subject's file: ``test`` for the test split, else ``train``
    (validation subjects too: ETH-XGaze ships only train/ and test/ and cuts validation
    from train). Its loader opens ``<dir>/<sub_folder>/<key>`` with sub_folder 'train' or
    'test' (xucong-zhang/ETH-XGaze data_loader.py:41-42, 64-65, 87, 125)."""
    return "test" if subject in test_subjects else "train"


def head_pitchyaw(R_n: np.ndarray) -> np.ndarray:
    """[pitch, yaw] (rad) of a normalized head rotation: its z axis as GazeHub's HeadTo2d."""
    z = np.asarray(R_n, float)[..., :, 2]
    return np.stack([np.arcsin(np.clip(z[..., 1], -1, 1)), np.arctan2(z[..., 0], z[..., 2])], axis=-1)


class _SubjectFile:
    """One subject's HDF5 file, appended in chunks (resizable datasets)."""

    def __init__(self, path: Path, size: int):
        import h5py

        path.parent.mkdir(parents=True, exist_ok=True)
        self.f = h5py.File(path, "w", libver="latest")  # ETH-XGaze's loader opens files with swmr=True
        self.n = 0
        st = h5py.string_dtype()
        self.d = {
            "face_patch": self.f.create_dataset("face_patch", (0, size, size, 3), np.uint8,
                                                maxshape=(None, size, size, 3),
                                                chunks=(8, size, size, 3), compression="lzf"),
            "face_gaze": self.f.create_dataset("face_gaze", (0, 2), np.float32, maxshape=(None, 2)),
            "face_head_pose": self.f.create_dataset("face_head_pose", (0, 2), np.float32, maxshape=(None, 2)),
            "face_mat_norm": self.f.create_dataset("face_mat_norm", (0, 3, 3), np.float32, maxshape=(None, 3, 3)),
            "frame_index": self.f.create_dataset("frame_index", (0, 1), np.int64, maxshape=(None, 1)),
            "t_ns": self.f.create_dataset("t_ns", (0,), np.int64, maxshape=(None,)),
            "trial": self.f.create_dataset("trial", (0,), st, maxshape=(None,)),
        }

    def append(self, rows: dict[str, list]) -> None:
        k = len(rows["face_patch"])
        if not k:
            return
        for name, ds in self.d.items():
            ds.resize(self.n + k, axis=0)
            ds[self.n:self.n + k] = np.asarray(rows[name], dtype=ds.dtype if name != "trial" else object)
        self.n += k

    def close(self) -> None:
        self.f.close()


def export_ethxgaze(data: Path, out: Path, subjects=None, trials=None, stride: int = 1, data_format: str = "auto",
                    val_subjects=(), test_subjects=(), focal_px: float = 960.0, distance_mm: float = 600.0,
                    size: int = 224,
                    log: Callable[[str], None] = print, progress: bool = False) -> EthExportResult:
    """Write ``out/{train,test}/subject<ID>.h5`` per subject and ``out/train_test_split.json``
    (keys are the file names, read from ``out/train/`` or ``out/test/`` as ETH-XGaze's loader does).
    ``progress``: `run`'s overall bar with the ETA (pipeline.progress.RunProgress); each
    skipped trial is said once, through ``log``."""
    from ..data.reader import Dataset
    from ..pipeline.progress import RunProgress

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    from ..data.reader import detect_format

    fmt = detect_format(data) if data_format == "auto" else data_format
    # valid frames only: a simulated session's blink truth excludes its blink frames (the
    # session backend's sim_blinks; a study layout applies its blink annotation files)
    ds = Dataset(data, subjects=subjects, trials=trials, stride=stride, format=fmt,
                 **({"sim_blinks": True} if fmt == "session" else {}))
    refs = [r for r in ds.trials() if r.status == "done"]
    skipped = [f"{s.subject}/{s.trial}: {s.reason}" for s in getattr(ds, "skipped", [])]
    for s in skipped:
        log(f"skipped {s}")
    if not refs:
        raise Gaze4HRIError("no finished trial to export", str(data), "check --subjects/--trials and the data folder")
    unknown = [s for s in (*val_subjects, *test_subjects) if s not in {r.subject for r in refs}]
    if unknown:
        raise Gaze4HRIError(f"split names unknown subject(s) {', '.join(unknown)}", "--val-subjects/--test-subjects",
                            f"known: {', '.join(sorted({r.subject for r in refs}))}")
    files: dict[str, _SubjectFile] = {}
    paths: dict[str, Path] = {}
    with RunProgress(progress, log=log) as bars:  # warnings as one line each, as export_study
        job = bars.job("export", refs, stride)
        try:
            for ref in refs:
                name = f"subject{ref.subject}.h5"
                if ref.subject not in files:
                    paths[ref.subject] = out / split_folder(ref.subject, test_subjects) / name
                    files[ref.subject] = _SubjectFile(paths[ref.subject], size)
                with job.trial(ref) as bar:
                    try:
                        n = _export_trial(ds, ref, files[ref.subject], focal_px, distance_mm, size, bar=bar)
                    except Gaze4HRIError as e:
                        skipped.append(f"{ref.key}: {e.line()}")
                        bars.write(f"skipped {ref.key}: {e.line()}")
                        continue
                bars.write(f"{ref.key}: {n} patches")
        finally:
            job.close()
            for f in files.values():
                f.close()
    counts = {s: files[s].n for s in files}
    split = {"train": [paths[s].name for s in paths if s not in val_subjects and s not in test_subjects],
             "val": [paths[s].name for s in paths if s in val_subjects],
             "test": [paths[s].name for s in paths if s in test_subjects]}
    (out / "train_test_split.json").write_text(json.dumps(split, indent=2))
    return EthExportResult(paths, counts, split, skipped)


def _export_trial(ds, ref, f: _SubjectFile, focal_px: float, distance_mm: float, size: int, bar=None) -> int:
    import cv2

    gt = ds.trial_ground_truth(ref).set_index("frame")
    K = None
    rows: dict[str, list] = {k: [] for k in f.d}
    written = 0
    rcols = [f"R_head_{i}{j}" for i in range(3) for j in range(3)]
    for fs in ds.iter_frames(ref):
        if bar is not None:
            bar.update(1)
        if fs.index not in gt.index:
            continue
        g = gt.loc[fs.index]
        if not bool(g["valid"]):
            continue
        c = g[["face_cx", "face_cy", "face_cz"]].to_numpy(float)
        Rh = g[rcols].to_numpy(float).reshape(3, 3)
        gv = g[["gt_x", "gt_y", "gt_z"]].to_numpy(float)
        if not (np.isfinite(c).all() and np.isfinite(Rh).all() and np.isfinite(gv).all()):
            continue
        if K is None:
            intr = ds.camera_info(ref)
            h, w = fs.image.shape[:2]
            K = (intr if (intr.width, intr.height) == (w, h) else intr.scaled(w, h)).K
        patch, R = N.normalize(fs.image, K, c, Rh, focal_px, distance_mm, size)
        rows["face_patch"].append(cv2.cvtColor(patch, cv2.COLOR_RGB2BGR))  # ETH-XGaze patches are BGR
        rows["face_gaze"].append(vector_to_pitchyaw(N.normalize_gaze(gv, R)))
        rows["face_head_pose"].append(head_pitchyaw(N.normalize_head(Rh, R)))
        rows["face_mat_norm"].append(R)
        rows["frame_index"].append([fs.index])
        rows["t_ns"].append(fs.t_ns)
        rows["trial"].append(ref.trial)
        if len(rows["face_patch"]) >= 64:
            written += len(rows["face_patch"])
            f.append(rows)
            rows = {k: [] for k in f.d}
    written += len(rows["face_patch"])
    f.append(rows)
    return written
