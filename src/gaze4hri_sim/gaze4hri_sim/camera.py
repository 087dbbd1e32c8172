"""Simulated RealSense backend: renders the subject's face from the simulated head and
camera poses (``sim.render.FaceRenderer``) at the configured resolution and rate, on
the world's clock; frames carry the simulator's truth."""
from __future__ import annotations

from gaze4hri_core.calibration import load_camera_info
from gaze4hri_core.device_config import CameraConfig
from gaze4hri_core.devices import CameraFrame
from gaze4hri_core.safety import compose

from .render import FaceRenderer

__all__ = ["SimCamera", "D435I_COLOR_DEFAULTS"]

#: the colour options a D435i's RGB sensor supports, at their defaults: the UVC
#: controls as rs-sensor-control lists them for a D4xx RGB camera (UZ-SLAMLab/ORB_SLAM3
#: issues #828 and #630: backlight compensation 0, brightness 0, contrast 50, gain 64,
#: gamma 300, hue 0, saturation 64, sharpness 50, white balance 4600, auto white
#: balance on), exposure 166 and auto exposure on as the replay tests' software sensor
#: models them, plus librealsense's own colour-sensor options. The simulator's stand-in
#: for what the real driver reads back (a real camera's own defaults are recorded there).
D435I_COLOR_DEFAULTS: dict[str, float] = {
    "backlight_compensation": 0.0, "brightness": 0.0, "contrast": 50.0, "exposure": 166.0, "gain": 64.0, "gamma": 300.0,
    "hue": 0.0,
    "saturation": 64.0, "sharpness": 50.0, "white_balance": 4600.0, "enable_auto_exposure": 1.0,
    "enable_auto_white_balance": 1.0,
    "frames_queue_size": 16.0, "power_line_frequency": 3.0, "auto_exposure_priority": 1.0, "global_time_enabled": 1.0,
}


class SimCamera:
    """CameraDriver for backend:=sim. ``drop_frames`` (frame numbers) simulates USB drops."""

    def __init__(self, config: CameraConfig, world):
        self.config = config
        self.world = world
        base = (load_camera_info(config.calibration_dir / "camera_info.yaml") if world is None
                else world.calib.intrinsics)
        self.intrinsics = base.scaled(config.width, config.height)
        self.fps = float(config.fps)
        self.finished = False
        self.frames_read = 0
        self.drop_frames: set[int] = set()
        # the colour options the simulated sensor runs with, as the real driver leaves
        # them: every option at its default, then the study's (it keeps what it is given)
        self.settings_applied: dict[str, float] = {**D435I_COLOR_DEFAULTS,
                                                   **{k: float(v) for k, v in config.color.as_options().items()}}
        self._renderer = FaceRenderer(self.intrinsics, seed=world.config.seed)
        self._running = False
        self._next = 0
        self._dropped = 0
        self._t0 = 0

    def read_settings(self) -> dict[str, float]:
        """All colour options read back (per trial), as RealSenseCamera.read_settings."""
        return dict(self.settings_applied)

    @property
    def dropped_frames(self) -> int:
        return self._dropped

    def start(self) -> None:
        clk = self.world.clock
        period = 1e9 / self.fps
        # frames on a fixed grid of the sim clock, starting at the next grid point
        self._next = int((clk.now_ns() - clk.start_ns) // period) + 1
        self._running = True

    def frame_time(self, n: int) -> int:
        return self.world.clock.start_ns + int(round(n * 1e9 / self.fps))

    def read(self, timeout_s: float = 1.0) -> CameraFrame | None:
        if not self._running:
            return None
        clk = self.world.clock
        while self._next in self.drop_frames:
            self._next += 1
            self._dropped += 1
        n = self._next
        t = self.frame_time(n)
        if not clk.sleep_until(t, timeout_wall_s=timeout_s):
            return None
        if clk.now_ns() < t:
            return None  # manual clock not there yet
        self._next += 1
        truth = self.world.truth(t)
        img = self._renderer.render(truth.T_world_camera, compose(truth.T_world_head, self.world.subject.T_head_eye),
                                    truth.blink, self.world.illumination, self.config.color)
        self.frames_read += 1
        return CameraFrame(t, n, img, (t - clk.start_ns) / 1e6, "sim", truth)

    def stop(self) -> None:
        self._running = False
