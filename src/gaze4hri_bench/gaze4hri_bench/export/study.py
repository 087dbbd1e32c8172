"""Write our sessions in the study's released per-trial layout (docs/study_dataset.md),
so that the community's tools and our ``study`` reader backend read the same trial.

Per trial: ``OUT/<date>/<subject>/<exp_type>/<point>/<stamp_ms>/`` with rgb_video.mp4
(mp4v, as the study's recorder writes) and optionally a lossless FFV1 rgb_video.mkv
beside it, rgb_timestamps.npy, head_poses.npy (head band in the study's band axes),
eye_positions.npy, camera_poses.npy (rgb_camera_link body axes), target_positions.npy
(one row per motion-capture sample in all four, as the study's recorder writes them:
``_study_rows``), eye_position_in_head_frame.npy, table_pose.npy (the tracked table),
ur5_base_pose.npy, ur5_joint_states.npy (when the bag has joint states),
camera_intrinsics.npy (pickled dict), rgb_camera_settings.json and,
when the session has them, blink_annotations_by_<annotator>.npy (human annotations,
or the simulator's truth as ``simulator``). Poses come from the bag's streams by the
core's composition (gaze4hri_core.groundtruth), never re-derived here. An existing
trial folder is never overwritten.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import re
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.errors import Gaze4HRIError, SessionError
from gaze4hri_core.groundtruth import camera_in_world, eye_in_world
from gaze4hri_core.session import Topics
from gaze4hri_core.transforms import SE3

from ..data import study_layout as L
from ..data.backends.session import SessionDataset
from ..data.frame_truth import PoseStream

__all__ = ["export_study", "export_trial_study", "StudyExportResult"]


@dataclass
class StudyExportResult:
    written: list[Path]
    skipped: list[str]


def _se3(p, q) -> SE3:
    return SE3.from_quat(p, q)


def _camera_stream(ds: SessionDataset, ref, scan: dict) -> PoseStream:
    """The robot stream the session backend uses for this trial's camera pose."""
    opt = ds.gt_options
    use_tcp = opt.robot == "tcp" or (opt.robot == "auto" and Topics.TCP_POSE in scan["topics"])
    if use_tcp:
        return scan["tcp"].sorted_unique()
    if len(scan["joints"].t_ns) == 0 and Topics.JOINT_STATES in scan["topics"]:
        from ..data.backends.bag import open_bag
        from ..data.backends.cdr import _joints

        with open_bag(ref.bag_dir) as bag:
            raws = [raw for _t, raw in bag.messages(Topics.JOINT_STATES)]
            return _joints(bag, raws, ref.calibration.robot_model).sorted_unique()
    return scan["joints"].sorted_unique()


def _writer(path: Path, fourcc: str, size: tuple[int, int], fps: float):
    import cv2

    w = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), fps, size)
    if not w.isOpened():
        raise Gaze4HRIError(f"OpenCV cannot write {fourcc} video", str(path),
                            "install an opencv-python build with FFmpeg (requirements/base.txt)")
    return w


#: the recording dates the study's dataset-level scripts list by hand (GazeForHRI/Gaze4HRI@main:
#: config.py:417-426, ``get_dataset_subject_directories``): a date folder outside this list is
#: skipped by them ("doesnt exists, skipping"), so ``--date`` picks one of these.
STUDY_DATES = ("2025-07-28", "2025-07-29", "2025-07-30", "2025-07-31", "2025-08-01", "2025-08-04", "2025-08-05",
               "2025-08-06")


def check_date(date: str) -> str:
    """A ``YYYY-MM-DD`` date folder name, or a one-line Gaze4HRIError."""
    try:
        # fromisoformat would take week dates (2025-W31-1), strptime single digits (2025-7-28)
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", str(date)):
            raise ValueError
        _dt.datetime.strptime(str(date), "%Y-%m-%d")
    except ValueError:
        raise Gaze4HRIError(f"date {date!r} is not YYYY-MM-DD", "--date",
                            f"the study's scripts list {', '.join(STUDY_DATES)} (config.py:417-426)") from None
    return str(date)


#: the study grows each detected box by this fraction of its size on every side (study-code.md, head_bboxes)
BOX_GROWTH = 0.10


