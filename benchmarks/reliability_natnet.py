#!/usr/bin/env python3
"""NatNet faults survived (issue 20, item 4): the real Motive 2.1 / NatNet 3.0 capture
(shared/reference/reliability_data/natnet_motive21_v3, 518 frames) replayed over
loopback UDP into the real driver (NatNetMocap, natnet 0.3.0) at 10x, with a fault at
every fifth frame, the kinds in turn: a spoofed source (127.0.0.2), truncated packets
(header size kept / made to match), garbage, a well-framed garbage frame, a 3-byte
runt, a NaN position, an infinite quaternion component, a non-unit quaternion.

A fault is survived when exactly its counter moves by one, the next genuine frame is
delivered, and a damaged frame arrives untracked (gaze4hri_acq/testing/natnet_emulator.py
replay_capture; the same run is test_mocap_natnet.py::
test_whole_capture_with_a_fault_every_fifth_frame).

    .venv/bin/python benchmarks/reliability_natnet.py
"""
from __future__ import annotations

import time


def run(every: int = 5, speed: float = 10.0) -> dict:
    """Replay with faults; returns {"survived", "total", "by_kind": {kind: [survived, total]},
    "frames", "counters", "seconds", "line"}. Raises FileNotFoundError without the capture."""
    from gaze4hri_acq.testing.natnet_emulator import FAULT_KINDS, MotiveCapture, find_capture_dir, replay_capture

    d = find_capture_dir()
    if d is None:
        raise FileNotFoundError("natnet_motive21_v3 capture not found under shared/reference/reliability_data "
                                "(beside the repository); lay out shared/ as CI does")
    cap = MotiveCapture(d)
    faults = {k: FAULT_KINDS[(k // every) % len(FAULT_KINDS)] for k in range(2, len(cap.frames) - 1, every)}
    t0 = time.monotonic()
    r = replay_capture(cap, speed=speed, faults=faults)
    by_kind = {k: [0, 0] for k in FAULT_KINDS}
    for o in r.outcomes:
        by_kind[o.kind][0] += o.survived
        by_kind[o.kind][1] += 1
    k, n = r.survived, len(faults)
    return {"survived": k, "total": n, "by_kind": by_kind, "frames": len(r.frames), "counters": r.counters,
            "seconds": round(time.monotonic() - t0, 2), "line": f"NatNet faults survived: {k}/{n}"}


if __name__ == "__main__":
    res = run()
    print(res["line"], f"({res['frames']} frames delivered of 518; {res['seconds']} s)")
    for kind, (s, t) in res["by_kind"].items():
        print(f"  {kind}: {s}/{t}")
    print("  counters:", res["counters"])
