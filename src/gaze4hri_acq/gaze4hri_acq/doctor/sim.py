"""The sim backend's reports: the simulated lab's own devices (gaze4hri_sim: the arm, the
face-rendering camera, the motion capture of the simulated subject) asked the questions
the doctor asks the lab's, on a manual clock so that the checks cost a fraction of a
second (the session runs them at every start)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gaze4hri_core.device_config import CameraConfig, CameraSettings, RobotConfig, SimConfig
from gaze4hri_core.devices import DeviceError
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.transforms import se3_to_ur_pose

from .camera import CameraReport
from .mocap import MocapReport, summarise
from .robot import RobotReport

__all__ = ["sim_reports"]


def _robot(world, model: str, cal_dir: Path) -> RobotReport:
    from ..drivers.registry import make_robot, robot_monitor

    cfg = RobotConfig(model=model, calibration_dir=cal_dir, subject=None)
    try:
        robot = make_robot("sim", cfg, world=world, safety=robot_monitor(cfg))
        robot.connect()
    except DeviceError as e:
        return RobotReport("sim", simulated=True, rtde_error=e.what, notes={"fix": e.fix})
    st = robot.state()
    return RobotReport("sim", simulated=True, robot_mode=7, safety_mode=3 if st.protective_stop else 1, remote=True,
                       rate_hz=float(robot.rate_hz), tcp_offset=(0.0,) * 6, q=tuple(float(v) for v in st.q),
                       tcp_pose=tuple(float(v) for v in se3_to_ur_pose(st.T_base_tool0)))


def _camera(world, width: int, height: int, fps: int, settings: CameraSettings, cal_dir: Path,
            seconds: float) -> CameraReport:
    from ..drivers.registry import make_camera

    cam = make_camera("sim", CameraConfig(width=width, height=height, fps=fps, color=settings,
                                          calibration_dir=cal_dir), world=world)
    cam.start()
    frames = []
    for _ in range(max(2, int(round(seconds * fps)))):
        world.clock.advance(1.0 / fps)  # frames lie on the clock's grid: one per period
        f = cam.read(0.0)
        if f is not None:
            frames.append(f)
    cam.stop()
    h, w = frames[-1].image.shape[:2] if frames else (None, None)
    span = (frames[-1].stamp_ns - frames[0].stamp_ns) / 1e9 if len(frames) > 1 else 0.0
    return CameraReport("simulated D435i", simulated=True, settings=cam.read_settings(), width=w, height=h,
                        frames=len(frames), seconds=span, dropped=cam.dropped_frames,
                        domains=tuple(sorted({f.timestamp_domain for f in frames})))


def _mocap(world, seconds: float) -> MocapReport:
    k0 = world.mocap_index(world.clock.now_ns())
    n = max(2, int(round(seconds * world.mocap_rate_hz)))
    frames = [world.mocap_frame(k0 + i) for i in range(n)]
    bodies = tuple(sorted({name for f in frames for name in f.bodies}))
    return replace(summarise("sim", frames, bodies), simulated=True)


def sim_reports(cfg, cal_dir: Path, seconds: float = 0.3) -> tuple[RobotReport, CameraReport, MocapReport]:
    """The three reports from one simulated lab built as the session builds it (seed,
    subject, calibration, robot model); ``seconds`` of camera and motion-capture stream."""
    from gaze4hri_sim.clock import SimClock

    from ..drivers.registry import make_world

    sc = SimConfig(seed=cfg.seed, calibration_dir=cal_dir, robot_model=cfg.robot_model)
    try:
        world = make_world(sc, clock=SimClock(manual=True))
    except (Gaze4HRIError, ValueError) as e:  # the lab is built from the calibration: its error, once per device
        what = e.line() if isinstance(e, Gaze4HRIError) else str(e)
        fix = "fix the calibration (the calibration checks below name the file)"
        return (RobotReport("sim", simulated=True, rtde_error=f"not built ({what})", notes={"fix": fix}),
                CameraReport("simulated D435i", simulated=True, error="not built (the simulated lab)", fix=fix),
                MocapReport("sim", simulated=True, error="not built (the simulated lab)", fix=fix))
    try:
        w, h = cfg.resolution
        robot = _robot(world, cfg.robot_model, cal_dir)
        camera = _camera(world, int(w), int(h), int(cfg.fps), CameraConfig().color, cal_dir, seconds)
        mocap = _mocap(world, seconds)
    finally:
        world.close()
    return robot, camera, mocap

