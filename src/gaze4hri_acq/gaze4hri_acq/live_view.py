"""Live view for the operator and the lab (issue 24): a Foxglove WebSocket server,
started with the session, that shows what the terminal view cannot: the camera image,
the 3D scene and the session state, in Foxglove (app or browser: Open connection ->
Foxglove WebSocket -> ``ws://127.0.0.1:8765``; layout ``config/foxglove_layout.json``).

The server is the ``foxglove-sdk`` package's (``foxglove.start_server``; Foxglove
WebSocket protocol under the subprotocol name ``foxglove.sdk.v1``, the only one it
accepts: clients offering only the older ``foxglove.websocket.v1`` are refused, see
SUBPROTOCOL); no ROS installation is needed for it. It is fed from the session's
in-process bus (runner.Stack's ``IntraProcessBus``: the same CDR bytes the recorder
writes, deserialized with ``rclpy.serialization``) or, when the device nodes run in
other processes (``external_devices``), from raw DDS subscriptions on the orchestrator's
node; the gaze estimate (DDS_TOPICS) always over DDS, so a live gaze node in another
process shows up. Three channels, each with its schema advertised to the client:

==========================  ========================  ==========================================
channel                     schema                    content
==========================  ========================  ==========================================
``/gaze4hri/live/image``    foxglove.RawImage         the colour image (rgb8), at most
                                                      ``image_hz`` per second, subsampled by an
                                                      integer factor to at most ``max_width`` px
``/gaze4hri/live/scene``    foxglove.SceneUpdate      in ``world``: the robot tool (tool0 axes),
                                                      the camera frustum, the head band, the eye
                                                      midpoint, the targets (the current one
                                                      larger), the ground-truth gaze ray from the
                                                      eye midpoint to the current target, and the
                                                      live gaze estimate when /gaze4hri/gaze runs
``/gaze4hri/live/state``    gaze4hri.SessionState     subject, trial, target, status, recording
                            (JSON)                    (the recorder's own diagnostics), last fault
==========================  ========================  ==========================================

The bus callbacks run on the publishers' threads (the camera driver's among them), so
they only keep the newest bytes of each topic; one worker thread decodes and sends
at its own rate. A slow or absent client therefore never slows the session: the
server drops the oldest queued messages per client (its ``message_backlog_size``).
Loopback (127.0.0.1) by default: bind another address only on a trusted lab network
(the protocol has no authentication).

Geometry: the world poses of the scene come from the session's calibration snapshot
(``<session>/calibration``: registration world -> base, hand-eye tool0 -> camera, the
surveyed targets, the subject's eye-head offset), the robot's tool0 pose in ``base``
(/robot/tcp_pose) and the head band in ``world``; ground truth is the same composition
as ``gaze4hri_core.groundtruth`` (camera = registration x forward kinematics x
hand-eye, eye midpoint = head band x eye-head offset). Timestamps are the host's wall
clock at sending (a live display; the recorded bags keep the capture stamps).
"""
from __future__ import annotations

import json
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np
from gaze4hri_core.commands import pip_install
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.session import FRAMES, Topics

from .live_scene import scene_entities

__all__ = ["LiveView", "start_live_view", "LiveTopics", "MSG_TYPES", "STATE_SCHEMA", "parse_address", "DEFAULT_ADDRESS",
           "SUBPROTOCOL", "SUBPROTOCOL_HINT"]

DEFAULT_ADDRESS = "127.0.0.1:8765"
#: the one WebSocket subprotocol foxglove-sdk's server accepts (rust/foxglove/src/websocket/
#: handshake.rs, SUBPROTOCOL; since sdk 0.5.0, PR #347, a client that does not offer it gets
#: HTTP 400, and no server option or later release on PyPI up to 0.30.3 accepts the older
#: foxglove.websocket.v1); docs/visualisation.md, "Which Foxglove clients connect"
SUBPROTOCOL = "foxglove.sdk.v1"
SUBPROTOCOL_HINT = ("needs a client offering foxglove.sdk.v1: the current Foxglove app, Lichtblick >= 1.22.1; "
                    "the open-source Foxglove Studio 1.x and Lichtblick < 1.22.1 offer only foxglove.websocket.v1: "
                    "refused")
