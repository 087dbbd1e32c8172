"""The simulation clock shared by every simulated device: scaled wall time (faster or
slower than real time) or manual stepping for deterministic tests. A manual clock
driven by a pacer thread (runner._Pacer) is an event clock: a device waiting for its
next sample time registers that time and sleeps; the pacer advances the clock straight
to the earliest registered time when it is due, so no thread polls."""
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

    A manual clock with a pacer attached (:meth:`attach_pacer`): ``sleep_until`` blocks
    until the pacer has advanced the clock to the time asked for (or the wall timeout),
    and the pacer reads the earliest such time with :meth:`next_due_ns`.
    """

    def __init__(self, real_time_factor: float = 1.0, start_ns: int = 1_700_000_000_000_000_000, manual: bool = False):
        if real_time_factor <= 0:
            raise ValueError("real_time_factor must be > 0")
        self.rate = float(real_time_factor)
        self.manual = manual
        self._start_ns = int(start_ns)
        self._wall0 = time.monotonic_ns()
        self._manual_ns = int(start_ns)
        mutex = threading.RLock()
        self._lock = threading.Condition(mutex)
        # paced manual clock: sleepers' wake-up times and events; the pacer's condition
        # (same lock) is notified when one registers or when poke() is called
        self._paced = False
        self._waiters: list[list] = []  # [t_ns, threading.Event]
        self._changes = 0
        self._pacer_cv = threading.Condition(mutex)

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
            self._release_due()
            self._lock.notify_all()
        return self._manual_ns

    def advance_to(self, t_ns: int) -> int:
        if not self.manual:
            raise RuntimeError("advance_to() needs a manual SimClock")
        with self._lock:
            self._manual_ns = max(self._manual_ns, int(t_ns))
            self._release_due()
            self._lock.notify_all()
        return self._manual_ns

    def _release_due(self) -> None:
        """Wake the sleepers whose time has come (lock held)."""
        if self._waiters:
            keep = []
            for w in self._waiters:
                if w[0] <= self._manual_ns:
                    w[1].set()
                else:
                    keep.append(w)
            self._waiters = keep

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
        with whether ``t_ns`` has been reached; with a pacer attached it registers
        ``t_ns`` as an event for the pacer and sleeps until the clock gets there.
        """
        if self.manual:
            return self._wait_paced(int(t_ns), timeout_wall_s)
        wait = (t_ns - self.now_ns()) / 1e9 / self.rate
        if wait <= 0:
            return True
        if timeout_wall_s is not None and wait > timeout_wall_s:
            time.sleep(max(0.0, timeout_wall_s))
            return False
        time.sleep(wait)
        return True

    # ------------------------------------------------- paced manual clock (event clock)
    def attach_pacer(self) -> None:
        """A pacer thread drives this manual clock from now on: ``sleep_until`` waits."""
        if not self.manual:
            raise RuntimeError("attach_pacer() needs a manual SimClock")
        with self._lock:
            self._paced = True

    def detach_pacer(self) -> None:
        """The pacer stopped: wake every sleeper (each returns whether its time came);
        ``sleep_until`` returns at once again."""
        with self._lock:
            self._paced = False
            for w in self._waiters:
                w[1].set()
            self._waiters = []
            self._changes += 1
            self._pacer_cv.notify_all()

    @property
    def paced(self) -> bool:
        return self._paced

    def _wait_paced(self, t_ns: int, timeout_wall_s: float | None) -> bool:
        with self._lock:
            if self._manual_ns >= t_ns or not self._paced:
                return self._manual_ns >= t_ns
            ev = threading.Event()
            w = [t_ns, ev]
            self._waiters.append(w)
            self._changes += 1
            self._pacer_cv.notify_all()
        ev.wait(timeout_wall_s)
        with self._lock:
            if not ev.is_set():  # timed out: no longer an event for the pacer
                try:
                    self._waiters.remove(w)
                except ValueError:
                    pass
            return self._manual_ns >= t_ns

    def next_due_ns(self) -> int | None:
        """The earliest time a sleeper waits for (paced manual clock), else None."""
        with self._lock:
            return min((w[0] for w in self._waiters), default=None)

    def changes(self) -> int:
        """A counter of what the pacer waits for: a new sleeper, a poke, a detach."""
        return self._changes

    def poke(self) -> None:
        """Something the pacer's plan depends on changed (a bound, a stop): wake it."""
        with self._lock:
            self._changes += 1
            self._pacer_cv.notify_all()

    def wait_change(self, since: int, timeout_wall_s: float) -> None:
        """The pacer's sleep: until :meth:`changes` differs from ``since`` or the timeout."""
        with self._lock:
            if self._changes == since and timeout_wall_s > 0:
                self._pacer_cv.wait(timeout_wall_s)
