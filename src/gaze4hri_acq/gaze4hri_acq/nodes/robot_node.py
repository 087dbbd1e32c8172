"""Robot node: tool0 pose in the controller Base frame, joint states and controller
status at the RTDE rate; runs motions on request after a safety preview; runs the
SafetyMonitor on live motion capture at every sample and stops the arm on a STOP
verdict (head band lost, camera too close to the head, workspace, speed, operator),
on a protective stop, or on ``/robot/stop``. Every stop is published as a fault
event on /gaze4hri/events (recorded in the trial bag) and on /gaze4hri/safety.
"""
from __future__ import annotations

import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from gaze4hri_core.device_config import DEFAULT_ROBOT_IP
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.safety import SafetyLimits, SafetyMonitor, Verdict, pose_from_quat
from gaze4hri_core.session import FRAMES, Topics
from gaze4hri_core.trajectories import Move, preview_move
from gaze4hri_core.transforms import SE3
from geometry_msgs.msg import PoseStamped, TwistStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import Trigger

from ._bus import FastPublisher
from ._cdr import decode_diagnostics, encode_joint_state, encode_pose, encode_twist, header_stamp_ns
from .common import QOS_RELIABLE, QOS_SENSOR, Param, diag_array, diag_status, subscribe, to_json
from .device import DeviceNode

__all__ = ["RobotNode", "PARAMS", "JOINT_NAMES", "move_to_json", "move_from_json"]

JOINT_NAMES = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint", "wrist_2_joint",
               "wrist_3_joint"]
_SL = SafetyLimits()

PARAMS = (
    Param("backend", "sim", "device backend: simulated UR5 or a UR controller over RTDE", ("sim", "real")),
    Param("robot_ip", DEFAULT_ROBOT_IP, "IP address of the UR controller (RTDE)"),
    Param("robot_model", "ur5", "arm model (DH parameters)", ("ur5", "ur5e")),
    Param("calibration_dir", "",
          "calibration directory (registration, hand-eye, scene); empty: the repository's calibration/"),
    Param("subject", "", "subject id whose eye-head calibration places the eyes for the head-distance check"),
    Param("max_tcp_speed", float(_SL.max_tcp_speed), "TCP speed limit (m/s)", range=(0.01, 1.0)),
    Param("max_tcp_accel", float(_SL.max_tcp_accel), "TCP acceleration limit (m/s^2)", range=(0.01, 5.0)),
    Param("min_camera_head_m", float(_SL.min_camera_head_m), "minimum camera-to-head distance (m)", range=(0.0, 2.0)),
    Param("mocap_loss_timeout_s", float(_SL.mocap_loss_timeout_s),
          "stop a motion when the head band is lost this long (s)", range=(0.01, 5.0)),
    Param("require_head", True, "refuse and stop motions while the head band is not tracked"),
    Param("connect_timeout_s", 2.0, "give up connecting to the controller after this long (s)", range=(0.1, 30.0)),
)


def move_to_json(move: Move) -> dict:
    return {"name": move.name, "waypoints": [[*map(float, T.t), *map(float, T.quat_xyzw)] for T in move.waypoints_base],
            "speed": move.speed, "accel": move.accel, "blend": move.blend, "constant_speed": move.constant_speed}


def move_from_json(d: dict) -> Move:
    wps = tuple(SE3.from_quat(w[:3], w[3:7]) for w in d["waypoints"])
    return Move(str(d.get("name", "move")), wps, float(d["speed"]), float(d["accel"]), float(d.get("blend", 0.0)),
                bool(d.get("constant_speed", False)))


