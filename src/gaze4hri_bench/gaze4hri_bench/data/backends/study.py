"""The ``study`` backend: the study's released per-trial dataset, read as it is.

Layout (GazeForHRI/Gaze4HRI, restated in study-code.md and docs/study_dataset.md):
``BASE/<date>/<subject>/<exp_type>/<point>/<stamp_ms>/`` with rgb_video.mp4 and npy
streams; ``<subject>/subject_info.json``. The study's own dataset rules: per trial the
stamp folder modified last is read (GazeForHRI/Gaze4HRI@main:data_loader.py:38-43,
``max(subdirs, key=os.path.getmtime)``; equal times: the latest by name), the others
are listed as re-recordings (TrialRef.rerecordings); ``subject_info.json`` is
``{"subjects": [{...}]}`` and the first entry is the subject's (frame_db.py:57-96; a
flat object is read as is; the ``name`` key is left out); with several blink
annotation files the first by name is used (data_loader.py:362-384;
``blink_rule="any"``: the highest code of any annotator).

Ground truth is computed by the same function as for our sessions
(data.frame_truth.compute_ground_truth, core geometry): the head band stream with the
study's eye offset as the eye-head transform (band axes x forward, y up, z right
turned into our REP-103 eye axes by a constant rotation), the camera stream
(camera_poses, rgb_camera_link body axes, turned into the optical frame once) as an
already-registered pose (identity registration and hand-eye), and the target from
target_positions interpolated at each frame (the camera centre for line movements,
as in our protocol). Interpolation and validity are those of our sessions
(linear/SLERP, no bridging of gaps), so a trial reads the same from either layout.
Frames are decoded lazily with OpenCV (the lossless rgb_video.mkv beside the mp4 is
preferred when present). Blinks: blink_annotations_by_*.npy, code 3 -> ``blink``,
2 -> ``blink_uncertain``. Bad trials are skipped with a one-line reason (``skipped``),
the others are read: a required stream missing or unreadable, or a video that cannot
be decoded to its last frame (a truncated file, e.g. a re-muxed mp4 with its index at
the front, opens and decodes its first frames), skips the trial at listing time, never
the run. Optional files (eye_positions, head_bboxes, table_pose, ur5_base_pose,
ur5_joint_states) that are unreadable or malformed (an object array such as a
``None`` saved with np.save, an empty array) are left out with a warning. A subject
folder without any trial is named in ``skipped``.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.calibration import Calibration, CameraIntrinsics
from gaze4hri_core.errors import Gaze4HRIError, SessionError
from gaze4hri_core.protocol import trial_by_id
from gaze4hri_core.transforms import SE3, matrix_to_quat_xyzw

from .. import study_layout as L
from .. import validity
from ..frame_truth import FrameTable, GTOptions, PoseStream, compute_ground_truth
from .base import FrameSample, SkippedTrial, TrialRef
from .session import build_frame_table

__all__ = ["StudyDataset", "detect", "EYE_CHECK_TOLERANCE_M"]

#: eye_positions.npy may differ from head_poses x eye_position_in_head_frame by this much (m)
EYE_CHECK_TOLERANCE_M = 0.002
_FIX = "re-download or re-export the trial, or leave it out with --trials"


def _is_subject_dir(p: Path) -> bool:
    if not p.is_dir():
        return False
    if (p / "subject_info.json").is_file():
        return True
    return any((p / e).is_dir() for e in L.EXP_TYPES)


def _subject_dirs(root: Path, empty: list[Path] | None = None) -> list[Path]:
    """Subject folders under root (root itself, a date folder or BASE). ``empty``
    collects the folders where a subject folder belongs that hold no experiment folder
    and no subject_info.json (an empty subject folder: named in the listing)."""
    root = Path(root)
    if _is_subject_dir(root):
        return [root]
    out = []
    for c in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if _is_subject_dir(c):
            out.append(c)
            continue
        kids = sorted(p for p in c.iterdir() if p.is_dir() and not p.name.startswith("."))
        subj = [g for g in kids if _is_subject_dir(g)]
        out.extend(subj)
        if empty is not None:
            if subj or _looks_like_date(c):  # c is a date folder: its other folders are subject folders without data
                empty.extend(g for g in kids if g not in subj)
            elif not kids and _looks_like_date(root):  # root is a date folder: c an empty subject folder
                empty.append(c)
    return out


def _looks_like_date(p: Path) -> bool:
    import re

    return re.fullmatch(r"\d{4}-\d{2}-\d{2}", p.name) is not None


def _stamp_order(p: Path) -> tuple:
    """Sort key of a trial's stamp folders, the one read last: modification time (the
    study's data_loader.py:38-43), then the ms stamp in the name (numeric order)."""
    try:
        m = p.stat().st_mtime_ns
    except OSError:
        m = -1
    return (m, len(p.name), p.name)


