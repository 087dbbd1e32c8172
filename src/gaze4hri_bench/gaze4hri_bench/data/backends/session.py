"""The ``session`` backend: our own recorded sessions, read lazily (subject
directories -> trials -> frames).

The layout and topics are the core's contract (gaze4hri_core.session: one directory
per subject with session.yaml, calibration/ and bags/<trial>/, MCAP rosbag2 bags).
Frames are decoded one at a time from the bag with ``rosbags`` (never all in memory);
ground truth comes from the small pose streams of the same bag (frame_truth.py).
Every failure on bad input is a one-line SessionError/CalibrationError
(what, where, fix). A bag whose MCAP CRCs disagree with its bytes (gaze4hri_core.mcap_crc)
is never read: ``trials()`` lists it in ``skipped`` with its first damaged offset, and
the run goes on with the other trials. Bag access is in bag.py, the direct CDR readers in
cdr.py, the tracked-table and camera-source inputs in tracked.py (re-exported here).
"""
from __future__ import annotations

import json
import os
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import islice
from pathlib import Path

import numpy as np
import pandas as pd
from gaze4hri_core.calibration import CameraIntrinsics, load_calibration
from gaze4hri_core.errors import Gaze4HRIError, SessionError
from gaze4hri_core.protocol import trial_by_id
from gaze4hri_core.session import MSG_TYPES, SessionManifest, Topics, bag_dir, load_manifest, manifest_path

from .. import validity
from ..frame_truth import FrameTable, GTOptions, PoseStream, compute_ground_truth
from .bag import _FIX_BAG, _missing_topic, _short, _stamp_from_cdr, bag_damage, decode_image, open_bag, typestore
from .base import FrameSample, SkippedTrial, TrialRef
from .cdr import _joints, _poses, image_cdr, joint_state_cdr
from .tracked import tracked_inputs

__all__ = ["SessionDataset", "TrialRef", "FrameSample", "open_bag", "decode_image", "TRIAL_STATUSES_READ", "detect",
           "bag_damage", "typestore", "image_cdr", "joint_state_cdr", "build_frame_table", "tracked_inputs"]

#: trial statuses with a bag worth reading (``incomplete`` frames are all invalid)
TRIAL_STATUSES_READ = ("done", "incomplete")


def build_frame_table(stamps: np.ndarray, numbers: np.ndarray, max_fill: int = 30) -> FrameTable:
    """Slots for the recorded frames plus placeholder rows for dropped ones.

    A recorded frame whose camera counter (or, without counters, stamp) repeats the
    previous one is a ``duplicate``. A counter jump of k (2 <= k <= max_fill) inserts
    k - 1 ``dropped`` rows with interpolated stamps (larger jumps are counter resets).
    Without counters, a stamp gap of k nominal periods (median spacing) counts the same.
    Slot indices (``frame``) increase by one per row."""
    stamps = np.asarray(stamps, np.int64)
    numbers = np.asarray(numbers, np.int64)
    rows_t, rows_n, rows_k = [], [], []
    have_numbers = len(numbers) > 0 and np.all(numbers >= 0)
    period = float(np.median(np.diff(stamps))) if len(stamps) > 2 else 0.0
    for i in range(len(stamps)):
        if i > 0:
            if have_numbers:
                step = int(numbers[i] - numbers[i - 1])
            else:
                dt = stamps[i] - stamps[i - 1]
                step = 0 if dt <= 0 else (int(round(dt / period)) if period > 0 else 1)
            if step == 0 or stamps[i] == stamps[i - 1]:
                rows_t.append(stamps[i])
                rows_n.append(numbers[i] if have_numbers else -1)
                rows_k.append("duplicate")
                continue
            if 2 <= step <= max_fill:
                for k in range(1, step):
                    rows_t.append(int(stamps[i - 1] + (stamps[i] - stamps[i - 1]) * k / step))
                    rows_n.append(int(numbers[i - 1] + k) if have_numbers else -1)
                    rows_k.append("dropped")
        rows_t.append(stamps[i])
        rows_n.append(numbers[i] if have_numbers else -1)
        rows_k.append("ok")
    n = len(rows_t)
    return FrameTable(np.arange(n, dtype=np.int64), np.array(rows_t, np.int64), np.array(rows_n, np.int64),
                      np.array(rows_k, dtype=object))


