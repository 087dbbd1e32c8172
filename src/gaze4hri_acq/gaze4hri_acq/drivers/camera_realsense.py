"""Intel RealSense D435i colour stream on pyrealsense2: live camera (backend:=real) and
playback of a RealSense recording (backend:=replay) through the same pipeline code.

- Stream: RGB8 at the configured resolution and rate (1920x1080 at 30 Hz by default).
- Intrinsics: the device's factory calibration from the stream profile, published as
  a ROS CameraInfo (Brown-Conrady = ROS plumb_bob, as realsense-ros does).
- Time: the global-time domain (device clock translated to the host clock by
  librealsense) is requested and used as is; the hardware-clock domain is unwrapped
  (a 32-bit microsecond counter wraps every 2^32 us) and mapped to the host clock by
  the minimum observed (arrival - device) offset; system_time is already host time.
  Frame numbers and the domain are kept in every CameraFrame.
- Drops: counted from frame-number gaps (Intel, "Frame Metadata" / frame counter).
- Colour settings, as the study's data collector does them (GazeForHRI/Gaze4HRI@main
  data_collector.py:89-129): every supported, writable colour option back to its
  default (``get_option_range(opt).default``, :89-98), then auto exposure and auto white
  balance off and exposure 250, gain 90, white balance 3000 K, saturation 68
  (``CameraConfig.color``, :110-123; the study turns the auto modes on at :101-105 and
  librealsense's auto-disabling controls turn them off again when exposure and white
  balance are set), each read back after it is set (a value the camera does not keep
  is a DeviceError); then ALL supported colour options are read back (:125-129, saved
  per trial as rgb_camera_settings.json, :494-497). Playback reports the values stored
  in the recording. ``settings_applied`` / ``read_settings()`` hold what was read back.
Recordings: pyrealsense2 2.59 writes rosbag2 ``.db3`` files (``rs.recorder``) and
refuses ``.bag`` names.
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from gaze4hri_core.calibration import CameraIntrinsics
from gaze4hri_core.device_config import CameraConfig, CameraSettings
from gaze4hri_core.devices import CameraFrame, DeviceError, HostClock

__all__ = ["RealSenseCamera", "TimestampMapper", "FrameCounter", "apply_color_settings", "read_color_settings",
           "color_option_defaults", "reset_color_options"]

_DEVICE = "Intel RealSense D435i"


class FrameCounter:
    """Dropped frames from frame-number gaps (a repeat or a reset does not count)."""

    def __init__(self):
        self.last: int | None = None
        self.dropped = 0
        self.frames = 0

    def add(self, n: int) -> int:
        gap = 0
        if self.last is not None and n > self.last + 1:
            gap = n - self.last - 1
            self.dropped += gap
        self.last = n if self.last is None else max(self.last, n)
        self.frames += 1
        return gap


class TimestampMapper:
    """Device timestamps (ms) to host ns, per timestamp domain.

    global_time / system_time: host-clock milliseconds already. hardware_clock:
    unwrapped across the counter's wrap period, then offset by the smallest
    (arrival - device) seen so far, which is the least-delayed frame's transfer.
    """

    def __init__(self, wrap_ms: float = 2.0**32 / 1000.0):
        self.wrap_ms = wrap_ms
        self._last_hw: float | None = None
        self._wraps = 0
        self._offset_ns: int | None = None  # integer ns: a float64 near 1.7e18 resolves only 256 ns

    def unwrap(self, ts_ms: float) -> float:
        if self._last_hw is not None and ts_ms < self._last_hw - self.wrap_ms / 2:
            self._wraps += 1
        self._last_hw = ts_ms
        return ts_ms + self._wraps * self.wrap_ms

    def to_host_ns(self, ts_ms: float, domain: str, arrival_ns: int) -> int:
        if domain in ("global_time", "system_time"):
            return int(round(ts_ms * 1e6))
        if domain == "hardware_clock":
            dev_ns = int(round(self.unwrap(ts_ms) * 1e6))
            off = int(arrival_ns) - dev_ns
            if self._offset_ns is None or off < self._offset_ns:
                self._offset_ns = off
            return dev_ns + self._offset_ns
        return int(arrival_ns)


def _option_name(opt) -> str:
    """librealsense's option name as pyrealsense2 spells the enum (``exposure``)."""
    return getattr(opt, "name", None) or str(opt).split(".")[-1]


def color_option_defaults(rs, sensor) -> dict[str, float]:
    """{option: default} for every option the colour sensor supports and lets us
    write (the study's reset list, data_collector.py:93-96); read-only ones are left."""
    out: dict[str, float] = {}
    for opt in sensor.get_supported_options():
        try:
            if sensor.is_option_read_only(opt):
                continue
            out[_option_name(opt)] = float(sensor.get_option_range(opt).default)
        except RuntimeError:
            continue
    return out


