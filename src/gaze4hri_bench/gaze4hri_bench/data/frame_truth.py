"""Per-frame ground truth of one trial (Sezer et al., arXiv 2605.04770, Sec. III-B):
motion-capture head band and robot poses interpolated at each frame stamp, eye
midpoint, camera pose, gaze in the camera frame, head forward, head-gaze conflict,
Frame A (pitch, yaw), camera yaw about the eye, and the head pose and face centre in
the camera frame that data normalization needs.

Pure numpy/pandas on arrays already read from the bag (reader.py does the I/O).
Interpolation: linear position, SLERP orientation (gaze4hri_core.transforms.
interpolate_poses); a frame whose bracketing samples are further apart than the limit
is never bridged (``interp_gap``), and one without a head-band sample within
``mocap_lost_s`` is ``mocap_lost`` (the mocap node publishes only while tracked).
Every vector leaves in the OpenCV camera frame (x right, y down, z forward), except
``cam_world_x/y/z``: the camera's optical centre in the world (m), the robot path the
study's line-scan segment regressions cut into pieces (stats/study_tables.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from gaze4hri_core.calibration import Calibration
from gaze4hri_core.face_model import EYE_TO_FACE_CENTRE_MM
from gaze4hri_core.gaze import angular_error_deg, normalize, vector_to_pitchyaw
from gaze4hri_core.kinematics import forward as ur_forward
from gaze4hri_core.protocol import Trial
from gaze4hri_core.transforms import interpolate_poses, matrix_to_quat_xyzw, quats_xyzw_to_matrices

from .validity import combine_reasons

__all__ = [
    "GTOptions",
    "PoseStream",
    "FrameTable",
    "compute_ground_truth",
    "bracket_gaps",
    "study_query_times",
    "stable_start_ns",
    "nearest_sample_index",
    "pose_match_options",
    "POSE_MATCH_MAX_MS",
    "R_REP_TO_CV_HEAD",
    "GT_COLUMNS",
]

# Columns of the eye frame (REP-103: x forward, y left, z up) -> OpenCV head axes
# (x to the subject's left, y down, z to the back of the head): x_cv = y, y_cv = -z,
# z_cv = -x. R_head_cam = R_cam_eye @ R_REP_TO_CV_HEAD (a frontal face gives ~ I).
R_REP_TO_CV_HEAD = np.array([[0.0, 0.0, -1.0], [1.0, 0.0, 0.0], [0.0, -1.0, 0.0]])

GT_COLUMNS = (
    ["frame", "t_ns", "frame_number", "gt_x", "gt_y", "gt_z", "gt_pitch_deg", "gt_yaw_deg",
     "head_gaze_conflict_deg", "camera_yaw_deg", "head_fwd_x", "head_fwd_y", "head_fwd_z",
     "eye_cx", "eye_cy", "eye_cz", "face_cx", "face_cy", "face_cz", "target_cx", "target_cy", "target_cz"]
    + [f"R_head_{i}{j}" for i in range(3) for j in range(3)]
    + ["cam_world_x", "cam_world_y", "cam_world_z"]
    + ["valid", "invalid_reason"]
)


@dataclass(frozen=True)
class GTOptions:
    """Interpolation limits (s) and the face-centre rule.

    max_gap_mocap_s: largest head-band sample spacing bridged (mocap at 100 Hz: 10 ms
    nominal, so 50 ms bridges up to 4 lost samples); max_gap_robot_s: same for the
    robot pose (125 Hz: 8 ms nominal); mocap_lost_s: a gap longer than this is a
    tracking loss. A longer robot gap is still bridged when the robot did not move
    across it (bracketing poses within robot_static_m and robot_static_deg: the
    interpolation is then exact; fixed-camera trials keep their frames through RTDE
    drop-outs). face_center: ``eth`` (eye midpoint + the ETH-XGaze face-centre
    offset of the generic face model, faces.normalization.EYE_TO_FACE_CENTRE_MM) or
    ``eye`` (the eye midpoint itself). robot: ``auto`` (tcp pose, else joint states +
    forward kinematics), ``tcp`` or ``fk``.

    sync: ``interpolate`` (default: poses interpolated at the frame stamp, gap limits
    above) or ``study``: the study's matching of frames to the 100 Hz streams
    (GazeForHRI/GazeModels data_matcher.py: match_irregular_to_regular and
    find_stable_start): the mean of the two bracketing samples (here the pose half-way
    between them: the position mean exactly, the rotation by SLERP at 1/2), the sample
    itself on an exact hit, the first/last sample outside the stream, no gap limit, and
    frames before the head stream's stable start (the end of the first
    ``stable_window`` intervals within ``stable_period_ms`` +- ``stable_tolerance_ms``)
    marked ``before_stable_start`` (the study drops them); or ``nearest``: each stream's
    sample nearest to the frame stamp, not interpolated, and a frame whose nearest sample
    of a stream lies more than ``nearest_max_ms`` away marked ``interp_gap`` (the study's
    match_regular_to_regular, used where it de-normalizes rectified predictions:
    :func:`nearest_sample_index`; the geometry of the ``pose_match = nearest_20ms``
    profile setting, :func:`pose_match_options`)."""

    max_gap_mocap_s: float = 0.050
    max_gap_robot_s: float = 0.030
    mocap_lost_s: float = 0.100
    robot_static_m: float = 1e-4
    robot_static_deg: float = 0.01
    face_center: str = "eth"
    robot: str = "auto"
    sync: str = "interpolate"
    stable_period_ms: float = 10.0
    stable_tolerance_ms: float = 2.0
    stable_window: int = 5
    nearest_max_ms: float = 20.0

    def __post_init__(self):
        if not (0 < self.max_gap_mocap_s <= self.mocap_lost_s):
            raise ValueError("GTOptions: need 0 < max_gap_mocap_s <= mocap_lost_s")
        if self.max_gap_robot_s <= 0:
            raise ValueError("GTOptions: max_gap_robot_s must be > 0")
        if self.face_center not in ("eth", "eye"):
            raise ValueError("GTOptions.face_center must be 'eth' or 'eye'")
        if self.robot not in ("auto", "tcp", "fk"):
            raise ValueError("GTOptions.robot must be 'auto', 'tcp' or 'fk'")
        if self.sync not in ("interpolate", "study", "nearest"):
            raise ValueError("GTOptions.sync must be 'interpolate', 'study' or 'nearest'")
        if not self.nearest_max_ms >= 0:
            raise ValueError("GTOptions.nearest_max_ms must be >= 0")


@dataclass
class PoseStream:
    """Stamped poses: t_ns (N,) int64 strictly increasing, p (N, 3) m, q (N, 4) xyzw."""

    t_ns: np.ndarray
    p: np.ndarray
    q: np.ndarray

    @classmethod
    def empty(cls) -> PoseStream:
        return cls(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros((0, 4)))

    def sorted_unique(self) -> PoseStream:
        """Sorted by stamp, repeated stamps dropped (keeps the first)."""
        if len(self.t_ns) == 0:
            return self
        o = np.argsort(self.t_ns, kind="stable")
        t = self.t_ns[o]
        keep = np.concatenate([[True], np.diff(t) > 0])
        return PoseStream(t[keep], self.p[o][keep], self.q[o][keep])


@dataclass
class FrameTable:
    """Frames of a trial in recording order: frame (slot index), t_ns, frame_number
    (-1 when unknown), kind ``ok`` / ``duplicate`` / ``dropped`` (placeholder row)."""

    frame: np.ndarray
    t_ns: np.ndarray
    frame_number: np.ndarray
    kind: np.ndarray

    def __len__(self) -> int:
        return len(self.frame)


def bracket_gaps(t_src_ns: np.ndarray, t_query_ns: np.ndarray) -> np.ndarray:
    """Spacing (s) of the two samples around each query; 0 on an exact hit; inf outside
    the stream's span or with fewer than 2 samples."""
    t = np.asarray(t_src_ns, np.int64)
    q = np.asarray(t_query_ns, np.int64)
    out = np.full(len(q), np.inf)
    if len(t) == 0:
        return out
    idx = np.searchsorted(t, q, side="left")
    exact = (idx < len(t)) & (t[np.minimum(idx, len(t) - 1)] == q)
    inside = (idx > 0) & (idx < len(t))
    i1 = np.clip(idx, 1, max(len(t) - 1, 1))
    if len(t) >= 2:
        g = (t[i1] - t[i1 - 1]) / 1e9
        out[inside] = g[inside]
    out[exact] = 0.0
    return out


