"""``gaze4hri-acq calibrate registration|eye-head|targets``: the calibration runs of
calib_runs.py driven with the device drivers (real, or the simulated lab), writing
validated calibration YAML into ``--out`` (default: the calibration directory).

With ``--backend sim`` the output directory must be given: a simulated run never
overwrites the lab's calibration."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gaze4hri_core.calibration import CALIBRATION_FILES
from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["run_calibration", "eye_head_for_session", "EyeHeadResult"]


def _prepare_out(src: Path, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for name in CALIBRATION_FILES:
        if (src / name).is_file() and not (out / name).is_file():
            shutil.copy2(src / name, out / name)
    return out


def run_calibration(ns) -> Path:
    """One calibration run as ``gaze4hri-acq calibrate`` asks (``ns``: its options);
    returns the directory the result was written into, validated."""
    from gaze4hri_core.device_config import DEFAULT_CALIBRATION

    from .calib_runs import validate_directory

    src = Path(ns.calibration_dir or DEFAULT_CALIBRATION)
    if not src.is_dir():
        raise Gaze4HRIError("calibration directory not found", str(src), "pass --calibration DIR")
    if ns.backend == "sim" and ns.out is None:
        raise Gaze4HRIError("a simulated calibration run needs --out", None,
                            "pass --out DIR (the lab's calibration is never overwritten by the simulator)")
    out = _prepare_out(src, Path(ns.out)) if ns.out is not None else src
    if ns.procedure == "eye-head" and not ns.subject:
        raise Gaze4HRIError("eye-head calibration needs --subject", None, "pass --subject S12")
    world = _sim_world(ns, src) if ns.backend == "sim" else None
    mocap, robot_cfg, monitor = _mocap(ns, src, world)
    mocap.connect()
    try:
        if ns.procedure == "registration":
            _registration(ns.backend, robot_cfg, monitor, mocap, world, src, out)
        elif ns.procedure == "eye-head":
            print(_eye_head(mocap, world, out, ns.subject, (lambda msg: True) if world is not None else _ask).message)
        else:
            _target_survey(mocap, world, out)
    finally:
        mocap.close()
    validate_directory(out, ns.subject if ns.procedure == "eye-head" else None)
    return out


class _HostClock:
    """The lab's clock for a calibration run (the simulated lab has its world's)."""

    @staticmethod
    def sleep(s: float) -> None:
        import time

        time.sleep(s)

    @staticmethod
    def now_ns() -> int:
        import time

        return time.time_ns()


def _sim_world(ns, src: Path):
    from gaze4hri_core.device_config import SimConfig, validate

    from .drivers.registry import make_world

    # 5x real time: the safety feed builds every motion-capture frame (100 Hz) in Python, ~900
    # a wall second on an idle 2-core machine; at 20x it fell ever further behind the clock, and
    # the registration's samples, taken after each move, aged out of its wait ("does not see");
    # on a loaded machine the reader also skips what is older than 0.5 s (_mocap)
    sim = {"real_time_factor": 5.0, "seed": int(ns.seed), "calibration_dir": src}
    if ns.procedure == "eye-head" and ns.subject:
        sim["subject"] = ns.subject  # calibrate the simulated subject's own offset
    return make_world(validate(SimConfig, sim, "simulation"))


def _mocap(ns, src: Path, world):
    """The run's motion capture; for a registration (the robot moves) also the robot's
    configuration and its one safety monitor, fed with the head band by the motion
    capture the run reads anyway (the subject's eye midpoint when --subject has a file)."""
    from gaze4hri_core.device_config import MocapConfig, RobotConfig, validate

    from .drivers.registry import make_mocap, robot_monitor
    from .drivers.safety_feed import MonitoredMocap

    mcfg = validate(MocapConfig, {"server_ip": ns.motive_ip}, "mocap")
    # the simulated lab's clock runs free here (no pacer): its reader keeps to the last 0.5 s, as a live stream's
    mocap = (make_mocap(ns.backend, mcfg, world=world, max_lag_s=0.5) if world is not None
             else make_mocap(ns.backend, mcfg))
    if ns.procedure != "registration":
        return mocap, None, None
    robot_cfg = validate(RobotConfig, {"host": ns.robot_ip, "calibration_dir": src, "subject": ns.subject}, "robot")
    monitor = robot_monitor(robot_cfg)
    return MonitoredMocap(mocap, monitor), robot_cfg, monitor


def _registration(backend: str, robot_cfg, monitor, mocap, world, src: Path, out: Path) -> None:
    """The world-base registration: the robot's marker at points around the front camera pose."""
    from gaze4hri_core.calibration import load_calibration
    from gaze4hri_core.trajectories import camera_on_arc, tool0_for_camera

    from .calib_runs import REGISTRATION_EXTENT_M, RegistrationRun, run_registration
    from .drivers.registry import make_robot

    robot = make_robot(backend, robot_cfg, world=world, safety=monitor)
    robot.connect()
    if world is not None:
        world.enable_robot_marker(True)
    try:
        cal = load_calibration(src)
        # the front camera pose moved back by the box's half-diagonal: no point of the box comes
        # nearer the subject's eyes than the front pose does (the distance rule holds even before
        # the eye-head offset, when the eyes may be anywhere near the head band)
        back = float(np.linalg.norm(REGISTRATION_EXTENT_M))
        cam = camera_on_arc(cal.eye_nominal_world, cal.subject_forward_world, cal.front_camera_distance_m + back,
                            0.0, cal.front_camera_elevation_deg)
        centre = tool0_for_camera(cal, cam)
        run = RegistrationRun(out, robot_model=cal.robot_model)
        rep = run_registration(robot, mocap, run, centre, world.clock if world is not None else _HostClock())
        print(f"registration: RMS {rep.rms_m * 1e3:.2f} mm over {rep.n_points} points")
    finally:
        robot.close()


def _target_survey(mocap, world, out: Path) -> None:
    """The targets' survey: the probe tip on each target (the operator's Enter, or the simulated probe)."""
    from .calib_runs import TargetSurveyRun, run_target_survey

    def place(name: str) -> None:
        if world is not None:
            world.place_probe(name)
        else:
            input(f"hold the probe tip on {name}, press Enter ")

    rep = run_target_survey(mocap, TargetSurveyRun(out), place)
    print(f"target survey: {len(rep.targets)} targets")


@dataclass(frozen=True)
class EyeHeadResult:
    path: Path  # the subject's eye-head file written
    message: str  # the run's one-line report (residuals; in simulation also the error against the truth)
    truth_error_m: float | None = None  # simulation: |recovered - true| of the eye midpoint in the band frame


def _eye_head(mocap, world, out: Path, subject: str, prompt) -> EyeHeadResult:
    """One eye-head run; in simulation the tool goes on the simulated head and the result
    is checked against the simulated subject's true offset (within the run's residual limit)."""
    from .calib_runs import EyeHeadRun, run_eye_head

    if world is not None:
        world.place_tool_on_head(True)
    run = EyeHeadRun(out, subject)
    d = run_eye_head(mocap, run, prompt=prompt)
    if not d.ok:
        raise Gaze4HRIError(f"eye-head calibration not accepted: {d.message}", str(out), "retry the calibration")
    if world is None:
        return EyeHeadResult(out / "subjects" / f"{subject}.yaml", d.message)
    world.place_tool_on_head(False)
    err = float(np.linalg.norm(d.report.T_head_eye.t - world.T_head_eye.t))
    # the recovered midpoint must lie within the run's own position limit of the truth
    if err > run.max_position_rms_m:
        raise Gaze4HRIError(f"simulated eye-head calibration is {err * 1e3:.2f} mm from the simulated subject's truth "
                            f"(limit {run.max_position_rms_m * 1e3:.1f} mm)", str(out),
                            "report this as a simulator bug")
    return EyeHeadResult(out / "subjects" / f"{subject}.yaml",
                         f"{d.message}; {err * 1e3:.2f} mm from the simulated truth", err)


def eye_head_for_session(backend: str, subject: str, src: Path, out: Path, *, seed: int = 0,
                         motive_ip: str = "127.0.0.1", local_ip: str = "127.0.0.1", prompt=None) -> EyeHeadResult:
    """The eye-head calibration a session starts with (Sezer et al. Sec. III-B: once per
    subject before the experiments): the motion-capture driver of ``backend`` (real:
    NatNet; sim: the simulated lab with subject ``subject``), the subject's file written
    to ``out``/subjects/. Runs before the session's devices are brought up."""
    from gaze4hri_core.device_config import MocapConfig, SimConfig, validate

    from .drivers.registry import make_mocap, make_world

    if not (out / "camera_info.yaml").is_file():
        _prepare_out(src, out)
    world = None
    if backend == "sim":
        sim = {"real_time_factor": 50.0, "seed": int(seed), "calibration_dir": src, "subject": subject}
        world = make_world(validate(SimConfig, sim, "simulation"))
        mocap = make_mocap("sim", MocapConfig(), world=world)
    else:
        mocap = make_mocap(backend, validate(MocapConfig, {"server_ip": motive_ip, "local_ip": local_ip}, "mocap"))
    mocap.connect()
    try:
        return _eye_head(mocap, world, out, subject, prompt or ((lambda msg: True) if world is not None else _ask))
    finally:
        mocap.close()
        if world is not None:
            world.close()


def _ask(message: str) -> bool:
    try:
        return input(f"{message}. Retry? [Y/n] ").strip().lower() in ("", "y", "yes")
    except EOFError:
        return False
