"""The real robot node (backend=real, the real ur_rtde) against the UR controller
emulator, assembled as a session runs it: the node stack in-process (runner.Stack),
the orchestrator's DeviceClient on the same bus sending its commands and collecting
events and diagnostics, and a head-band stream of a subject seated where the
calibration puts the eyes. Shared by tests/acq/test_robot_node_real.py and
benchmarks/reliability_ur.py."""
from __future__ import annotations

import threading
import time

import numpy as np
from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.device_config import DEFAULT_CALIBRATION
from gaze4hri_core.protocol import trial_by_id
from gaze4hri_core.session import Topics
from gaze4hri_core.trajectories import TrajectorySettings, plan_trial
from gaze4hri_core.transforms import SE3

from .ur_testbed import Controller, wait_for

__all__ = ["RobotNodeBed", "HeadStream", "seated_head", "run_trial", "wait_for"]


def seated_head(cal) -> SE3:
    """Head-band pose of a subject facing +x with the eye midpoint at the calibration's
    nominal eye position (the eye frame: x forward, z up; head = eye * inv(eye-head))."""
    return SE3(np.eye(3), np.asarray(cal.eye_nominal_world, float)) @ cal.T_head_eye.inv()


class HeadStream(threading.Thread):
    """Head-band poses on Topics.HEAD_POSE at ``rate_hz`` on the host clock (the
    motion-capture node's stream); ``pause()`` stops them (the band is lost)."""

    def __init__(self, node, bus, T_head: SE3, rate_hz: float = 120.0):
        super().__init__(name="head-stream", daemon=True)
        from geometry_msgs.msg import PoseStamped

        from gaze4hri_acq.nodes._bus import FastPublisher
        from gaze4hri_acq.nodes.common import QOS_SENSOR

        self.pub = FastPublisher(node, PoseStamped, Topics.HEAD_POSE, QOS_SENSOR, bus)
        self.T, self.period = T_head, 1.0 / rate_hz
        self.on = threading.Event()
        self.halt = threading.Event()
        self.lock = threading.Lock()  # a publish and its last_ns are one step: pause() waits for it
        self.last_ns = 0
        self.max_gap_s = 0.0  # longest wall gap between two samples while streaming
        self.stalls: list[tuple[float, float]] = []  # (monotonic time, gap s) of gaps above 50 ms
        self.start()

    def run(self) -> None:
        from gaze4hri_acq.nodes.mocap_node import pose_msg

        prev = None
        while not self.halt.wait(self.period):
            if not self.on.is_set():
                prev = None
                continue
            with self.lock:
                if not self.on.is_set():
                    prev = None
                    continue
                now = time.time_ns()
                self.pub.publish(pose_msg(now, "world", self.T.t, self.T.quat_xyzw))
                self.last_ns = now
            if prev is not None:
                gap = (now - prev) / 1e9
                self.max_gap_s = max(self.max_gap_s, gap)
                if gap > 0.05:
                    self.stalls.append((time.monotonic(), gap))
            prev = now

    def resume(self) -> None:
        self.on.set()

    def pause(self) -> int:
        """Stop streaming; returns the stamp of the last sample sent."""
        with self.lock:  # a publish in flight completes first; none starts after
            self.on.clear()
            return self.last_ns

    def close(self) -> None:
        self.halt.set()
        self.join(timeout=5)


