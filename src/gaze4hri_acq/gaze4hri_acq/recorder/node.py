"""Recorder node: on ``start`` opens the trial's bag and writes every recorded topic
as the CDR bytes it received (raw subscriptions or the in-process bus: no
deserialize/serialize), on ``stop`` closes it and acknowledges with counts.

A writer thread drains a byte-bounded queue so disk latency never blocks the
devices; with ``backpressure`` (simulation) a full queue makes the publisher wait
instead of dropping, so the simulated session is lossless by construction and its
speed is the recorder's. Log time = the message's header stamp (capture time on the
host or simulation clock); messages without a header take the latest stamp seen.

Disk full (ENOSPC, or the ``fail_after_bytes`` test hook): stop the robot through
/robot/stop, keep the bag written so far (repaired in place), publish a fault event
and refuse further trials until the operator frees space. A ballast file (ballast.py)
reserved at each trial's start is deleted first, so the bag's summary, metadata.yaml
and session.yaml fit even when another process took every free byte.
"""
from __future__ import annotations

import dataclasses
import json
import queue
import threading
import time
from collections import deque
from pathlib import Path

from diagnostic_msgs.msg import DiagnosticArray
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.session import MSG_TYPES, Topics
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_msgs.msg import String
from std_srvs.srv import Trigger

from ..nodes._bus import FastPublisher, IntraProcessBus
from ..nodes._cdr import header_stamp_ns, serialize
from ..nodes.common import (
    CONTROL,
    QOS_LATCHED,
    QOS_RELIABLE,
    QOS_SENSOR,
    ControlMixin,
    Param,
    declare_params,
    diag_array,
    diag_status,
    disk_free_bytes,
    read_params,
    subscribe,
    to_json,
)
from .bag import COMPRESSIONS, DiskFullError, TrialBag, bag_qos
from .ballast import DiskBallast
from .tf import (
    TF,
    TF_STATIC,
    TF_TYPES,
    LiveTf,
    is_pose_topic,
    pose_to_tf,
    static_cdr,
    static_transforms,
    tf_qos,
    tf_static_qos,
)

__all__ = ["RecorderNode", "PARAMS", "RECORDED_TOPICS"]

# Headerless types: log time comes from the latest stamp of a companion topic (frame
# metadata and blink truth travel with the image they describe) or the latest stamp seen.
_NO_HEADER = {"std_msgs/msg/String", "diagnostic_msgs/msg/DiagnosticStatus"}
_STAMP_FROM = {Topics.FRAME_META: Topics.IMAGE, Topics.SIM_BLINK_TRUTH: Topics.IMAGE}
# Status topics are logged at their receipt on the session clock (rosbag2's receive
# time), since nodes stamp them from timers that may run on the host clock.
_RECEIPT_TIME = {Topics.DIAGNOSTICS, Topics.SAFETY}
# subscribed; /tf and /tf_static are derived (tf.py)
RECORDED_TOPICS = {t: ty for t, ty in MSG_TYPES.items() if t not in TF_TYPES}
_POSE_TAIL_NS = 20_000_000
# Streams published with each camera frame, right after its image: a frame is kept or
# dropped whole, and a stop waits until each of them has caught up with the last image
# queued (_await_frame_companions, _in_window)
_FRAME_COMPANIONS = (Topics.FRAME_META, Topics.SIM_GAZE_TRUTH, Topics.SIM_BLINK_TRUTH)
_COMPANION_WAIT_S = 1.0
#: a pose stream this far behind the last frame at a stop is stalled (tracking lost, a
#: device gone) and not waited for; a loaded machine delays a live stream's delivery to
#: the recorder by well over 0.1 s of stamps, which must still be waited for
_POSE_STALLED_NS = 1_000_000_000