def reset_color_options(rs, sensor) -> dict[str, str]:
    """Every writable colour option back to its default before the study's own are set,
    so a setting left by another program (realsense-viewer, a previous run) cannot
    survive into the session. Like the study (data_collector.py:97-98) an option the
    device refuses is skipped: returns {option: why} for those."""
    skipped: dict[str, str] = {}
    for name, default in color_option_defaults(rs, sensor).items():
        try:
            sensor.set_option(getattr(rs.option, name), default)
        except (RuntimeError, AttributeError) as e:
            skipped[name] = str(e)
    return skipped


def apply_color_settings(rs, sensor, settings: CameraSettings, address: str = "",
                         reset: bool = True) -> dict[str, float]:
    """Reset every writable colour option to its default (``reset``), then set the
    study's options in order (auto modes off first, since the sensor ignores a manual
    exposure or white balance while they are on) and read each one back; returns
    {option: value read back} for the study's options. A missing option, a refused
    value or a read-back that differs by more than the option's step is a DeviceError."""
    if reset:
        reset_color_options(rs, sensor)
    out: dict[str, float] = {}
    for name, value in settings.as_options().items():
        opt = getattr(rs.option, name)
        if not sensor.supports(opt):
            raise DeviceError(_DEVICE, address, f"the colour sensor has no option '{name}'",
                              "use a D435/D435i colour sensor (RGB Camera)")
        try:
            sensor.set_option(opt, float(value))
            got = float(sensor.get_option(opt))
            step = float(sensor.get_option_range(opt).step)
        except RuntimeError as e:
            raise DeviceError(_DEVICE, address, f"cannot set {name} to {value:g} ({e})",
                              "check the value is in the camera's range (rs-enumerate-devices -o) and the firmware"
                              ) from None
        if abs(got - float(value)) > max(step, 1e-6):
            raise DeviceError(_DEVICE, address, f"{name} reads back {got:g} after setting {value:g}",
                              "another program may control the camera (close realsense-viewer) "
                              "or the firmware clamps it")
        out[name] = got
    return out


def read_color_settings(rs, sensor) -> dict[str, float]:
    """Every option the colour sensor supports, with its value now (the study records
    them all, data_collector.py:125-129; a playback device reports the values stored
    in the recording)."""
    out: dict[str, float] = {}
    for opt in sensor.get_supported_options():
        try:
            out[_option_name(opt)] = float(sensor.get_option(opt))
        except RuntimeError:
            continue
    return out


def _intrinsics(rs, profile, name: str = "d435i_color") -> CameraIntrinsics:
    i = profile.as_video_stream_profile().get_intrinsics()
    K = np.array([[i.fx, 0.0, i.ppx], [0.0, i.fy, i.ppy], [0.0, 0.0, 1.0]])
    models = {rs.distortion.brown_conrady: "plumb_bob", rs.distortion.inverse_brown_conrady: "inverse_brown_conrady"}
    model = models.get(i.model, "plumb_bob")
    D = np.array(list(i.coeffs)[:5], float)
    return CameraIntrinsics(int(i.width), int(i.height), K, D, model, name)


