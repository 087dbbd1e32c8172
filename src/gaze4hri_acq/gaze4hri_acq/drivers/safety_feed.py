"""The head-band feed of a robot's SafetyMonitor outside the node graph (calibration
runs): a thread reads the motion-capture driver, gives every head-band sample to the
monitor and passes each frame on unchanged, so the run's own reads see every frame
while the monitor hears motion capture during a motion too (issue 20: an unfed
monitor refused every move of the real UR5)."""
from __future__ import annotations

import queue
import threading

from gaze4hri_core.devices import MocapFrame
from gaze4hri_core.safety import SafetyMonitor
from gaze4hri_core.transforms import SE3

__all__ = ["MonitoredMocap", "HEAD_BODY"]

HEAD_BODY = "head_band"


def feed_frame(monitor: SafetyMonitor, frame: MocapFrame, body: str = HEAD_BODY) -> None:
    """One motion-capture frame into the monitor: the head band's pose, or lost."""
    s = frame.bodies.get(body)
    if s is None or not s.tracking_valid:
        monitor.update_head(frame.stamp_ns, None)
        return
    try:
        T = SE3.from_quat(s.position, s.quat_xyzw)
    except ValueError:  # a malformed (non-unit, non-finite) quaternion is not a track
        monitor.update_head(frame.stamp_ns, None)
        return
    monitor.update_head(frame.stamp_ns, T)


class MonitoredMocap:
    """A MocapDriver wrapper (same ``connect``/``read``/``close``) that feeds ``monitor``."""

    def __init__(self, mocap, monitor: SafetyMonitor, queue_len: int = 4000):
        self.mocap = mocap
        self.monitor = monitor
        self.rate_hz = getattr(mocap, "rate_hz", 120.0)
        self._q: queue.Queue[MocapFrame] = queue.Queue(maxsize=queue_len)
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def connect(self, timeout_s: float = 2.0) -> None:
        self.mocap.connect(timeout_s)
        self._halt.clear()
        self._thread = threading.Thread(target=self._pump, name="mocap-safety-feed", daemon=True)
        self._thread.start()

    def _pump(self) -> None:
        while not self._halt.is_set():
            f = self.mocap.read(0.05)
            if f is None:
                continue
            feed_frame(self.monitor, f)
            if self._q.full():  # nobody reads between motions: keep the newest frames
                try:
                    self._q.get_nowait()
                except queue.Empty:
                    pass
            self._q.put_nowait(f)

    def read(self, timeout_s: float = 0.1) -> MocapFrame | None:
        try:
            return self._q.get(timeout=timeout_s)
        except queue.Empty:
            return None

    def close(self) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        self.mocap.close()