def study_query_times(t_src_ns: np.ndarray, t_ns: np.ndarray) -> np.ndarray:
    """Where the study's matcher reads a stream for each frame (float ns): the sample on
    an exact hit, half-way between the two bracketing samples (their mean), the first or
    last sample outside the stream (GazeForHRI/GazeModels data_matcher.py,
    match_irregular_to_regular)."""
    t = np.asarray(t_src_ns, np.int64)
    q = np.asarray(t_ns, np.int64)
    if len(t) == 0:
        return q.astype(float)
    j = np.searchsorted(t, q, side="left")
    jc = np.clip(j, 1, max(len(t) - 1, 1))
    out = (t[jc - 1].astype(float) + t[jc].astype(float)) / 2.0 if len(t) > 1 else np.full(len(q), float(t[0]))
    exact = (j < len(t)) & (t[np.minimum(j, len(t) - 1)] == q)
    out = np.where(exact, q.astype(float), out)
    out = np.where(q < t[0], float(t[0]), out)
    return np.where(q > t[-1], float(t[-1]), out)


#: the study's largest distance (ms) from a frame stamp to the motion-capture sample its
#: rectified prediction is de-normalized with (GazeForHRI/Gaze4HRI@main:unrectification.py:103-105)
POSE_MATCH_MAX_MS = 20.0


