"""Simulated RealSense backend: renders the subject's face from the simulated head and
camera poses (``sim.render.FaceRenderer``) at the configured resolution and rate, on
the world's clock; frames carry the simulator's truth."""
from __future__ import annotations

from gaze4hri_core.calibration import load_camera_info
from gaze4hri_core.device_config import CameraConfig
from gaze4hri_core.devices import CameraFrame
from gaze4hri_core.safety import compose

from .render import FaceRenderer

__all__ = ["SimCamera"]


class SimCamera:
    """CameraDriver for backend:=sim. ``drop_frames`` (frame numbers) simulates USB drops."""

    def __init__(self, config: CameraConfig, world):
        self.config = config
        self.world = world
        base = load_camera_info(config.calibration_dir / "camera_info.yaml") if world is None else world.calib.intrinsics
        self.intrinsics = base.scaled(config.width, config.height)
        self.fps = float(config.fps)
        self.finished = False
        self.frames_read = 0
        self.drop_frames: set[int] = set()
        # the colour settings the simulated sensor runs with (it keeps what it is given)
        self.settings_applied: dict[str, float] = {k: float(v) for k, v in config.color.as_options().items()}
        self._renderer = FaceRenderer(self.intrinsics, seed=world.config.seed)
        self._running = False
        self._next = 0
        self._dropped = 0
        self._t0 = 0

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
