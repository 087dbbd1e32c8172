#!/usr/bin/env python3
"""Whether the real-backend robot completes a trial (issue 20, item 3): the robot node
with backend=real and the real ur_rtde, in-process as a session runs it, against the
UR controller emulator (gaze4hri_sim.ur_controller, CB3 at 125 Hz) on loopback, with a
head-band stream of a subject seated at the calibration's eye position and the study's
limits (0.1 s loss timeout):

- the trial: mutual_h_fast's approach, then its line scan (movep) to the end;
- tracking loss: the scan again, the head stream stopped mid-motion: a mocap_loss
  fault and the arm standing short of the end (emulator state);
- protective stop: the emulator's protective stop mid-motion: a protective_stop fault
  and ``protective_stop`` in the robot's /diagnostics (the operator view's robot row).

The harness is gaze4hri_acq.testing.ur_node_bed (as tests/acq/test_robot_node_real.py).

    .venv/bin/python benchmarks/reliability_ur.py
"""
from __future__ import annotations

import sys
import time

TRIAL = "mutual_h_fast"


def run(trial: str = TRIAL, mocap_loss_timeout_s: float = 0.1) -> dict:
    """Returns {"completed", "loss_stop", "protective_stop", "line", "attempts_stopped_by_stalls", timings...}."""
    import importlib.metadata

    import numpy as np
    from gaze4hri_acq.testing.ur_node_bed import RobotNodeBed, run_trial, tcp, wait_for
    from gaze4hri_sim.arm import HOME_Q

    t_all = time.monotonic()
    res: dict = {
        "trial": trial,
        "mocap_loss_timeout_s": mocap_loss_timeout_s,
        "ur_rtde": importlib.metadata.version("ur_rtde"),
    }
    with RobotNodeBed("--q", *(f"{x:.6f}" for x in HOME_Q), mocap_loss_timeout_s=mocap_loss_timeout_s) as bed:
        res["bring_up_s"] = bed.bring_up_s
        # a second attempt only when the first was stopped for a head-band loss that the
        # head stream's own stall explains (the machine's load, not the robot): reported
        stalled = []
        for _ in range(2):
            k0 = len(bed.head.stalls)
            try:
                r = run_trial(bed, trial)
            except AssertionError as e:  # a fault or a timeout: the trial did not complete
                r = {"completed": False, "error": str(e).splitlines()[0]}
            gaps = [g for _, g in bed.head.stalls[k0:] if g > mocap_loss_timeout_s]
            if r["completed"] or "mocap_loss" not in r.get("error", "") or not gaps:
                break
            stalled.append(max(gaps))
        res |= {"trial_" + k if k != "completed" else k: v for k, v in r.items() if k != "trial"}
        res["attempts_stopped_by_stalls"] = stalled
        plan = bed.plan(trial)
        end = plan.motion.waypoints_base[-1].t
        # tracking loss mid-scan
        res["loss_stop"] = False
        try:
            bed.client.request("robot", "clear_stop")
            bed.move(plan.approach)
            n = len(bed.client.faults)
            bed.move(plan.motion, wait=False)
            wait_for(
                lambda: np.linalg.norm(bed.robot.state.tcp_speed[:3]) > 0.5 * plan.motion.speed, 10, "the scan to move"
            )
            last = bed.head.pause()
            f = bed.wait_fault(n)
            held = bed.wait_still()
            res["loss_fault"] = f["code"]
            res["loss_stop_s"] = (
                (bed.robot.driver.stopped_ns - last) / 1e9 if bed.robot.driver.stopped_ns else float("nan")
            )
            res["loss_short_of_end_m"] = float(np.linalg.norm(tcp(held) - end))
            res["loss_stop"] = f["code"] == "mocap_loss" and res["loss_short_of_end_m"] > 0.01
        except AssertionError as e:
            res["loss_error"] = str(e).splitlines()[0]
        # protective stop mid-motion
        res["protective_stop"] = False
        try:
            bed.head.resume()
            wait_for(lambda: time.time_ns() - bed.client.head[0] < 50e6, 10, "the head band")
            bed.client.request("robot", "clear_stop")
            n = len(bed.client.faults)
            bed.move(plan.approach, wait=False)
            wait_for(lambda: np.linalg.norm(bed.emu_state()["actual_TCP_speed"][:3]) > 0.05, 10, "the arm to move")
            t0 = time.monotonic()
            bed.emu.control("pstop")
            f = bed.wait_fault(n)
            res["pstop_fault"] = f["code"]
            res["pstop_fault_s"] = time.monotonic() - t0
            wait_for(
                lambda: bed.client.diag.get("gaze4hri/robot", {}).get("protective_stop") == "True",
                10,
                "the diagnostics",
            )
            res["pstop_diag_s"] = time.monotonic() - t0
            res["protective_stop"] = f["code"] == "protective_stop" and bool(bed.wait_still()["safety_status_bits"] & 4)
        except AssertionError as e:
            res["pstop_error"] = str(e).splitlines()[0]
        res["head_max_gap_s"] = bed.head.max_gap_s
    res["seconds"] = time.monotonic() - t_all
    res["line"] = _line(res)
    return res


def _line(r: dict) -> str:
    g = r.get
    trial = (
        f"{r['trial']} approach {g('trial_approach_s', float('nan')):.1f} s + {g('trial_motion', 'motion')} "
        f"{g('trial_motion_s', float('nan')):.1f} s (previewed {g('trial_previewed_s', float('nan')):.1f} s, end error "
        f"{g('trial_end_error_m', float('nan')) * 1e3:.1f} mm, "
        f"off path {g('trial_max_off_path_m', float('nan')) * 1e3:.2f} mm, "
        f"peak {g('trial_peak_speed', float('nan')):.3f} m/s) "
        f"{'completed' if r['completed'] else 'NOT completed: ' + str(g('trial_error', '?'))}"
    )
    loss = (
        f"head band lost -> {g('loss_fault')} stop {g('loss_stop_s', float('nan')):.2f} s after the last pose (limit "
        f"{r['mocap_loss_timeout_s']:.2f} s), {g('loss_short_of_end_m', float('nan')) * 1e3:.0f} mm short of the end"
        if r["loss_stop"]
        else f"loss stop FAILED ({g('loss_error') or g('loss_fault')})"
    )
    pst = (
        f"protective stop -> fault in {g('pstop_fault_s', float('nan')):.2f} s, "
        f"in /diagnostics in {g('pstop_diag_s', float('nan')):.1f} s"
        if r["protective_stop"]
        else f"protective stop FAILED ({g('pstop_error') or g('pstop_fault')})"
    )
    if r["attempts_stopped_by_stalls"]:
        trial += (
            f" (after {len(r['attempts_stopped_by_stalls'])} attempt(s) stopped, as they must be, "
            "by a head-stream stall of "
            + ", ".join(f"{g * 1e3:.0f} ms" for g in r["attempts_stopped_by_stalls"])
            + " on this loaded machine)"
        )
    return (
        f"robot node backend=real, ur_rtde {r['ur_rtde']} vs UR emulator (CB3 125 Hz): {trial}; {loss}; {pst}; "
        f"head stream max gap {r['head_max_gap_s'] * 1e3:.0f} ms; {r['seconds']:.0f} s"
    )


def main() -> int:
    r = run()
    print(r["line"])
    return 0 if r["completed"] and r["loss_stop"] and r["protective_stop"] else 1


if __name__ == "__main__":
    sys.exit(main())