PARAMS = (
    Param("compression", "none", "MCAP chunk compression (lossless either way)", COMPRESSIONS),
    Param("flush_interval_s", 1.0, "close the pending chunk and flush at least this often (s): what a crash can lose",
          range=(0.05, 60.0)),
    Param("queue_bytes", 768 * 1024 * 1024, "bytes buffered between the subscriptions and the writer thread",
          range=(16 * 1024 * 1024, 4 * 1024**3)),
    Param("backpressure", False,
          "when the queue is full make publishers wait (simulation) instead of dropping (live devices)"),
    Param("record_sim_truth", True, "record /sim/truth/* topics when present"),
    Param("min_free_bytes", 256 * 1024 * 1024, "refuse to start a trial with less free disk than this, unless the "
          "start request estimates the trial's bytes", range=(0, 1 << 50)),
    Param("reserve_bytes", 64 * 1024 * 1024, "stop writing a trial when free disk would fall below this, so the bag, "
          "its metadata and session.yaml still fit (bytes)", range=(0, 1 << 40)),
    Param("ballast_bytes", 16 * 1024 * 1024, "bytes reserved in a file beside the bags while a trial records, "
          "released at disk full so the bag and session.yaml can be closed whoever filled the disk (0: off)",
          range=(0, 1 << 34)),
    Param("fail_after_bytes", -1, "test hook: behave as if the disk filled after this many bytes in a bag (-1: off)",
          range=(-1, 1 << 50)),
)


@dataclasses.dataclass(frozen=True)
class _Barrier:
    """A stop's marker in the write queue: set once everything queued before it is
    written; what follows it for the same bag is dropped."""

    event: threading.Event
    bag: TrialBag


