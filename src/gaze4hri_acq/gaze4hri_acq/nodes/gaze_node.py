"""Live gaze node: any registered method on the camera stream, through the
benchmark's own method code (gaze4hri_bench.pipeline.single_frame: same detector and
tracker, same pre-processing, same ONNX Runtime session and decoding).

Subscribes to the camera image and CameraInfo, the head band and the robot tool pose
(head pose from motion capture when they arrive, else from face-mesh landmarks), and
publishes per processed frame, stamped with the frame's capture time:

  /gaze4hri/gaze          geometry_msgs/Vector3Stamped, unit gaze, camera optical frame
                          (NaN when the frame gave none: no face, no head pose)
  /gaze4hri/gaze_markers  visualization_msgs/MarkerArray: arrow from the eye midpoint
                          along the gaze, the eye midpoint, in the camera optical frame
  /gaze4hri/face_box      geometry_msgs/PolygonStamped: the tracked face box, 4 corners (px)
  /gaze4hri/scene_markers visualization_msgs/MarkerArray (latched, at configure): the
                          calibration's surveyed targets in the "world" frame
  /diagnostics            frames in, processed, dropped, latency (camera message in ->
                          gaze out), processing rate, head-pose source

The camera is never blocked: the image callback only swaps the newest frame into a
one-slot mailbox (O(1)); a worker thread takes the newest frame when it is free, so a
slow method drops frames and counts them (``dropped``) instead of queueing them.
The bench is imported lazily, at configure, so a session that hosts this node
unconfigured loads nothing of it.
"""
from __future__ import annotations

import math
import struct
import threading
import time
from collections import deque
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.session import FRAMES, Topics
from geometry_msgs.msg import Point, Point32, PolygonStamped, PoseStamped, Vector3Stamped
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn
from sensor_msgs.msg import CameraInfo, Image
from visualization_msgs.msg import Marker, MarkerArray

from ._bus import FastPublisher, IntraProcessBus
from .common import (
    QOS_LATCHED,
    QOS_RELIABLE,
    QOS_SENSOR,
    ControlMixin,
    Param,
    declare_params,
    diag_array,
    diag_status,
    read_params,
    stamp_msg,
    subscribe,
)

__all__ = ["GazeNode", "PARAMS", "GazeTopics", "MSG_TYPES", "decode_image_cdr", "target_markers"]


class GazeTopics:
    """Topics the live gaze node publishes (not recorded in trial bags)."""

    GAZE = "/gaze4hri/gaze"  # geometry_msgs/msg/Vector3Stamped, camera optical frame
    MARKERS = "/gaze4hri/gaze_markers"  # visualization_msgs/msg/MarkerArray
    FACE_BOX = "/gaze4hri/face_box"  # geometry_msgs/msg/PolygonStamped (pixels)
    SCENE = "/gaze4hri/scene_markers"  # visualization_msgs/msg/MarkerArray, latched: surveyed targets in "world"


MSG_TYPES = {
    GazeTopics.GAZE: "geometry_msgs/msg/Vector3Stamped",
    GazeTopics.MARKERS: "visualization_msgs/msg/MarkerArray",
    GazeTopics.FACE_BOX: "geometry_msgs/msg/PolygonStamped",
    GazeTopics.SCENE: "visualization_msgs/msg/MarkerArray",
}

