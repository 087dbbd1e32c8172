"""The simulation clock shared by every simulated device: scaled wall time (faster or
slower than real time) or manual stepping for deterministic tests."""
from __future__ import annotations

import threading
import time

__all__ = ["SimClock"]


class SimClock:
    """Simulated time in ns.

    ``real_time_factor`` r: simulated time advances r seconds per wall second, so
    ``sleep(dt)`` waits dt / r wall seconds. ``manual=True``: time moves only through
    ``advance``/``advance_to`` and ``sleep`` advances it (single-threaded tests).
    Starts at ``start_ns`` (default 1.7e18 ns, a plausible epoch stamp, so bags and
    sim stamps look like host stamps).
    """

    def __init__(self, real_time_factor: float = 1.0, start_ns: int = 1_700_000_000_000_000_000, manual: bool = False):
        if real_time_factor <= 0:
            raise ValueError("real_time_factor must be > 0")
        self.rate = float(real_time_factor)
        self.manual = manual
        self._start_ns = int(start_ns)
        self._wall0 = time.monotonic_ns()
        self._manual_ns = int(start_ns)
        self._lock = threading.Condition()

    @property
    def start_ns(self) -> int:
        return self._start_ns

    def now_ns(self) -> int:
        if self.manual:
            return self._manual_ns
        return self._start_ns + int((time.monotonic_ns() - self._wall0) * self.rate)

    def now_s(self) -> float:
        """Seconds since the clock's start."""
        return (self.now_ns() - self._start_ns) * 1e-9

    def advance(self, seconds: float) -> int:
        if not self.manual:
            raise RuntimeError("advance() needs a manual SimClock")
        with self._lock:
            self._manual_ns += int(round(seconds * 1e9))
            self._lock.notify_all()
        return self._manual_ns

    def advance_to(self, t_ns: int) -> int:
        if not self.manual:
            raise RuntimeError("advance_to() needs a manual SimClock")
        with self._lock:
            self._manual_ns = max(self._manual_ns, int(t_ns))
            self._lock.notify_all()
        return self._manual_ns

    def sleep(self, seconds: float) -> None:
        """Wait ``seconds`` of simulated time."""
        if seconds <= 0:
            return
        if self.manual:
            self.advance(seconds)
        else:
            time.sleep(seconds / self.rate)

    def sleep_until(self, t_ns: int, timeout_wall_s: float | None = None) -> bool:
        """Wait until simulated time reaches ``t_ns``; False if the wall timeout ends first.

        In manual mode nothing advances time but the caller, so this returns at once
        with whether ``t_ns`` has been reached.
        """
        if self.manual:
            return self.now_ns() >= t_ns
        wait = (t_ns - self.now_ns()) / 1e9 / self.rate
        if wait <= 0:
            return True
        if timeout_wall_s is not None and wait > timeout_wall_s:
            time.sleep(max(0.0, timeout_wall_s))
            return False
        time.sleep(wait)
        return True
