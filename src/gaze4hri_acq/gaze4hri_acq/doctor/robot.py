"""Robot checks: what ur_rtde (RTDEReceiveInterface, DashboardClient) and the RTDE port
report about the UR controller, gathered once (:func:`gather_robot`), then judged by pure
functions (:func:`robot_checks`). Enumerations: Universal Robots "RTDE Guide" (robot_mode,
safety_mode); dashboard answers as ur_rtde's dashboard_client.cpp parses them."""
from __future__ import annotations

import math
import socket
import struct
import time
from dataclasses import dataclass, field

import numpy as np
from gaze4hri_core.kinematics import forward
from gaze4hri_core.safety import SafetyLimits
from gaze4hri_core.transforms import SE3, ur_pose_to_se3

from .record import Check, failed, passed, warned

__all__ = ["RobotReport", "gather_robot", "robot_checks", "ROBOT_MODES", "SAFETY_MODES", "SERIES_OF_MODEL"]

G = "robot"
ROBOT_MODES = {-1: "NO_CONTROLLER", 0: "DISCONNECTED", 1: "CONFIRM_SAFETY", 2: "BOOTING", 3: "POWER_OFF",
               4: "POWER_ON", 5: "IDLE", 6: "BACKDRIVE", 7: "RUNNING", 8: "UPDATING_FIRMWARE"}
SAFETY_MODES = {1: "NORMAL", 2: "REDUCED", 3: "PROTECTIVE_STOP", 4: "RECOVERY", 5: "SAFEGUARD_STOP",
                6: "SYSTEM_EMERGENCY_STOP", 7: "ROBOT_EMERGENCY_STOP", 8: "VIOLATION", 9: "FAULT",
                10: "VALIDATE_JOINT_ID", 11: "UNDEFINED", 12: "AUTOMATIC_MODE_SAFEGUARD_STOP",
                13: "SYSTEM_THREE_POSITION_ENABLING_STOP"}
#: arm model -> (controller series, PolyScope major version, lowest version with RTDE protocol 2)
SERIES_OF_MODEL = {"ur5": ("CB3", 3, (3, 4)), "ur5e": ("e-Series", 5, (5, 0))}
#: the D435i weighs 72 g (Intel D400 datasheet) plus its wrist mount: a payload outside this
#: range was not set for the camera (0 kg: never set)
PAYLOAD_RANGE_KG = (0.05, 1.5)
#: UR joints turn +-360 deg; closer than this to a limit a motion may need a wrist turn it cannot make
JOINT_MARGIN_RAD = math.radians(10.0)


@dataclass(frozen=True)
class RobotReport:
    """What the controller reported; ``None`` where it could not be read."""

    host: str
    simulated: bool = False
    rtde_error: str | None = None
    dashboard_error: str | None = None
    polyscope: str | None = None  # "3.15.7.106331"
    model_name: str | None = None  # the dashboard's "get robot model"
    robot_mode: int | None = None
    safety_mode: int | None = None
    remote: bool | None = None  # None: no remote/local mode (PolyScope < 5.6)
    rate_hz: float | None = None
    tcp_offset: tuple[float, ...] | None = None
    payload_kg: float | None = None
    q: tuple[float, ...] | None = None
    tcp_pose: tuple[float, ...] | None = None  # UR pose of the TCP in Base
    clock_rtt_ms: float | None = None
    clock_drift_ms: float | None = None
    notes: dict = field(default_factory=dict)

    @property
    def T_base_tool0(self) -> SE3 | None:
        return None if self.tcp_pose is None else ur_pose_to_se3(list(self.tcp_pose))


# ------------------------------------------------------------------ gathering (I/O)
def _version(text: str | None) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in str(text).split()[-1].split(".")[:3])
    except ValueError:
        return ()