def nearest_sample_index(t_src_ns: np.ndarray, t_query_ns: np.ndarray, max_diff_ns: float) -> np.ndarray:
    """Index of the sample of the sorted stream ``t_src_ns`` nearest to each query, -1
    where it lies more than ``max_diff_ns`` away (or the stream is empty). The study's
    match_regular_to_regular (GazeForHRI/Gaze4HRI@main:data_matcher.py:32-66): the
    candidates are the first sample at or after the query and the one before it; a tie
    goes to the later sample (it is tried first and only a strictly smaller distance
    replaces it); a distance equal to the limit matches."""
    t = np.asarray(t_src_ns, np.int64)
    q = np.asarray(t_query_ns, np.int64)
    out = np.full(len(q), -1, np.int64)
    if len(t) == 0 or len(q) == 0:
        return out
    j = np.searchsorted(t, q, side="left")
    after = np.minimum(j, len(t) - 1)
    before = np.maximum(j - 1, 0)
    d_after = np.where(j < len(t), np.abs(t[after] - q).astype(float), np.inf)
    d_before = np.where(j > 0, np.abs(q - t[before]).astype(float), np.inf)
    best = np.where(d_before < d_after, before, after)
    dist = np.minimum(d_after, d_before)
    ok = dist <= float(max_diff_ns)
    out[ok] = best[ok]
    return out


def pose_match_options(record, input_type: str, base: GTOptions | None = None) -> GTOptions | None:
    """The ground-truth options whose table gives a job's rectification geometry, or None
    when the job uses the shared (interpolated) table: a profile record with
    ``pose_match = nearest_20ms`` on the rectified input gets ``base`` with
    ``sync="nearest"`` and a 20 ms limit (:data:`POSE_MATCH_MAX_MS`). Rows of that table
    marked ``interp_gap`` have no sample within the limit: their frames are not scored
    (profiles.not_scored_mask)."""
    if record is None or getattr(record, "pose_match", "interpolate") == "interpolate" or input_type != "rectified":
        return None
    from dataclasses import replace

    return replace(base or GTOptions(), sync="nearest", nearest_max_ms=POSE_MATCH_MAX_MS)