class RecorderNode(ControlMixin, Node):
    """Writes one bag per trial; controlled through /gaze4hri/control."""

    def __init__(self, name: str = "recorder", *, bus: IntraProcessBus | None = None, context=None,
                 parameter_overrides=None):
        overrides = [Parameter(k, value=v) for k, v in (parameter_overrides or {}).items()]
        super().__init__(name, context=context, parameter_overrides=overrides)
        self.control_name = name
        declare_params(self, PARAMS)
        self.params = read_params(self, PARAMS)
        self.bus = bus
        self.bag: TrialBag | None = None
        self.trial: str | None = None
        self.fault: str | None = None
        self.dropped_messages = 0
        self.latest_ns = 0
        self._latched: dict[str, tuple[int, bytes]] = {}
        self._recent: dict[str, deque] = {}  # pose topic -> its latest samples, for the trial window's head
        self._ballast: DiskBallast | None = None  # held while a trial records (ballast.py)
        self._last_by_topic: dict[str, int] = {}
        self._frame_stamps: dict[str, deque] = {}  # frame-bound topic -> stamps accepted into this trial
        self._frames_cv = threading.Condition()
        self._stop_lock = threading.Lock()
        self._pose_latest: dict[str, int] = {}  # newest stamp seen per pose stream (_await_pose_tails)
        self._start_ns = 0
        self._end_ns: int | None = None
        self._q: queue.Queue = queue.Queue()
        self._q_bytes = 0
        self._q_cv = threading.Condition()
        self._lock = threading.Lock()
        self._put_lock = threading.Lock()  # no queue item between a stop's barrier and its bag's close
        self._recent_lock = threading.Lock()
        self._writer_done = threading.Event()
        self._writer_error: BaseException | None = None
        self._types = {t: ty for t, ty in RECORDED_TOPICS.items()
                       if self.params["record_sim_truth"] or not t.startswith("/sim/")}
        for topic, ty in self._types.items():
            qos = (QOS_LATCHED if topic == Topics.CAMERA_INFO
                   else (QOS_SENSOR if topic in (Topics.IMAGE,) else QOS_RELIABLE))
            subscribe(self, bus, _msg_class(ty), topic, self._on_data, qos, raw=True)
        self._events = FastPublisher(self, String, Topics.EVENTS, QOS_RELIABLE, bus)
        self._status = FastPublisher(self, DiagnosticArray, Topics.DIAGNOSTICS, QOS_RELIABLE, bus)
        self._robot_stop = self.create_client(Trigger, "/robot/stop")
        self._live_tf = LiveTf(self)  # /tf and /tf_static on the graph: the bytes the bags get (tf.py)
        self._init_control(bus)
        self.create_timer(0.5, self._publish_status)
        self._thread = threading.Thread(target=self._writer, name="recorder-writer", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ data path
    def _on_data(self, topic: str, data: bytes) -> None:
        ty = self._types[topic]
        if ty in _NO_HEADER or topic in _RECEIPT_TIME:
            t = self._last_by_topic.get(_STAMP_FROM.get(topic, ""), self.latest_ns)
            stamped = topic in _STAMP_FROM  # cut with the frame it describes
        else:
            t = header_stamp_ns(data)
            self._last_by_topic[topic] = t
            if t > self.latest_ns:
                self.latest_ns = t
            stamped = True
        if topic == Topics.CAMERA_INFO:
            self._latched[topic] = (t, data)
        pose = stamped and is_pose_topic(topic)
        tf = None
        if pose and self._live_tf.wanted():  # live /tf for every pose, inside a trial or not, while someone listens
            tf = pose_to_tf(topic, data)
            self._live_tf.publish(tf)
        with self._recent_lock:  # a pose is either in handle_start's pre-roll or sees its bag, never both
            if pose:
                self._recent.setdefault(topic, deque(maxlen=16)).append((t, data))
            bag = self.bag
        try:
            self._to_bag(bag, topic, t, data, tf, stamped, pose)
        finally:
            if pose:  # after the pose is queued (or dropped): a stop that saw it puts its barrier behind it
                with self._frames_cv:  # handle_stop waits for each pose stream to pass the last frame
                    self._pose_latest[topic] = max(t, self._pose_latest.get(topic, t))
                    self._frames_cv.notify_all()

    def _to_bag(self, bag, topic: str, t: int, data: bytes, tf: bytes | None, stamped: bool, pose: bool) -> None:
        """One message into the open trial's queue, cut to the trial window."""
        if bag is None:
            return
        # the trial is the time window [start_ns, end_ns] of the session clock: a stream
        # lagging behind (a camera rendering slower than the sim clock) is cut at the same stamps
        # pose streams run 20 ms past the window's end and from 20 ms before its start
        # (longer than the robot's 8 ms and the motion capture's 10 ms periods), so the
        # first and the last frame are bracketed by poses on both sides
        # frame-bound streams (images, their metadata and truth) end with the window
        tail = _POSE_TAIL_NS if pose else 0
        head = _POSE_TAIL_NS if pose else 0
        late = self._end_ns is not None and t > self._window_end(pose) + tail and not self._image_taken(topic, t)
        if stamped and (t < self._start_ns - head or late):
            return
        if not pose:
            t = max(t, self._start_ns)
        # an image is announced before it is queued and its companions after: a stop
        # that has seen every companion of the last image puts its barrier behind all of them
        if topic == Topics.IMAGE:
            self._note_frame(topic, t)
        self._enqueue(bag, topic, t, data, tf)
        if topic in _FRAME_COMPANIONS:
            self._note_frame(topic, t)

    def _window_end(self, pose: bool, kept=()) -> int:
        """Where the window ends for a stream: poses run to the last image written or queued
        when that is later (an image the writer kept before the stop set the end stays, and
        the ground truth needs a pose after it), every other stream to the end itself."""
        end = self._end_ns
        if not pose:
            return end
        imgs = self._frame_stamps.get(Topics.IMAGE)
        return max(end, kept[-1] if kept else end, imgs[-1] if imgs else end)

    def _image_taken(self, topic: str, t: int) -> bool:
        """Whether ``topic`` is a frame companion whose image (same stamp) was queued: a
        frame past the window's end that the writer already kept (the end is known only
        at the stop) keeps its metadata and truth; the writer decides (_in_window)."""
        if topic not in _FRAME_COMPANIONS:
            return False
        with self._frames_cv:
            return t in self._frame_stamps.get(Topics.IMAGE, ())

    def _note_frame(self, topic: str, t: int) -> None:
        with self._frames_cv:
            self._frame_stamps.setdefault(topic, deque(maxlen=64)).append(t)
            self._frames_cv.notify_all()

    def _await_frame_companions(self, timeout_s: float = _COMPANION_WAIT_S) -> list[str]:
        """Wait until each frame-bound stream (metadata, simulator truth) has delivered its
        message for the last image queued: the camera publishes them one after another,
        so a stop arriving between them would keep a frame without its metadata or truth.
        Returns the streams still behind at the timeout (a camera that stalled)."""
        def behind() -> list[str]:
            imgs = self._frame_stamps.get(Topics.IMAGE)
            if not imgs:
                return []
            last = imgs[-1]
            return [c for c in _FRAME_COMPANIONS if c in self._frame_stamps and self._frame_stamps[c][-1] < last]

        with self._frames_cv:
            self._frames_cv.wait_for(lambda: not behind(), timeout=timeout_s)
            return behind()

    def _await_pose_tails(self, timeout_s: float = _COMPANION_WAIT_S) -> list[str]:
        """Wait until each streaming pose topic has queued a pose stamped at or after the
        last image queued and the window's end: the orchestrator stops once the streams reached the trial's end in
        its own subscription, and the recorder's copy of the newest poses can still be in
        flight; the ground truth needs a pose on both sides of every frame (the 20 ms pose
        tail, _POSE_TAIL_NS). A stream already more than 1 s behind that frame (tracking
        lost, a stalled device) is not waited for; returns the streams still behind."""
        def behind() -> list[str]:
            imgs = self._frame_stamps.get(Topics.IMAGE)
            if not imgs:
                return []
            # an image stamped up to the window's end can still be on its way: the poses must
            # pass the end too (images never pass it: frame-bound streams end with the window)
            last = max(imgs[-1], self._end_ns) if self._end_ns is not None else imgs[-1]
            return [p for p, t in self._pose_latest.items() if last - _POSE_STALLED_NS <= t < last]

        with self._frames_cv:
            self._frames_cv.wait_for(lambda: not behind(), timeout=timeout_s)
            return behind()

    def _enqueue(self, bag: TrialBag, topic: str, t: int, data: bytes, tf: bytes | None = None) -> None:
        """Queue one message (and a pose's /tf twin: ``tf`` when already computed for the
        live /tf, else computed here) for the writer thread; a full queue drops it (live
        devices) or makes the publisher wait (backpressure, simulation)."""
        n = len(data)
        with self._q_cv:
            limit = self.params["queue_bytes"]
            if self._q_bytes + n > limit and self._q_bytes > 0:
                if not self.params["backpressure"]:
                    self.dropped_messages += 1
                    return
                while self._q_bytes + n > limit and self._q_bytes > 0 and self.bag is not None:
                    self._q_cv.wait(0.1)
            self._q_bytes += n
        # a pose and its /tf twin (same transform, same stamp; recorder/tf.py) are one queue
        # item: the writer judges the trial window once for both, so a stop that sets the
        # window's end between them cannot keep one and drop the other
        if tf is None:
            tf = pose_to_tf(topic, data)
        with self._put_lock:
            self._q.put((bag, topic, t, data, tf))

    def _writer(self) -> None:
        sealed = None  # the bag whose stop barrier has passed: nothing queued behind the barrier goes in
        kept: deque[int] = deque(maxlen=64)  # stamps of the images written into `kept_bag`
        kept_bag = None
        while True:
            item = self._q.get()
            if item is None:
                return
            if isinstance(item, _Barrier):  # a stop barrier: everything before it is written
                sealed = item.bag
                item.event.set()
                continue
            bag, topic, t, data, tf = item
            if bag is not kept_bag:
                kept_bag, kept = bag, deque(maxlen=64)
            try:
                t = self._in_window(topic, t, kept)
                # never into a closed bag (an item would land behind its summary), nor into one
                # whose stop barrier has passed (handle_stop closes it a moment later, and the
                # frame's remaining messages, arriving then, would be missing from it)
                with self._lock:  # handle_stop closes the bag under the same lock
                    if (t is not None and bag is not None and bag is not sealed and not bag.closed and not bag.broken
                            and self.fault is None):
                        bag.write(topic, t, data)
                        if topic == Topics.IMAGE:
                            kept.append(t)
                        if tf is not None:
                            bag.write(TF, t, tf)
            except DiskFullError as e:
                self._on_disk_full(e.strerror or str(e))
            except OSError as e:
                self._on_disk_full(f"write failed: {e}")
            finally:
                with self._q_cv:
                    self._q_bytes -= len(data)
                    self._q_cv.notify_all()

    def _in_window(self, topic: str, t: int, kept=()) -> int | None:
        """The trial window again at write time, once ``stop`` has set its end: a message
        queued before the stop request arrived (the orchestrator in another process sees
        the device clock late, so the stop can come well after the window's end) is
        dropped when stamped after the end (+ the pose tail), except a frame companion
        whose image was already written (``kept``: the frame stays whole); headerless
        messages are logged at the end at the latest. Returns the log time, or None to drop."""
        end = self._end_ns
        if end is None:
            return t
        ty = self._types.get(topic, "")
        pose = is_pose_topic(topic)
        tail = _POSE_TAIL_NS if pose else 0
        if (ty in _NO_HEADER or topic in _RECEIPT_TIME) and topic not in _STAMP_FROM:
            return min(t, end + tail)
        if t > end + tail and topic in _FRAME_COMPANIONS:
            return t if t in kept else None
        return None if t > self._window_end(pose, kept) + tail else t

    def _on_disk_full(self, what: str) -> None:
        self._release_ballast()  # room for the bag's summary, metadata.yaml and session.yaml first
        bag = self.bag
        free = (bag.free_bytes() if not bag.closed else disk_free_bytes(bag.bag_dir)) if bag else 0
        self.fault = f"disk full while recording {self.trial} ({what}; {free / 1e6:.1f} MB free)"
        self.get_logger().error(self.fault)
        if self._robot_stop.service_is_ready():
            self._robot_stop.call_async(Trigger.Request())
        elif self.bus is not None and self.bus.remote is not None:  # the robot in the bridged process (split.py)
            self.bus.deliver(CONTROL, serialize(to_json({"to": "robot", "cmd": "stop", "seq": -1,
                                                         "reason": "recorder: disk full"})))
        self._events.publish(to_json({"event": "fault", "source": "recorder", "code": "disk_full", "reason": self.fault,
                                      "trial": self.trial}))

    # --------------------------------------------------------------- control
    def handle_start(self, req: dict) -> dict:
        if self.bag is not None:
            raise Gaze4HRIError(f"recorder: already recording {self.trial}", None, "stop the running trial first")
        bag_dir = Path(req["bag_dir"])
        free = disk_free_bytes(bag_dir.parent)
        need = int(req.get("need_bytes", self.params["min_free_bytes"]))  # the orchestrator's estimate for this trial
        if free < need:
            raise Gaze4HRIError(f"recorder: only {free / 1e6:.0f} MB free", str(bag_dir.parent),
                                "free disk space, then run the session with --resume")
        self.fault = None
        fab = int(req.get("fail_after_bytes", self.params["fail_after_bytes"]))
        # the reserve: reserve_bytes, but at most a quarter of the space free at the trial's
        # start (a small disk still records), or of the test hook's virtual disk
        reserve = min(int(self.params["reserve_bytes"]), free // 4, fab // 4 if fab >= 0 else free)
        self._release_ballast()
        self._ballast = DiskBallast(bag_dir.parent, min(int(self.params["ballast_bytes"]), free // 8))
        self._ballast.allocate()
        # the session's calibration snapshot (<session>/calibration, beside bags/) for
        # /tf_static, and the publishers' QoS, both before the window opens: frames
        # published while they load would miss the bag
        cal_dir = Path(req.get("calibration_dir") or bag_dir.parent.parent / "calibration")
        try:
            static = static_transforms(cal_dir)
        except Gaze4HRIError as e:
            static = None
            self.get_logger().warning(f"no /tf_static in {bag_dir.name}: {e.line()}")
        try:
            bag = TrialBag(bag_dir, {**self._types, **TF_TYPES},
                           compression=str(req.get("compression", self.params["compression"])),
                           flush_interval_s=self.params["flush_interval_s"], fail_after_bytes=fab if fab >= 0 else None,
                           reserve_bytes=reserve, offered_qos=self._offered_qos())
        except OSError as e:
            raise Gaze4HRIError(f"recorder: cannot create the bag ({e.strerror})", str(bag_dir),
                                "check the output directory and free space") from None
        self.trial = str(req.get("trial"))
        self.dropped_messages = 0
        self._end_ns = None
        with self._frames_cv:
            self._frame_stamps = {}
        static_msg = None
        with self._recent_lock:
            # the window opens after everything already delivered, under the lock that hands a
            # message its bag: one delivered before is older than the window, one delivered
            # after sees the bag (a frame that came in between was lost to both)
            self._start_ns = max(int(req.get("start_ns", 0)), self.latest_ns + 1)
            if req.get("duration_ns") is not None:  # a trial whose end is known now (no camera motion)
                self._end_ns = self._start_ns + int(req["duration_ns"])
            for topic, (_t, data) in list(self._latched.items()):  # CameraInfo once per trial, even if sent before
                self._on_data_direct(bag, topic, max(self._start_ns, _t), data)
            if static is not None:
                static_msg = static_cdr(static, self._start_ns)
                self._on_data_direct(bag, TF_STATIC, self._start_ns, static_msg)
            for topic, recent in self._recent.items():  # the poses of the 20 ms before the window (see _on_data)
                for t, data in [x for x in recent if self._start_ns - _POSE_TAIL_NS <= x[0] < self._start_ns]:
                    self._enqueue(bag, topic, t, data)  # no backpressure wait yet: self.bag is still None
            self.bag = bag
        if static_msg is not None:
            self._live_tf.publish_static(static_msg)  # the same message live, kept for late joiners
        return {"bag": str(bag_dir), "start_ns": self._start_ns}

    def _on_data_direct(self, bag: TrialBag, topic: str, t: int, data: bytes) -> None:
        """Queue ahead of any data (the latched CameraInfo at a trial's start)."""
        with self._q_cv:
            self._q_bytes += len(data)
        self._q.put((bag, topic, t, data, None))

    def _offered_qos(self) -> dict:
        """Each recorded topic's publishers' offered QoS from the ROS graph, as rosbag2
        records them (the in-process bus' publishers are DDS publishers too); /tf and
        /tf_static with tf2's broadcaster profiles (the live publishers', tf.py)."""
        out = {}
        for topic in self._types:
            try:
                infos = self.get_publishers_info_by_topic(topic)
            except Exception:  # noqa: BLE001 - a graph query failing must not stop the recording
                infos = []
            profiles = [bag_qos(i.qos_profile) for i in infos]
            if profiles:
                out[topic] = profiles
        out[TF] = [bag_qos(tf_qos())]
        out[TF_STATIC] = [bag_qos(tf_static_qos())]
        return out

    def handle_end(self, req: dict) -> dict:
        """The window's end as soon as the orchestrator knows it (a moving camera's trial:
        when the motion is done): from then on a frame stamped past it is not recorded,
        where before the stop's arrival it would have been (_to_bag, _in_window)."""
        if self.bag is not None and req.get("end_ns") is not None:
            self._end_ns = int(req["end_ns"])
        return {}

    def handle_stop(self, req: dict) -> dict:
        with self._stop_lock:  # the orchestrator's stop and the shutdown's (SIGINT) never close one bag twice
            return self._handle_stop(req)

    def _handle_stop(self, req: dict) -> dict:
        bag = self.bag
        if bag is None:
            return {"counts": {}, "note": "not recording"}
        if req.get("end_ns") is not None:
            self._end_ns = int(req["end_ns"])
        late = self._await_frame_companions()
        if late:
            self.get_logger().warning(f"{self.trial}: stopped without the last frame's {', '.join(late)} "
                                      f"(not delivered within {_COMPANION_WAIT_S:g} s)")
        # only a trial's regular end (the orchestrator's stop names it) waits for the poses: an
        # abort or a shutdown stops at once (the devices may already be gone)
        late = self._await_pose_tails() if req.get("end_ns") is not None else []
        if late:
            self.get_logger().warning(f"{self.trial}: stopped before {', '.join(late)} passed the last frame "
                                      f"(not delivered within {_COMPANION_WAIT_S:g} s)")
        barrier = _Barrier(threading.Event(), bag)
        with self._put_lock:
            self._q.put(barrier)
        barrier.event.wait(timeout=float(req.get("timeout_s", 120.0)))
        self.bag = None
        with self._q_cv:
            self._q_cv.notify_all()
        with self._lock:  # no write of a late item while the summary goes out
            if self.fault or bag.broken:
                self._release_ballast()
            try:
                bag.close()
            except OSError as e:
                self._on_disk_full(f"closing the bag: {e.strerror or e}")
                bag.abort_and_repair()
            self._release_ballast()
        out = {"counts": dict(bag.counts), "bytes": bag.bytes_written, "dropped_messages": self.dropped_messages,
               "duration_s": ((bag.last_ns or 0) - (bag.first_ns or 0)) / 1e9, "fault": self.fault}
        self.trial = None
        if self.fault:
            out["ok"] = False
            out["error"] = self.fault
        return out

    def _release_ballast(self) -> None:
        if self._ballast is not None:
            self._ballast.release()
            self._ballast = None

    def handle_status(self, req: dict) -> dict:
        return self.status_dict()

    def status_dict(self) -> dict:
        b = self.bag
        return {"recording": b is not None, "trial": self.trial, "bytes": b.bytes_written if b else 0,
                "duration_s": ((b.last_ns or 0) - (b.first_ns or 0)) / 1e9 if b and b.first_ns else 0.0,
                "queue_bytes": self._q_bytes, "dropped_messages": self.dropped_messages, "fault": self.fault,
                "latest_ns": self.latest_ns}

    def recorded_duration_s(self) -> float:
        b = self.bag
        return ((b.last_ns or 0) - (b.first_ns or 0)) / 1e9 if b and b.first_ns else 0.0

    def _publish_status(self) -> None:
        s = self.status_dict()
        level = 2 if self.fault else 0
        self._status.publish(diag_array(self.latest_ns or time.time_ns(),
                                        [diag_status("gaze4hri/recorder", level, self.fault or "ok", s)]))

    def shutdown(self) -> None:
        """Close an open bag (SIGINT/SIGTERM path) and stop the writer thread; off the bus
        (a bridged device process can still deliver while the node is destroyed)."""
        if self.bag is not None:
            self.handle_stop({"timeout_s": 30.0})
        if self.bus is not None:
            self.bus.unsubscribe_all(self)
        self._q.put(None)
        self._thread.join(timeout=10.0)


def _msg_class(type_name: str):
    pkg, _, name = type_name.split("/")
    import importlib

    return getattr(importlib.import_module(f"{pkg}.msg"), name)


def parse_ack_counts(ack: dict) -> dict:
    return json.loads(json.dumps(ack.get("counts", {})))
