"""Motion-capture checks: what the natnet client (through the project's NatNetMocap
driver, which drops datagrams from anyone but ``server_ip``) reports about Motive: server
and NatNet versions, the rigid bodies defined and tracked, the rate, the exposure-to-
arrival latency and foreign senders, gathered once (:func:`gather_mocap`), then judged by
pure functions (:func:`mocap_checks`)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from gaze4hri_core.device_config import MocapConfig
from gaze4hri_core.transforms import SE3

from .record import Check, failed, passed, warned

__all__ = ["MocapReport", "gather_mocap", "mocap_checks", "expected_bodies"]

G = "mocap"
TRACKED_MIN = 0.95  # fraction of frames a body must be tracked in
LATENCY_MS = (10.0, 30.0)  # pass below the first, warn below the second


@dataclass(frozen=True)
class MocapReport:
    """What the stream reported over ``seconds``; ``poses``: each tracked body's last pose
    in the world (Z-up), for the calibration's live consistency checks."""

    address: str
    error: str | None = None
    simulated: bool = False
    application: str | None = None
    server_version: str | None = None
    natnet_version: str | None = None
    bodies: tuple[str, ...] = ()
    frames: int = 0
    seconds: float = 0.0
    tracked: dict[str, float] = field(default_factory=dict)
    latency_ms: float | None = None
    foreign: int = 0
    foreign_fault: str | None = None
    poses: dict[str, SE3] = field(default_factory=dict)
    fix: str | None = None  # the fix for ``error`` where the source knows it


def expected_bodies(table: bool, camera: str | None) -> dict[str, str]:
    """Our body name -> "fail" or "warn" when it is missing: the head band always (safety and
    ground truth); the table when the calibration has its survey pose (else the static
    survey is used: warn); the camera's body "fail" with ``--camera-pose-source mocap``,
    "warn" when camera_body.yaml exists, else not expected (``camera``: None)."""
    out = {"head_band": "fail"}
    if table:
        out["table"] = "warn"
    if camera:
        out["camera"] = camera
    return out


# ------------------------------------------------------------------ gathering (I/O)
def _versions(driver) -> dict:
    """Motive's server info as the natnet client parsed it (natnet 0.3 keeps it in the
    client's private ``__server_info``; NatNetMocap holds the client)."""
    info = getattr(getattr(driver, "_client", None), "_NatNetClient__server_info", None)
    if info is None:
        return {}
    return {"application": str(info.application_name).strip("\0 "), "server_version": str(info.server_version),
            "natnet_version": str(info.nat_net_protocol_version)}


def gather_mocap(config: MocapConfig, seconds: float = 1.0) -> MocapReport:
    """Connect to Motive as the session's driver does and read ``seconds`` of frames."""
    from gaze4hri_core.devices import DeviceError

    from ..drivers.registry import make_mocap

    m = make_mocap("real", config)
    try:
        m.connect()
    except DeviceError as e:
        return MocapReport(m.address, error=e.what.split(": ", 1)[-1], foreign=m.guard.foreign,
                           foreign_fault=m.guard.last_fault)
    try:
        while m.read(0.0) is not None:  # frames queued before the model definitions carry no body names
            pass
        frames, t_end = [], time.monotonic() + seconds
        while time.monotonic() < t_end:
            f = m.read(0.05)
            if f is not None:
                frames.append(f)
        info = _versions(m)
    finally:
        m.close()
    return summarise(m.address, frames, tuple(m.rigid_body_names.values()), m.guard.foreign,
                     m.guard.last_fault if m.guard.foreign else None, **info)


def summarise(address: str, frames: list, bodies: tuple[str, ...], foreign: int = 0, foreign_fault=None,
              **info) -> MocapReport:
    """A report from the frames read (MocapFrame: stamp, bodies, latency)."""
    tracked: dict[str, int] = {}
    poses: dict[str, SE3] = {}
    for f in frames:
        for name, b in f.bodies.items():
            if b.tracking_valid:
                tracked[name] = tracked.get(name, 0) + 1
                poses[name] = SE3.from_quat(b.position, b.quat_xyzw)
    n = len(frames)
    seconds = (frames[-1].stamp_ns - frames[0].stamp_ns) / 1e9 if n > 1 else 0.0
    lat = [f.latency_ns / 1e6 for f in frames if f.latency_ns]
    return MocapReport(address, bodies=bodies, frames=n, seconds=seconds,
                       tracked={k: tracked.get(k, 0) / n for k in bodies} if n else {},
                       latency_ms=float(np.median(lat)) if lat else None, foreign=foreign,
                       foreign_fault=foreign_fault, poses=poses, **info)


