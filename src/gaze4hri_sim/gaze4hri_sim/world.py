"""The simulated lab: one clock, one subject, one arm, shared by the simulated robot,
camera and motion-capture drivers so that the rendered face, the head-band stream and
the robot's pose agree, and the simulator's own truth (eye midpoint, gaze target,
gaze in the camera frame, blinks) can be checked against the benchmark's ground truth.

Usage (what the ROS nodes do with backend:=sim)::

    world = SimWorld(SimConfig(real_time_factor=8))
    robot = make_robot("sim", RobotConfig(), world=world)
    camera = make_camera("sim", CameraConfig(width=640, height=360), world=world)
    mocap = make_mocap("sim", MocapConfig(), world=world)
    world.set_trial(trial)            # the subject starts looking at the trial's target
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from gaze4hri_core.calibration import Calibration, load_calibration, load_eye_head
from gaze4hri_core.device_config import SimConfig
from gaze4hri_core.devices import MocapFrame, RigidBodySample
from gaze4hri_core.protocol import Trial
from gaze4hri_core.safety import compose, exp_so3, quat_of, se3_unchecked
from gaze4hri_core.transforms import SE3

from .clock import SimClock
from .subject import SubjectModel, simulated_eye_head

__all__ = ["SimWorld", "SimTruth", "BODY_IDS"]

BODY_IDS = {"head_band": 1, "calib_tool": 2, "probe": 3, "robot_marker": 4, "table": 5, "camera": 6}


@dataclass(frozen=True)
class SimTruth:
    """The simulator's truth at one stamp (world frame unless named)."""

    stamp_ns: int
    eye_world: np.ndarray
    target_world: np.ndarray | None
    gaze_world: np.ndarray | None  # unit, eye -> target
    gaze_camera: np.ndarray | None  # unit, OpenCV camera frame
    blink: bool
    head_yaw_deg: float
    head_pitch_deg: float
    T_world_camera: SE3
    T_world_head: SE3
    task: str = ""


@dataclass
class _Dropout:
    body: str
    t0_ns: int
    t1_ns: int


@dataclass
class _Props:
    tool_on_head: bool = False
    probe_target: np.ndarray | None = None
    robot_marker: bool = False
    T_eye_tool: SE3 = field(default_factory=SE3.identity)
    probe_tip_in_probe: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -0.15]))
    marker_in_tool0: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 0.03]))