# -- the dataset --------------------------------------------------------------------------
def detect(root: Path) -> bool:
    """Whether ``root`` is a session folder (or a folder of them): a session.yaml."""
    root = Path(root)
    if manifest_path(root).is_file():
        return True
    return root.is_dir() and any(manifest_path(p).is_file() for p in root.iterdir() if p.is_dir())


def _bag_damages(bags: list) -> list:
    """bag_damage of each (bag, trial) (None entries: not checked), several bags at once:
    the check is one CRC pass over each bag (the CRC and file reads release the GIL), the
    listing's whole cost, paid before any inference starts."""
    from concurrent.futures import ThreadPoolExecutor

    todo = [b for b in bags if b is not None]
    with ThreadPoolExecutor(max(1, min(len(todo), os.cpu_count() or 1, 4)), thread_name_prefix="g4h-crc") as ex:
        found = iter(list(ex.map(lambda b: bag_damage(*b), todo)))
    return [next(found) if b is not None else None for b in bags]


class SessionDataset:
    """Sessions under ``root`` (a folder of subject directories, or one subject
    directory), optionally filtered by subject and trial ids, reading every
    ``stride``-th recorded frame. Cheap to construct: manifests are read on first use,
    bags only when a trial's frames or ground truth are asked for.

    ``gt_options`` sets interpolation limits and the face-centre rule (GTOptions);
    ``blink_annotations``: use <session>/annotations/blinks.yaml|csv when present;
    ``sim_blinks``: in simulated sessions, use the simulator's blink truth
    (Topics.SIM_BLINK_TRUTH) as the annotation of trials no human annotated."""

    name = "session"
    CACHE_TRIALS = 8  # trials whose frame table and pose streams stay cached (small, bounded)

    def __init__(self, root: Path | str, subjects: list[str] | None = None, trials: list[str] | None = None,
                 stride: int = 1, gt_options: GTOptions | None = None, blink_annotations: bool = True,
                 sim_blinks: bool = False):
        self.root = Path(root)
        if int(stride) < 1:
            raise Gaze4HRIError(f"stride must be >= 1, got {stride}", "--stride", "pass a positive integer")
        self.stride = int(stride)
        self.subject_filter = list(subjects) if subjects else None
        self.trial_filter = list(trials) if trials else None
        for tid in self.trial_filter or ():
            trial_by_id(tid, "--trials")  # an unknown id: the registry's one-line error
        self.gt_options = gt_options or GTOptions()
        self.blink_annotations = blink_annotations
        self.sim_blinks = sim_blinks
        self._refs: list[TrialRef] | None = None
        self._tables: dict[str, FrameTable] = {}
        self._scans: dict[str, dict] = {}
        self._ann: dict[Path, dict] = {}
        self._pose_source: dict[Path,
                                str] = {}  # session folder -> camera_pose_source of its manifest (read in trials())
        self._held: dict[int, list] = {}  # thread id -> [bag folder, open_bag or None] (hold)
        # trials whose bag is damaged (CRC mismatch); other bad input fails loudly
        self.skipped: list[SkippedTrial] = []

    # -- discovery ----------------------------------------------------------------
    def session_dirs(self) -> list[Path]:
        if not self.root.is_dir():
            raise SessionError("data folder not found", str(self.root),
                               "pass a folder of sessions (<root>/<subject>/session.yaml)")
        if manifest_path(self.root).is_file():
            dirs = [self.root]
        else:
            dirs = sorted(p for p in self.root.iterdir() if p.is_dir() and manifest_path(p).is_file())
        if not dirs:
            raise SessionError("no session found (no <subject>/session.yaml)", str(self.root),
                               "pass the folder that holds the subject directories written by gaze4hri-acq")
        if self.subject_filter:
            by_name = {d.name: d for d in dirs}
            missing = [s for s in self.subject_filter if s not in by_name]
            if missing:
                raise SessionError(f"subject(s) {', '.join(missing)} not found", str(self.root),
                                   f"known: {', '.join(by_name) or 'none'}")
            dirs = [by_name[s] for s in self.subject_filter]
        return dirs

    def subjects(self) -> list[str]:
        return sorted({r.subject for r in self.trials()})

    def trials(self) -> list[TrialRef]:
        """Every selected trial listed in the manifests, in subject then protocol order
        (any status; callers usually keep TRIAL_STATUSES_READ)."""
        if self._refs is not None:
            return list(self._refs)
        refs: list[TrialRef] = []
        for sd in self.session_dirs():
            man: SessionManifest = load_manifest(sd)
            subject = man.subject
            cal_dir = sd / str(man.calibration.get("dir", "calibration"))
            if not cal_dir.is_dir():
                raise SessionError("session has no calibration snapshot", str(cal_dir),
                                   "copy the calibration used for recording into <session>/calibration "
                                   "(docs/calibration.md)")
            if not (cal_dir / "subjects" / f"{subject}.yaml").is_file():
                raise SessionError(f"session calibration has no eye-head file for subject {subject}",
                                   str(cal_dir / "subjects" / f"{subject}.yaml"),
                                   "copy the subject's eye-head calibration (gaze4hri-acq calibrate eye-head) into "
                                   "<session>/calibration/subjects/ (docs/calibration.md)")
            cal = load_calibration(cal_dir, subject)
            self._pose_source[sd] = str(man.settings.get("camera_pose_source", "fk"))
            info = man.settings.get("subject_info")
            info = dict(info) if isinstance(info, dict) else {}
            order = []
            listed = [(tid, rec, sd / rec.bag if rec.bag else bag_dir(sd, tid)) for tid, rec in man.trials.items()
                      if not self.trial_filter or tid in self.trial_filter]
            damages = _bag_damages([(bd, tid) if rec.status in TRIAL_STATUSES_READ else None
                                    for tid, rec, bd in listed])
            for (tid, rec, bd), damage in zip(listed, damages, strict=True):
                tr = trial_by_id(tid, str(manifest_path(sd)))
                if damage is not None:  # never read: listed, and the run goes on with the other trials
                    self.skipped.append(SkippedTrial(subject, tid, damage.where or str(bd), damage.line(),
                                                     damaged=True))
                    continue
                order.append((tr.index, TrialRef(subject, tid, tr, sd, bd, rec.status, cal, rec, subject_info=info,
                                                            camera_pose_source=self._pose_source[sd],
                                                            session_backend=str(man.backend))))
            refs.extend(r for _i, r in sorted(order, key=lambda x: x[0]))
        self._refs = refs
        return list(refs)

    # -- bag access: one open reader per trial while held -------------------------------
    @contextmanager
    def hold(self, ref: TrialRef):
        """Within this block, this thread's reads of ``ref``'s bag (scan, frames, camera
        info) share one open reader, opened at the first read: each open parses the bag's
        metadata.yaml and MCAP summary (rosbags' reader, where it reads the bag, also every
        channel's QoS YAML: ~0.1 s of pure-Python YAML per open), which the run loop paid
        three times per trial. Reads from other
        threads, or of other bags, open their own reader as before. Nested holds of the
        same bag share the outer one."""
        tid = threading.get_ident()
        key = str(ref.bag_dir)
        cur = self._held.get(tid)
        if cur is not None and cur[0] == key:
            yield self
            return
        self._held[tid] = slot = [key, None]
        try:
            yield self
        finally:
            if cur is None:
                self._held.pop(tid, None)
            else:
                self._held[tid] = cur
            if slot[1] is not None:
                slot[1].__exit__(None, None, None)

    @contextmanager
    def _bag(self, ref: TrialRef):
        """The held reader of ``ref``'s bag (opened now if not yet), else a reader of its
        own for this block (open_bag)."""
        slot = self._held.get(threading.get_ident())
        if slot is not None and slot[0] == str(ref.bag_dir):
            if slot[1] is None:
                slot[1] = open_bag(ref.bag_dir).__enter__()
            yield slot[1]
            return
        with open_bag(ref.bag_dir) as bag:
            yield bag

    # -- frames -------------------------------------------------------------------
    def _scan(self, ref: TrialRef) -> dict:
        """One pass over the bag for everything small: image header stamps (read from
        the CDR bytes, images not decoded), frame metadata, the pose streams and the
        first CameraInfo (camera_info); cached per trial (a few hundred kB)."""
        key = str(ref.bag_dir)
        if key in self._scans:
            return self._scans[key]
        with self._bag(ref) as bag:
            bag.require(Topics.IMAGE, "camera frames")
            wanted = [t for t in (Topics.IMAGE, Topics.FRAME_META, Topics.HEAD_POSE, Topics.TCP_POSE,
                                  Topics.JOINT_STATES,
                                  Topics.SIM_BLINK_TRUTH, Topics.TABLE_POSE, Topics.CAMERA_BODY_POSE,
                                  Topics.CAMERA_INFO)
                      if bag.has(t)]
            raw_by = {t: [] for t in wanted}
            for topic, _tl, raw in bag.messages_of(wanted):
                if topic == Topics.CAMERA_INFO and raw_by[topic]:
                    continue  # the first one is what camera_info reads
                raw_by[topic].append(_stamp_from_cdr(raw) if topic == Topics.IMAGE else raw)
            scan = {"stamps": raw_by[Topics.IMAGE], "topics": set(wanted),
                    "camera_info": raw_by.get(Topics.CAMERA_INFO, [])}
            meta: dict[int, int] = {}
            for raw in raw_by.get(Topics.FRAME_META, []):
                m = bag.decode(raw, Topics.FRAME_META)
                kv = {v.key: v.value for v in m.values}
                try:
                    meta[int(kv["stamp_ns"])] = int(kv["frame_number"])
                except (KeyError, ValueError):
                    continue
            scan["meta"] = meta
            blinks = set()
            for raw in raw_by.get(Topics.SIM_BLINK_TRUTH, []):
                kv = {v.key: v.value for v in bag.decode(raw, Topics.SIM_BLINK_TRUTH).values}
                if str(kv.get("blink", "")).lower() == "true" and "stamp_ns" in kv:
                    blinks.add(int(kv["stamp_ns"]))
            scan["sim_blinks"] = blinks
            scan["head"] = _poses(bag, Topics.HEAD_POSE, raw_by.get(Topics.HEAD_POSE, []))
            scan["tcp"] = _poses(bag, Topics.TCP_POSE, raw_by.get(Topics.TCP_POSE, []))
            # issue 13: tracked table and camera rigid body (optional streams)
            scan["table"] = _poses(bag, Topics.TABLE_POSE, raw_by.get(Topics.TABLE_POSE, []))
            scan["camera_body"] = _poses(bag, Topics.CAMERA_BODY_POSE, raw_by.get(Topics.CAMERA_BODY_POSE, []))
            # joint states are decoded only when forward kinematics is the camera source
            robot = self.gt_options.robot
            need_fk = robot == "fk" or (robot == "auto" and Topics.TCP_POSE not in wanted)
            scan["joints"] = (_joints(bag, raw_by.get(Topics.JOINT_STATES, []), ref.calibration.robot_model)
                              if need_fk else PoseStream.empty())
        self._scans[key] = scan
        while len(self._scans) > self.CACHE_TRIALS:  # bounded: a study has thousands of trials
            self._scans.pop(next(iter(self._scans)))
        return scan

    def frame_table(self, ref: TrialRef) -> FrameTable:
        """All frame slots of the trial (stride not applied), from the image headers and
        FRAME_META counters; cached per trial (small)."""
        key = str(ref.bag_dir)
        if key not in self._tables:
            scan = self._scan(ref)
            stamps, meta = scan["stamps"], scan["meta"]
            if not stamps:
                raise SessionError("bag holds no camera frame", str(ref.bag_dir), _FIX_BAG)
            nums = [meta.get(s, -1) for s in stamps]
            if meta and any(n < 0 for n in nums):
                nums = [-1] * len(stamps)  # partial metadata: fall back to stamps
            self._tables[key] = build_frame_table(np.array(stamps), np.array(nums))
            while len(self._tables) > self.CACHE_TRIALS:
                self._tables.pop(next(iter(self._tables)))
        return self._tables[key]

    def _selected_rows(self, table: FrameTable) -> np.ndarray:
        """Rows kept by the stride: every stride-th recorded frame (dropped placeholders
        only at stride 1)."""
        recorded = np.flatnonzero(table.kind != "dropped")
        keep = recorded[:: self.stride]
        if self.stride == 1:
            keep = np.arange(len(table))
        return keep

    def iter_frames(self, ref: TrialRef) -> Iterator[FrameSample]:
        """Decoded frames of the trial in recording order (every stride-th), one at a time."""
        table = self.frame_table(ref)
        recorded_slots = table.frame[table.kind != "dropped"]
        recorded_numbers = table.frame_number[table.kind != "dropped"]
        recorded_t = table.t_ns[table.kind != "dropped"]
        with self._bag(ref) as bag:
            for k, (_tl, raw) in enumerate(bag.messages(Topics.IMAGE)):
                if k % self.stride:
                    continue
                if k >= len(recorded_slots):
                    break
                try:
                    msg = image_cdr(raw)
                except (ValueError, struct.error, UnicodeDecodeError) as e:
                    raise SessionError(f"cannot decode a {MSG_TYPES[Topics.IMAGE]} message on {Topics.IMAGE} "
                                       f"({_short(e)})", str(ref.bag_dir), _FIX_BAG) from None
                img = decode_image(msg, f"{ref.bag_dir} frame {k}")
                yield FrameSample(int(recorded_slots[k]), int(recorded_t[k]), img, int(recorded_numbers[k]))

    def camera_info(self, ref: TrialRef) -> CameraIntrinsics:
        """Intrinsics recorded in the bag (first CameraInfo), else the calibration's; from
        the trial's scan when it is cached (the run loop scans for the ground truth
        first), so that no reader is opened for them."""
        scan = self._scans.get(str(ref.bag_dir))
        if scan is not None:
            raws = scan["camera_info"]
        else:
            with self._bag(ref) as bag:
                raws = [raw for _t, raw in islice(bag.messages(Topics.CAMERA_INFO), 1)]
        for raw in raws:
            m = open_bag(ref.bag_dir).decode(raw, Topics.CAMERA_INFO)
            K = np.asarray(m.k, float).reshape(3, 3)
            return CameraIntrinsics(int(m.width), int(m.height), K, np.asarray(m.d, float),
                                    str(m.distortion_model) or "plumb_bob", "bag")
        return ref.calibration.intrinsics

    # -- ground truth ---------------------------------------------------------------
    def trial_ground_truth(self, ref: TrialRef, options: GTOptions | None = None) -> pd.DataFrame:
        """One row per selected frame (frame_truth.GT_COLUMNS) with data-based validity,
        plus human blink annotations when the session has them (``blink``). EAR-based
        blinks and ``no_face`` are face-based and added later (validity.apply_face_reasons).
        ``options``: instead of the dataset's gt_options (e.g. frame_truth.pose_match_options)."""
        table = self.frame_table(ref)
        opt = options or self.gt_options
        scan = self._scan(ref)
        where = str(ref.bag_dir)
        if Topics.HEAD_POSE not in scan["topics"]:
            raise _missing_topic(Topics.HEAD_POSE, "head-band pose for the ground truth", where)
        head = scan["head"]
        use_tcp = opt.robot == "tcp" or (opt.robot == "auto" and Topics.TCP_POSE in scan["topics"])
        if use_tcp:
            if Topics.TCP_POSE not in scan["topics"]:
                raise _missing_topic(Topics.TCP_POSE, "robot tool pose for the camera pose", where)
            robot = scan["tcp"]
        else:
            if Topics.JOINT_STATES not in scan["topics"]:
                raise _missing_topic(Topics.JOINT_STATES, "joint states for the camera pose (no /robot/tcp_pose)",
                                     where)
            robot = scan["joints"]
        rows = self._selected_rows(table)
        sub = FrameTable(table.frame[rows], table.t_ns[rows], table.frame_number[rows], table.kind[rows])
        targets, robot, extra = tracked_inputs(scan, ref, sub.t_ns, robot, opt,
                                               source=self._pose_source.get(ref.session_dir))
        gt = compute_ground_truth(sub, head, robot, ref.calibration, ref.protocol, opt,
                                  incomplete=(ref.status == "incomplete"),
                                  targets_world=targets)
        for k, v in extra.items():
            gt[k] = v
        ann = self.blink_ranges(ref)
        if ann is not None:
            gt = validity.apply_face_reasons(gt, blink=validity.annotation_mask(gt["frame"], ann))
        elif self.sim_blinks and Topics.SIM_BLINK_TRUTH in scan["topics"]:
            gt = validity.apply_face_reasons(gt, blink=gt["t_ns"].isin(scan["sim_blinks"]).to_numpy())
        return gt

    def validity_report(self, refs: list[TrialRef] | None = None) -> pd.DataFrame:
        """Frames removed per reason (data reasons and annotated blinks), one row per
        trial: subject, trial, status, then validity.count_reasons columns."""
        rows = []
        for ref in refs if refs is not None else self.trials():
            if ref.status not in TRIAL_STATUSES_READ:
                continue
            rows.append({"subject": ref.subject, "trial": ref.trial, "status": ref.status,
                         **validity.count_reasons(self.trial_ground_truth(ref))})
        return pd.DataFrame(rows)

    def blinks_annotated(self, ref: TrialRef) -> bool:
        """Whether blinks of this trial come from an annotation (human, or the simulator's
        truth with ``sim_blinks``), so EAR must not decide them."""
        if self.blink_ranges(ref) is not None:
            return True
        return self.sim_blinks and Topics.SIM_BLINK_TRUTH in self._scan(ref)["topics"]

    def blink_ranges(self, ref: TrialRef) -> list[tuple[int, int]] | None:
        """Human-annotated blink ranges of this trial, or None when not annotated."""
        if not self.blink_annotations:
            return None
        for name in validity.ANNOTATION_NAMES:
            p = ref.session_dir / name
            if p.is_file():
                if p not in self._ann:
                    self._ann[p] = validity.load_blink_annotations(p)
                return self._ann[p].get(ref.trial)
        return None

    def sim_truth(self, ref: TrialRef) -> pd.DataFrame:
        """The simulator's own per-frame truth (Topics.SIM_GAZE_TRUTH; sim sessions only):
        columns t_ns, x, y, z (unit gaze, camera frame)."""
        rows = []
        with open_bag(ref.bag_dir) as bag:
            bag.require(Topics.SIM_GAZE_TRUTH, "simulator truth (simulated sessions only)")
            for _t, raw in bag.messages(Topics.SIM_GAZE_TRUTH):
                m = bag.decode(raw, Topics.SIM_GAZE_TRUTH)
                rows.append((m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec, m.vector.x, m.vector.y,
                             m.vector.z))
        return pd.DataFrame(rows, columns=["t_ns", "x", "y", "z"])

    def events(self, ref: TrialRef) -> list[dict]:
        """The trial's JSON events (start/stop/note/fault) in order."""
        out = []
        with open_bag(ref.bag_dir) as bag:
            for t, raw in bag.messages(Topics.EVENTS):
                try:
                    out.append({"t_ns": t, **json.loads(bag.decode(raw, Topics.EVENTS).data)})
                except (ValueError, TypeError):
                    out.append({"t_ns": t, "event": "unparsable"})
        return out

    def face_boxes(self, ref: TrialRef) -> None:
        """Sessions record no face boxes: the pipeline detects faces itself."""
        return None

    def subject_info(self, subject: str) -> dict:
        """Subject metadata of a session: the manifest's ``settings.subject_info``
        (e.g. glasses, gender) when recorded, else empty."""
        for sd in self.session_dirs():
            if sd.name == subject:
                info = load_manifest(sd).settings.get("subject_info")
                return dict(info) if isinstance(info, dict) else {}
        return {}