PARAMS = (
    Param("backend", "real", "where the frames come from (informational: the node only subscribes)",
          ("sim", "real", "replay")),
    Param("method", "puregaze_eth", "registered method name or alias (`gaze4hri-bench methods` lists them)"),
    Param("profile", "reference", "pipeline profile of the method (gaze4hri_bench.profiles: reference, study)"),
    Param("input", "best", "network input: the study's best one per method, a face crop, or data normalization",
          ("best", "crop", "rectified")),
    Param("models_dir", "", "folder of imported ONNX models; empty: $GAZE4HRI_MODELS or the repository's models/"),
    Param("device", "cpu", "ONNX Runtime device (never a silent fallback)", ("auto", "cpu", "cuda", "tensorrt")),
    Param("detector", "auto", "face detector (gaze4hri_bench.faces.detectors registry)"),
    Param("threads", 0, "ONNX Runtime intra-op threads; 0: its default", range=(0, 64)),
    Param("head_pose", "auto", "head pose source: motion capture when its poses arrive, else landmarks; or force one",
          ("auto", "mocap", "landmarks")),
    Param("calibration_dir", "",
          "calibration directory for the motion-capture head pose; empty: the repository's calibration/"),
    Param("subject", "default", "subject id of the eye-head calibration file subjects/<id>.yaml"),
    Param("pose_wait_s", 0.05, "longest wait for a head and robot pose after a frame's stamp (interpolation)",
          range=(0.0, 1.0)),
    Param("arrow_length_m", 0.4, "length of the gaze arrow marker (m)", range=(0.01, 5.0)),
    Param("frame_id", FRAMES["camera"], "frame id of the gaze, markers and box (the camera optical frame)"),
    Param("autostart", False, "configure and activate at start-up (live_gaze.launch.py sets it)"),
)


def decode_image_cdr(cdr: bytes | memoryview) -> tuple[int, str, np.ndarray]:
    """(stamp_ns, frame_id, image view) of a CDR sensor_msgs/Image (rgb8/bgr8/mono8),
    without copying the pixels (the layout written by nodes._cdr.encode_image)."""
    mv = memoryview(cdr)
    off = 4

    def align(n):
        nonlocal off
        off += (-(off - 4)) % n

    sec, nsec = struct.unpack_from("<iI", mv, off)
    off += 8

    def string():
        nonlocal off
        align(4)
        (n,) = struct.unpack_from("<I", mv, off)
        s = bytes(mv[off + 4: off + 4 + n - 1]).decode("utf-8")
        off += 4 + n
        return s

    frame_id = string()
    align(4)
    h, w = struct.unpack_from("<II", mv, off)
    off += 8
    enc = string()
    off += 1  # is_bigendian
    align(4)
    step, n = struct.unpack_from("<II", mv, off)
    off += 8
    ch = {"rgb8": 3, "bgr8": 3, "mono8": 1}.get(enc)
    if ch is None:
        raise Gaze4HRIError(f"image encoding {enc!r} not supported", Topics.IMAGE,
                            "publish rgb8 (what the camera node does)")
    img = np.frombuffer(mv[off: off + n], np.uint8).reshape(h, step)[:, : w * ch].reshape(h, w, ch)
    if enc == "bgr8":
        img = img[..., ::-1]
    elif enc == "mono8":
        img = np.repeat(img, 3, axis=2)
    return sec * 1_000_000_000 + nsec, frame_id, img


def target_markers(targets: dict, stamp_ns: int, frame_id: str = FRAMES["world"]) -> MarkerArray:
    """The surveyed targets as spheres with their names, in the motion-capture world."""
    arr = MarkerArray()
    for i, (name, p) in enumerate(sorted(targets.items())):
        for kind in (Marker.SPHERE, Marker.TEXT_VIEW_FACING):
            m = Marker()
            stamp_msg(m.header, stamp_ns, frame_id)
            m.ns, m.id, m.type, m.action = ("targets" if kind == Marker.SPHERE else "target_names"), i, kind, Marker.ADD
            lift = 0.0 if kind == Marker.SPHERE else 0.04
            m.pose.position = Point(x=float(p[0]), y=float(p[1]), z=float(p[2]) + lift)
            m.pose.orientation.w = 1.0
            m.scale.x = m.scale.y = m.scale.z = 0.025
            m.color.r, m.color.g, m.color.b, m.color.a = 1.0, 0.85, 0.1, 1.0
            if kind == Marker.TEXT_VIEW_FACING:
                m.text = str(name)
            arr.markers.append(m)
    return arr