def stable_start_ns(t_src_ns: np.ndarray, period_ms: float = 10.0, tolerance_ms: float = 2.0,
                    window: int = 5) -> int | None:
    """Stamp of the sample ending the first ``window`` consecutive intervals within
    period +- tolerance (the study's find_stable_start); the first stamp when the stream
    is too short or never stable, as the study; None when the stream is empty."""
    t = np.asarray(t_src_ns, np.int64)
    if len(t) == 0:
        return None
    if len(t) < window + 1:
        return int(t[0])
    d = np.diff(t) / 1e6
    ok = (d >= period_ms - tolerance_ms) & (d <= period_ms + tolerance_ms)
    run = np.convolve(ok.astype(int), np.ones(window, int), mode="valid")  # run[k]: intervals k..k+window-1
    hit = np.flatnonzero(run == window)
    return int(t[hit[0] + window]) if len(hit) else int(t[0])


def _interp(stream: PoseStream, t_ns: np.ndarray, t0: int, max_gap_s: float):
    p, q, ok = interpolate_poses((stream.t_ns - t0) / 1e9, stream.p, stream.q, (t_ns - t0) / 1e9, max_gap_s)
    return p, q, ok


def _static(stream: PoseStream, t_ns: np.ndarray, options: GTOptions) -> np.ndarray:
    """Whether the two samples around each query hold the same pose (within the
    options' static tolerances); False outside the stream."""
    t = stream.t_ns
    out = np.zeros(len(t_ns), bool)
    if len(t) < 2:
        return out
    i1 = np.searchsorted(t, t_ns, side="left")
    inside = (i1 > 0) & (i1 < len(t))
    a, b = i1[inside] - 1, i1[inside]
    dp = np.linalg.norm(stream.p[b] - stream.p[a], axis=1)
    qa = stream.q[a] / np.linalg.norm(stream.q[a], axis=1, keepdims=True)
    qb = stream.q[b] / np.linalg.norm(stream.q[b], axis=1, keepdims=True)
    dang = np.degrees(2 * np.arccos(np.clip(np.abs(np.sum(qa * qb, axis=1)), 0.0, 1.0)))
    out[inside] = (dp <= options.robot_static_m) & (dang <= options.robot_static_deg)
    return out


def _rot(q: np.ndarray) -> np.ndarray:
    return quats_xyzw_to_matrices(q)


def fk_stream(t_ns: np.ndarray, joints: np.ndarray, model: str) -> PoseStream:
    """tool0 poses in ``base`` from joint angles by forward kinematics (core.kinematics)."""
    P = np.zeros((len(t_ns), 3))
    Q = np.zeros((len(t_ns), 4))
    for i, q in enumerate(joints):
        T = ur_forward(q, model)
        P[i] = T[:3, 3]
        Q[i] = matrix_to_quat_xyzw(T[:3, :3])
    return PoseStream(np.asarray(t_ns, np.int64), P, Q)


