"""The orchestrator's side of the device protocol: lifecycle transitions through the
standard lifecycle services, JSON control commands with acknowledgements, and the
live state it listens to (faults, motions, head pose, device time, diagnostics)."""
from __future__ import annotations

import itertools
import json
import threading
import time
from collections import deque

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from gaze4hri_core.devices import DeviceError
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.safety import pose_from_quat
from gaze4hri_core.session import Topics
from gaze4hri_core.transforms import SE3
from geometry_msgs.msg import PoseStamped
from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String

from ..nodes._bus import FastPublisher, IntraProcessBus
from ..nodes.common import ACK, CONTROL, QOS_RELIABLE, QOS_SENSOR, subscribe, to_json

__all__ = ["DeviceClient", "Interrupted"]


class Interrupted(Exception):
    """The operator (SIGINT/SIGTERM) or a stop request ended the session."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason



#: how long bring-up waits for a lifecycle transition's answer: a patience bound for a
#: node that stopped answering, not a readiness guess (a device that is absent fails
#: at once with its driver's own one-line error)
BRING_UP_PATIENCE_S = 120.0
#: how long a node may take to appear on the graph (processes started together by launch)
DISCOVERY_PATIENCE_S = 30.0

class DeviceClient(Node):
    """Orchestrator node: everything it knows about the devices arrives on topics."""

    def __init__(self, name: str = "orchestrator", *, bus: IntraProcessBus | None = None, context=None,
                 session_id: str = "", parameter_overrides=None):
        overrides = [Parameter(k, value=v) for k, v in (parameter_overrides or {}).items()]
        super().__init__(name, context=context, parameter_overrides=overrides)
        self.bus = bus
        self.session_id = session_id
        self._seq = itertools.count(1)
        self._acks: dict[int, dict] = {}
        self._cv = threading.Condition()
        self.events: deque[dict] = deque(maxlen=1000)
        self.faults: list[dict] = []
        self.motion_done: dict[str, int] = {}
        # motion name -> its start (device time, ns), as the robot node stamps it
        self.motion_start: dict[str, int] = {}
        self.tcp_xyz: tuple[float, float, float] | None = None  # the tool's latest position in base (m)
        self.head: tuple[int, SE3] | None = None
        self.device_ns = 0  # latest robot state stamp: the session's clock (host or simulation)
        self.stream_ns = {"camera": 0, "mocap": 0, "robot": 0}  # latest stamp per stream
        self.diag: dict[str, dict] = {}
        self.lost: dict[str, str] = {}  # node -> why: its process ended (split.py); a request to it is an interrupt
        self.pub_control = FastPublisher(self, String, CONTROL, QOS_RELIABLE, bus)
        self.pub_events = FastPublisher(self, String, Topics.EVENTS, QOS_RELIABLE, bus)
        subscribe(self, bus, String, ACK, self._on_ack, QOS_RELIABLE)
        subscribe(self, bus, String, Topics.EVENTS, self._on_event, QOS_RELIABLE)
        subscribe(self, bus, PoseStamped, Topics.HEAD_POSE, self._on_head, QOS_SENSOR)
        subscribe(self, bus, PoseStamped, Topics.TCP_POSE, self._on_tcp, QOS_SENSOR)
        subscribe(self, bus, DiagnosticArray, Topics.DIAGNOSTICS, self._on_diag, QOS_RELIABLE)
        subscribe(self, bus, DiagnosticStatus, Topics.FRAME_META, self._on_frame_meta, QOS_SENSOR)
        self._lc_clients: dict[str, tuple] = {}
        # the device nodes' lifecycle through their control commands instead of the DDS
        # services: set when the bus is bridged to the devices' process (split.py)
        self.lifecycle_over_bus = False

    # ------------------------------------------------------------ listeners
    def _on_ack(self, m: String) -> None:
        try:
            a = json.loads(m.data)
        except ValueError:
            return
        with self._cv:
            self._acks[int(a.get("seq", -1))] = a
            self._cv.notify_all()

    def _on_event(self, m: String) -> None:
        try:
            e = json.loads(m.data)
        except ValueError:
            return
        with self._cv:
            self.events.append(e)
            if e.get("event") == "fault":
                self.faults.append(e)
            elif e.get("event") == "motion_done":
                self.motion_done[str(e.get("name"))] = int(e.get("stamp_ns", 0))
            elif e.get("event") == "motion_start":
                self.motion_start[str(e.get("name"))] = int(e.get("stamp_ns", 0))
            self._cv.notify_all()

    def _on_head(self, m: PoseStamped) -> None:
        p, q = m.pose.position, m.pose.orientation
        t = m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
        self.head = (t, pose_from_quat((p.x, p.y, p.z), (q.x, q.y, q.z, q.w)))
        self.stream_ns["mocap"] = max(self.stream_ns["mocap"], t)

    def _on_tcp(self, m: PoseStamped) -> None:
        t = m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec
        if t > self.device_ns:
            p = m.pose.position
            self.tcp_xyz = (p.x, p.y, p.z)
            self.device_ns = t
            self.stream_ns["robot"] = t
            with self._cv:
                self._cv.notify_all()

    def _on_frame_meta(self, m: DiagnosticStatus) -> None:
        for kv in m.values:
            if kv.key == "stamp_ns":
                self.stream_ns["camera"] = max(self.stream_ns["camera"], int(kv.value))
                return

    def _on_diag(self, m: DiagnosticArray) -> None:
        for s in m.status:
            self.diag[s.name] = {
                "level": s.level[0] if isinstance(s.level, (bytes, bytearray)) else int(s.level),
                "message": s.message,
                **{kv.key: kv.value for kv in s.values},
            }

    # -------------------------------------------------------------- control
    def request(self, to: str, cmd: str, timeout_s: float = 30.0, **fields) -> dict:
        """Send a command and wait for its acknowledgement; refusal or silence raise.
        ``timeout_s`` bounds the wait for a node that stopped answering; a loaded machine
        answers late, not never (issue 20: 10 s was within reach of a load of 24)."""
        if to in self.lost:
            raise Interrupted(self.lost[to])
        seq = next(self._seq)
        self.pub_control.publish(to_json({"to": to, "cmd": cmd, "seq": seq, "session": self.session_id, **fields}))
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while seq not in self._acks:
                if to in self.lost:  # its process ended while we waited (split.py)
                    raise Interrupted(self.lost[to])
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DeviceError(
                        to,
                        f"node /{to}",
                        f"no acknowledgement of '{cmd}' within {timeout_s:.0f} s",
                        "check that the node is running (ros2 node list) and active",
                    )
                self._cv.wait(min(left, 0.2))
            ack = self._acks.pop(seq)
        if not ack.get("ok", False):
            raise Gaze4HRIError(str(ack.get("error") or f"{to}: '{cmd}' refused"), None, None)
        return ack

    def mark_lost(self, nodes, why: str) -> None:
        """These nodes' process ended: a request to one of them, waiting or new, is an
        interrupt with ``why`` from now on (split.py)."""
        with self._cv:
            self.lost.update({n: why for n in nodes})
            self._cv.notify_all()

    def publish_event(self, event: str, **fields) -> None:
        self.pub_events.publish(to_json({"event": event, "stamp_ns": self.device_ns, **fields}))

    # ------------------------------------------------------------ lifecycle
    def _lifecycle_clients(self, node: str):
        c = self._lc_clients.get(node)
        if c is None:
            c = (
                self.create_client(ChangeState, f"/{node}/change_state"),
                self.create_client(GetState, f"/{node}/get_state"),
            )
            self._lc_clients[node] = c
        return c

    def _call(self, client, req, timeout_s: float):
        """A service call's response, or None when the service does not exist or does
        not answer within ``timeout_s`` (a patience bound for a dead peer)."""
        if not client.wait_for_service(timeout_sec=timeout_s):
            return None
        fut = client.call_async(req)
        done = threading.Event()
        fut.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout_s):
            return None
        return fut.result()

    def lifecycle_state(self, node: str, timeout_s: float = 5.0) -> str | None:
        if self.lifecycle_over_bus:
            try:
                return str(self.request(node, "lifecycle_state", timeout_s=timeout_s)["state"])
            except Gaze4HRIError:
                return None
        _, get = self._lifecycle_clients(node)
        r = self._call(get, GetState.Request(), timeout_s)
        return None if r is None else r.current_state.label

    def _transition(self, node: str, tid: int, label: str, timeout_s: float) -> bool | None:
        """One lifecycle transition: whether it succeeded, None without an answer."""
        if self.lifecycle_over_bus:
            try:
                return bool(self.request(node, "lifecycle", timeout_s=timeout_s, transition=label)["success"])
            except Gaze4HRIError:
                return None
        change, _ = self._lifecycle_clients(node)
        r = self._call(change, ChangeState.Request(transition=Transition(id=tid)), timeout_s)
        return None if r is None else bool(r.success)

    def bring_up(self, node: str, address: str, timeout_s: float = BRING_UP_PATIENCE_S) -> None:
        """configure + activate one lifecycle device node; one-line DeviceError on failure.

        Waits on readiness, not on a short clock: each transition's response comes when
        the node has finished it (a driver's own connect timeout bounds a silent
        device); ``timeout_s`` only ends the wait for a node that stopped answering.
        On a loaded machine (load 24 on 2 cores) a 15 s bound failed healthy nodes
        with "configure failed (state inactive)" (issue 20)."""
        state = self.lifecycle_state(node, min(timeout_s, DISCOVERY_PATIENCE_S))
        if state is None:
            raise DeviceError(
                node,
                address,
                "node not running (no lifecycle service)",
                f"start it (ros2 launch gaze4hri_acq session.launch.py) or check /{node}",
            )
        for tid, label, want in (
            (Transition.TRANSITION_CONFIGURE, "configure", "inactive"),
            (Transition.TRANSITION_ACTIVATE, "activate", "active"),
        ):
            if state == want or (state == "active" and want == "inactive"):
                continue
            ok = self._transition(node, tid, label, timeout_s)
            state = self.lifecycle_state(node, timeout_s)
            if state != want or ok is False:
                why = self.device_error(node)
                if why:  # the driver's own line names the device, its address and the fix
                    raise Gaze4HRIError(f"{node} node: {why}")
                what = "no answer" if ok is None else f"state {state}"
                raise DeviceError(
                    node,
                    address,
                    f"{label} failed ({what} after {timeout_s:.0f} s)" if ok is None else f"{label} failed ({what})",
                    "check the device, its address and cables, then retry",
                )

    def shut_down(self, node: str, timeout_s: float = 5.0) -> None:
        steps = ((Transition.TRANSITION_DEACTIVATE, "deactivate"), (Transition.TRANSITION_CLEANUP, "cleanup"))
        for tid, label in steps:
            self._transition(node, tid, label, timeout_s)

    def device_error(self, node: str) -> str | None:
        try:
            a = self.request(node, "ping", timeout_s=3.0)
        except Gaze4HRIError:
            return None
        return a.get("error")

    # ------------------------------------------------------------------ wait
    def wait_state(self, timeout_s: float) -> None:
        """Until the next robot state, an event, or ``timeout_s`` (a poll's pace, not a deadline)."""
        with self._cv:
            self._cv.wait(timeout_s)

    def wait_device_time(self, t_ns: int, timeout_wall_s: float, check=None, streams=("robot",)) -> bool:
        """Wait until every stream in ``streams`` has reached ``t_ns`` (host or sim
        clock: a stream that lags, such as a camera rendering slower than the
        simulation clock, is waited for); ``check`` may raise."""
        deadline = time.monotonic() + timeout_wall_s
        while min(self.stream_ns[s] for s in streams) < t_ns:
            if check is not None:
                check()
            if time.monotonic() > deadline:
                return False
            with self._cv:
                self._cv.wait(0.05)
        return True