GAZE_TOPIC = "/gaze4hri/gaze"  # the live gaze node's estimate (nodes/gaze_node.GazeTopics.GAZE)


_FINAL_STATE_GRACE_S = 0.3  # LiveView.stop: the last state's time to go out before the server closes

class LiveTopics:
    IMAGE = "/gaze4hri/live/image"
    SCENE = "/gaze4hri/live/scene"
    STATE = "/gaze4hri/live/state"


#: channel -> schema name (what the server advertises)
MSG_TYPES = {LiveTopics.IMAGE: "foxglove.RawImage", LiveTopics.SCENE: "foxglove.SceneUpdate",
             LiveTopics.STATE: "gaze4hri.SessionState"}

STATE_SCHEMA = {
    "title": "gaze4hri.SessionState",
    "type": "object",
    "properties": {
        "subject": {"type": "string"},
        "trial": {"type": "string", "description": "the trial prompted or recording ('' before the first)"},
        "target": {"type": "string"},
        "status": {"type": "string", "description": "starting | waiting (prompt) | recording | stopped | fault"},
        "recording": {"type": "boolean", "description": "the recorder has a bag open (its own diagnostics)"},
        "recorder_trial": {"type": "string"},
        "fault": {"type": "string", "description": "the last fault event of the current trial ('' when none)"},
        "last_event": {"type": "string"},
        "frames": {"type": "integer", "description": "camera frames seen by the live view"},
        "wall_time": {"type": "number"},
        "last_error": {"type": "string",
                       "description": "the live view's own last error ('' when none): it never stops the session"},
    },
}


def parse_address(value: str | None) -> tuple[str, int] | None:
    """``HOST:PORT``, ``PORT`` or ``off`` -> (host, port) or None; one-line error otherwise."""
    v = str(value or "").strip()
    if v.lower() in ("", "off", "false", "no", "none"):
        return None
    host, _, port = v.rpartition(":")
    host = host or "127.0.0.1"
    try:
        p = int(port)
    except ValueError:
        p = -1
    if not 0 <= p <= 65535 or not host:
        raise Gaze4HRIError(f"invalid live view address {value!r}", "--live-view",
                            "use HOST:PORT (e.g. 127.0.0.1:8765), PORT, or off")
    return host, p


def _q_to_R(q) -> np.ndarray:
    from gaze4hri_core.transforms import quat_xyzw_to_matrix

    return np.asarray(quat_xyzw_to_matrix(np.asarray(q, float)), float)