class RealSenseCamera:
    """CameraDriver for backend:=real (live) and backend:=replay (``config.replay_file``)."""

    def __init__(self, config: CameraConfig, replay: bool = False, clock=None):
        self.config = config
        self.replay = replay
        self.clock = clock or HostClock()
        self.fps = float(config.fps)
        self.intrinsics: CameraIntrinsics | None = None
        self.finished = False
        self.frames_read = 0
        self.serial: str | None = None
        self.settings_applied: dict[str, float] = {}  # colour options as read back from the device (or the recording)
        self._pipe = None
        self._counter = FrameCounter()
        self._mapper = TimestampMapper(config.hw_clock_wrap_ms)
        self._rs = None
        self._sensor = None

    def read_settings(self) -> dict[str, float]:
        """All colour options read back now (per trial), else the last read-back."""
        if self._sensor is not None and self._rs is not None:
            try:
                got = read_color_settings(self._rs, self._sensor)
                if got:
                    self.settings_applied = got
            except RuntimeError:
                pass
        return dict(self.settings_applied)

    @property
    def dropped_frames(self) -> int:
        return self._counter.dropped

    @property
    def address(self) -> str:
        if self.replay:
            return str(self.config.replay_file)
        return f"USB serial {self.config.serial}" if self.config.serial else "USB (first RealSense)"

    def _import(self):
        try:
            import pyrealsense2 as rs
        except ImportError as e:
            raise DeviceError(_DEVICE, self.address, f"pyrealsense2 does not import ({e})",
                              "pip install 'pyrealsense2==2.59.*'; it needs libusb-1.0-0 "
                              "(apt install libusb-1.0-0)") from None
        return rs

    def start(self) -> None:
        rs = self._rs = self._import()
        c = self.config
        cfg = rs.config()
        if self.replay:
            path = Path(c.replay_file)
            if not path.is_file():
                raise DeviceError(_DEVICE, str(path), "recording not found",
                                  "pass replay_file:= a RealSense .db3 recording")
            cfg.enable_device_from_file(str(path), repeat_playback=False)
            cfg.enable_stream(rs.stream.color)  # whatever colour mode was recorded
        else:
            devices = rs.context().query_devices()
            serials = [d.get_info(rs.camera_info.serial_number) for d in devices]
            if not serials:
                raise DeviceError(_DEVICE, self.address, "no RealSense camera found",
                                  "plug the camera into a USB 3 port, check 'rs-enumerate-devices' and the udev rules")
            if c.serial and c.serial not in serials:
                raise DeviceError(_DEVICE, self.address, f"camera {c.serial} not found (found {serials})",
                                  "set serial to one of the connected cameras")
            if c.serial:
                cfg.enable_device(c.serial)
            cfg.enable_stream(rs.stream.color, c.width, c.height, rs.format.rgb8, c.fps)
        pipe = rs.pipeline()
        try:
            profile = pipe.start(cfg)
        except RuntimeError as e:
            raise DeviceError(_DEVICE, self.address, f"cannot start the colour stream ({e})",
                              "use a supported mode (e.g. 1920x1080 or 1280x720 at 30 Hz RGB8); "
                              f"got {c.width}x{c.height} at {c.fps} Hz") from None
        dev = profile.get_device()
        if self.replay:
            pb = dev.as_playback()
            pb.set_real_time(bool(c.replay_realtime))
            try:
                self._sensor = dev.first_color_sensor()
                self.settings_applied = read_color_settings(rs, self._sensor)
            except RuntimeError:
                self.settings_applied = {}
        else:
            try:
                sensor = dev.first_color_sensor()
            except RuntimeError:
                sensor = None
            if sensor is None:
                pipe.stop()
                raise DeviceError(_DEVICE, self.address, "the device has no colour sensor", "connect a D435/D435i")
            try:
                apply_color_settings(rs, sensor, c.color, self.address)  # the reset to defaults first
            except DeviceError:
                pipe.stop()
                raise
            try:  # after the reset: host-clock timestamps (see the module docstring)
                if sensor.supports(rs.option.global_time_enabled):
                    sensor.set_option(rs.option.global_time_enabled, 1)
            except RuntimeError:
                pass
            self._sensor = sensor
            self.settings_applied = read_color_settings(rs, sensor)
        try:
            self.serial = dev.get_info(rs.camera_info.serial_number)
        except RuntimeError:
            self.serial = None
        sp = profile.get_stream(rs.stream.color)
        self.intrinsics = _intrinsics(rs, sp)
        self.fps = float(sp.fps())
        self._pipe = pipe
        self.finished = False

    def read(self, timeout_s: float = 1.0) -> CameraFrame | None:
        if self._pipe is None or self.finished:
            return None
        rs = self._rs
        ok, frames = self._pipe.try_wait_for_frames(int(max(1, timeout_s * 1000)))
        if not ok:
            if self.replay:
                # playback ends by going quiet; confirm with the device status
                try:
                    status = self._pipe.get_active_profile().get_device().as_playback().current_status()
                    if status == rs.playback_status.stopped:
                        self.finished = True
                except RuntimeError:
                    self.finished = True
            return None
        arrival = self.clock.now_ns()
        cf = frames.get_color_frame()
        if not cf:
            return None
        n = int(cf.get_frame_number())
        self._counter.add(n)
        ts = float(cf.get_timestamp())
        domain = str(cf.get_frame_timestamp_domain()).split(".")[-1]
        img = np.asanyarray(cf.get_data())
        if img.ndim != 3 or img.shape[2] != 3:
            raise DeviceError(_DEVICE, self.address, f"unexpected colour format {cf.get_profile().format()}",
                              "record/stream RGB8")
        self.frames_read += 1
        stamp = self._mapper.to_host_ns(ts, domain, arrival)
        return CameraFrame(stamp, n, np.ascontiguousarray(img).copy(), ts, domain)

    def stop(self) -> None:
        if self._pipe is not None:
            try:
                self._pipe.stop()
            except RuntimeError:
                pass
            self._pipe = None
        self._sensor = None

    def wait_finished(self, timeout_s: float = 10.0) -> None:
        """Replay only: read to the end (used by tests and the replay CLI)."""
        t_end = time.monotonic() + timeout_s
        while not self.finished and time.monotonic() < t_end:
            self.read(0.2)
