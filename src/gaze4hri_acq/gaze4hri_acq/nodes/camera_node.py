"""Camera node: RGB frames as sensor_msgs/Image (rgb8, optical frame), CameraInfo
(latched and once a second), per-frame metadata (frame number, device timestamp,
domain) and fps/drop diagnostics. Frames are serialized by ``_cdr.encode_image``
(one copy) and handed to the recorder as bytes in the one-process runner."""
from __future__ import annotations

import time
from collections import deque

import numpy as np
from diagnostic_msgs.msg import DiagnosticStatus
from gaze4hri_core.session import FRAMES, Topics
from geometry_msgs.msg import Vector3Stamped
from sensor_msgs.msg import CameraInfo, Image

from ..session_config import sensor_range
from ._bus import FastPublisher
from ._cdr import encode_image
from .common import QOS_LATCHED, QOS_SENSOR, Param, diag_status, stamp_msg
from .device import DeviceNode

__all__ = ["CameraNode", "PARAMS", "camera_info_msg", "color_settings"]

PARAMS = (
    Param("backend", "sim", "device backend: simulated camera, RealSense D435i, or a RealSense playback file",
          ("sim", "real", "replay")),
    Param("serial", "", "RealSense serial number; empty takes the only connected camera"),
    # the colour sensor's ranges: CameraConfig's (gaze4hri_core.device_config), declared there once
    Param("width", 1920, "colour stream width (px)", range=sensor_range("width")),
    Param("height", 1080, "colour stream height (px)", range=sensor_range("height")),
    Param("fps", 30, "colour stream rate (Hz, a whole number: the RealSense's rates)", range=sensor_range("fps")),
    Param("frame_id", FRAMES["camera"], "frame id of images and CameraInfo (REP-103 optical frame)"),
    Param("playback_file", "", "RealSense playback file for backend 'replay'"),
    Param("camera_info_period_s", 1.0, "republish CameraInfo every this many seconds", range=(0.1, 60.0)),
    # colour settings fixed for the session (gaze4hri_core.device_config.CameraSettings: the study's values)
    Param("auto_exposure", False, "colour auto exposure (off: brightness follows the light level, as in the study)"),
    Param("auto_white_balance", False, "colour auto white balance"),
    Param("exposure", 250.0, "manual colour exposure (RealSense units of 100 us; the study: 250)",
          range=(1.0, 10000.0)),
    Param("gain", 90.0, "manual colour gain (the study: 90)", range=(0.0, 128.0)),
    Param("white_balance", 3000.0, "colour white balance (K; the study: 3000)", range=(2800.0, 6500.0)),
    Param("saturation", 68.0, "colour saturation (the study: 68)", range=(0.0, 100.0)),
)

COLOR_PARAMS = ("auto_exposure", "auto_white_balance", "exposure", "gain", "white_balance", "saturation")


def color_settings(params: dict) -> dict:
    """The node's colour-setting parameters as CameraConfig's ``color`` field."""
    return {k: params[k] for k in COLOR_PARAMS if k in params}


def camera_info_msg(intr, stamp_ns: int, frame_id: str) -> CameraInfo:
    m = CameraInfo()
    stamp_msg(m.header, stamp_ns, frame_id)
    m.width, m.height = int(intr.width), int(intr.height)
    m.distortion_model = intr.distortion_model
    m.d = [float(x) for x in intr.D]
    m.k = [float(x) for x in np.asarray(intr.K).ravel()]
    m.r = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    P = np.zeros((3, 4))
    P[:, :3] = intr.K
    m.p = [float(x) for x in P.ravel()]
    return m


