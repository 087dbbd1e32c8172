"""Issue 13's inputs to the ground truth of a ``session`` trial: the tracked table's
targets, the camera pose source and the disagreement of the two camera poses."""
from __future__ import annotations

import numpy as np

from ..frame_truth import GTOptions, PoseStream

__all__ = ["tracked_inputs"]


def tracked_inputs(scan: dict, ref, t_ns: np.ndarray, robot: PoseStream, opt: GTOptions, source: str | None = None):
    """Issue 13 (geometry in gaze4hri_core.groundtruth): per-frame table targets when the
    table is tracked (table.yaml + /mocap/rigid_bodies/table/pose), the camera pose
    source recorded in session.yaml (``fk`` or ``mocap``), and, when both camera poses
    exist, their disagreement per frame (``camera_src_diff_mm``, ``camera_src_diff_deg``).
    ``source``: the camera pose source when the caller read the manifest already (None:
    read it here). Returns (targets_world or None, robot stream to use, extra columns)."""
    from gaze4hri_core.session import load_manifest
    from gaze4hri_core.transforms import matrix_to_quat_xyzw

    from gaze4hri_core import groundtruth as cgt

    cal = ref.calibration
    extra: dict = {}
    targets = None
    table = scan.get("table", PoseStream.empty())
    if ref.protocol.target != "camera" and len(table.t_ns) and getattr(cal, "T_world_table_survey", None) is not None:
        offset = cal.targets_in_table()[ref.protocol.target]
        targets, _ok = cgt.tracked_targets_world(table.t_ns, table.p, table.q, offset, t_ns,
                                                 max(opt.mocap_lost_s, opt.max_gap_mocap_s))
    body = scan.get("camera_body", PoseStream.empty()).sorted_unique()
    T_bc = getattr(cal, "T_cambody_camera", None)
    if source is None:
        try:
            source = str(load_manifest(ref.session_dir).settings.get("camera_pose_source", "fk"))
        except Exception:  # noqa: BLE001 - an unreadable manifest was reported when the session was listed
            source = "fk"
    if T_bc is None or not len(body.t_ns):
        return targets, robot, extra
    from gaze4hri_core.transforms import interpolate_poses, quats_xyzw_to_matrices

    t0 = int(t_ns[0]) if len(t_ns) else 0
    pb, qb, okb = interpolate_poses((body.t_ns - t0) / 1e9, body.p, body.q, (np.asarray(t_ns) - t0) / 1e9,
                                    opt.max_gap_mocap_s)
    Rb = quats_xyzw_to_matrices(qb)
    R_wc_m, p_wc_m = cgt.camera_from_body(Rb, pb, T_bc)
    rs = robot.sorted_unique()
    if len(rs.t_ns):
        pr, qr, _okr = interpolate_poses((rs.t_ns - t0) / 1e9, rs.p, rs.q, (np.asarray(t_ns) - t0) / 1e9, np.inf)
        Rr = quats_xyzw_to_matrices(qr)
        R_wc_k = cal.T_world_base.R @ Rr @ cal.T_tool0_camera.R
        p_wc_k = (np.einsum("nij,j->ni", Rr, cal.T_tool0_camera.t) + pr) @ cal.T_world_base.R.T + cal.T_world_base.t
        d, a = cgt.pose_disagreement(R_wc_k, p_wc_k, R_wc_m, p_wc_m)
        extra = {"camera_src_diff_mm": d * 1000.0, "camera_src_diff_deg": a}
    if source == "mocap":
        R_bt, p_bt = cgt.tool0_from_camera(R_wc_m, p_wc_m, cal.T_world_base, cal.T_tool0_camera)
        ok = okb & np.isfinite(p_bt).all(1)
        q = np.array([matrix_to_quat_xyzw(R) for R in R_bt[ok]]).reshape(-1, 4)
        robot = PoseStream(np.asarray(t_ns, np.int64)[ok], p_bt[ok], q)
    return targets, robot, extra