# ------------------------------------------------------------------ checks (pure)
def _server(r: MocapReport) -> list[Check]:
    out = []
    if r.foreign:
        out.append(failed(G, "sender", f"{r.foreign} datagrams from another sender ({r.foreign_fault})",
                          "stop the other NatNet source (a second Motive, a replay tool) or check --motive-ip"))
    elif not r.simulated:
        out.append(passed(G, "sender", "frames from the server only"))
    if r.simulated:
        return [*out, passed(G, "server", f"simulated motion capture ({r.address})")]
    v = f"{r.application or 'server'} {r.server_version or '?'}, NatNet {r.natnet_version or '?'}"
    major = int(str(r.natnet_version or "0").split(".")[0] or 0)
    out.append(passed(G, "server", f"{r.address}: {v}") if major >= 3 else
               failed(G, "server", f"{r.address}: {v}: NatNet 3 or later needed (exposure timestamps)",
                      "update Motive (2.0 or later streams NatNet 3)"))
    return out


def _bodies(r: MocapReport, expected: dict[str, str]) -> list[Check]:
    out = []
    for name, level in expected.items():
        check = f"body {name}"
        if name not in r.bodies:
            v = f"not among Motive's rigid bodies ({', '.join(r.bodies) or 'none'})"
            fix = f"create (or rename) the rigid body '{name}' in Motive and enable it in the streaming pane"
            out.append(failed(G, check, v, fix) if level == "fail" else warned(G, check, v, fix))
            continue
        frac = r.tracked.get(name, 0.0)
        v = f"tracked in {frac:.0%} of {r.frames} frames"
        if frac >= TRACKED_MIN:
            out.append(passed(G, check, v))
        else:
            fix = "clear the line of sight to its markers; check the markers and the cameras' masks"
            out.append(failed(G, check, v, fix) if level == "fail" else warned(G, check, v, fix))
    return out


def _stream(r: MocapReport, rate_hz: float, eye_height_m: float | None) -> list[Check]:
    out = []
    rate = (r.frames - 1) / r.seconds if r.seconds > 0 else 0.0
    v = f"{rate:.0f} Hz over {r.seconds:.1f} s (expected {rate_hz:.0f} Hz)"
    if rate >= 0.9 * rate_hz:
        out.append(passed(G, "rate", v))
    else:
        out.append(failed(G, "rate", v, "set Motive's frame rate, check the network (unicast/multicast, "
                                        "--local-ip) and the CPU"))
    if r.latency_ms is not None:
        v = f"exposure to transmit {r.latency_ms:.1f} ms"
        ok, soft = LATENCY_MS
        out.append(passed(G, "latency", v) if r.latency_ms < ok else
                   warned(G, "latency", v, "lower Motive's load (fewer reconstructions, no video export)")
                   if r.latency_ms < soft else failed(G, "latency", v, "Motive is overloaded: reduce its work"))
    head = r.poses.get("head_band")
    if head is not None and eye_height_m is not None:
        z = float(head.t[2])
        v = f"head band at z {z:.2f} m (the scene's eyes at {eye_height_m:.2f} m)"
        out.append(passed(G, "up axis", v) if abs(z - eye_height_m) < 0.4 else
                   warned(G, "up axis", v, "set Motive's streaming Up Axis to Y (the driver converts Y-up to "
                                           "Z-up once) and check the ground plane"))
    return out


def mocap_checks(r: MocapReport, expected: dict[str, str], rate_hz: float,
                 eye_height_m: float | None = None) -> list[Check]:
    """Every motion-capture check from one report: the server and foreign senders, the
    expected bodies present and tracked, the rate, the latency and the up axis."""
    if r.error is not None:
        out = [failed(G, "server", f"{r.address}: {r.error}", r.fix or
                      "start Motive, enable Streaming, match unicast/multicast and check --motive-ip / --local-ip")]
        if r.foreign:
            out += _server(r)[:1]
        return out
    return _server(r) + _bodies(r, expected) + _stream(r, rate_hz, eye_height_m)