class CameraNode(DeviceNode):
    PARAMS = PARAMS
    device_label = "camera"
    frame_id = FRAMES["camera"]

    def __init__(self, name: str = "camera", **kw):
        super().__init__(name, **kw)
        self.frames = 0
        self.dropped = 0
        self._last_number: int | None = None
        self._stamps: deque[float] = deque(maxlen=60)
        self._last_info = 0.0
        self._last_stamp_ns = 0

    def make_driver(self):
        from gaze4hri_core.device_config import CameraConfig, validate

        from ..drivers.registry import make_camera  # lazy: vendor SDKs load only when used

        p = self.params
        cfg = validate(CameraConfig, {"serial": p["serial"] or None, "width": p["width"], "height": p["height"],
                                      "fps": p["fps"], "replay_file": p["playback_file"] or None,
                                      "color": color_settings(p)}, "camera parameters")
        return make_camera(p["backend"], cfg)

    def address(self) -> str:
        return f"serial {self.params.get('serial') or 'any'}"

    def connect(self) -> None:
        self.driver.start()

    def release(self) -> None:
        if self.driver is not None:
            self.driver.stop()

    def setup_publishers(self) -> None:
        self.pub_image = FastPublisher(self, Image, Topics.IMAGE, QOS_SENSOR, self.bus, stream=True)
        self.pub_info = FastPublisher(self, CameraInfo, Topics.CAMERA_INFO, QOS_LATCHED, self.bus)
        self.pub_meta = FastPublisher(self, DiagnosticStatus, Topics.FRAME_META, QOS_SENSOR, self.bus, stream=True)
        self.pub_gaze_truth = FastPublisher(self, Vector3Stamped, Topics.SIM_GAZE_TRUTH, QOS_SENSOR, self.bus,
                                            stream=True)
        self.pub_blink_truth = FastPublisher(self, DiagnosticStatus, Topics.SIM_BLINK_TRUTH, QOS_SENSOR, self.bus,
                                             stream=True)

    def step(self) -> None:
        f = self.driver.read(timeout_s=0.5)
        if f is None:
            return False
        fid = self.params["frame_id"]
        if self._last_number is not None and f.frame_number > self._last_number + 1:
            self.dropped += f.frame_number - self._last_number - 1
        self._last_number = f.frame_number
        now = time.monotonic()
        if now - self._last_info >= self.params["camera_info_period_s"] or self.frames == 0:
            self.pub_info.publish(camera_info_msg(self.driver.intrinsics, f.stamp_ns, fid))
            self._last_info = now
        self.pub_image.publish(encode_image(f.stamp_ns, fid, f.image))
        self.pub_meta.publish(diag_status("frame_meta", 0, "", {
            "frame_number": f.frame_number, "stamp_ns": f.stamp_ns, "timestamp_domain": f.timestamp_domain,
            "device_timestamp_ms": f.device_timestamp_ms}))
        truth = getattr(f, "truth", None)
        if truth is not None:  # simulated camera: the simulator's truth at the frame's stamp
            self._publish_truth(f.stamp_ns, fid, truth)
        self.frames += 1
        self._stamps.append(now)
        self._last_stamp_ns = self.stream_ns = f.stamp_ns
        return True

    def _publish_truth(self, stamp_ns: int, fid: str, truth) -> None:
        v = Vector3Stamped()
        stamp_msg(v.header, stamp_ns, fid)
        g = truth.gaze_camera
        if g is not None:
            v.vector.x, v.vector.y, v.vector.z = (float(x) for x in g)
        else:
            v.vector.x = v.vector.y = v.vector.z = float("nan")
        self.pub_gaze_truth.publish(v)
        values = {"stamp_ns": stamp_ns, "blink": "true" if truth.blink else "false"}
        self.pub_blink_truth.publish(diag_status("blink", 0, "", values))

    def fps(self) -> float:
        if len(self._stamps) < 2:
            return 0.0
        return (len(self._stamps) - 1) / max(self._stamps[-1] - self._stamps[0], 1e-9)

    def diag_values(self) -> dict:
        drv = int(getattr(self.driver, "dropped_frames", 0) or 0) if self.driver is not None else 0
        return {"frames": self.frames, "dropped_frames": max(self.dropped, drv), "fps_wall": round(self.fps(), 2),
                "last_stamp_ns": self._last_stamp_ns}

    def handle_settings(self, req: dict) -> dict:
        """Every colour option as the device reports it now (the orchestrator asks at
        each trial's start and records the answer with the trial)."""
        d = self.driver
        read = getattr(d, "read_settings", None)
        applied = {}
        if d is not None:
            applied = dict(read() if read is not None else (getattr(d, "settings_applied", {}) or {}))
        return {"settings": applied, "requested": color_settings(self.params), "backend": self.params.get("backend")}

    def handle_reset_counters(self, req: dict) -> dict:
        return {}