def _dashboard(host: str, timeout_s: float) -> dict:
    """PolyScope version, model name and remote control from the dashboard server."""
    from dashboard_client import DashboardClient

    try:
        socket.create_connection((host, 29999), timeout=timeout_s).close()  # connect() would block on silence
        db = DashboardClient(host)
        db.connect(int(timeout_s * 1000))
    except (OSError, RuntimeError) as e:
        return {"dashboard_error": f"dashboard {host}:29999 not reachable ({e.__class__.__name__}: {e})"}
    out: dict = {}
    try:
        out["polyscope"] = str(db.polyscopeVersion()).strip()
        try:
            out["model_name"] = str(db.getRobotModel()).strip()
        except RuntimeError:
            pass
        # ur_rtde answers False (with a warning) below PolyScope 5.6, which has no remote mode
        if _version(out["polyscope"]) >= (5, 6):
            out["remote"] = bool(db.isInRemoteControl())
    except RuntimeError as e:
        out["dashboard_error"] = f"dashboard request failed ({e})"
    finally:
        db.disconnect()
    return out


def rtde_outputs(host: str, names: list[str], timeout_s: float = 2.0, port: int = 30004) -> dict:
    """One data package of ``names`` by the RTDE protocol itself (RTDE Guide v2: V, O, S, U, P),
    typed as the controller answers the output setup; for outputs ur_rtde has no getter for."""
    from gaze4hri_sim.ur_rtde_wire import FMT, recv_package, send_package

    with socket.create_connection((host, port), timeout=timeout_s) as s:
        s.settimeout(timeout_s)
        send_package(s, ord("V"), struct.pack(">H", 2))
        recv_package(s)
        send_package(s, ord("O"), struct.pack(">d", 10.0) + ",".join(names).encode())
        kind, body = recv_package(s) or (0, b"")
        types = body[1:].decode().split(",")
        if "NOT_FOUND" in types:
            return {}
        send_package(s, ord("S"), b"")
        while (pkg := recv_package(s)) is not None and pkg[0] != ord("U"):
            pass
        send_package(s, ord("P"), b"")
    if pkg is None:
        return {}
    out, off = {}, 1
    for n, t in zip(names, types, strict=True):
        vals = struct.unpack_from(">" + FMT[t], pkg[1], off)
        off += struct.calcsize(">" + FMT[t])
        out[n] = vals if len(vals) > 1 else vals[0]
    return out


def _receive(host: str, rate_hz: float, sample_s: float) -> dict:
    """State, measured rate and the clock mapping from RTDEReceiveInterface."""
    import rtde_receive

    from ..drivers.robot_rtde import ClockMapper

    rx = rtde_receive.RTDEReceiveInterface(host, rate_hz)
    try:
        def mapper() -> ClockMapper:
            m = ClockMapper()
            for _ in range(10):
                a = time.time_ns()
                c = float(rx.getTimestamp())
                m.add(a, c, time.time_ns())
                time.sleep(0.002)
            return m

        m0 = mapper()
        stamps, t_end = set(), time.monotonic() + sample_s
        while time.monotonic() < t_end:
            stamps.add(float(rx.getTimestamp()))
            time.sleep(0.0005)
        m1 = mapper()
        span = max(stamps) - min(stamps) if len(stamps) > 1 else 0.0
        return {"robot_mode": int(rx.getRobotMode()), "safety_mode": int(rx.getSafetyMode()),
                "payload_kg": float(rx.getPayload()), "q": tuple(rx.getActualQ()),
                "tcp_pose": tuple(rx.getActualTCPPose()),
                "rate_hz": (len(stamps) - 1) / span if span > 0 else None,
                "clock_rtt_ms": min(m0.rtt_ns, m1.rtt_ns) / 1e6,
                "clock_drift_ms": abs(m1.offset_ns - m0.offset_ns) / 1e6}
    finally:
        rx.disconnect()