class SimWorld:
    def __init__(self, config: SimConfig | None = None, clock: SimClock | None = None,
                 calibration: Calibration | None = None, true_registration: SE3 | None = None,
                 true_eye_head: SE3 | None = None):
        self.config = cfg = config or SimConfig()
        self.clock = clock or SimClock(cfg.real_time_factor)
        # the calibration the world is built from: the subject's eye-head file when the
        # directory has one (what the session uses), else the default subject's
        has_file = (Path(cfg.calibration_dir) / "subjects" / f"{cfg.subject}.yaml").is_file()
        self.calib = calibration or load_calibration(cfg.calibration_dir, cfg.subject if has_file else "default")
        if self.calib.T_head_eye is None:
            raise ValueError("SimWorld needs a calibration with a subject's eye-head offset")
        # The world's truth. Registration: the calibration's unless a test perturbs it.
        # Eye-head offset: the simulated subject's own (simulated_eye_head: the nominal
        # offset for "default", a subject-specific one otherwise), never silently the
        # default subject's; the session's eye-head calibration must recover it.
        self.T_world_base = true_registration or self.calib.T_world_base
        nominal = self.calib.T_head_eye
        default_file = Path(self.calib.directory) / "subjects" / "default.yaml"
        if default_file.is_file():
            nominal = load_eye_head(default_file)
        self.T_head_eye = true_eye_head or (simulated_eye_head(cfg.subject, nominal) if calibration is None
                                            else self.calib.T_head_eye)
        self.subject = SubjectModel(
            self.calib.eye_nominal_world, self.calib.subject_forward_world, self.T_head_eye,
            follow_yaw=cfg.head_follow_yaw, follow_pitch=cfg.head_follow_pitch, head_turn_s=cfg.head_turn_s,
            sway_m=cfg.head_sway_m, blink_rate_per_min=cfg.blink_rate_per_min, blink_duration_s=cfg.blink_duration_s,
            seed=cfg.seed, start_ns=self.clock.start_ns,
        )
        self.arm = None  # set by the simulated robot driver (sim.arm.SimArm)
        self.illumination = 100.0
        self.props = _Props()
        self._dropouts: list[_Dropout] = []
        self._lock = threading.RLock()
        self._fed_k: int | None = None
        self._noise_rng = np.random.default_rng((cfg.seed, 7))
        self._scales_key = self._scales = None  # the noise's standard deviations (_noise_scales)
        self._cambody_of = self._camera_cambody = None  # the camera body's hand-eye, inverted once
        self.mocap_rate_hz = cfg.mocap_rate_hz
        self.current_trial: Trial | None = None
        # the table: where it stood at the target survey (calibration table.yaml), and
        # nudges (stamp, new pose) after which it and its targets stand elsewhere
        self.T_world_table0 = self.calib.T_world_table_survey
        self._table_moves: list[tuple[int, SE3]] = []
        if cfg.table_nudge is not None and self.T_world_table0 is not None:
            at_s, dx, dy, dyaw = cfg.table_nudge
            self.nudge_table(dx, dy, dyaw, self.clock.start_ns + int(at_s * 1e9))

    def close(self) -> None:
        """Detach the arm (nothing else holds resources); the world can be dropped."""
        self.arm = None

    # ------------------------------------------------------------------ scenario
    def set_trial(self, trial: Trial | None, t_ns: int | None = None) -> None:
        """The subject starts the trial's task: look at its target (or the camera) with
        the head free or held at the required yaw; the light goes to its level."""
        t_ns = self.clock.now_ns() if t_ns is None else int(t_ns)
        # no world lock here: the subject may ask the arm for the camera's position, and
        # the arm holds its own lock while it feeds the monitor from the world (lock order:
        # arm, then world)
        self.current_trial = trial
        if trial is None:
            self.subject.set_task(t_ns, None, None, "rest")
            self.illumination = 100.0
            return
        self.illumination = float(trial.illumination)
        target = self.camera_centre if trial.target == "camera" else self._table_target(trial.target)
        self.subject.set_task(t_ns, target, trial.head_yaw_deg, trial.trial_id)

    # ------------------------------------------------------------------ table
    def nudge_table(self, dx: float, dy: float, dyaw_deg: float, at_ns: int | None = None) -> None:
        """Someone bumps the table at ``at_ns``: it slides (dx, dy) in the world and turns
        ``dyaw_deg`` about its pivot; the targets on it move with it."""
        if self.T_world_table0 is None:
            raise ValueError("the calibration has no table pose (table.yaml)")
        at = self.clock.now_ns() if at_ns is None else int(at_ns)
        T = self.T_world_table(at)
        c, s_ = np.cos(np.radians(dyaw_deg)), np.sin(np.radians(dyaw_deg))
        Rz = np.array([[c, -s_, 0.0], [s_, c, 0.0], [0.0, 0.0, 1.0]])
        new = se3_unchecked(T.R @ Rz, T.t + np.array([dx, dy, 0.0]))
        self._table_moves = sorted([*self._table_moves, (at, new)], key=lambda m: m[0])

    def T_world_table(self, t_ns: int) -> SE3 | None:
        """The table's true pose at ``t_ns`` (None without a table pose in the calibration)."""
        T = self.T_world_table0
        for at, pose in self._table_moves:
            if at <= t_ns:
                T = pose
        return T

    def target_world(self, name: str, t_ns: int) -> np.ndarray:
        """A table target's true position at ``t_ns`` (moves with the table)."""
        p = self.calib.targets[name]
        if self.T_world_table0 is None:
            return p
        return self.T_world_table(t_ns).apply(self.T_world_table0.inv().apply(p))

    def _table_target(self, name: str):
        if self.T_world_table0 is None or not self._table_moves:
            return self.calib.targets[name]
        return lambda t: self.target_world(name, t)

    def set_gaze_target(self, target, head_yaw_deg: float | None = None, t_ns: int | None = None,
                        label: str = "") -> None:
        """Look at a named target, a world point, 'camera', or None (straight ahead)."""
        t_ns = self.clock.now_ns() if t_ns is None else int(t_ns)
        if isinstance(target, str):
            target = self.camera_centre if target == "camera" else self._table_target(target)
        self.subject.set_task(t_ns, target, head_yaw_deg, label)

    def set_illumination(self, level: float) -> None:
        self.illumination = float(level)

    def inject_dropout(self, body: str, duration_s: float, start_ns: int | None = None) -> None:
        """Motion capture loses ``body`` for ``duration_s`` from ``start_ns`` (default now)."""
        t0 = self.clock.now_ns() if start_ns is None else int(start_ns)
        with self._lock:
            self._dropouts.append(_Dropout(body, t0, t0 + int(duration_s * 1e9)))

    def place_tool_on_head(self, on: bool = True, T_eye_tool: SE3 | None = None) -> None:
        """Eye-head calibration: the trackable tool held above the eye midpoint."""
        self.props.tool_on_head = on
        if T_eye_tool is not None:
            self.props.T_eye_tool = T_eye_tool

    def place_probe(self, target) -> None:
        """Target survey: the probe's tip on a named target or world point (None: put away)."""
        if target is None:
            self.props.probe_target = None
        else:
            self.props.probe_target = np.asarray(self.calib.targets[target] if isinstance(target, str) else target,
                                                 float)

    def enable_robot_marker(self, on: bool = True, marker_in_tool0=None) -> None:
        """Registration: a tracked marker on the robot's flange."""
        self.props.robot_marker = on
        if marker_in_tool0 is not None:
            self.props.marker_in_tool0 = np.asarray(marker_in_tool0, float)

    # ------------------------------------------------------------------ geometry
    def T_base_tool0(self, t_ns: int) -> SE3:
        if self.arm is None:
            from gaze4hri_core.trajectories import front_camera_pose, tool0_for_camera

            return tool0_for_camera(self.calib, front_camera_pose(self.calib))
        return self.arm.T_base_tool0(t_ns)

    def T_world_camera(self, t_ns: int) -> SE3:
        """Camera optical frame: true registration x FK x hand-eye."""
        return compose(self.T_world_base, self.T_base_tool0(t_ns), self.calib.T_tool0_camera)

    def camera_centre(self, t_ns: int) -> np.ndarray:
        return self.T_world_camera(t_ns).t

    def truth(self, t_ns: int) -> SimTruth:
        cam = self.T_world_camera(t_ns)
        Te = self.subject.T_world_eye(t_ns)
        tgt = self.subject.target_at(t_ns)
        g = None if tgt is None else (tgt - Te.t) / np.linalg.norm(tgt - Te.t)
        yaw, pitch = self.subject.head_angles(t_ns)
        task = self.subject.task_at(t_ns).label
        return SimTruth(int(t_ns), Te.t.copy(), tgt, g, None if g is None else cam.R.T @ g,
                        self.subject.blink(t_ns), float(np.degrees(yaw)), float(np.degrees(pitch)), cam,
                        compose(Te, self.subject.T_eye_head), task)

    # ------------------------------------------------------------------ motion capture
    def mocap_index(self, t_ns: int) -> int:
        """Index of the last motion-capture frame at or before ``t_ns``."""
        return int((t_ns - self.clock.start_ns) * self.mocap_rate_hz // 1_000_000_000)

    def mocap_time(self, k: int) -> int:
        return self.clock.start_ns + int(round(k * 1e9 / self.mocap_rate_hz))

    def _dropped(self, body: str, t_ns: int) -> bool:
        return any(d.body == body and d.t0_ns <= t_ns < d.t1_ns for d in self._dropouts)

    def _noise_scales(self) -> np.ndarray:
        """Standard deviations of one body's draws: position (m, 3), rotation (rad, 3) and
        marker error (m): one call of the generator gives the numbers three calls gave."""
        cfg = self.config
        key = (cfg.marker_noise_m, cfg.marker_noise_deg)
        if self._scales_key != key:
            self._scales_key = key
            self._scales = np.array([cfg.marker_noise_m] * 3 + [np.radians(cfg.marker_noise_deg)] * 3 + [0.0002])
        return self._scales

    def mocap_frame(self, k: int) -> MocapFrame:
        """Frame ``k`` of the simulated motion capture (poses exact in k; noise drawn fresh)."""
        t = self.mocap_time(k)
        rng = self._noise_rng  # one stream: noise differs per call, which is all noise needs
        bodies: dict[str, RigidBodySample] = {}

        scales = self._noise_scales()

        def add(name: str, T: SE3 | None) -> None:
            if T is None:
                return
            if self._dropouts and self._dropped(name, t):  # the noise drawn all the same: one stream
                rng.normal(0.0, scales[:6])
                bodies[name] = RigidBodySample(name, BODY_IDS[name], np.zeros(3), np.array([0.0, 0.0, 0.0, 1.0]),
                                               False, float("nan"))
                return
            z = rng.normal(0.0, scales)  # position, rotation vector, marker error
            bodies[name] = RigidBodySample(name, BODY_IDS[name], T.t + z[:3], quat_of(exp_so3(z[3:6]) @ T.R), True,
                                           float(abs(z[6])))

        Te = self.subject.T_world_eye(t)
        add("head_band", compose(Te, self.subject.T_eye_head))
        if self.props.tool_on_head:
            add("calib_tool", compose(Te, self.props.T_eye_tool))
        if self.props.probe_target is not None:
            # probe held with a small random tilt, tip on the target
            R = exp_so3(rng.normal(0.0, 0.1, 3))
            add("probe", se3_unchecked(R, self.props.probe_target - R @ self.props.probe_tip_in_probe))
        if self.config.table_tracked and self.T_world_table0 is not None:
            add("table", self.T_world_table(t))
        if self.config.camera_body and self.calib.T_cambody_camera is not None:
            if self._cambody_of is not self.calib.T_cambody_camera:
                self._cambody_of, self._camera_cambody = self.calib.T_cambody_camera, self.calib.T_cambody_camera.inv()
            add("camera", compose(self.T_world_camera(t), self._camera_cambody))
        if self.props.robot_marker:
            Tw = compose(self.T_world_base, self.T_base_tool0(t))
            add("robot_marker", se3_unchecked(Tw.R, Tw.apply(self.props.marker_in_tool0)))
        return MocapFrame(t, k, bodies)

    def feed_robot_monitor(self, t_ns: int) -> None:
        """Give the arm's safety monitor every head-band sample up to ``t_ns`` (the same
        samples the simulated motion capture publishes, dropouts included)."""
        if self.arm is None:
            return
        with self.arm._lock:  # called by the arm under its lock; never take the world's lock here
            k_now = self.mocap_index(t_ns)
            if self._fed_k is not None and k_now <= self._fed_k:
                return  # every sample up to t_ns given already (the arm feeds at each tick)
            k0 = k_now - 20 if self._fed_k is None else self._fed_k + 1
            k0 = max(k0, k_now - 20)  # after a long idle gap only the recent past matters
            for k in range(k0, k_now + 1):
                t = self.mocap_time(k)
                Te = self.subject.T_world_eye(t)
                lost = self._dropped("head_band", t)
                self.arm.monitor.update_head(t, None if lost else compose(Te, self.subject.T_eye_head))
            self._fed_k = max(self._fed_k or k_now, k_now)