class LiveView:
    """The Foxglove server of one session (see the module docstring).

    ``start()`` binds the server (a taken port: Gaze4HRIError with the fix) and starts
    the worker, before the session's nodes exist; ``attach()`` subscribes to the bus (or
    the node) once they do; ``stop()`` ends both. ``port`` is the bound port (useful with
    port 0). Image and scene are encoded only while a client subscribes to them.
    """

    def __init__(self, bus=None, node=None, *, host: str = "127.0.0.1", port: int = 8765, subject: str = "",
                 session_dir: Path | None = None, calibration_dir: Path | None = None, image_hz: float = 5.0,
                 scene_hz: float = 10.0, max_width: int = 960):
        self.bus, self.node = bus, node
        self.host, self.port = host, int(port)
        self.subject = subject
        self.session_dir = Path(session_dir) if session_dir else None
        self.calibration_dir = Path(calibration_dir) if calibration_dir else None
        self.image_hz, self.scene_hz = float(image_hz), float(scene_hz)
        self.max_width = int(max_width)
        self._latest: dict[str, bytes] = {}
        self._fresh: set[str] = set()
        self._events: deque[bytes] = deque(maxlen=256)
        self._diags: deque[bytes] = deque(maxlen=64)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._server = None
        self._subs: list = []
        self._cal = None
        self._cal_tried = 0.0
        self._K: np.ndarray | None = None
        self._wh: tuple[int, int] | None = None
        self.frames = 0
        self.sent = {LiveTopics.IMAGE: 0, LiveTopics.SCENE: 0, LiveTopics.STATE: 0}
        self.state = {"subject": subject, "trial": "", "target": "", "status": "starting", "recording": False,
                      "recorder_trial": "", "fault": "", "last_event": "", "frames": 0, "wall_time": 0.0,
                      "last_error": ""}
        self._state_dirty = True

    # -- feeding ------------------------------------------------------------------
    TOPICS = (Topics.IMAGE, Topics.CAMERA_INFO, Topics.TCP_POSE, Topics.HEAD_POSE, GAZE_TOPIC)

    def _keep(self, topic: str, data: bytes) -> None:
        with self._lock:
            self._latest[topic] = bytes(data)
            self._fresh.add(topic)
            if topic == Topics.IMAGE:
                self.frames += 1

    def _on_event(self, _topic: str, data: bytes) -> None:
        self._events.append(bytes(data))

    def _on_diag(self, _topic: str, data: bytes) -> None:
        self._diags.append(bytes(data))

    #: published by a node that may run in another process (the live gaze node under
    #: ``ros2 launch gaze4hri_acq live_gaze.launch.py`` or a node host): taken over DDS even
    #: when the session's own streams come from its in-process bus
    DDS_TOPICS = (GAZE_TOPIC,)

    def _subscribe(self) -> None:
        routes = [(t, self._keep) for t in self.TOPICS]
        routes += [(Topics.EVENTS, self._on_event), (Topics.DIAGNOSTICS, self._on_diag)]
        if self.bus is not None:
            for topic, cb in routes:
                if self.node is None or topic not in self.DDS_TOPICS:
                    self.bus.subscribe(topic, cb)
            if self.node is None:
                return
            # an in-process gaze node's FastPublisher also publishes over DDS once this
            # subscription exists, so each estimate arrives once, whichever process sent it
            routes = [(t, cb) for t, cb in routes if t in self.DDS_TOPICS]
        if self.node is None:
            return
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import PoseStamped, Vector3Stamped
        from rclpy.qos import qos_profile_sensor_data
        from sensor_msgs.msg import CameraInfo, Image
        from std_msgs.msg import String

        types = {Topics.IMAGE: Image, Topics.CAMERA_INFO: CameraInfo, Topics.TCP_POSE: PoseStamped,
                 Topics.HEAD_POSE: PoseStamped, GAZE_TOPIC: Vector3Stamped, Topics.EVENTS: String,
                 Topics.DIAGNOSTICS: DiagnosticArray}
        for topic, cb in routes:
            self._subs.append(self.node.create_subscription(types[topic], topic, (lambda m, t=topic, c=cb: c(t, m)),
                                                            qos_profile_sensor_data, raw=True))

    # -- lifecycle ----------------------------------------------------------------
    def start(self) -> LiveView:
        try:
            import foxglove
            from foxglove.channels import RawImageChannel, SceneUpdateChannel
        except ImportError:
            raise Gaze4HRIError("the live view needs the foxglove-sdk package", "--live-view",
                                f"{pip_install('foxglove-sdk==0.30.3')} (requirements/base.txt), "
                                "or --live-view off") from None

        self._ctx = foxglove.Context()
        self._ch_image = RawImageChannel(LiveTopics.IMAGE, context=self._ctx)
        self._ch_scene = SceneUpdateChannel(LiveTopics.SCENE, context=self._ctx)
        self._ch_state = foxglove.Channel(LiveTopics.STATE, schema=STATE_SCHEMA, context=self._ctx)
        try:
            self._server = foxglove.start_server(name="gaze4hri live view", host=self.host, port=self.port,
                                                 context=self._ctx)
        except Exception as e:  # noqa: BLE001 - the SDK raises its own error types
            raise Gaze4HRIError(f"live view cannot listen on {self.host}:{self.port} ({e})", "--live-view",
                                "pass another port (--live-view 127.0.0.1:8766) or --live-view off") from None
        self.port = int(self._server.port)
        self._thread = threading.Thread(target=self._loop, name="gaze4hri-live-view", daemon=True)
        self._thread.start()
        return self

    def attach(self, bus=None, node=None) -> LiveView:
        """Feed the view from the session's in-process ``bus`` or, without one, from raw
        DDS subscriptions on ``node`` (the orchestrator's); with both, the bus for the
        session's streams and ``node`` for DDS_TOPICS (the gaze estimate of a node in
        another process)."""
        self.bus, self.node = bus, node
        self._subscribe()
        return self

    @property
    def url(self) -> str:
        return f"ws://{self.host}:{self.port}"

    def stop(self) -> None:
        self._stop.set()
        if self.bus is not None:
            self.bus.unsubscribe_all(self)
        for s in self._subs:
            try:
                self.node.destroy_subscription(s)
            except Exception:  # noqa: BLE001 - the node may be gone
                pass
        self._subs = []
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        if self._server is not None:
            # the session's end, said once more: the stack is closed (no bag open), so the
            # last state never shows a recording the recorder's 2 Hz diagnostics had not yet ended
            try:
                self._drain()
                self.state["recording"] = False
                if not str(self.state.get("status", "")).startswith("stopped"):
                    self.state["status"] = "stopped (session ended)"
                self._send_state()
                # the server's stop closes every connection at once: give the final state a
                # moment to reach the clients (a loaded machine lost it: the last state a
                # client had was a periodic one still saying recording)
                time.sleep(_FINAL_STATE_GRACE_S)
            except Exception:  # noqa: BLE001 - the view must never fail the session's end
                pass
            self._server.stop()
            self._server = None

    def __enter__(self) -> LiveView:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- the worker ---------------------------------------------------------------
    def _loop(self) -> None:
        next_img = next_scene = next_state = 0.0
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                self._drain()
                if now >= next_img and self._ch_image.has_sinks():
                    next_img = now + 1.0 / self.image_hz
                    self._send_image()
                if now >= next_scene and self._ch_scene.has_sinks():
                    next_scene = now + 1.0 / self.scene_hz
                    self._send_scene()
                if self._state_dirty or now >= next_state:
                    next_state = now + 0.5
                    self._send_state()
            except Exception as e:  # noqa: BLE001 - the view must never end the session
                self.state["last_error"] = f"{type(e).__name__}: {e}"
            self._stop.wait(0.02)

    def _take(self, topic: str) -> bytes | None:
        with self._lock:
            if topic not in self._fresh:
                return None
            self._fresh.discard(topic)
            return self._latest.get(topic)

    def _peek(self, topic: str) -> bytes | None:
        with self._lock:
            return self._latest.get(topic)

    def _drain(self) -> None:
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.serialization import deserialize_message
        from std_msgs.msg import String

        while self._events:
            raw = self._events.popleft()
            try:
                e = json.loads(deserialize_message(raw, String).data)
            except (ValueError, TypeError):
                continue
            self._apply_event(e)
        while self._diags:
            arr = deserialize_message(self._diags.popleft(), DiagnosticArray)
            for st in arr.status:
                if st.name != "gaze4hri/recorder":
                    continue
                kv = {k.key: k.value for k in st.values}
                rec = kv.get("recording") == "True"
                if rec != self.state["recording"] or kv.get("trial", "") != self.state["recorder_trial"]:
                    self.state["recording"] = rec
                    self.state["recorder_trial"] = "" if kv.get("trial") in (None, "None") else kv.get("trial", "")
                    self._state_dirty = True

    def _apply_event(self, e: dict) -> None:
        ev = str(e.get("event", ""))
        s = self.state
        s["last_event"] = ev
        if ev in ("prompt", "start"):
            s["trial"], s["target"] = str(e.get("trial", "")), str(e.get("target", ""))
            s["status"] = "waiting" if ev == "prompt" else "recording"
            if ev == "prompt":
                s["fault"] = ""
            self._load_calibration(force=self._cal is None or self._cal.T_head_eye is None)
        elif ev == "stop":
            s["status"] = "stopped" + (f" ({e['reason']})" if e.get("reason") else "")
        elif ev == "fault":
            s["status"] = "fault"
            s["fault"] = f"{e.get('source', 'device')}: {e.get('reason', '')}"
        self._state_dirty = True

    # -- geometry -----------------------------------------------------------------
    def _load_calibration(self, force: bool = False) -> None:
        now = time.monotonic()
        if self._cal is not None and not force:
            return
        if not force and now - self._cal_tried < 2.0:
            return
        self._cal_tried = now
        from gaze4hri_core.calibration import load_calibration
        from gaze4hri_core.device_config import DEFAULT_CALIBRATION

        dirs = [d for d in ((self.session_dir / "calibration") if self.session_dir else None,
                            self.calibration_dir, Path(DEFAULT_CALIBRATION)) if d is not None]
        for d in dirs:
            for subj in (self.subject or None, None):
                try:
                    self._cal = load_calibration(d, subj)
                    return
                except (Gaze4HRIError, OSError, ValueError):
                    continue

    def _pose(self, topic: str):
        raw = self._peek(topic)
        if raw is None:
            return None
        from geometry_msgs.msg import PoseStamped
        from rclpy.serialization import deserialize_message

        m = deserialize_message(raw, PoseStamped)
        p, q = m.pose.position, m.pose.orientation
        return _q_to_R((q.x, q.y, q.z, q.w)), np.array([p.x, p.y, p.z], float)

    def geometry(self) -> dict:
        """World-frame positions (m) of what the scene shows; keys absent when unknown."""
        self._load_calibration()
        cal = self._cal
        out: dict = {}
        if cal is None:
            return out
        out["targets"] = {k: np.asarray(v, float) for k, v in cal.targets.items()}
        Rwb, twb = cal.T_world_base.R, cal.T_world_base.t
        tcp = self._pose(Topics.TCP_POSE)
        if tcp is not None:
            Rbt, tbt = tcp
            Rwt, twt = Rwb @ Rbt, Rwb @ tbt + twb
            out["tool0"] = (Rwt, twt)
            Rtc, ttc = cal.T_tool0_camera.R, cal.T_tool0_camera.t
            out["camera"] = (Rwt @ Rtc, Rwt @ ttc + twt)
        head = self._pose(Topics.HEAD_POSE)
        if head is not None:
            Rwh, twh = head
            out["head"] = (Rwh, twh)
            if cal.T_head_eye is not None:
                out["eye"] = Rwh @ cal.T_head_eye.t + twh
            else:  # no eye-head file yet (calibrating): the nominal offset below the band
                out["eye"] = twh - np.array([0.0, 0.0, cal.head_band_above_eye_m])
        tgt = self.state.get("target", "")
        if tgt == "camera" and "camera" in out:
            out["target"] = out["camera"][1]
        elif tgt in out["targets"]:
            out["target"] = out["targets"][tgt]
        return out

    def _intrinsics(self):
        raw = self._take(Topics.CAMERA_INFO)
        if raw is not None:
            from rclpy.serialization import deserialize_message
            from sensor_msgs.msg import CameraInfo

            m = deserialize_message(raw, CameraInfo)
            self._K = np.asarray(m.k, float).reshape(3, 3)
            self._wh = (int(m.width), int(m.height))
        if self._K is None and self._cal is not None:
            i = self._cal.intrinsics
            self._K, self._wh = np.asarray(i.K, float), (int(i.width), int(i.height))
        return self._K, self._wh

    # -- sending ------------------------------------------------------------------
    def _stamp(self):
        from foxglove.messages import Timestamp

        return Timestamp.from_epoch_secs(time.time())

    def _send_image(self) -> None:
        raw = self._take(Topics.IMAGE)
        if raw is None:
            return
        from foxglove.messages import RawImage
        from rclpy.serialization import deserialize_message
        from sensor_msgs.msg import Image

        m = deserialize_message(raw, Image)
        h, w, step = int(m.height), int(m.width), int(m.step)
        ch = {"rgb8": 3, "bgr8": 3, "mono8": 1}.get(m.encoding)
        if ch is None or h * step > len(m.data):
            return
        img = np.frombuffer(bytes(m.data), np.uint8)[: h * step].reshape(h, step)[:, : w * ch].reshape(h, w, ch)
        k = -(-w // self.max_width)  # integer subsampling: no resampling cost on the camera's machine
        if k > 1:
            img = img[::k, ::k]
        img = np.ascontiguousarray(img)
        self._ch_image.log(RawImage(timestamp=self._stamp(), frame_id=FRAMES["camera"], width=img.shape[1],
                                    height=img.shape[0], encoding=m.encoding, step=img.shape[1] * ch,
                                    data=img.tobytes()))
        self.sent[LiveTopics.IMAGE] += 1

    def _send_state(self) -> None:
        self.state["frames"] = int(self.frames)
        self.state["wall_time"] = time.time()
        self._ch_state.log({k: v for k, v in self.state.items() if k in STATE_SCHEMA["properties"]})
        self._state_dirty = False
        self.sent[LiveTopics.STATE] += 1

    def _gaze_estimate(self):
        raw = self._peek(GAZE_TOPIC)
        if raw is None:
            return None
        from geometry_msgs.msg import Vector3Stamped
        from rclpy.serialization import deserialize_message

        v = deserialize_message(raw, Vector3Stamped).vector
        g = np.array([v.x, v.y, v.z], float)
        return g if np.isfinite(g).all() and np.linalg.norm(g) > 0 else None

    def _send_scene(self) -> None:
        geo = self.geometry()
        if not geo:
            return
        K, wh = self._intrinsics()
        gaze = self._gaze_estimate() if "eye" in geo and "camera" in geo else None
        ents = scene_entities(geo, ts=self._stamp(), frame=FRAMES["world"], current_target=self.state.get("target", ""),
                              K=K, wh=wh, gaze=gaze)
        from foxglove.messages import SceneUpdate

        self._ch_scene.log(SceneUpdate(entities=ents))
        self.sent[LiveTopics.SCENE] += 1


def start_live_view(address: str, *, subject: str = "", session_dir: Path | None = None,
                    calibration_dir: Path | None = None, default: bool = False, log=None) -> LiveView | None:
    """Bind the live view at ``address`` (``HOST:PORT``, ``PORT`` or ``off`` -> None).
    A taken port is one line (Gaze4HRIError) when the address was asked for; for the
    default address the OS picks a free port instead (two sessions on one machine), and
    ``log`` says which."""
    hp = parse_address(address)
    if hp is None:
        return None
    host, port = hp
    kw = {"subject": subject, "session_dir": session_dir, "calibration_dir": calibration_dir}
    try:
        view = LiveView(host=host, port=port, **kw).start()
    except Gaze4HRIError as e:
        if not default:
            raise
        if "foxglove-sdk" in str(e.line()):
            if log is not None:
                log(f"live view: off ({e.line()})")
            return None
        view = LiveView(host=host, port=0, **kw).start()
        if log is not None:
            log(f"live view: port {port} is taken, using {view.port}")
    if log is not None:
        log(f"live view: {view.url} (Foxglove: Open connection -> Foxglove WebSocket; "
            f"layout src/gaze4hri_acq/config/foxglove_layout.json; {SUBPROTOCOL_HINT})")
    return view
