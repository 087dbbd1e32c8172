"""``gaze4hri-acq calibrate registration|eye-head|targets``: the calibration runs of
calib_runs.py driven with the device drivers (real, or the simulated lab), writing
validated calibration YAML into ``--out`` (default: the calibration directory).

With ``--backend sim`` the output directory must be given: a simulated run never
overwrites the lab's calibration."""
from __future__ import annotations

import shutil
from pathlib import Path

from gaze4hri_core.calibration import CALIBRATION_FILES
from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["run_calibration"]


def _prepare_out(src: Path, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for name in CALIBRATION_FILES:
        if (src / name).is_file() and not (out / name).is_file():
            shutil.copy2(src / name, out / name)
    return out


def run_calibration(ns) -> Path:
    from gaze4hri_core.device_config import DEFAULT_CALIBRATION, MocapConfig, RobotConfig, SimConfig, validate

    from .calib_runs import (
        EyeHeadRun,
        RegistrationRun,
        TargetSurveyRun,
        run_eye_head,
        run_registration,
        run_target_survey,
        validate_directory,
    )
    from .drivers.registry import make_mocap, make_robot, make_world

    src = Path(ns.calibration_dir or DEFAULT_CALIBRATION)
    if not src.is_dir():
        raise Gaze4HRIError("calibration directory not found", str(src), "pass --calibration DIR")
    if ns.backend == "sim" and ns.out is None:
        raise Gaze4HRIError("a simulated calibration run needs --out", None, "pass --out DIR (the lab's calibration is never overwritten by the simulator)")
    out = _prepare_out(src, Path(ns.out)) if ns.out is not None else src
    if ns.procedure == "eye-head" and not ns.subject:
        raise Gaze4HRIError("eye-head calibration needs --subject", None, "pass --subject S12")

    world = None
    if ns.backend == "sim":
        world = make_world(validate(SimConfig, {"real_time_factor": 20.0, "seed": int(ns.seed), "calibration_dir": src}, "simulation"))
        clock = world.clock
    else:
        import time

        class _Host:
            @staticmethod
            def sleep(s: float) -> None:
                time.sleep(s)

            @staticmethod
            def now_ns() -> int:
                return time.time_ns()

        clock = _Host()
    mocap = make_mocap(ns.backend, validate(MocapConfig, {"server_ip": ns.motive_ip}, "mocap"), world=world) if ns.backend == "sim" \
        else make_mocap(ns.backend, validate(MocapConfig, {"server_ip": ns.motive_ip}, "mocap"))
    mocap.connect()
    try:
        if ns.procedure == "registration":
            robot_cfg = validate(RobotConfig, {"host": ns.robot_ip, "calibration_dir": src}, "robot")
            robot = make_robot(ns.backend, robot_cfg, world=world) if world is not None else make_robot(ns.backend, robot_cfg)
            robot.connect()
            if world is not None:
                world.enable_robot_marker(True)
            try:
                from gaze4hri_core.calibration import load_calibration
                from gaze4hri_core.trajectories import front_camera_pose, tool0_for_camera

                cal = load_calibration(src)
                centre = tool0_for_camera(cal, front_camera_pose(cal))
                run = RegistrationRun(out, robot_model=cal.robot_model)
                rep = run_registration(robot, mocap, run, centre, clock)
                print(f"registration: RMS {rep.rms_m * 1e3:.2f} mm over {rep.n_points} points")
            finally:
                robot.close()
        elif ns.procedure == "eye-head":
            if world is not None:
                world.place_tool_on_head(True)
            run = EyeHeadRun(out, ns.subject)
            d = run_eye_head(mocap, run, prompt=(lambda msg: True) if world is not None else _ask)
            print(d.message)
            if not d.ok:
                raise Gaze4HRIError(f"eye-head calibration not accepted: {d.message}", str(out), "retry the calibration")
        else:
            run = TargetSurveyRun(out)

            def place(name: str) -> None:
                if world is not None:
                    world.place_probe(name)
                else:
                    input(f"hold the probe tip on {name}, press Enter ")

            rep = run_target_survey(mocap, run, place)
            print(f"target survey: {len(rep.targets)} targets")
    finally:
        mocap.close()
    validate_directory(out, ns.subject if ns.procedure == "eye-head" else None)
    return out


def _ask(message: str) -> bool:
    try:
        return input(f"{message}. Retry? [Y/n] ").strip().lower() in ("", "y", "yes")
    except EOFError:
        return False