class RobotNodeBed:
    """Emulator + robot node (backend=real) + orchestrator client + head stream.

    ``mocap_loss_timeout_s``: the node's parameter (0.1 s in the study's config); the
    default-tier test gives a loaded machine's thread scheduling more room. ``subject``:
    the node's subject ("" starts it without an eye-head offset, as a session before its
    eye-head run)."""

    def __init__(self, *emu_args: str, mocap_loss_timeout_s: float = 0.1, trajectory: TrajectorySettings | None = None,
                 subject: str = "default"):
        from rclpy.lifecycle import TransitionCallbackReturn

        from gaze4hri_acq.orchestrator.client import DeviceClient
        from gaze4hri_acq.runner import Stack, StackConfig

        self.cal = load_calibration(DEFAULT_CALIBRATION, "default")
        self.settings = trajectory
        self.emu = self.stack = self.head = None
        try:
            self.emu = Controller(*emu_args)
            params = {"robot_ip": self.emu.host, "subject": subject, "connect_timeout_s": 10.0,
                      "mocap_loss_timeout_s": float(mocap_loss_timeout_s)}
            self.stack = Stack(StackConfig(backend="real", nodes=("robot",), params={"robot": params}))
            self.client = DeviceClient("orchestrator", bus=self.stack.bus, context=self.stack.context)
            self.stack.executor.add_node(self.client)
            self.stack._extra_nodes.append(self.client)  # destroyed with the stack
            self.head = HeadStream(self.client, self.stack.bus, seated_head(self.cal))
            self.stack.start()
            self.robot = self.stack.nodes["robot"]
            t0 = time.monotonic()
            for step in (self.robot.trigger_configure, self.robot.trigger_activate):
                if step() != TransitionCallbackReturn.SUCCESS:
                    raise RuntimeError(f"robot node did not come up: {self.robot.last_error}")
            self.bring_up_s = time.monotonic() - t0
            self.head.resume()
            wait_for(lambda: self.robot.state is not None and self.client.head is not None, 30,
                     "robot state and head pose")
        except BaseException:
            self.close()
            raise

    # ------------------------------------------------------------------ session side
    def plan(self, trial_id: str):
        """The trial's plan from the measured eye position (orchestrator.session._eye_world)."""
        eye = self.client.head[1].apply(self.cal.T_head_eye.t)
        return plan_trial(trial_by_id(trial_id), self.cal, eye, self.settings)

    def move(self, move, wait: bool = True, timeout_s: float = 60.0) -> float:
        """The orchestrator's move: request, then (``wait``) its motion_done; returns its
        previewed duration. A fault while waiting raises with the fault's reason."""
        from gaze4hri_acq.nodes.robot_node import move_to_json

        self.client.motion_done.pop(move.name, None)
        n_faults = len(self.client.faults)
        ack = self.client.request("robot", "move", move=move_to_json(move), timeout_s=15.0)
        if wait:
            wait_for(lambda: move.name in self.client.motion_done or len(self.client.faults) > n_faults, timeout_s,
                     f"motion '{move.name}' to finish")
            if move.name not in self.client.motion_done:
                raise AssertionError(f"motion '{move.name}' faulted: {self.client.faults[-1]}")
        return float(ack["duration_s"])

    def wait_fault(self, n_before: int, timeout_s: float = 10.0) -> dict:
        """The first fault event after the first ``n_before``."""
        wait_for(lambda: len(self.client.faults) > n_before, timeout_s, "a fault event")
        return self.client.faults[n_before]

    def emu_state(self) -> dict:
        import json

        return json.loads(self.emu.control("state"))

    def wait_still(self, timeout_s: float = 10.0) -> dict:
        def still():
            s = self.emu_state()
            return s if not s["moving"] and not np.any(s["actual_TCP_speed"]) else None

        return wait_for(still, timeout_s, "the emulated arm to stand")

    def close(self) -> None:
        if self.head is not None:
            self.head.close()
        if self.stack is not None:
            self.stack.close()
        if self.emu is not None:
            self.emu.close()

    def __enter__(self) -> RobotNodeBed:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def tcp(state: dict) -> np.ndarray:
    return np.asarray(state["actual_TCP_pose"][:3], float)


def run_trial(bed: RobotNodeBed, trial_id: str, timeout_s: float = 120.0) -> dict:
    """One whole trial's robot side: the approach, then the trial's motion to its end,
    sampling the executed TCP against the preview (on-path error, peak speed)."""
    plan = bed.plan(trial_id)
    n_faults = len(bed.client.faults)
    t0 = time.monotonic()
    bed.client.request("robot", "clear_stop")
    bed.move(plan.approach, timeout_s=timeout_s)
    t_approach = time.monotonic() - t0
    out = {"trial": trial_id, "approach_s": t_approach,
           "approach_error_m": float(np.linalg.norm(tcp(bed.emu_state()) - plan.approach.waypoints_base[-1].t))}
    if plan.motion is None:
        return out | {"completed": out["approach_error_m"] < 1e-3}
    pts = np.array([plan.approach.waypoints_base[-1].t, *(T.t for T in plan.motion.waypoints_base)])
    seen: list[tuple[np.ndarray, float]] = []
    stop = threading.Event()

    def sample():  # the node's published state, as recorded (/robot/tcp_pose)
        while not stop.wait(0.01):
            st = bed.robot.state
            if st is not None:
                seen.append((st.T_base_tool0.t.copy(), float(np.linalg.norm(st.tcp_speed[:3]))))

    th = threading.Thread(target=sample, daemon=True)
    t1 = time.monotonic()
    th.start()
    try:
        duration = bed.move(plan.motion, timeout_s=timeout_s)
    finally:
        stop.set()
        th.join()
    end = tcp(bed.emu_state())
    off = max((_dist_to_polyline(p, pts) for p, _ in seen), default=float("nan"))
    return out | {"motion": plan.motion.name, "motion_s": time.monotonic() - t1, "previewed_s": duration,
                  "end_error_m": float(np.linalg.norm(end - pts[-1])), "max_off_path_m": float(off),
                  "peak_speed": max((v for _, v in seen), default=0.0), "commanded_speed": plan.motion.speed,
                  "blend_m": plan.motion.blend, "samples": len(seen),
                  "completed": bool(np.linalg.norm(end - pts[-1]) < 1e-3 and len(bed.client.faults) == n_faults)}


def _dist_to_polyline(p: np.ndarray, pts: np.ndarray) -> float:
    a, b = pts[:-1], pts[1:]
    ab = b - a
    w = np.clip(np.einsum("ij,ij->i", p - a, ab) / np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-18), 0.0, 1.0)
    return float(np.min(np.linalg.norm(a + w[:, None] * ab - p, axis=1)))