def _write_video(ds: SessionDataset, ref, tmp: Path, lossless: bool, fps: float, track, bar):
    """rgb_video.mp4 (and the FFV1 .mkv copy when ``lossless``): every recorded frame,
    duplicates included, in recording order, each also stepped through the face ``track``.
    Returns (frames written, (width, height) or None, slot -> video frame index)."""
    import cv2

    writers = []
    n = 0
    size = None
    slot_to_video: dict[int, int] = {}
    for fs in _iter_all(ds, ref):
        if track is not None:
            slot_to_video.setdefault(fs.index, n)
            track.step(fs.index, fs.image)
        if not writers:
            size = (fs.image.shape[1], fs.image.shape[0])
            writers.append(_writer(tmp / L.VIDEO_MP4, "mp4v", size, fps))
            if lossless:
                writers.append(_writer(tmp / L.VIDEO_MKV, "FFV1", size, fps))
        bgr = cv2.cvtColor(fs.image, cv2.COLOR_RGB2BGR)
        for w in writers:
            w.write(bgr)
        n += 1
        if bar is not None:
            bar.update(1)
    for w in writers:
        w.release()
    return n, size, slot_to_video


def _write_pose_files(ds: SessionDataset, ref, scan: dict, tmp: Path) -> None:
    """The pose files: one row per motion-capture sample for head, eye, camera and target,
    as the study's recorder writes them from one 100 Hz callback (data_collector.py:316-370),
    the table and robot-base poses and the joint states."""
    cal = ref.calibration
    rows = _study_rows(ds, ref, scan)
    t_rows = rows["t_ns"]
    np.save(tmp / "head_poses.npy", L.pose_rows(t_rows, rows["R_band"], rows["p_head"]))
    np.save(tmp / "eye_position_in_head_frame.npy", rows["e_band"])
    np.save(tmp / "eye_positions.npy", np.column_stack([L.ns_to_ms(t_rows), rows["eye"]]))
    np.save(tmp / "camera_poses.npy", L.pose_rows(t_rows, rows["R_cam_body"], rows["p_cam"]))
    np.save(tmp / "target_positions.npy", np.column_stack([L.ns_to_ms(t_rows), rows["target"]]))
    np.save(tmp / "table_pose.npy", rows["table_pose"])
    base = np.vstack([np.column_stack([cal.T_world_base.R, cal.T_world_base.t]), [0, 0, 0, 1.0]])
    np.save(tmp / "ur5_base_pose.npy", base)
    joints = _joint_rows(ref)
    if joints is not None:
        np.save(tmp / "ur5_joint_states.npy", joints)