class RobotNode(DeviceNode):
    PARAMS = PARAMS
    device_label = "robot"
    frame_id = FRAMES["base"]

    def __init__(self, name: str = "robot", **kw):
        super().__init__(name, **kw)
        self.monitor: SafetyMonitor | None = None
        self.state = None
        self.safety_reason: str | None = None
        self.samples = 0
        self._motion: dict | None = None  # {"name", "t0_ns", "preview"}
        self._was_protective = False
        self._mocap_ns = 0
        self._next_ns = 0
        self._first_ns = 0
        self._status_key = None
        self._status_ns = 0
        self.create_service(Trigger, "/robot/stop", self._srv_stop)
        self.create_service(Trigger, "/robot/clear_stop", self._srv_clear)

    # ------------------------------------------------------------------ setup
    def robot_config(self):
        """This node's parameters as the validated RobotConfig (calibration, subject, limits)."""
        from gaze4hri_core.device_config import RobotConfig, validate

        p = self.params
        vals = {"host": p["robot_ip"], "model": p["robot_model"], "limits": self._limits(),
                "connect_timeout_s": p["connect_timeout_s"], "subject": p["subject"] or None}
        if p["calibration_dir"]:
            vals["calibration_dir"] = p["calibration_dir"]
        return validate(RobotConfig, vals, "robot parameters")

    def prepare(self) -> None:
        """The robot's one SafetyMonitor, built before its driver and handed to it: this
        node feeds it the head-band stream, every backend checks its motions against it
        (issue 20: the real driver's private monitor was never fed and refused every move)."""
        from ..drivers.registry import robot_monitor

        self.monitor = robot_monitor(self.robot_config())

    def make_driver(self):
        from ..drivers.registry import make_robot

        return make_robot(self.params["backend"], self.robot_config(), safety=self.monitor)

    def _limits(self) -> SafetyLimits:
        p = self.params
        return SafetyLimits(max_tcp_speed=p["max_tcp_speed"], max_tcp_accel=p["max_tcp_accel"],
                            min_camera_head_m=p["min_camera_head_m"], mocap_loss_timeout_s=p["mocap_loss_timeout_s"],
                            require_head=p["require_head"])

    def address(self) -> str:
        return f"UR controller at {self.params.get('robot_ip', '?')}"

    def connect(self) -> None:
        if getattr(self.driver, "safety", self.monitor) is not self.monitor:
            raise Gaze4HRIError("robot driver checks another safety monitor than the robot node's", "robot node",
                                "build the driver with safety=node.monitor (drivers.registry.make_robot)")
        self.driver.connect(timeout_s=self.params["connect_timeout_s"])

    def release(self) -> None:
        if self.driver is not None:
            try:
                self.driver.stop()
            finally:
                self.driver.close()

    def setup_publishers(self) -> None:
        self.pub_tcp = FastPublisher(self, PoseStamped, Topics.TCP_POSE, QOS_SENSOR, self.bus, stream=True)
        self.pub_js = FastPublisher(self, JointState, Topics.JOINT_STATES, QOS_SENSOR, self.bus, stream=True)
        self.pub_status = FastPublisher(self, DiagnosticArray, Topics.ROBOT_STATUS, QOS_SENSOR, self.bus, stream=True)
        self.pub_cmd = FastPublisher(self, TwistStamped, Topics.COMMANDED_SPEED, QOS_SENSOR, self.bus, stream=True)
        self.pub_safety = FastPublisher(self, DiagnosticArray, Topics.SAFETY, QOS_RELIABLE, self.bus)
        self.pub_events = FastPublisher(self, String, Topics.EVENTS, QOS_RELIABLE, self.bus)
        subscribe(self, self.bus, PoseStamped, Topics.HEAD_POSE, self._on_head, QOS_SENSOR)
        subscribe(self, self.bus, DiagnosticArray, Topics.MOCAP_STATUS, self._on_mocap_status_cdr, QOS_SENSOR, raw=True)

    # ------------------------------------------------------------- mocap feed
    # Safety is evaluated on the motion-capture stream's own clock (the stamp of its
    # latest frame): a tracked-then-lost head band is seen through the 'lost' status,
    # and a silent stream by comparing its stamps with the robot's. This keeps the check exact
    # when the simulation runs faster than real time and a stream lags the clock.
    def _on_head(self, m: PoseStamped) -> None:
        if self.monitor is None:
            return
        p, q = m.pose.position, m.pose.orientation
        t = m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
        try:
            T = pose_from_quat((p.x, p.y, p.z), (q.x, q.y, q.z, q.w))
        except ValueError:  # a non-finite or zero quaternion is no track
            T = None
        self.monitor.update_head(t, T)
        self._mocap_seen(t)

    def _on_mocap_status(self, m: DiagnosticArray) -> None:
        if self.monitor is None:
            return
        t = m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
        for s in m.status:
            if s.name == "head_band" and s.message == "lost":
                self.monitor.update_head(t, None)
        self._mocap_seen(t)

    def _on_mocap_status_cdr(self, _topic: str, cdr: bytes) -> None:
        """The 100 Hz status as bytes: decoded only when some body is 'lost' (the monitor's
        loss timer starts); any other frame only moves the stream's time, its stamp."""
        if self.monitor is None:
            return
        if b"lost" in cdr:
            self._on_mocap_status(decode_diagnostics(cdr))
        else:
            self._mocap_seen(header_stamp_ns(cdr))

    def _mocap_seen(self, t_ns: int) -> None:
        if t_ns > self._mocap_ns:
            self._mocap_ns = t_ns

    def safety_now_ns(self, robot_ns: int) -> int:
        """Time at which to judge the head-band track: the mocap stream's latest stamp."""
        return min(robot_ns, self._mocap_ns) if self._mocap_ns else robot_ns

    def mocap_silent(self, robot_ns: int) -> float | None:
        """Seconds the motion-capture stream has been silent on the robot's clock, when
        beyond max(0.5 s, 5 x mocap_loss_timeout_s); None while it streams."""
        if not self.params.get("require_head", True):
            return None
        limit = max(0.5, 5 * self.params.get("mocap_loss_timeout_s", 0.1))
        gap = (robot_ns - self._mocap_ns) / 1e9 if self._mocap_ns else (robot_ns - self._first_ns) / 1e9
        return gap if gap > limit else None

    # ---------------------------------------------------------------- stream
    def wait_until_ns(self, t_ns: int) -> bool:
        """As DeviceNode's, and on a real controller's host clock (HostClock has no
        sleep_until: the real backend's stream died at its first sample)."""
        clock = self._device_clock()
        if clock is not None and not hasattr(clock, "sleep_until"):
            dt = (t_ns - clock.now_ns()) / 1e9
            if dt > 0:
                time.sleep(dt)
            return True
        return super().wait_until_ns(t_ns)

    def step(self) -> None:
        period = int(1e9 / float(getattr(self.driver, "rate_hz", 125.0)))
        now = self.now_ns()
        # a host-clock controller that fell 10 periods behind resumes at "now"; a paced
        # simulation clock waits for this stream (runner._Pacer), so its schedule never
        # skips a sample, however loaded the machine (a skip was a gap in the pose stream)
        paced = bool(getattr(self._device_clock(), "manual", False))
        if self._next_ns == 0 or (not paced and self._next_ns < now - 10 * period):
            self._next_ns = now
        if not self.wait_until_ns(self._next_ns):
            return False
        t_sample = self._next_ns
        self._next_ns += period
        # A simulated controller is sampled on the node's own schedule: the sim clock
        # may have jumped past it (it advances frame by frame), and stamping with "now"
        # would repeat stamps and leave 33 ms gaps in the pose stream.
        state_at = getattr(self.driver, "state_at", None)
        st = state_at(t_sample) if state_at is not None else self.driver.state()
        self.stream_ns = st.stamp_ns
        if not self._first_ns:
            self._first_ns = st.stamp_ns
        self.state = st
        self.samples += 1
        base = FRAMES["base"]
        # 125 Hz: CDR written directly (nodes/_cdr.py), the bytes rclpy's messages would give
        self.pub_tcp.publish(encode_pose(st.stamp_ns, base, st.T_base_tool0.t, st.T_base_tool0.quat_xyzw))
        # the chain's root (REP-105 names, docs/session_layout.md)
        self.pub_js.publish(encode_joint_state(st.stamp_ns, base, JOINT_NAMES, st.q, st.qd))
        speed = 0.0
        if self._motion is not None and self._motion.get("preview") is not None:
            pv = self._motion["preview"]
            el = (st.stamp_ns - self._motion["t0_ns"]) / 1e9
            speed = float(np.interp(el, pv.t, pv.commanded_speed, right=0.0))  # speed along the path
        self.pub_cmd.publish(encode_twist(st.stamp_ns, base, (speed, 0.0, 0.0)))
        key = (st.protective_stop, st.moving, st.connected, round(st.speed_scaling, 3))
        if key != self._status_key or st.stamp_ns - self._status_ns >= 100_000_000:  # 10 Hz and on every change
            self._status_key, self._status_ns = key, st.stamp_ns
            values = {"speed_scaling": st.speed_scaling, "protective_stop": st.protective_stop, "moving": st.moving,
                      "connected": st.connected, "controller_time_s": st.controller_time_s}
            status = diag_status("robot", 2 if st.protective_stop else 0,
                                 "protective stop" if st.protective_stop else "ok", values)
            self.pub_status.publish(diag_array(st.stamp_ns, [status], frame_id=base))
        if st.protective_stop and not self._was_protective:
            self._fault("protective_stop", "robot protective stop (controller)", st.stamp_ns)
        self._was_protective = st.protective_stop
        if self.monitor is not None and (st.moving or self._motion is not None):
            v = self.monitor.check(self.safety_now_ns(st.stamp_ns), st.T_base_tool0,
                                   float(np.linalg.norm(st.tcp_speed[:3])), moving=True)
            silent = self.mocap_silent(st.stamp_ns) if v.ok else None
            if silent is not None:
                v = Verdict(False, f"motion capture silent (no frame for {silent:.1f} s)", "mocap_loss")
            if not v.ok:
                self.driver.stop()
                self._fault(v.code, v.reason, st.stamp_ns)
        if self._motion is not None and not st.moving and not self.driver.is_moving():
            if st.stamp_ns - self._motion["t0_ns"] > 20_000_000:  # the controller reports moving a cycle late
                reason = getattr(st, "stop_reason", None)
                goal = self._motion["goal"]
                off = float(np.linalg.norm(st.T_base_tool0.t - goal.t))
                # a stop with no reason of its own is judged 50 ms after it is first seen: the
                # control and receive interfaces are two RTDE streams, and the motion can end on one
                # a package before the other shows the protective stop that ended it
                early = not reason and off > 0.005
                if early and st.stamp_ns - self._motion.setdefault("still_ns", st.stamp_ns) < 50_000_000:
                    return True
                if reason or off > 0.005:
                    # the driver or the controller stopped the arm by itself (its own safety
                    # monitor, protective stop, link loss): a fault, not the end of the motion,
                    # with the driver's code when it has one (the real driver's watchdog
                    # stops a lost head band 'mocap_loss' before this node's own check)
                    code = getattr(self.driver, "stop_code", None) or "driver_stop"
                    self._fault(code, f"robot stopped by itself {off * 1e3:.0f} mm before the end of "
                                      f"'{self._motion['name']}'" + (f": {reason}" if reason else ""), st.stamp_ns)
                else:
                    name = self._motion["name"]
                    self._motion = None
                    self.pub_events.publish(to_json({"event": "motion_done", "name": name, "stamp_ns": st.stamp_ns}))
        return True


    def _fault(self, code: str, reason: str, stamp_ns: int) -> None:
        self.safety_reason = reason
        name = self._motion["name"] if self._motion else None
        self._motion = None
        self.get_logger().warning(f"robot stopped: {reason}")
        self.pub_events.publish(to_json({"event": "fault", "source": "robot", "code": code, "reason": reason,
                                         "motion": name, "stamp_ns": stamp_ns}))
        self.pub_safety.publish(diag_array(stamp_ns, [diag_status("safety", 2, reason, {"code": code})],
                                           frame_id=FRAMES["base"]))

    def on_stream_error(self, reason: str) -> None:
        try:
            if self.driver is not None:
                self.driver.stop()
        finally:
            self.pub_events.publish(to_json({"event": "fault", "source": "robot", "code": "device", "reason": reason}))

    # -------------------------------------------------------------- commands
    def handle_move(self, req: dict) -> dict:
        """Preview a motion with the safety monitor, then start it (asynchronous)."""
        if self.state is None:
            raise Gaze4HRIError("robot: no state received yet", self.address(), "wait for the robot node to be active")
        move = move_from_json(req["move"])
        st = self.state
        pv = preview_move(move, st.T_base_tool0, st.q, self.monitor, now_ns=self.safety_now_ns(st.stamp_ns),
                          check_mocap=bool(req.get("check_mocap", True)))
        if not pv.ok:
            raise Gaze4HRIError(f"robot: motion '{move.name}' refused: {pv.verdict.reason}", self.address(),
                                "check the subject's position and the calibration")
        self.safety_reason = None
        # stamped when the command goes to the controller, on the device clock: the last
        # state sample can be a few ms older (a whole sample period on a busy machine)
        t_cmd = max(self.now_ns(), st.stamp_ns)
        self._motion = {"name": move.name, "t0_ns": t_cmd, "preview": pv, "goal": move.waypoints_base[-1]}
        try:
            self.driver.move_linear(list(move.waypoints_base), move.speed, move.accel, move.blend, move.constant_speed)
        except BaseException:
            self._motion = None  # refused by the driver (protective stop...): no motion to watch, no false fault
            raise
        self.pub_events.publish(to_json({"event": "motion_start", "name": move.name, "duration_s": pv.duration_s,
                                         "stamp_ns": t_cmd}))
        return {"duration_s": pv.duration_s}

    def handle_eye_head(self, req: dict) -> dict:
        """The subject's eye-head offset (head-band frame, m), sent by the orchestrator after
        the session's eye-head calibration: the distance limit is from the eyes from now on."""
        eye = req.get("eye_in_head")
        if self.monitor is None:
            raise Gaze4HRIError("robot: not configured yet", self.address(),
                                "bring the robot node up before sending the eye-head offset")
        try:
            self.monitor.set_eye_in_head(None if eye is None else [float(x) for x in eye])
        except (TypeError, ValueError) as e:
            raise Gaze4HRIError(f"robot: bad eye-head offset {eye!r} ({e})", self.address(),
                                "send three finite numbers (m)") from None
        return {"eye_in_head": None if self.monitor.eye_in_head is None else self.monitor.eye_in_head.tolist(),
                "eye_source": self.monitor.eye_source}

    def handle_stop(self, req: dict) -> dict:
        reason = str(req.get("reason", "operator request"))
        self._stop_robot(reason)
        return {}

    def handle_clear_stop(self, req: dict) -> dict:
        if self.monitor is not None:
            self.monitor.clear_stop()
        self.safety_reason = None
        return {}

    def _stop_robot(self, reason: str) -> None:
        if self.driver is not None:
            self.driver.stop()
        if self.monitor is not None:
            self.monitor.request_stop(reason)
        stamp = self.state.stamp_ns if self.state is not None else time.time_ns()
        if self._motion is not None or reason:
            self._fault("operator", f"stop requested: {reason}", stamp)

    def _srv_stop(self, req, resp):
        self._stop_robot("stop service")
        resp.success, resp.message = True, "robot stopped"
        return resp

    def _srv_clear(self, req, resp):
        self.handle_clear_stop({})
        resp.success, resp.message = True, "motions allowed again"
        return resp

    def diag_values(self) -> dict:
        st = self.state
        # which eye point the head-distance limit is measured from (issue 31): the nominal
        # band-to-eye bound until the subject's eye-head offset arrives, then the subject's calibration
        return {"samples": self.samples, "moving": bool(st.moving) if st else False,
                "protective_stop": bool(st.protective_stop) if st else False, "safety": self.safety_reason or "ok",
                "eye_source": self.monitor.eye_source if self.monitor is not None else "-"}
