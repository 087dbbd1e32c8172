"""``gaze4hri-acq doctor`` and the session's start-up checks: one SessionConfig in (the
session's backend, addresses, calibration, resolution), one list of checks out, so the
doctor and the session cannot disagree."""
from __future__ import annotations

import datetime as _dt
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from gaze4hri_core.device_config import MocapConfig, SimConfig
from gaze4hri_core.errors import Gaze4HRIError, SessionError

from .calibration import CalibrationLimits, file_checks, live_checks
from .camera import camera_checks, gather_camera
from .host_machine import disk_need, host_checks, host_facts
from .mocap import expected_bodies, gather_mocap, mocap_checks
from .record import Check, failures
from .render import render_table
from .robot import gather_robot, robot_checks

__all__ = ["DoctorTargets", "run_doctor", "startup_checks", "mocap_config"]


@dataclass(frozen=True)
class DoctorTargets:
    """Where and how long the doctor looks beyond the session's own settings: a RealSense
    recording instead of the live camera, a motion-capture config (ports, body names)
    instead of the session's, the sampling windows (s), the time the ages are measured at."""

    camera_playback: Path | None = None
    mocap: MocapConfig | None = None
    camera_s: float = 2.0
    mocap_s: float = 1.0
    robot_s: float = 0.5
    sim_s: float = 0.3
    now: _dt.datetime | None = None


def mocap_config(cfg) -> MocapConfig:
    """The MocapConfig the session's mocap node builds: config/mocap.yaml's multicast and
    rate under the session's addresses."""
    params = {}
    try:
        from ..runner import node_parameters

        params = node_parameters("mocap")
    except ImportError:  # no rclpy: the driver's defaults
        pass
    return MocapConfig(server_ip=cfg.motive_ip, local_ip=cfg.local_ip,
                       use_multicast=bool(params.get("multicast", False)), rate_hz=float(params.get("rate_hz", 100.0)))


def _calibration(cfg, subject: bool):
    from gaze4hri_core.calibration import load_calibration
    from gaze4hri_core.device_config import DEFAULT_CALIBRATION

    cal_dir = Path(cfg.calibration_dir or DEFAULT_CALIBRATION)
    has = subject and (cal_dir / "subjects" / f"{cfg.subject}.yaml").is_file()
    try:
        return cal_dir, load_calibration(cal_dir, cfg.subject if has else None), None
    except Gaze4HRIError as e:
        return cal_dir, None, e.line()


def _gather(cfg, t: DoctorTargets, cal_dir: Path, mcfg: MocapConfig):
    if cfg.backend == "sim":
        from .sim import sim_reports

        return sim_reports(cfg, cal_dir, t.sim_s)
    w, h = cfg.resolution
    with ThreadPoolExecutor(3) as pool:  # the three devices at once: about the longest window
        robot = pool.submit(gather_robot, cfg.robot_ip, cfg.robot_model, 2.0, t.robot_s)
        camera = pool.submit(gather_camera, int(w), int(h), int(cfg.fps), cfg.camera_serial, None,
                             t.camera_playback, t.camera_s)
        mocap = pool.submit(gather_mocap, mcfg, t.mocap_s)
        return robot.result(), camera.result(), mocap.result()


def run_doctor(cfg, targets: DoctorTargets | None = None, subject: bool = False) -> list[Check]:
    """Every check for the session ``cfg`` would record (``subject``: the subject's own
    calibration too), in the table's order: robot, camera, mocap, calibration, host."""
    t = targets or DoctorTargets()
    now = t.now or _dt.datetime.now(_dt.timezone.utc)
    cal_dir, calib, cal_error = _calibration(cfg, subject)
    mcfg = t.mocap or (mocap_config(cfg) if cfg.backend == "real" else MocapConfig())
    robot, camera, mocap = _gather(cfg, t, cal_dir, mcfg)
    real = cfg.backend == "real"
    w, h = cfg.resolution
    checks = robot_checks(robot, cfg.robot_model, calib.T_world_base if calib else None)
    checks += camera_checks(camera, int(w), int(h), int(cfg.fps), serial=cfg.camera_serial)
    cam_level = "fail" if cfg.camera_pose_source == "mocap" else "warn" if calib and calib.T_cambody_camera else None
    eye_z = float(calib.eye_nominal_world[2] + calib.head_band_above_eye_m) if calib else None
    expected = expected_bodies(bool(calib and calib.T_world_table_survey is not None), cam_level)
    rate = mcfg.rate_hz if cfg.backend == "real" else SimConfig().mocap_rate_hz
    checks += mocap_checks(mocap, expected, rate, eye_z)
    limits = CalibrationLimits(cfg.calibration_max_age_days, cfg.eye_head_max_age_hours)
    checks += file_checks(cal_dir, calib, cal_error, limits, real, now, cfg.subject if subject else None)
    if calib is not None:
        checks += live_checks(calib, robot.T_base_tool0, mocap.poses, limits)
    need, n = disk_need(cfg)
    checks += host_checks(host_facts(Path(cfg.out_dir)), need, n, f"{w}x{h}@{cfg.fps}", cfg.compression, real,
                          robot.clock_rtt_ms, robot.clock_drift_ms, mocap.latency_ms,
                          new_session=not (cfg.resume or cfg.redo))
    return checks


def startup_checks(cfg, out=print, targets: DoctorTargets | None = None) -> list[Check]:
    """The session's start-up: the doctor's checks; on a fail the table is printed (``out``)
    and the session refused in one line naming each failing check."""
    checks = run_doctor(cfg, targets, subject=True)  # the session always has its subject: doctor --subject
    bad = failures(checks)
    if bad:
        out(render_table(checks))
        raise SessionError(f"start-up checks failed ({len(bad)}): " + "; ".join(f"{c.group} {c.name}: {c.value}"
                                                                                for c in bad),
                           f"{cfg.backend} backend",
                           "fix what the table above says (gaze4hri-acq doctor runs the same checks), or pass "
                           "--skip-checks for a rehearsal")
    return checks