class _Poses:
    """Recent stamped poses of one stream (thread-safe ring)."""

    def __init__(self, maxlen: int = 400):
        self._d: deque = deque(maxlen=maxlen)
        self._lock = threading.Lock()

    def add(self, msg: PoseStamped) -> None:
        t = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
        p, q = msg.pose.position, msg.pose.orientation
        with self._lock:
            self._d.append((t, (p.x, p.y, p.z), (q.x, q.y, q.z, q.w)))

    def latest_ns(self) -> int | None:
        with self._lock:
            return self._d[-1][0] if self._d else None

    def stream(self):
        from gaze4hri_bench.data.frame_truth import PoseStream

        with self._lock:
            items = list(self._d)
        if not items:
            return PoseStream.empty()
        return PoseStream(np.array([i[0] for i in items], np.int64), np.array([i[1] for i in items], float),
                          np.array([i[2] for i in items], float))


class GazeNode(ControlMixin, LifecycleNode):
    """Lifecycle node: build the method in on_configure, process in on_activate."""

    PARAMS = PARAMS

    def __init__(self, name: str = "gaze", *, bus: IntraProcessBus | None = None, context=None,
                 parameter_overrides=None, namespace: str = "", driver_factory=None, estimator_factory=None):
        from rclpy.parameter import Parameter

        overrides = [Parameter(k, value=v) for k, v in (parameter_overrides or {}).items()]
        super().__init__(name, context=context, parameter_overrides=overrides, namespace=namespace)
        self.control_name = name
        self.bus = bus
        self._estimator_factory = estimator_factory  # tests and benchmarks: wrap the estimator
        declare_params(self, self.PARAMS)
        self.params: dict = {}
        self.last_error: str | None = None
        self.estimator = None
        self.cal = None
        self._K: np.ndarray | None = None
        self._head, self._robot = _Poses(), _Poses()
        self._slot: tuple[float, bytes] | None = None
        self._cv = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._active = False
        self._subs: list = []
        self.received = self.processed = self.dropped = self.published = self.skipped = 0
        self.busy = False
        self.latencies_ms: deque[float] = deque(maxlen=300)
        self.stage_ms: dict[str, deque[float]] = {"pose_wait": deque(maxlen=300), "head_pose": deque(maxlen=300),
                                                  "estimate": deque(maxlen=300)}
        self._done_t: deque[float] = deque(maxlen=60)
        self.sources: dict[str, int] = {}
        self._recv_t: dict[int, float] = {}
        self._index = 0
        self._diag_pub = FastPublisher(self, DiagnosticArray, Topics.DIAGNOSTICS, QOS_RELIABLE, bus)
        self._init_control(bus)
        self._diag_timer = self.create_timer(1.0, self._publish_diag)
        self.on_fatal = None  # set by the process host (node_host.py): end the process with a code
        if self.get_parameter("autostart").value:
            self._autostart = self.create_timer(0.05, self._do_autostart)

    def _do_autostart(self) -> None:
        """configure + activate at start-up (live_gaze.launch.py); a failure is the
        process's end with a non-zero code, so the launch fails with the error line above
        it instead of idling silently (issue 21)."""
        self._autostart.cancel()
        if self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            if self.trigger_activate() == TransitionCallbackReturn.SUCCESS:
                return
        if self.on_fatal is not None:
            self.on_fatal(1)

    # ------------------------------------------------------------- lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self.params = p = read_params(self, self.PARAMS)
            if self._estimator_factory is not None:
                self.estimator = self._estimator_factory(p)
            else:
                try:
                    from gaze4hri_bench.pipeline.single_frame import FrameEstimator
                except ImportError as e:  # rclpy would turn it into a silent ERROR transition
                    raise Gaze4HRIError(f"live gaze: the benchmark package does not import in this Python ({e})",
                                        "gaze node configure",
                                        "install it beside the workspace: "
                                        "pip install -e src/gaze4hri_core -e src/gaze4hri_bench "
                                        "in the Python that runs ros2 launch (README, Lab install)") from None

                self.estimator = FrameEstimator(p["method"], p["input"], p["models_dir"] or None, p["device"],
                                                p["detector"], p["threads"] or None,
                                                landmarks=p["head_pose"] != "mocap", profile=p["profile"])
                skipped = self.estimator.offline_only()
                if skipped:
                    self.get_logger().warning(f"profile {p['profile']}: {', '.join(skipped)} need the whole trial; "
                                              "applied by `gaze4hri-bench run`, not live")
                self.estimator.warm_up()  # model graphs built now, not on the first frame
            self.cal = None
            if p["head_pose"] != "landmarks":
                from gaze4hri_core.calibration import load_calibration
                from gaze4hri_core.device_config import DEFAULT_CALIBRATION

                cal_dir = Path(p["calibration_dir"]) if p["calibration_dir"] else DEFAULT_CALIBRATION
                self.cal = load_calibration(cal_dir, p["subject"])
                self._warm_geometry()
        except Gaze4HRIError as e:
            self.last_error = e.line()
            self.get_logger().error(self.last_error)
            self.estimator = None
            return TransitionCallbackReturn.FAILURE
        self.last_error = None
        fid = p["frame_id"]
        self.frame_id = fid
        self.pub_gaze = FastPublisher(self, Vector3Stamped, GazeTopics.GAZE, QOS_SENSOR, self.bus, stream=True)
        self.pub_markers = FastPublisher(self, MarkerArray, GazeTopics.MARKERS, QOS_SENSOR, self.bus, stream=True)
        self.pub_box = FastPublisher(self, PolygonStamped, GazeTopics.FACE_BOX, QOS_SENSOR, self.bus, stream=True)
        self.pub_scene = FastPublisher(self, MarkerArray, GazeTopics.SCENE, QOS_LATCHED, self.bus)
        if self.cal is not None:
            self.pub_scene.publish(target_markers(self.cal.targets, time.time_ns()))
        self._subs = [
            subscribe(self, self.bus, Image, Topics.IMAGE, self._on_image, QOS_SENSOR, raw=True),
            subscribe(self, self.bus, CameraInfo, Topics.CAMERA_INFO, self._on_info, QOS_LATCHED),
            subscribe(self, self.bus, PoseStamped, Topics.HEAD_POSE, self._head.add, QOS_SENSOR),
            subscribe(self, self.bus, PoseStamped, Topics.TCP_POSE, self._robot.add, QOS_SENSOR),
        ]
        return TransitionCallbackReturn.SUCCESS

    def _warm_geometry(self) -> None:
        """One motion-capture head pose on made-up poses: imports and first-call costs
        are paid at configure, not by the first live frame."""
        from gaze4hri_bench.data.frame_truth import PoseStream
        from gaze4hri_bench.pipeline.single_frame import mocap_geometry

        t = np.array([0, 20_000_000], np.int64)
        s = PoseStream(t, np.zeros((2, 3)), np.tile([0.0, 0.0, 0.0, 1.0], (2, 1)))
        mocap_geometry(10_000_000, s, s, self.cal)

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop.clear()
        self._active = True
        self._thread = threading.Thread(target=self._work, name=f"{self.get_name()}-infer", daemon=True)
        self._thread.start()
        p = self.params
        self.get_logger().info(f"active: {p.get('method')} (input {p.get('input')}, profile {p.get('profile')}, "
                               f"head pose {p.get('head_pose')}); gaze on {GazeTopics.GAZE}")
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop_worker()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop_worker()
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop_worker()
        self._release()
        return TransitionCallbackReturn.SUCCESS

    def destroy_node(self):
        self._stop_worker()
        self._release()
        return super().destroy_node()

    def _release(self) -> None:
        for s in self._subs:
            if s is not None:
                try:
                    self.destroy_subscription(s)
                except Exception:  # noqa: BLE001 - tearing down
                    pass
        if self.bus is not None:
            self.bus.unsubscribe_all(self)
        self._subs = []
        if self.estimator is not None:
            self.estimator.close()
            self.estimator = None

    def _stop_worker(self) -> None:
        self._active = False
        self._stop.set()
        with self._cv:
            self._cv.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    # ------------------------------------------------------------- callbacks
    def _on_image(self, _topic: str, data: bytes) -> None:
        """Never blocks: the newest frame replaces an unprocessed one (counted dropped)."""
        if not self._active:
            return
        with self._cv:
            self.received += 1
            if self._slot is not None:
                self.dropped += 1
            self._slot = (time.monotonic(), bytes(data))
            self._cv.notify()

    def _on_info(self, msg: CameraInfo) -> None:
        self._K = np.asarray(msg.k, float).reshape(3, 3)

    # ---------------------------------------------------------------- worker
    def _work(self) -> None:
        while not self._stop.is_set():
            with self._cv:
                while self._slot is None and not self._stop.is_set():
                    self._cv.wait(0.1)
                if self._stop.is_set():
                    return
                t_in, data = self._slot
                self._slot = None
                self.busy = True
            try:
                self._process(t_in, data)
            except Gaze4HRIError as e:
                self.last_error = e.line()
                self.get_logger().error(self.last_error)
            except Exception as e:  # noqa: BLE001 - reported in diagnostics, the node keeps running
                self.last_error = f"gaze: {type(e).__name__}: {e}"
                self.get_logger().error(self.last_error)
            finally:
                self.busy = False

    def _geometry(self, t_ns: int) -> tuple[dict | None, str]:
        if self.cal is None or self._head.latest_ns() is None:
            return None, "no_mocap"
        t0 = time.monotonic()
        wait_until = t0 + self.params["pose_wait_s"]
        while time.monotonic() < wait_until and not self._stop.is_set():
            h, r = self._head.latest_ns(), self._robot.latest_ns()
            if h is not None and r is not None and h >= t_ns and r >= t_ns:
                break
            time.sleep(0.001)
        self.stage_ms["pose_wait"].append((time.monotonic() - t0) * 1e3)
        from gaze4hri_bench.pipeline.single_frame import mocap_geometry

        return mocap_geometry(t_ns, self._head.stream(), self._robot.stream(), self.cal)

    def _process(self, t_in: float, data: bytes) -> None:
        t_ns, _fid, img = decode_image_cdr(data)
        if self._K is None:
            self.skipped += 1  # counted: received = processed + dropped + skipped (+ the one in flight)
            self.last_error = "gaze: no CameraInfo received yet (waiting for /camera/color/camera_info)"
            return
        if self.last_error and self.last_error.startswith("gaze: no CameraInfo"):
            self.last_error = None
        K = self._K
        geo = None
        t0 = time.perf_counter()
        if self.params["head_pose"] != "landmarks":
            geo, _why = self._geometry(t_ns)
        t1 = time.perf_counter()
        idx = self._index
        self._index += 1
        self._recv_t[idx] = t_in
        self.processed += 1
        ests = self.estimator.step(idx, t_ns, img, K, geo)
        t2 = time.perf_counter()
        self.stage_ms["head_pose"].append((t1 - t0) * 1e3)
        self.stage_ms["estimate"].append((t2 - t1) * 1e3)
        for est in ests:
            self._publish(est)

    def _publish(self, est) -> None:
        fid = self.frame_id
        v = Vector3Stamped()
        stamp_msg(v.header, est.t_ns, fid)
        v.vector.x, v.vector.y, v.vector.z = (float(x) for x in est.gaze)
        self.pub_gaze.publish(v)
        self.pub_markers.publish(self._markers(est))
        if est.box is not None:
            b = PolygonStamped()
            stamp_msg(b.header, est.t_ns, fid)
            x1, y1, x2, y2 = (float(x) for x in est.box)
            b.polygon.points = [Point32(x=x, y=y, z=0.0) for x, y in ((x1, y1), (x2, y1), (x2, y2), (x1, y2))]
            self.pub_box.publish(b)
        now = time.monotonic()
        t_in = self._recv_t.pop(est.index, None)
        for k in [k for k in self._recv_t if k < est.index]:  # frames that never produced an estimate
            self._recv_t.pop(k, None)
        if t_in is not None:
            self.latencies_ms.append((now - t_in) * 1e3)
        self._done_t.append(now)
        self.sources[est.head_source] = self.sources.get(est.head_source, 0) + 1
        self.published += 1

    def _markers(self, est) -> MarkerArray:
        arr = MarkerArray()
        ok = bool(np.isfinite(est.gaze).all() and np.isfinite(est.eye).all())
        arrow = Marker()
        stamp_msg(arrow.header, est.t_ns, self.frame_id)
        arrow.ns, arrow.id, arrow.type = "gaze", 0, Marker.ARROW
        arrow.action = Marker.ADD if ok else Marker.DELETE
        if ok:
            a = est.eye
            b = est.eye + self.params["arrow_length_m"] * est.gaze
            arrow.points = [Point(x=float(v[0]), y=float(v[1]), z=float(v[2])) for v in (a, b)]
            arrow.scale.x, arrow.scale.y, arrow.scale.z = 0.01, 0.02, 0.03
            arrow.color.r, arrow.color.g, arrow.color.b, arrow.color.a = 1.0, 0.3, 0.1, 1.0
            arrow.pose.orientation.w = 1.0
        eye = Marker()
        stamp_msg(eye.header, est.t_ns, self.frame_id)
        eye.ns, eye.id, eye.type = "eye_midpoint", 1, Marker.SPHERE
        eye.action = Marker.ADD if np.isfinite(est.eye).all() else Marker.DELETE
        if eye.action == Marker.ADD:
            eye.pose.position = Point(x=float(est.eye[0]), y=float(est.eye[1]), z=float(est.eye[2]))
            eye.pose.orientation.w = 1.0
            eye.scale.x = eye.scale.y = eye.scale.z = 0.03
            eye.color.r, eye.color.g, eye.color.b, eye.color.a = 0.1, 0.6, 1.0, 1.0
        arr.markers = [arrow, eye]
        return arr

    # ----------------------------------------------------------- diagnostics
    def rate_hz(self) -> float:
        d = list(self._done_t)
        return (len(d) - 1) / (d[-1] - d[0]) if len(d) >= 2 and d[-1] > d[0] else 0.0

    def stats(self) -> dict:
        lat = sorted(self.latencies_ms)
        def pct(q):
            return (lat[min(len(lat) - 1, int(math.ceil(q * len(lat))) - 1)] if lat else float("nan"))
        return {"method": self.params.get("method"), "received": self.received, "processed": self.processed,
                "dropped": self.dropped, "skipped_no_camera_info": self.skipped, "published": self.published,
                "latency_ms_median": round(pct(0.5), 2),
                "latency_ms_p95": round(pct(0.95), 2), "rate_hz": round(self.rate_hz(), 2),
                **{f"{k}_ms_median": round(float(np.median(v)), 2) if v else float("nan")
                   for k, v in self.stage_ms.items()},
                **{f"head_pose_{k}": v for k, v in sorted(self.sources.items())}}

    def _publish_diag(self) -> None:
        if self.estimator is None and not self.last_error:
            return  # hosted unconfigured (e.g. in a session): nothing to report, nothing recorded
        level = 2 if self.last_error else (1 if self.dropped else 0)
        msg = self.last_error or (f"dropping frames: {self.dropped} of {self.received}" if self.dropped else "ok")
        st = diag_status(f"gaze4hri/{self.get_name()}", level, msg, self.stats())
        self._diag_pub.publish(diag_array(time.time_ns(), [st]))

    def handle_ping(self, req: dict) -> dict:
        return {"state": self._state_machine.current_state[1], "error": self.last_error, **self.stats()}
