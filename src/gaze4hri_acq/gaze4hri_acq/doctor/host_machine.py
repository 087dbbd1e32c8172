"""Host checks: free disk for the requested trials (the session's own estimate), the
clock mappings to the robot and the motion capture, load, the ROS domain and discovery
settings, the Python and ROS versions. The environment and the disk are read by
:func:`host_facts`; :func:`host_checks` judges them."""
from __future__ import annotations

import os
import platform
import shutil
from dataclasses import dataclass
from pathlib import Path

from .record import Check, failed, passed, warned

__all__ = ["HostFacts", "host_facts", "host_checks", "disk_need"]

G = "host"
ROBOT_CLOCK_MS = (1.0, 5.0)  # the robot clock mapping's uncertainty (half the round trip): pass / warn bands


@dataclass(frozen=True)
class HostFacts:
    free_bytes: int
    disk_path: str
    load1: float
    cpus: int
    env: dict[str, str]
    python: str
    rclpy: str | None  # the rclpy in use (ROS_DISTRO, else the installed distribution's version)


def disk_need(cfg) -> tuple[int, int]:
    """(bytes, trials) a session of ``cfg`` needs: the orchestrator's estimate, margin included
    (raw frames; the MCAP compression is lossless and not counted on)."""
    from gaze4hri_core.protocol import select

    from ..orchestrator.disk import estimate_session_bytes

    trials = list(select(experiments=cfg.experiments, trial_ids=cfg.trial_ids))
    return estimate_session_bytes(trials, cfg.resolution, cfg.fps, cfg.trial_seconds, cfg.disk_margin), len(trials)


def host_facts(out_dir: Path) -> HostFacts:
    p = Path(out_dir).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    keys = ("ROS_DOMAIN_ID", "ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE", "ROS_STATIC_PEERS",
            "RMW_IMPLEMENTATION", "ROS_DISTRO")
    rclpy = os.environ.get("ROS_DISTRO")
    if not rclpy:
        import importlib.util
        from importlib import metadata

        if importlib.util.find_spec("rclpy") is not None:  # a wheel or a sourced ROS without ROS_DISTRO
            try:
                rclpy = f"rclpy {metadata.version('rclpy')}"
            except metadata.PackageNotFoundError:
                rclpy = "rclpy"
    return HostFacts(shutil.disk_usage(p).free, str(p), os.getloadavg()[0], os.cpu_count() or 1,
                     {k: os.environ[k] for k in keys if k in os.environ}, platform.python_version(), rclpy)


def _ros(f: HostFacts, real: bool) -> list[Check]:
    out = []
    dom = f.env.get("ROS_DOMAIN_ID")
    if dom is not None and not (dom.isdigit() and int(dom) <= 232):
        out.append(failed(G, "ros domain", f"ROS_DOMAIN_ID={dom!r}", "set ROS_DOMAIN_ID to 0..232 (101 and below "
                                                                     "on Linux avoid port clashes)"))
    elif dom is None and real:
        out.append(warned(G, "ros domain", "ROS_DOMAIN_ID unset (0): other ROS machines on the network join",
                          "export ROS_DOMAIN_ID=<a number of the lab's own> before the session"))
    else:
        out.append(passed(G, "ros domain", f"ROS_DOMAIN_ID={dom or '0 (unset)'}"))
    disc = ", ".join(f"{k}={f.env[k]}" for k in ("ROS_LOCALHOST_ONLY", "ROS_AUTOMATIC_DISCOVERY_RANGE",
                                                   "ROS_STATIC_PEERS", "RMW_IMPLEMENTATION") if k in f.env)
    out.append(passed(G, "ros discovery", disc or "defaults (subnet discovery)"))
    v = f"Python {f.python}, ROS {f.rclpy or 'none'}"
    if f.rclpy is None:
        out.append(failed(G, "versions", v, "run 'make bootstrap' (ROS 2 rclpy wheels) or source /opt/ros/<distro>"))
    elif tuple(int(x) for x in f.python.split(".")[:2]) < (3, 10):
        out.append(failed(G, "versions", v, "use Python 3.10 or later"))
    else:
        out.append(passed(G, "versions", v))
    return out


def _clocks(robot_rtt_ms: float | None, robot_drift_ms: float | None, mocap_latency_ms: float | None) -> Check:
    parts = []
    if robot_rtt_ms is not None:
        parts.append(f"robot +-{robot_rtt_ms / 2:.2f} ms (drift {robot_drift_ms or 0.0:.2f} ms)")
    if mocap_latency_ms is not None:
        parts.append(f"mocap exposure {mocap_latency_ms:.1f} ms before arrival (subtracted)")
    v = "; ".join(parts) or "no device clock measured"
    unc = max(robot_rtt_ms / 2 if robot_rtt_ms is not None else 0.0, robot_drift_ms or 0.0)
    fix = "use a direct cable to the controller and free the CPU (the offset is estimated from round trips)"
    if unc <= ROBOT_CLOCK_MS[0]:
        return passed(G, "clocks", v)
    return warned(G, "clocks", v, fix) if unc <= ROBOT_CLOCK_MS[1] else failed(G, "clocks", v, fix)


def host_checks(f: HostFacts, need_bytes: int, trials: int, mode: str, compression: str, real: bool,
                robot_rtt_ms: float | None = None, robot_drift_ms: float | None = None,
                mocap_latency_ms: float | None = None, new_session: bool = True) -> list[Check]:
    """Disk for ``trials`` at ``mode`` (WxH@fps), clocks, load, ROS settings and versions. Too
    little disk fails a new session (the session refuses it: check_session_disk) and warns on a
    resume or redo (the session records until the trial that does not fit; the rest stay pending)."""
    from ..orchestrator.disk import gb

    v = f"{gb(need_bytes)} needed for {trials} trials at {mode} (compression {compression}), {gb(f.free_bytes)} free " \
        f"in {f.disk_path}"
    fix = "free disk space, pick --out-dir on a larger disk, or record fewer trials or a smaller --resolution"
    out = [passed(G, "disk", v) if f.free_bytes >= need_bytes else
           failed(G, "disk", v, fix) if new_session else
           warned(G, "disk", v, "the session stops before the first trial that does not fit: " + fix)]
    out.append(_clocks(robot_rtt_ms, robot_drift_ms, mocap_latency_ms))
    per = f.load1 / f.cpus
    v = f"load {f.load1:.1f} on {f.cpus} CPUs"
    out.append(passed(G, "load", v) if per < 1.0 else
               warned(G, "load", v, "stop other heavy programs: the recorder and the drivers need the CPU"))
    return out + _ros(f, real)