def detect(root: Path) -> bool:
    """Whether ``root`` holds the study layout (a subject folder, a date folder or BASE)."""
    try:
        return Path(root).is_dir() and bool(_subject_dirs(Path(root)))
    except OSError:
        return False


@dataclass
class _Trial:
    """Everything small of one trial, loaded once (cached, bounded)."""

    table: FrameTable
    head: PoseStream
    camera: PoseStream
    target_t: np.ndarray
    target_p: np.ndarray
    eye_in_band: np.ndarray
    intr: dict
    video: Path
    size: tuple[int, int]
    n_video: int
    blink: np.ndarray | None  # max annotation code per recorded frame
    boxes: np.ndarray | None
    ur5_base: np.ndarray | None
    eye_check_m: float | None


def _poses(rows: np.ndarray, R_right: np.ndarray | None = None) -> PoseStream:
    t, R, p = L.rows_to_poses(rows)
    if R_right is not None:
        R = R @ R_right
    q = np.array([matrix_to_quat_xyzw(r) for r in R]) if len(R) else np.zeros((0, 4))
    return PoseStream(t, p, q)


def _check_video(video: Path, n_stamps: int) -> tuple[int, tuple[int, int]]:
    """(frame count from the container, (width, height)) of a trial's video, after
    decoding its first and its last frame: a missing, undecodable or truncated file is a
    one-line error (a truncated file, its index at the front, decodes its first frames)."""
    import cv2

    if not video.is_file():
        raise SessionError(f"{video.name} missing", str(video), _FIX)
    cap = cv2.VideoCapture(str(video))
    try:
        ok, img = cap.read() if cap.isOpened() else (False, None)
        if not ok or img is None:
            raise SessionError(f"{video.name} cannot be decoded", str(video),
                               f"check the file (ffprobe) or re-encode it as mp4v/FFV1; {_FIX}")
        n_video = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        size = (img.shape[1], img.shape[0])
        last = (n_video if n_video > 0 else n_stamps) - 1
        if last > 0:
            cap.set(cv2.CAP_PROP_POS_FRAMES, last)
            ok, img = cap.read()
            if not ok or img is None:
                raise SessionError(f"{video.name} cannot be decoded to its last frame ({last + 1}): the file is "
                                   "truncated or damaged", str(video),
                                   f"check it with ffprobe, re-download or re-encode it; {_FIX}")
    finally:
        cap.release()
    return n_video, size


