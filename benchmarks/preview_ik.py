"""The safety preview of every protocol motion (each trial's approach from the front camera
pose, then its recording motion, sampled at the robot node's 50 Hz), side by side:

- ``preview``: ``SafetyMonitor.preview`` as the robot node and the simulated controller call
  it (all samples' IK branches at once, ``kinematics.inverse_many``);
- ``newton``: the joint path solved sample by sample with ``safety.ik_track`` from the
  previous sample's joints (the preview's IK before), the IK part alone.

Reports CPU seconds of each over the 63 trials and the largest joint difference of the two
paths (rad). The previews sit on the trial's critical path: the orchestrator waits for the
move's acknowledgement while the recording runs.

    .venv/bin/python benchmarks/preview_ik.py [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]


def newton_path(poses, q0, model: str = "ur5") -> np.ndarray:
    """Joints sample by sample: Newton steps from the previous sample, the analytic IK where they fail."""
    from gaze4hri_core.safety import ik_track

    from gaze4hri_core import kinematics

    out, q = [], np.asarray(q0, float)
    for T in poses:
        nq = ik_track(T.matrix, q, model)
        q = nq if nq is not None else kinematics.inverse(T.matrix, model, q_near=q)[0]
        out.append(q)
    return np.array(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many passes over the 63 trials")
    a = ap.parse_args()
    from gaze4hri_core.calibration import load_calibration
    from gaze4hri_core.safety import SafetyLimits, SafetyMonitor
    from gaze4hri_core.trajectories import (
        TrajectorySettings,
        front_camera_pose,
        plan_trial,
        sample_path,
        tool0_for_camera,
    )
    from gaze4hri_core.transforms import SE3
    from gaze4hri_sim.arm import HOME_Q

    from gaze4hri_core import kinematics, protocol

    cal = load_calibration(REPO / "calibration", "default")
    mon = SafetyMonitor(SafetyLimits(), cal.T_world_base, cal.T_tool0_camera, "ur5", cal.eye_in_head)
    mon.update_head(0, SE3(np.eye(3), cal.eye_nominal_world) @ cal.T_head_eye.inv())
    front = tool0_for_camera(cal, front_camera_pose(cal))
    q_front = kinematics.inverse(front.matrix, "ur5", q_near=HOME_Q)[0]
    motions = []  # (t, poses, q_start, speed, accel) of each approach and recording motion
    for trial in protocol.trials():
        plan = plan_trial(trial, cal, cal.eye_nominal_world, TrajectorySettings())
        start, q = front, q_front
        for mv in (plan.approach, plan.motion):
            if mv is None:
                continue
            t, poses, _, _ = sample_path(mv.path(start), mv.speed, mv.accel, 50.0, stops=mv.stops)
            motions.append((t, poses, q, mv.speed, mv.accel))
            v, qs = mon.preview(t, poses, q, mv.speed, mv.accel, now_ns=1)
            if not v:
                raise SystemExit(f"{trial.trial_id} {mv.name}: refused ({v.reason})")
            start, q = poses[-1], qs[-1]
    best = {"preview": float("inf"), "newton": float("inf")}
    diff = 0.0
    for _ in range(a.repeat):
        c = time.process_time()
        paths = []
        for t, poses, q, sp, ac in motions:
            mon._ik_memo = None  # each motion solved, as the robot node's first preview
            paths.append(mon.preview(t, poses, q, sp, ac, now_ns=1)[1])
        best["preview"] = min(best["preview"], time.process_time() - c)
        c = time.process_time()
        ref = [newton_path(poses, q) for _t, poses, q, _s, _a in motions]
        best["newton"] = min(best["newton"], time.process_time() - c)
        diff = max(float(np.abs(p - r).max()) for p, r in zip(paths, ref, strict=True))
    samples = sum(len(m[0]) for m in motions)
    print(json.dumps({"motions": len(motions), "samples": samples, "preview_cpu_s": round(best["preview"], 3),
                      "newton_ik_cpu_s": round(best["newton"], 3),
                      "ratio": round(best["newton"] / best["preview"], 1), "max_joint_diff_rad": diff}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