def _synced_poses(t: np.ndarray, head: PoseStream, robot: PoseStream, options: GTOptions):
    """Head and robot poses at the frame stamps ``t`` under ``options.sync`` (our
    interpolation with gap limits, the study's query times, or the nearest sample), with
    their validity and the head stream's bracketing gaps: (ph, qh, ok_h, pr, qr, ok_r, gap_h)."""
    n = len(t)
    t0 = int(t[0]) if n else 0
    study = options.sync == "study"
    nearest = options.sync == "nearest"
    untimed = study or nearest  # no gap limits of our interpolation
    if nearest:  # the sample itself: an exact hit of the interpolation
        near_h = nearest_sample_index(head.t_ns, t, options.nearest_max_ms * 1e6)
        near_r = nearest_sample_index(robot.t_ns, t, options.nearest_max_ms * 1e6)
        tq_h = np.where(near_h >= 0, head.t_ns[np.maximum(near_h, 0)] if len(head.t_ns) else t, t)
        tq_r = np.where(near_r >= 0, robot.t_ns[np.maximum(near_r, 0)] if len(robot.t_ns) else t, t)
    else:
        tq_h = study_query_times(head.t_ns, t) if study else t
        tq_r = study_query_times(robot.t_ns, t) if study else t
    ph, qh, ok_h = (_interp(head, tq_h, t0, np.inf if untimed else options.max_gap_mocap_s) if len(head.t_ns)
                    else (np.full((n, 3), np.nan), np.full((n, 4), np.nan), np.zeros(n, bool)))
    gap_h = bracket_gaps(head.t_ns, t)
    gap_r = bracket_gaps(robot.t_ns, t)
    if len(robot.t_ns):
        pr, qr, ok_r = _interp(robot, tq_r, t0, np.inf)
        if not untimed:
            ok_r &= (gap_r <= options.max_gap_robot_s) | _static(robot, t, options)
    else:
        pr, qr, ok_r = np.full((n, 3), np.nan), np.full((n, 4), np.nan), np.zeros(n, bool)
    if nearest:
        ok_h &= near_h >= 0
        ok_r &= near_r >= 0
    return ph, qh, ok_h, pr, qr, ok_r, gap_h


def _gaze_geometry(ph, qh, pr, qr, cal: Calibration, trial: Trial, options: GTOptions,
                   targets_world: np.ndarray | None, n: int) -> tuple[dict, np.ndarray]:
    """Per-frame geometry, vectorised over frames (NaN rows where a pose is missing):
    the ground-truth columns (gaze, head, eye, face, target) and the camera centre in the
    world. Camera = registration x tool0 x hand-eye; eye = head band x eye-head offset;
    gaze = target - eye in the camera frame (Sezer et al., Sec. III-B)."""
    from gaze4hri_core.errors import CalibrationError

    R_wh = _rot(qh)
    R_bt = _rot(qr)
    T_he = cal.T_head_eye
    if T_he is None:
        raise CalibrationError("no eye-head calibration for this subject", str(cal.directory / "subjects"),
                               "copy subjects/<ID>.yaml into the session's calibration/ (docs/calibration.md)")
    R_we = R_wh @ T_he.R
    eye_w = np.einsum("nij,j->ni", R_wh, T_he.t) + ph
    R_wb, p_wb = cal.T_world_base.R, cal.T_world_base.t
    R_tc, p_tc = cal.T_tool0_camera.R, cal.T_tool0_camera.t
    R_wc = R_wb @ R_bt @ R_tc
    p_wc = (np.einsum("nij,j->ni", R_bt, p_tc) + pr) @ R_wb.T + p_wb
    R_cw = np.transpose(R_wc, (0, 2, 1))
    if trial.target == "camera":
        target_w = p_wc
    elif targets_world is not None:
        target_w = np.asarray(targets_world, float).reshape(n, 3)
    else:
        if trial.target not in cal.targets:
            raise CalibrationError(f"target {trial.target} not in the calibration targets",
                                   str(cal.directory / "targets.yaml"), "survey the target (docs/calibration.md)")
        target_w = np.broadcast_to(cal.targets[trial.target], (n, 3))
    g = normalize(np.einsum("nij,nj->ni", R_cw, target_w - eye_w))
    fwd = normalize(np.einsum("nij,nj->ni", R_cw, R_we[:, :, 0]))
    R_head_cam = R_cw @ R_we @ R_REP_TO_CV_HEAD
    eye_c = np.einsum("nij,nj->ni", R_cw, eye_w - p_wc)
    target_c = np.einsum("nij,nj->ni", R_cw, target_w - p_wc)
    face_c = eye_c + (np.einsum("nij,j->ni", R_head_cam, EYE_TO_FACE_CENTRE_MM / 1000.0)
                      if options.face_center == "eth" else 0.0)
    py = np.degrees(vector_to_pitchyaw(g))
    conflict = np.asarray(angular_error_deg(fwd, g), float).reshape(n)
    d = p_wc - eye_w
    f = cal.subject_forward_world
    left = np.cross([0.0, 0.0, 1.0], f)
    cam_yaw = np.degrees(np.arctan2(d @ left, d @ f))

    geo = {
        "gt_x": g[:, 0], "gt_y": g[:, 1], "gt_z": g[:, 2], "gt_pitch_deg": py[:, 0], "gt_yaw_deg": py[:, 1],
        "head_gaze_conflict_deg": conflict, "camera_yaw_deg": cam_yaw,
        "head_fwd_x": fwd[:, 0], "head_fwd_y": fwd[:, 1], "head_fwd_z": fwd[:, 2],
        "eye_cx": eye_c[:, 0], "eye_cy": eye_c[:, 1], "eye_cz": eye_c[:, 2],
        "face_cx": face_c[:, 0], "face_cy": face_c[:, 1], "face_cz": face_c[:, 2],
        "target_cx": target_c[:, 0], "target_cy": target_c[:, 1], "target_cz": target_c[:, 2],
    }
    for i in range(3):
        for j in range(3):
            geo[f"R_head_{i}{j}"] = R_head_cam[:, i, j]
    return geo, p_wc