class StudyDataset:
    """The study layout under ``root`` (BASE, a date folder or one subject folder),
    filtered by subject and trial ids, reading every ``stride``-th recorded frame.

    ``video``: ``auto`` (rgb_video.mkv when present, else rgb_video.mp4), ``mp4`` or
    ``mkv``; ``gt_options`` as for sessions; ``blink_annotations``: use the
    blink_annotations_by_*.npy files; ``blink_rule``: ``first`` (the study's: the first
    annotation file by name) or ``any`` (the highest code of every annotator);
    ``sim_blinks`` is accepted and ignored (no simulator truth in this layout)."""

    name = "study"
    CACHE_TRIALS = 8

    def __init__(self, root: Path | str, subjects: list[str] | None = None, trials: list[str] | None = None,
                 stride: int = 1, gt_options: GTOptions | None = None, blink_annotations: bool = True,
                 sim_blinks: bool = False, video: str = "auto", blink_rule: str = "first"):
        self.root = Path(root)
        if blink_rule not in ("first", "any"):
            raise Gaze4HRIError(f"unknown blink_rule {blink_rule!r}", "blink_rule", "use first (the study's) or any")
        self.blink_rule = blink_rule
        self.empty_subject_dirs: list[Path] = []
        if int(stride) < 1:
            raise Gaze4HRIError(f"stride must be >= 1, got {stride}", "--stride", "pass a positive integer")
        if video not in ("auto", "mp4", "mkv"):
            raise Gaze4HRIError(f"unknown video choice {video!r}", "video", "use auto, mp4 or mkv")
        self.stride = int(stride)
        self.subject_filter = list(subjects) if subjects else None
        self.trial_filter = list(trials) if trials else None
        for tid in self.trial_filter or ():
            trial_by_id(tid, "--trials")  # an unknown id: the registry's one-line error
        self.gt_options = gt_options or GTOptions()
        self.blink_annotations = blink_annotations
        self.video = video
        self.skipped: list[SkippedTrial] = []
        self.warnings: list[str] = []
        self._refs: list[TrialRef] | None = None
        self._cache: dict[str, _Trial] = {}
        self._info: dict[str, dict] = {}

    # -- discovery ------------------------------------------------------------------
    def subject_dirs(self) -> dict[str, list[Path]]:
        """subject -> its folders (one per recording date)."""
        if not self.root.is_dir():
            raise SessionError("data folder not found", str(self.root), "pass the study dataset's BASE folder")
        by: dict[str, list[Path]] = {}
        empty: list[Path] = []
        for d in _subject_dirs(self.root, empty):
            by.setdefault(d.name, []).append(d)
        self.empty_subject_dirs = [e for e in empty if not self.subject_filter or e.name in self.subject_filter]
        if not by:
            raise SessionError("no study-layout subject folder found", str(self.root),
                               "pass BASE of <date>/<subject>/<exp_type>/<point>/<stamp_ms>/ (docs/study_dataset.md)")
        if self.subject_filter:
            missing = [s for s in self.subject_filter if s not in by]
            if missing:
                raise SessionError(f"subject(s) {', '.join(missing)} not found", str(self.root),
                                   f"known: {', '.join(sorted(by)) or 'none'}")
            by = {s: by[s] for s in self.subject_filter}
        return by

    def subject_info(self, subject: str) -> dict:
        """subject_info.json of the subject (gender, birth year, glasses, height), {} if absent."""
        if subject not in self._info:
            info: dict = {}
            for d in self.subject_dirs().get(subject, []):
                p = d / "subject_info.json"
                if p.is_file():
                    try:
                        raw = json.loads(p.read_text(encoding="utf-8"))
                    except (OSError, ValueError) as e:
                        raw = None
                        why = f"not valid JSON ({str(e).splitlines()[0][:80]})"
                    else:
                        why = "not a JSON object"
                    if isinstance(raw, dict) and "subjects" in raw:  # the study's format (frame_db.py:87-93)
                        subs = raw["subjects"]
                        raw = subs[0] if isinstance(subs, list) and subs and isinstance(subs[0], dict) else None
                        why = "has no subject object in its \"subjects\" list"
                    if not isinstance(raw, dict):  # metadata only: the trials are still read
                        self.warnings.append(f"subject_info.json {why} ({p}): fix or remove the file; "
                                             "subject metadata left empty")
                        continue
                    info = {k: v for k, v in raw.items() if k != "name"}  # a person's name stays out of results
            self._info[subject] = info
        return dict(self._info[subject])

    def subjects(self) -> list[str]:
        return sorted({r.subject for r in self.trials()})

    def trials(self) -> list[TrialRef]:
        """Every usable trial (latest stamp folder), in subject then protocol order. A
        trial with bad input (missing stream, mismatched lengths, unreadable video,
        refused intrinsics, unknown exp_type) is left out and listed in ``skipped``."""
        if self._refs is not None:
            return list(self._refs)
        refs: list[TrialRef] = []
        self.skipped = []
        by_subject = self.subject_dirs()
        for e in self.empty_subject_dirs:
            self._skip(e.name, "-", e, SessionError(
                "empty subject folder: no experiment folder and no subject_info.json", str(e),
                "remove the folder, or copy the subject's trials into it (docs/study_dataset.md)"))
        for subject, dirs in by_subject.items():
            info = self.subject_info(subject)
            stamps: dict[str, list[Path]] = {}
            for sd in dirs:
                for exp in sorted(p for p in sd.iterdir() if p.is_dir() and not p.name.startswith(".")):
                    if exp.name not in L.EXP_TYPES:
                        self._skip(subject, exp.name, exp, SessionError(
                            f"unknown exp_type folder {exp.name!r}", str(exp),
                            f"rename it to one of {', '.join(L.EXP_TYPES)} or move it out of the dataset"))
                        continue
                    for pt in sorted(p for p in exp.iterdir() if p.is_dir() and not p.name.startswith(".")):
                        tid = L.trial_id_for(exp.name, pt.name)
                        if tid is None:
                            self._skip(subject, f"{exp.name}/{pt.name}", pt, SessionError(
                                f"unknown point folder {pt.name!r} for {exp.name}", str(pt),
                                f"use one of {', '.join(L.EXP_TYPES[exp.name][1])}"))
                            continue
                        if self.trial_filter and tid not in self.trial_filter:
                            continue
                        # .partial: an unfinished export
                        st = [s for s in pt.iterdir() if s.is_dir() and not s.name.startswith(".")]
                        stamps.setdefault(tid, []).extend(st)
            order = []
            if not any(stamps.values()) and not self.trial_filter:
                self._skip(subject, "-", dirs[0], SessionError(
                    "subject folder without any trial", str(dirs[0]),
                    "copy the subject's <exp_type>/<point>/<stamp_ms>/ folders into it, or remove it"))
            for tid, st in stamps.items():
                if not st:
                    continue
                st = sorted(st, key=_stamp_order)  # the study's: the folder modified last is read
                tr = trial_by_id(tid)
                ref = TrialRef(subject, tid, tr, st[-1].parents[2], st[-1], "done", None, None,
                               subject_info=info, rerecordings=tuple(st[:-1]), backend="study")
                try:
                    self._load(ref)
                except Gaze4HRIError as e:
                    self._skip(subject, tid, st[-1], e)
                    continue
                order.append((tr.index, ref))
            refs.extend(r for _i, r in sorted(order, key=lambda x: x[0]))
        self._refs = refs
        return list(refs)

    def _skip(self, subject: str, trial: str, where: Path, err: Gaze4HRIError) -> None:
        self.skipped.append(SkippedTrial(subject, trial, str(where), err.line()))

    # -- loading and checks ---------------------------------------------------------
    def _npy(self, d: Path, name: str) -> np.ndarray | None:
        """A stream of the layout; a required one missing or bad raises, an optional one
        missing is None, unreadable or malformed None with a warning."""
        required, _shape = L.FILES[name]
        try:
            return self._npy_checked(d, name)
        except SessionError as e:
            if required:
                raise
            self.warnings.append(f"{e.line()} (optional: left out)")
            return None

    def _npy_checked(self, d: Path, name: str) -> np.ndarray | None:
        required, shape = L.FILES[name]
        p = d / name
        if not p.is_file():
            if required:
                raise SessionError(f"{name} missing", str(p), f"the trial needs every stream of the layout; {_FIX}")
            return None
        try:
            a = np.load(p, allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise SessionError(f"{name} unreadable ({str(e).splitlines()[0][:100]})", str(p), _FIX) from None
        if len(a.shape) != len(shape) or any(s != -1 and s != a.shape[i] for i, s in enumerate(shape)):
            want = "(" + ", ".join("N" if s == -1 else str(s) for s in shape) + ")"
            raise SessionError(f"{name} has shape {a.shape}, expected {want}", str(p), _FIX)
        if not np.issubdtype(a.dtype, np.number):
            raise SessionError(f"{name} has dtype {a.dtype}, expected numbers", str(p), _FIX)
        return a

    def _video_path(self, d: Path) -> Path:
        mkv, mp4 = d / L.VIDEO_MKV, d / L.VIDEO_MP4
        if self.video == "mkv" or (self.video == "auto" and mkv.is_file()):
            return mkv
        return mp4

    def _blink_codes(self, d: Path, n: int) -> np.ndarray | None:
        """The trial's blink annotation codes (0 unlabelled, 1 open, 2 uncertain, 3 blink)
        per frame: the first file by name (``blink_rule`` first, the study's) or the
        largest code of all (``any``); None without a file."""
        blink = None
        files = sorted(d.glob(L.BLINK_GLOB))  # by name, as the study's os.listdir + sort
        if self.blink_rule == "first":
            files = files[:1]
        for f in files:
            try:
                b = np.load(f, allow_pickle=False)
            except (ValueError, OSError, EOFError) as e:
                raise SessionError(f"{f.name} unreadable ({str(e).splitlines()[0][:100]})", str(f), _FIX) from None
            if b.ndim != 1 or len(b) != n:
                raise SessionError(f"{f.name} has shape {b.shape}, expected ({n},) (one code per frame)",
                                   str(f), f"lengths must match rgb_timestamps.npy; {_FIX}")
            if b.size and (b.min() < 0 or b.max() > 3):
                raise SessionError(f"{f.name} holds codes outside 0..3", str(f),
                                   "codes: 0 unlabelled, 1 open, 2 uncertain, 3 blink")
            blink = b.astype(np.int16) if blink is None else np.maximum(blink, b.astype(np.int16))
        return blink

    def _load(self, ref: TrialRef) -> _Trial:
        key = str(ref.bag_dir)
        if key in self._cache:
            return self._cache[key]
        d = ref.bag_dir
        a = {n: self._npy(d, n) for n in L.FILES if n != "camera_intrinsics.npy"}
        intr = L.load_intrinsics_pickle(d / "camera_intrinsics.npy")
        ts = a["rgb_timestamps.npy"]
        if len(ts) == 0:
            raise SessionError("rgb_timestamps.npy is empty", str(d / "rgb_timestamps.npy"), _FIX)
        for name in ("head_poses.npy", "camera_poses.npy", "target_positions.npy"):
            if len(a[name]) < 2:
                raise SessionError(f"{name} holds {len(a[name])} sample(s)", str(d / name), _FIX)
        video = self._video_path(d)
        n_video, size = _check_video(video, len(ts))
        if n_video > 0 and n_video != len(ts):
            raise SessionError(f"{video.name} has {n_video} frames but rgb_timestamps.npy has {len(ts)}",
                               str(d / "rgb_timestamps.npy"), f"lengths must match; {_FIX}")
        blink = self._blink_codes(d, len(ts)) if self.blink_annotations else None
        boxes = a["head_bboxes.npy"]
        head_rows = a["head_poses.npy"]
        eye_check = None
        e = np.asarray(a["eye_position_in_head_frame.npy"], float)
        eyes = a["eye_positions.npy"]
        if eyes is not None:
            if len(eyes) != len(head_rows):
                raise SessionError(f"eye_positions.npy has {len(eyes)} rows but head_poses.npy has {len(head_rows)}",
                                   str(d / "eye_positions.npy"), f"both come from the 100 Hz mocap stream; {_FIX}")
            _t, R, p = L.rows_to_poses(head_rows)
            eye_check = float(np.nanmax(np.linalg.norm(np.einsum("nij,j->ni", R, e) + p - eyes[:, 1:4], axis=1)))
            if eye_check > EYE_CHECK_TOLERANCE_M:
                self.warnings.append(f"{d}: eye_positions.npy differs from head_poses x eye_position_in_head_frame by "
                                     f"up to {eye_check * 1000:.1f} mm (the offset was re-calibrated after "
                                     "recording?); "
                                     "the ground truth uses head_poses x eye_position_in_head_frame")
        stamps = L.ms_to_ns(ts)
        tr = _Trial(
            table=build_frame_table(stamps, np.full(len(stamps), -1, np.int64)),
            head=_poses(head_rows),
            camera=_poses(a["camera_poses.npy"], L.R_OPT_FROM_BODY.T),
            target_t=L.ms_to_ns(a["target_positions.npy"][:, 0]),
            target_p=np.asarray(a["target_positions.npy"][:, 1:4], float),
            eye_in_band=e, intr=intr, video=video, size=size, n_video=n_video, blink=blink,
            boxes=None if boxes is None else np.asarray(boxes, float),
            ur5_base=a["ur5_base_pose.npy"], eye_check_m=eye_check)
        self._cache[key] = tr
        while len(self._cache) > self.CACHE_TRIALS:
            self._cache.pop(next(iter(self._cache)))
        return tr

    # -- the reader interface ------------------------------------------------------
    def frame_table(self, ref: TrialRef) -> FrameTable:
        """Frame slots from rgb_timestamps (no camera counters in this layout: drops and
        duplicates from the stamps, as build_frame_table does without counters)."""
        return self._load(ref).table

    def _selected_rows(self, table: FrameTable) -> np.ndarray:
        recorded = np.flatnonzero(table.kind != "dropped")
        return np.arange(len(table)) if self.stride == 1 else recorded[:: self.stride]

    def iter_frames(self, ref: TrialRef) -> Iterator[FrameSample]:
        """Decoded RGB frames (every stride-th) one at a time, with their rgb_timestamps."""
        import cv2

        tr = self._load(ref)
        rec = tr.table.kind != "dropped"
        slots, stamps = tr.table.frame[rec], tr.table.t_ns[rec]
        cap = cv2.VideoCapture(str(tr.video))
        try:
            for k in range(len(slots)):
                if k % self.stride:
                    if not cap.grab():
                        break
                    continue
                ok, img = cap.read()
                if not ok:
                    raise SessionError(f"{tr.video.name} ends after {k} of {len(slots)} frames", str(tr.video),
                                       f"the video is truncated; {_FIX}")
                yield FrameSample(int(slots[k]), int(stamps[k]), cv2.cvtColor(img, cv2.COLOR_BGR2RGB), -1)
        finally:
            cap.release()

    def camera_info(self, ref: TrialRef) -> CameraIntrinsics:
        """Intrinsics from camera_intrinsics.npy at the video's resolution."""
        tr = self._load(ref)
        i = tr.intr
        K = np.array([[i["fx"], 0.0, i["cx"]], [0.0, i["fy"], i["cy"]], [0.0, 0.0, 1.0]])
        D = np.asarray(i["distortion_coeffs"], float)
        return CameraIntrinsics(tr.size[0], tr.size[1], K, D if D.size else np.zeros(5), "plumb_bob", "study")

    def calibration(self, ref: TrialRef, tr: _Trial | None = None) -> Calibration:
        """The trial's equivalent of a session calibration: the camera stream is already
        in the world (identity registration and hand-eye), the eye-head transform is the
        study's eye offset in band axes turned into REP-103 eye axes."""
        tr = tr or self._load(ref)
        eye_nom = SE3.from_quat(tr.head.p[0], tr.head.q[0]).apply(tr.eye_in_band)
        return Calibration(
            directory=ref.bag_dir, intrinsics=self.camera_info(ref), T_tool0_camera=SE3.identity(),
            T_world_base=SE3.identity(), robot_model="ur5", targets={}, eye_nominal_world=eye_nom,
            subject_forward_world=self._forward(ref, tr, eye_nom), front_camera_distance_m=math.nan,
            front_camera_elevation_deg=math.nan, head_band_above_eye_m=math.nan,
            T_head_eye=SE3(L.R_BAND_EYE, tr.eye_in_band), subject=ref.subject)

    def _forward(self, ref: TrialRef, tr: _Trial, eye: np.ndarray) -> np.ndarray:
        """The seat's forward direction (horizontal) for camera_yaw_deg: subject_info's
        ``gaze4hri_subject_forward_world`` (written by our exporter), else towards the
        UR5 base (ur5_base_pose.npy; the robot faces the subject), else world +x."""
        f = ref.subject_info.get("gaze4hri_subject_forward_world")
        if f is None and tr.ur5_base is not None:
            f = tr.ur5_base[:3, 3] - eye
        f = np.array([1.0, 0.0, 0.0]) if f is None else np.asarray(f, float).reshape(3).copy()
        f[2] = 0.0
        n = np.linalg.norm(f)
        return f / n if n > 1e-9 else np.array([1.0, 0.0, 0.0])

    def trial_ground_truth(self, ref: TrialRef, options: GTOptions | None = None) -> pd.DataFrame:
        """One row per selected frame (frame_truth.GT_COLUMNS), data validity as for
        sessions plus the annotated blinks (``blink``, ``blink_uncertain``). ``options``:
        instead of the dataset's gt_options (e.g. frame_truth.pose_match_options)."""
        tr = self._load(ref)
        rows = self._selected_rows(tr.table)
        t = tr.table
        sub = FrameTable(t.frame[rows], t.t_ns[rows], t.frame_number[rows], t.kind[rows])
        targets = None
        if ref.protocol.target != "camera":
            targets = np.column_stack([np.interp(sub.t_ns.astype(float), tr.target_t.astype(float), tr.target_p[:, i])
                                       for i in range(3)])
        gt = compute_ground_truth(sub, tr.head, tr.camera, self.calibration(ref, tr), ref.protocol,
                                  options or self.gt_options,
                                  targets_world=targets)
        if tr.blink is not None:
            code = np.zeros(len(t), np.int16)
            code[np.flatnonzero(t.kind != "dropped")] = tr.blink
            c = code[rows]
            gt = validity.apply_face_reasons(gt, blink=c == L.BLINK_CODES["blink"],
                                             blink_uncertain=c == L.BLINK_CODES["uncertain"])
        return gt

    def blinks_annotated(self, ref: TrialRef) -> bool:
        return self._load(ref).blink is not None

    def face_boxes(self, ref: TrialRef) -> np.ndarray | None:
        """head_bboxes.npy as (len(frame_table), 5) [x1, y1, x2, y2, track_id] by frame
        slot (its ``frame`` column is the video frame index), NaN rows without a box;
        None when the trial has no head_bboxes.npy."""
        tr = self._load(ref)
        if tr.boxes is None:
            return None
        out = np.full((len(tr.table), 5), np.nan)
        slots = tr.table.frame[tr.table.kind != "dropped"]
        k = tr.boxes[:, 5].astype(np.int64)
        ok = (k >= 0) & (k < len(slots))
        out[slots[k[ok]]] = tr.boxes[ok, :5]
        return out

    def validity_report(self, refs: list[TrialRef] | None = None) -> pd.DataFrame:
        rows = []
        for ref in refs if refs is not None else self.trials():
            rows.append({"subject": ref.subject, "trial": ref.trial, "status": ref.status,
                         **validity.count_reasons(self.trial_ground_truth(ref))})
        return pd.DataFrame(rows)