def export_trial_study(ds: SessionDataset, ref, out: Path, lossless: bool = True, fps: float = 30.0,
                       boxes: str | None = None, bar=None, date: str | None = None) -> Path:
    """Write one trial; returns its stamp folder. Raises Gaze4HRIError on bad input.
    ``boxes``: a face detector name (faces.detectors) to write head_bboxes.npy with, as
    the study did with yolov8n-face + ByteTrack (subject track, box grown 10 % per side).
    ``bar``: a progress handle (pipeline.progress: ``total``, ``update``) moved per frame.
    ``date``: the ``<YYYY-MM-DD>`` folder (default: the first frame's UTC date); see
    :data:`STUDY_DATES` for the folders the study's dataset-level scripts list."""
    if ref.status != "done":
        raise SessionError(f"trial status is {ref.status!r}", str(ref.bag_dir),
                           "only finished trials are exported; re-record it (gaze4hri-acq session --resume)")
    exp_type, point = L.folder_for(ref.trial)
    scan = ds._scan(ref)
    if Topics.HEAD_POSE not in scan["topics"]:
        raise SessionError(f"topic {Topics.HEAD_POSE} missing from the bag", str(ref.bag_dir),
                           "the export needs the head-band stream")
    table = ds.frame_table(ref)
    rec = table.kind != "dropped"
    t_frames = table.t_ns[rec]
    if bar is not None:
        bar.total = len(t_frames)
    stamp_ms = int(t_frames[0] // 1_000_000)
    first = _dt.datetime.fromtimestamp(t_frames[0] / 1e9, _dt.timezone.utc)
    date = check_date(date) if date else first.strftime("%Y-%m-%d")
    subj_dir = Path(out) / date / ref.subject
    final = subj_dir / exp_type / point / str(stamp_ms)
    if final.exists():
        raise SessionError("trial folder exists already", str(final),
                           "export into an empty folder or delete the old export")
    tmp = final.with_name(f".{final.name}.partial")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    try:
        track = _face_track(boxes)
        n, size, slot_to_video = _write_video(ds, ref, tmp, lossless, fps, track, bar)
        if n == 0:
            raise SessionError("bag holds no camera frame", str(ref.bag_dir), "nothing to export; re-record the trial")
        if n != len(t_frames):
            raise SessionError(f"bag yielded {n} frames for {len(t_frames)} stamps", str(ref.bag_dir),
                               "repair or re-record the trial")
        np.save(tmp / "rgb_timestamps.npy", L.ns_to_ms(t_frames))
        _write_pose_files(ds, ref, scan, tmp)
        intr = ds.camera_info(ref)
        if (intr.width, intr.height) != size:
            intr = intr.scaled(*size)
        L.save_intrinsics_pickle(tmp / "camera_intrinsics.npy", intr.fx, intr.fy, intr.cx, intr.cy, intr.D)
        (tmp / "rgb_camera_settings.json").write_text(json.dumps(
            {"exported_by": "gaze4hri-bench export --format study", "source_bag": str(ref.bag_dir), "width": size[0],
             "height": size[1], "fps": fps, "video_lossless_copy": L.VIDEO_MKV if lossless else None}, indent=2))
        _write_blinks(ds, ref, table, tmp)
        if track is not None:
            _write_boxes(track.table(), slot_to_video, size, tmp / "head_bboxes.npy")
        os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _write_subject_info(ds, ref, subj_dir)
    return final


def _hold(t_src: np.ndarray, t_query: np.ndarray) -> np.ndarray:
    """Query stamps clamped to the source stream's span: a row before the first or after
    the last sample takes that sample, as the recorder's TF lookup of the latest pose."""
    return np.clip(np.asarray(t_query, np.int64), t_src[0], t_src[-1])


def _fill_nan_rows(a: np.ndarray) -> np.ndarray:
    """Rows with NaN take the nearest finite row (a tracking loss holds the last pose)."""
    a = np.array(a, float)
    ok = np.isfinite(a).all(1)
    if ok.all() or not ok.any():
        return a
    idx = np.flatnonzero(ok)
    pos = np.searchsorted(idx, np.arange(len(a)))
    lo, hi = idx[np.clip(pos - 1, 0, len(idx) - 1)], idx[np.clip(pos, 0, len(idx) - 1)]
    near = np.where(np.abs(np.arange(len(a)) - lo) <= np.abs(hi - np.arange(len(a))), lo, hi)
    return a[near]


def _study_rows(ds: SessionDataset, ref, scan: dict) -> dict:
    """The study recorder's rows: one per head-band sample (the motion-capture stream),
    holding head (band axes), eye, camera (``rgb_camera_link`` body axes) and target, so
    that row i of every file is one instant. The study's recorder appends all four from
    one 100 Hz timer callback (GazeForHRI/Gaze4HRI@main:data_collector.py:200, 316-370)
    and its training-set scripts index camera, target and head rows by the eye row's index
    (raw_to_ethxgaze.py:96-127, h5_dataset_creator.py:104-124); its loader's
    ``load_head_poses(frame="camera")`` pairs head and camera rows by index and refuses
    counts that differ by more than one (data_loader.py:109-119, 321-354).

    Camera poses are the robot stream (or the camera rigid body when the session's camera
    pose source is ``mocap``) interpolated at the row stamps (linear position, SLERP),
    exactly as the session backend's ground truth interpolates it at a frame stamp.
    Targets: the camera centre (line movements), the tracked table x the target's offset
    in the table frame (data_collector.py:353-366; the session backend's
    ``tracked_inputs``), or the surveyed target. ``table_pose`` is the tracked table at the
    first row (the recorder saves it once, data_collector.py:346-351), identity when the
    table was not tracked (targets surveyed in the world)."""
    from gaze4hri_core.transforms import interpolate_poses, quat_xyzw_to_matrix

    from ..data.backends.tracked import tracked_inputs

    cal = ref.calibration
    head = scan["head"].sorted_unique()
    t = np.asarray(head.t_ns, np.int64)
    if len(t) < 2:
        raise SessionError("the bag has fewer than two head-band poses", str(ref.bag_dir),
                           "the export needs the head-band stream")
    R_wh = np.array([quat_xyzw_to_matrix(q) for q in head.q])
    T_he = cal.T_head_eye
    out = {"t_ns": t, "p_head": np.asarray(head.p, float), "R_band": R_wh @ T_he.R @ L.R_BAND_EYE.T,
           "e_band": L.R_BAND_EYE @ T_he.R.T @ T_he.t,
           "eye": np.array([eye_in_world(_se3(p, q), cal.eye_in_head) for p, q in zip(head.p, head.q, strict=True)])}
    robot = _camera_stream(ds, ref, scan)
    targets, robot, _extra = tracked_inputs(scan, ref, t, robot, ds.gt_options)
    robot = robot.sorted_unique()
    if len(robot.t_ns) < 2:
        raise SessionError("the bag has no robot pose stream", str(ref.bag_dir),
                           "the export needs /robot/tcp_pose or joint states")
    t0 = int(t[0])
    pr, qr, _ok = interpolate_poses((robot.t_ns - t0) / 1e9, robot.p, robot.q, (_hold(robot.t_ns, t) - t0) / 1e9,
                                    np.inf)
    cams = [camera_in_world(cal.T_world_base, _se3(p, q), cal.T_tool0_camera) for p, q in zip(pr, qr, strict=True)]
    out["R_cam_body"] = np.array([c.R for c in cams]) @ L.R_OPT_FROM_BODY
    out["p_cam"] = np.array([c.t for c in cams])
    table_pose = np.eye(4)
    if ref.protocol.target == "camera":
        out["target"] = out["p_cam"]
    elif targets is not None:
        out["target"] = _fill_nan_rows(targets)
        tab = scan["table"].sorted_unique()
        pt, qt, _okt = interpolate_poses((tab.t_ns - t0) / 1e9, tab.p, tab.q, (_hold(tab.t_ns, t[:1]) - t0) / 1e9,
                                         np.inf) \
            if len(tab.t_ns) > 1 else (tab.p[:1], tab.q[:1], None)
        table_pose = _se3(pt[0], qt[0]).matrix
    else:
        out["target"] = np.broadcast_to(np.asarray(cal.targets[ref.protocol.target], float), (len(t), 3)).copy()
    out["table_pose"] = table_pose
    return out


def _joint_rows(ref) -> np.ndarray | None:
    """(K, 7) [t_ms, six joint angles] from the bag's joint states, None without them."""
    from ..data.backends.bag import open_bag
    from ..data.backends.cdr import joint_state_cdr

    rows = []
    with open_bag(ref.bag_dir) as bag:
        if not bag.has(Topics.JOINT_STATES):
            return None
        for _t, raw in bag.messages(Topics.JOINT_STATES):
            try:
                stamp, pos = joint_state_cdr(raw)
            except (ValueError, IndexError, struct.error):
                continue
            if len(pos) >= 6:
                rows.append([stamp / 1e6, *pos[:6]])
    return np.array(rows, float) if rows else None


def _face_track(name: str | None):
    if not name:
        return None
    from ..faces.detectors import get_detector
    from ..pipeline.face_pass import FaceTrack

    return FaceTrack(get_detector(name))


def _write_boxes(faces, slot_to_video: dict[int, int], size: tuple[int, int], path: Path) -> None:
    """head_bboxes.npy (K, 6) [x1, y1, x2, y2, track_id, video frame] for frames with a
    subject box, grown BOX_GROWTH of its size on every side and clamped to the image."""
    w, h = size
    rows = []
    for r in faces.itertuples(index=False):
        b = np.array([np.nan if pd.isna(v) else v for v in (r.x1, r.y1, r.x2, r.y2)], float)
        if not np.isfinite(b).all() or int(r.frame) not in slot_to_video:
            continue
        gx, gy = BOX_GROWTH * (b[2] - b[0]), BOX_GROWTH * (b[3] - b[1])
        b = np.clip(b + [-gx, -gy, gx, gy], 0, [w, h, w, h])
        tid = -1.0 if pd.isna(r.track_id) else float(r.track_id)
        rows.append([*b, tid, float(slot_to_video[int(r.frame)])])
    np.save(path, np.array(rows, float).reshape(-1, 6))


def _iter_all(ds: SessionDataset, ref):
    """Every recorded frame regardless of the dataset's stride."""
    stride, ds.stride = ds.stride, 1
    try:
        yield from ds.iter_frames(ref)
    finally:
        ds.stride = stride


def _write_blinks(ds: SessionDataset, ref, table, d: Path) -> None:
    """Human annotations (annotations/blinks.*) as ``by_<session annotator>``, and the
    simulator's blink truth as ``by_simulator``: 1 open, 3 blink, per video frame."""
    rec_slots = table.frame[table.kind != "dropped"]
    ranges = ds.blink_ranges(ref)
    if ranges is not None:
        from ..data import validity

        codes = np.where(validity.annotation_mask(rec_slots, ranges), 3, 1).astype(np.int16)
        np.save(d / "blink_annotations_by_gaze4hri.npy", codes)
    sim = ds._scan(ref).get("sim_blinks")
    if Topics.SIM_BLINK_TRUTH in ds._scan(ref)["topics"]:
        t = table.t_ns[table.kind != "dropped"]
        codes = np.where(np.isin(t, np.fromiter(sim or (), np.int64)), 3, 1).astype(np.int16)
        np.save(d / "blink_annotations_by_simulator.npy", codes)


def _write_subject_info(ds: SessionDataset, ref, subj_dir: Path) -> None:
    p = subj_dir / "subject_info.json"
    info = dict(ref.subject_info)
    info["gaze4hri_subject_forward_world"] = [float(x) for x in ref.calibration.subject_forward_world]
    info.setdefault("gaze4hri_subject_id", ref.subject)
    if p.is_file():
        try:
            old = json.loads(p.read_text(encoding="utf-8"))
            if isinstance(old, dict):
                info = {**old, **info}
        except ValueError:
            pass
    p.write_text(json.dumps(info, indent=2, sort_keys=True))


def export_study(data: Path, out: Path, subjects=None, trials=None, lossless: bool = True,
                 log: Callable[[str], None] = print, boxes: str | None = None, progress: bool = False,
                 date: str | None = None) -> StudyExportResult:
    """Export every finished trial of the sessions under ``data``; a trial that fails is
    reported (one line) and skipped, the others are written.

    Trials that are not finished (pending, incomplete, failed) are named in one line
    before the work, not one line each; every message is said once (the CLI's summary
    counts them). ``progress``: `run`'s overall bar (trials i/N, frames, rate, ETA)
    with the current trial's bar beneath it (pipeline.progress.RunProgress), on stderr.
    ``date``: every trial's date folder (export_trial_study)."""
    from ..pipeline.progress import RunProgress

    if date:
        check_date(date)
    ds = SessionDataset(data, subjects=subjects, trials=trials)
    refs = ds.trials()
    todo = [r for r in refs if r.status == "done"]
    unfinished = [r for r in refs if r.status != "done"]
    written: list[Path] = []
    skipped = [f"{r.key}: trial status is {r.status!r}" for r in unfinished]
    if unfinished:
        by: dict[str, int] = {}
        for r in unfinished:
            by[r.status] = by.get(r.status, 0) + 1
        names = ", ".join(r.key for r in unfinished[:5])
        names += f" and {len(unfinished) - 5} more" if len(unfinished) > 5 else ""
        counts = ", ".join(f"{k} {v}" for k, v in sorted(by.items()))
        log(f"not exported: {len(unfinished)} unfinished trial(s) ({counts}): {names}; "
            "only finished trials are exported (record them: gaze4hri-acq session --resume)")
    with RunProgress(progress, log=log) as bars:
        job = bars.job("export", todo)
        try:
            for ref in todo:
                with job.trial(ref) as bar:
                    try:
                        p = export_trial_study(ds, ref, Path(out), lossless=lossless, boxes=boxes, bar=bar, date=date)
                    except Gaze4HRIError as e:
                        skipped.append(f"{ref.key}: {e.line()}")
                        bars.write(f"skipped {ref.key}: {e.line()}")
                        continue
                written.append(p)
                bars.write(f"wrote {p}")
        finally:
            job.close()
    off = sorted({p.parents[3].name for p in written} - set(STUDY_DATES))
    if off:
        log(f"note: date folder(s) {', '.join(off)} are not among the 8 dates the study's dataset-level scripts list "
            "(GazeForHRI/Gaze4HRI config.py:417-426): they skip them; export with --date 2025-07-28 (any listed date) "
            "or add the date there")
    return StudyExportResult(written, skipped)