def compute_ground_truth(frames: FrameTable, head: PoseStream, robot: PoseStream, cal: Calibration, trial: Trial,
                         options: GTOptions = GTOptions(), incomplete: bool = False,
                         targets_world: np.ndarray | None = None) -> pd.DataFrame:
    """The ground-truth table (GT_COLUMNS, one row per frame in ``frames`` order).

    ``head``: head band in the world; ``robot``: tool0 in the controller Base.
    Camera = registration x tool0 x hand-eye; eye = head band x eye-head offset;
    gaze = target - eye (or camera centre - eye when the target is ``camera``), in the
    camera frame (Sezer et al., Sec. III-B). Frames with any data reason keep NaN in
    the geometric columns."""
    n = len(frames)
    t = np.asarray(frames.t_ns, np.int64)
    head = head.sorted_unique()
    robot = robot.sorted_unique()
    study = options.sync == "study"
    untimed = study or options.sync == "nearest"  # no gap limits of our interpolation
    ph, qh, ok_h, pr, qr, ok_r, gap_h = _synced_poses(t, head, robot, options)
    kind = np.asarray(frames.kind)
    masks = {
        "trial_incomplete": np.full(n, bool(incomplete)),
        "dropped_frame": kind == "dropped",
        "duplicate_frame": kind == "duplicate",
        "mocap_lost": (gap_h > options.mocap_lost_s) if not untimed else np.zeros(n, bool),
        "interp_gap": (~ok_h) | (~ok_r),
    }
    if study:
        start = stable_start_ns(head.t_ns, options.stable_period_ms, options.stable_tolerance_ms, options.stable_window)
        masks["before_stable_start"] = t < start if start is not None else np.zeros(n, bool)
    reason = combine_reasons(masks, n)
    valid = reason == ""
    geo, p_wc = _gaze_geometry(ph, qh, pr, qr, cal, trial, options, targets_world, n)
    df = pd.DataFrame({"frame": np.asarray(frames.frame, np.int64), "t_ns": t,
                       "frame_number": np.asarray(frames.frame_number, np.int64)})
    for k, v in geo.items():
        v = np.asarray(v, float).copy()
        v[~valid] = np.nan
        df[k] = v
    # the camera's optical centre in the world (m), wherever the camera pose is known: the
    # path of the moving camera does not depend on the head or on the frame's validity (the
    # study segments its line scans on the camera poses alone, line_movement_analysis.py:79-98)
    for k, c in enumerate("xyz"):
        df[f"cam_world_{c}"] = np.where(ok_r, p_wc[:, k], np.nan)
    df["valid"] = valid
    df["invalid_reason"] = reason.astype(str)
    return df[GT_COLUMNS]