def gather_robot(host: str, model: str, timeout_s: float = 2.0, sample_s: float = 0.5) -> RobotReport:
    """Ask the controller at ``host``: the RTDE handshake first (ur_rtde's constructor hangs
    on a silent port), then the dashboard, the RTDE state and the TCP offset."""
    from gaze4hri_core.devices import DeviceError

    from ..drivers.robot_rtde import probe_rtde

    try:
        probe_rtde(host, timeout_s=timeout_s)
    except DeviceError as e:
        return RobotReport(host, rtde_error=e.what, notes={"fix": e.fix})
    values = _dashboard(host, timeout_s)
    rate = 500.0 if model == "ur5e" else 125.0
    try:
        values.update(_receive(host, rate, sample_s))
        off = rtde_outputs(host, ["tcp_offset"], timeout_s).get("tcp_offset")
        values["tcp_offset"] = None if off is None else tuple(float(v) for v in off)
    except (RuntimeError, OSError) as e:
        values["rtde_error"] = f"RTDE state not readable ({e.__class__.__name__}: {e})"
    return RobotReport(host, **values)


# ------------------------------------------------------------------ checks (pure)
def _reach(r: RobotReport) -> list[Check]:
    if r.rtde_error is not None and r.simulated:
        return [failed(G, "controller", f"simulated arm: {r.rtde_error}", r.notes.get("fix", "see the error"))]
    if r.rtde_error is not None:
        fix = r.notes.get("fix", "power on the controller, check the robot IP and that RTDE is enabled")
        return [failed(G, "rtde", f"{r.host}:30004 {r.rtde_error}", fix)]
    out = [passed(G, "rtde", f"{r.host}:30004 answers")]
    if r.dashboard_error is not None:
        out.append(failed(G, "dashboard", r.dashboard_error,
                          "enable the dashboard server (Settings > Security > Services on e-Series)"))
    else:
        out.append(passed(G, "dashboard", f"{r.host}:29999 answers"))
    return out


def _series(r: RobotReport, model: str) -> Check:
    series, major, lowest = SERIES_OF_MODEL[model]
    v = _version(r.polyscope)
    got = f"PolyScope {r.polyscope or '?'} ({r.model_name or 'model ?'})"
    if not v:
        return warned(G, "controller", f"{got}: version not read", "check the dashboard server answers")
    if v[0] != major:
        other = next((m for m, s in SERIES_OF_MODEL.items() if s[1] == v[0]), None)
        fix = f"pass --robot-model {other}" if other else f"use a {series} controller"
        return failed(G, "controller", f"{got}: not {series} as --robot-model {model} needs", fix)
    if v[:2] < lowest:
        return failed(G, "controller", f"{got}: below {'.'.join(map(str, lowest))} (no RTDE protocol 2)",
                      "update the controller software")
    return passed(G, "controller", f"{got}, {series} as --robot-model {model}")


def _mode_safety(r: RobotReport) -> list[Check]:
    out = []
    mode = ROBOT_MODES.get(r.robot_mode, str(r.robot_mode))
    if r.robot_mode == 7:
        out.append(passed(G, "mode", f"robot mode {mode}"))
    else:
        out.append(failed(G, "mode", f"robot mode {mode} ({r.robot_mode})",
                          "power on the arm and release the brakes on the pendant (or dashboard: power on, "
                          "brake release)"))
    s = SAFETY_MODES.get(r.safety_mode, str(r.safety_mode))
    fixes = {2: "the arm is in reduced mode (slower): leave the reduced zone or clear the reduced-mode input",
             3: "release the protective stop on the pendant (or dashboard: unlock protective stop) after "
                "checking why it stopped"}
    if r.safety_mode == 1:
        out.append(passed(G, "safety", f"safety {s}"))
    elif r.safety_mode in (6, 7):
        out.append(failed(G, "safety", f"safety {s} (emergency stop)",
                          "release the emergency stop button, then power on and unlock on the pendant"))
    else:
        out.append(failed(G, "safety", f"safety {s} ({r.safety_mode})",
                          fixes.get(r.safety_mode, "clear the safety condition on the pendant")))
    if r.remote is None:
        out.append(passed(G, "remote", "no local/remote mode on this controller (PolyScope < 5.6)"))
    elif r.remote:
        out.append(passed(G, "remote", "remote control"))
    else:
        out.append(failed(G, "remote", "local mode: the controller refuses remote programs",
                          "switch the pendant to Remote Control (top right of PolyScope)"))
    return out


