"""Simulated OptiTrack backend: the world's subject (head band), calibration tool,
probe and robot marker at the motion-capture rate, with marker noise and injectable
dropouts (``SimWorld.inject_dropout``); untracked bodies have tracking_valid False."""
from __future__ import annotations

from gaze4hri_core.device_config import MocapConfig
from gaze4hri_core.devices import MocapFrame

__all__ = ["SimMocap"]


class SimMocap:
    """``max_lag_s``: a reader that has fallen further behind the clock skips to the newest
    frames, as a live stream's reader loses what its socket could not hold (None: every frame
    is delivered, as a session records them; the free-running clock of a calibration run
    outpaces a reader on a loaded machine, whose samples then arrived ever later)."""

    def __init__(self, config: MocapConfig, world, max_lag_s: float | None = None):
        self.config = config
        self.world = world
        self.rate_hz = world.mocap_rate_hz
        self.max_lag_s = max_lag_s
        self._k: int | None = None

    def connect(self, timeout_s: float = 2.0) -> None:
        self._k = self.world.mocap_index(self.world.clock.now_ns())

    def read(self, timeout_s: float = 0.1) -> MocapFrame | None:
        if self._k is None:
            return None
        clk = self.world.clock
        k = self._k + 1
        if self.max_lag_s is not None:
            k = max(k, self.world.mocap_index(clk.now_ns()) - int(self.max_lag_s * self.rate_hz))
        t = self.world.mocap_time(k)
        if not clk.sleep_until(t, timeout_wall_s=timeout_s) or clk.now_ns() < t:
            return None
        self._k = k
        return self.world.mocap_frame(k)

    def close(self) -> None:
        self._k = None
