"""Motion-capture node: each tracked rigid body as geometry_msgs/PoseStamped in the
world frame (Z-up, REP-103) on /mocap/rigid_bodies/<name>/pose, published only
while tracked; tracking validity, marker error and frame number per frame on
/mocap/status, so a reader can tell "lost" from "not published"."""
from __future__ import annotations

from diagnostic_msgs.msg import DiagnosticArray
from gaze4hri_core.session import FRAMES, Topics
from geometry_msgs.msg import PoseStamped

from ._bus import FastPublisher
from ._cdr import encode_diagnostics, encode_pose
from .common import QOS_SENSOR, Param, stamp_msg
from .device import DeviceNode

__all__ = ["MocapNode", "PARAMS", "pose_msg"]

PARAMS = (
    Param("backend", "sim", "device backend: simulated OptiTrack or Motive over NatNet", ("sim", "real", "replay")),
    Param("motive_ip", "127.0.0.1", "IP address of the Motive PC streaming NatNet"),
    Param("local_ip", "127.0.0.1", "IP address of this machine's interface facing Motive"),
    Param("multicast", True, "NatNet multicast (Motive default) instead of unicast"),
    Param("rate_hz", 100.0, "expected motion-capture rate (Hz)", range=(1.0, 1000.0)),
)


def pose_msg(stamp_ns: int, frame_id: str, position, quat_xyzw) -> PoseStamped:
    m = PoseStamped()
    stamp_msg(m.header, stamp_ns, frame_id)
    m.pose.position.x, m.pose.position.y, m.pose.position.z = (float(v) for v in position)
    q = m.pose.orientation
    q.x, q.y, q.z, q.w = (float(v) for v in quat_xyzw)
    return m


class MocapNode(DeviceNode):
    PARAMS = PARAMS
    device_label = "motion capture"

    def __init__(self, name: str = "mocap", **kw):
        super().__init__(name, **kw)
        self.frames = 0
        self.tracked: dict[str, bool] = {}
        self._pubs: dict[str, FastPublisher] = {}

    def make_driver(self):
        from gaze4hri_core.device_config import MocapConfig, validate

        from ..drivers.registry import make_mocap

        p = self.params
        vals = {"server_ip": p["motive_ip"], "local_ip": p["local_ip"], "use_multicast": p["multicast"],
                "rate_hz": p["rate_hz"]}
        cfg = validate(MocapConfig, vals, "mocap parameters")
        return make_mocap(p["backend"], cfg)

    def address(self) -> str:
        return f"Motive at {self.params.get('motive_ip', '?')}"

    def connect(self) -> None:
        self.driver.connect()

    def release(self) -> None:
        if self.driver is not None:
            self.driver.close()

    def setup_publishers(self) -> None:
        self.pub_status = FastPublisher(self, DiagnosticArray, Topics.MOCAP_STATUS, QOS_SENSOR, self.bus, stream=True)

    def _pub(self, name: str) -> FastPublisher:
        p = self._pubs.get(name)
        if p is None:
            p = self._pubs[name] = FastPublisher(self, PoseStamped, Topics.rigid_body(name), QOS_SENSOR, self.bus,
                                                 stream=True)
        return p

    def step(self) -> None:
        f = self.driver.read(timeout_s=0.2)
        if f is None:
            return False
        statuses = []
        world = FRAMES["world"]
        for name, b in f.bodies.items():
            self.tracked[name] = bool(b.tracking_valid)
            if b.tracking_valid:  # the CDR written directly (nodes/_cdr.py): the same bytes as pose_msg's
                self._pub(name).publish(encode_pose(f.stamp_ns, world, b.position, b.quat_xyzw))
            values = {"id": b.id, "tracking_valid": b.tracking_valid, "marker_error_m": b.marker_error_m,
                      "frame_number": f.frame_number}
            statuses.append((0 if b.tracking_valid else 1, name, "tracked" if b.tracking_valid else "lost", "", values))
        self.pub_status.publish(encode_diagnostics(f.stamp_ns, world, statuses))
        self.frames += 1
        self.stream_ns = f.stamp_ns
        return True

    def diag_values(self) -> dict:
        """Frames published, per-body tracking, and the driver's stream-health counters
        (NatNet: foreign / malformed packets, invalid poses; drivers/mocap_natnet.py
        NatNetMocap.counters) with its last fault, under ``natnet.*``."""
        vals = {"frames": self.frames, **{f"tracked.{k}": v for k, v in self.tracked.items()}}
        counters = getattr(self.driver, "counters", None)  # the sim and replay backends have none
        if isinstance(counters, dict):
            vals.update({f"natnet.{k}": v for k, v in counters.items()})
            vals["natnet.last_fault"] = getattr(self.driver, "last_fault", None) or "none"
        return vals