def _tool(r: RobotReport, expect_rate: float) -> list[Check]:
    out = []
    if r.rate_hz is not None:
        v = f"{r.rate_hz:.0f} Hz measured (expected {expect_rate:.0f} Hz)"
        out.append(passed(G, "rtde rate", v) if r.rate_hz >= 0.8 * expect_rate else
                   warned(G, "rtde rate", v, "free this PC's CPU and use a direct cable to the controller"))
    if r.tcp_offset is not None:
        mm = float(np.linalg.norm(r.tcp_offset[:3])) * 1e3
        v = f"TCP offset {mm:.1f} mm from tool0"
        out.append(passed(G, "tcp offset", v) if mm < 0.5 else
                   warned(G, "tcp offset", v, "set the pendant's TCP to zero: the hand-eye is relative to tool0 "
                                              "(the session zeroes it, pendant-driven runs do not)"))
    if r.payload_kg is not None:
        lo, hi = PAYLOAD_RANGE_KG
        v = f"payload {r.payload_kg:.3f} kg"
        out.append(passed(G, "payload", v) if lo <= r.payload_kg <= hi else
                   warned(G, "payload", f"{v}, outside {lo}..{hi} kg for the camera and its mount",
                          "set the payload (mass and centre of gravity of the camera mount) on the pendant"))
    return out


def _limits(r: RobotReport, model: str, T_world_base: SE3, limits: SafetyLimits) -> list[Check]:
    out = []
    q = np.asarray(r.q, float)
    worst = float(np.max(np.abs(q)))
    v = f"largest joint {math.degrees(worst):.0f} deg (limit 360)"
    out.append(passed(G, "joints", v) if worst < 2 * math.pi - JOINT_MARGIN_RAD else
               failed(G, "joints", v, "unwind the joint near its limit with the pendant (freedrive or jog)"))
    # the reported TCP against the configured model's forward kinematics (x the TCP offset): a wrong
    # --robot-model (UR5 vs UR5e DH parameters) or an unexpected offset shows here in mm
    fk = forward(q, model)
    if r.tcp_offset is not None and len(r.tcp_offset) == 6:
        fk = fk @ ur_pose_to_se3(list(r.tcp_offset)).matrix
    mm = float(np.linalg.norm(fk[:3, 3] - r.T_base_tool0.t)) * 1e3
    v = f"reported TCP {mm:.1f} mm from {model.upper()} forward kinematics"
    out.append(passed(G, "kinematics", v) if mm < 1.0 else
               failed(G, "kinematics", v, "pass the --robot-model of this arm (its DH parameters) and check the "
                                          "controller's TCP offset"))
    p = T_world_base.apply(r.T_base_tool0.t)
    lo, hi = np.array(limits.workspace_min), np.array(limits.workspace_max)
    where = f"tool0 at {np.round(p, 3).tolist()} m (world)"
    inside = bool(np.all(p >= lo) and np.all(p <= hi))
    out.append(passed(G, "workspace", f"{where} inside the box") if inside else
               failed(G, "workspace", f"{where} outside {list(lo)}..{list(hi)}",
                      "jog the tool into the workspace box before the session (its first move is refused)"))
    return out


def robot_checks(r: RobotReport, model: str, T_world_base: SE3 | None,
                 limits: SafetyLimits | None = None) -> list[Check]:
    """Every robot check from one report: reachability, series and version against
    ``model``, robot mode, safety, remote control, rate, TCP offset, payload, joints and
    the workspace box (``T_world_base``: the calibration's registration)."""
    if r.simulated and r.rtde_error is None:
        out = [passed(G, "controller", f"simulated {model.upper()} ({r.host})")]
    else:
        out = _reach(r)
        if r.rtde_error is not None:
            return out
        out.append(_series(r, model))
    if r.robot_mode is not None:
        out += _mode_safety(r)
    out += _tool(r, 500.0 if model == "ur5e" else 125.0)
    if r.q is not None and r.tcp_pose is not None and T_world_base is not None:
        out += _limits(r, model, T_world_base, limits or SafetyLimits())
    return out
