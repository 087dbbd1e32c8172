"""Lifecycle base of the device nodes (ros2/demos lifecycle_py): connect in
on_configure, stream in on_activate, stop in on_deactivate, release in on_cleanup;
a device that is absent or refuses makes the transition return FAILURE with one log
line naming the device, its address and the fix (kept in ``last_error`` and in the
node's diagnostics so the orchestrator can print it).

The driver comes from ``driver_factory`` (the one-process runner injects drivers
that share one SimWorld) or from the driver registry by the ``backend`` parameter
(separate processes under ros2 launch).
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.session import Topics
from rclpy.lifecycle import LifecycleNode, LifecycleState, TransitionCallbackReturn

from ._bus import FastPublisher, IntraProcessBus
from .common import QOS_RELIABLE, ControlMixin, Param, declare_params, diag_array, diag_status, read_params

__all__ = ["DeviceNode"]

OK, WARN, ERROR = 0, 1, 2


class DeviceNode(ControlMixin, LifecycleNode):
    """A lifecycle node that owns one driver and streams it from a worker thread."""

    PARAMS: tuple[Param, ...] = ()
    device_label = "device"
    frame_id = "world"  # of this device's diagnostics (camera: its optical frame, robot: base)

    def __init__(self, name: str, *, driver_factory: Callable | None = None, bus: IntraProcessBus | None = None,
                 context=None, parameter_overrides=None, namespace: str = ""):
        from rclpy.parameter import Parameter

        overrides = [Parameter(k, value=v) for k, v in (parameter_overrides or {}).items()]
        super().__init__(name, context=context, parameter_overrides=overrides, namespace=namespace)
        self.control_name = name
        self.bus = bus
        self._factory = driver_factory
        declare_params(self, self.PARAMS)
        self.params: dict = {}
        self.driver = None
        self.last_error: str | None = None
        self._stop = threading.Event()
        self.streaming = False  # the worker thread runs
        self.stream_ns = 0  # stamp of the latest sample published (the sim pacer reads it)
        self.idle_steps = 0  # steps that found no sample (tests/sim/test_pacer_idle.py)
        self._thread: threading.Thread | None = None
        self._diag_pub = FastPublisher(self, DiagnosticArray, Topics.DIAGNOSTICS, QOS_RELIABLE, bus)
        self._init_control(bus)
        self._diag_timer = self.create_timer(1.0, self._publish_diag)

    # ---------------------------------------------------------------- driver
    def make_driver(self):
        """Build the driver from parameters (registry); overridden per device."""
        raise NotImplementedError

    def address(self) -> str:
        return ""

    def _device_clock(self):
        """The simulation clock of a simulated driver (its world's), else None (host clock)."""
        world = getattr(self.driver, "world", None)
        return getattr(world, "clock", None) or getattr(self.driver, "clock", None)

    def now_ns(self) -> int:
        clock = self._device_clock()
        return int(clock.now_ns()) if clock is not None else time.time_ns()

    def wait_until_ns(self, t_ns: int) -> bool:
        """Wait for the device's clock to reach ``t_ns``: host clock, or a simulation clock
        that runs faster than real time (scaled) or is driven by the runner (manual)."""
        clock = self._device_clock()
        if clock is None:
            dt = (t_ns - time.time_ns()) / 1e9
            if dt > 0:
                time.sleep(dt)
            return True
        # a manual clock: at once whether t_ns is reached, or (a pacer drives it) asleep
        # until the pacer advances the clock there (gaze4hri_sim/clock.py SimClock.sleep_until)
        return clock.sleep_until(t_ns, timeout_wall_s=0.5)

    # ------------------------------------------------------------- lifecycle
    def on_configure(self, state: LifecycleState) -> TransitionCallbackReturn:
        try:
            self.params = read_params(self, self.PARAMS)
            self.prepare()
            self.driver = self._factory() if self._factory is not None else self.make_driver()
            self.connect()
        except Gaze4HRIError as e:
            self.last_error = e.line()
            self.get_logger().error(self.last_error)
            self.driver = None
            return TransitionCallbackReturn.FAILURE
        self.last_error = None
        self.setup_publishers()
        return TransitionCallbackReturn.SUCCESS

    def prepare(self) -> None:
        """What the driver is built with, before it is built (the robot: its safety monitor)."""

    def connect(self) -> None:
        """Open the device (driver.connect or .start); raise DeviceError when it refuses."""

    def setup_publishers(self) -> None:
        """Create the data publishers (after the driver is known)."""

    def on_activate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=f"{self.get_name()}-stream", daemon=True)
        self._thread.start()
        return super().on_activate(state)

    def on_deactivate(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop_thread()
        return super().on_deactivate(state)

    def on_cleanup(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop_thread()
        self.release()
        self.driver = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state: LifecycleState) -> TransitionCallbackReturn:
        self._stop_thread()
        self.release()
        return TransitionCallbackReturn.SUCCESS

    def release(self) -> None:
        """Close the device."""

    def _stop_thread(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None

    IDLE_WAIT_S = (0.0005, 0.005)  # first and longest wait after a step that found nothing at once

    def _run(self) -> None:
        """Step until stopped. ``step`` waits for the sample itself (the driver's blocking
        read, the host clock, or a paced simulation clock's ``sleep_until``); after one that
        found nothing it waits 0.5 ms, doubling to 5 ms while steps keep returning at once
        with nothing (a stopped or finished driver, a manual clock nobody advances), so
        such a device does not poll 2,000 times a second; a step that blocked for its
        sample and timed out retries after 0.5 ms, as before."""
        self.streaming = True
        first, longest = self.IDLE_WAIT_S
        idle = first
        try:
            while not self._stop.is_set():
                t0 = time.monotonic()
                if self.step():
                    idle = first
                    continue
                self.idle_steps += 1
                quick = time.monotonic() - t0 < 0.001  # the driver did not block for it
                self._stop.wait(idle)  # nothing new: a stop ends the wait at once
                idle = min(idle * 2, longest) if quick else first
        except Gaze4HRIError as e:
            self.last_error = e.line()
            self.get_logger().error(self.last_error)
            self.on_stream_error(self.last_error)
        except Exception as e:  # report and stop streaming; the orchestrator sees the stale device
            self.last_error = f"{self.device_label}: {type(e).__name__}: {e}"
            self.get_logger().error(self.last_error)
            self.on_stream_error(self.last_error)
        finally:
            self.streaming = False

    def step(self) -> bool:
        """Read one sample from the driver and publish it (worker thread); False: none yet."""
        time.sleep(0.01)
        return False

    def on_stream_error(self, reason: str) -> None:
        """Called once when streaming fails."""

    # ----------------------------------------------------------- diagnostics
    def diag_values(self) -> dict:
        return {}

    def _publish_diag(self) -> None:
        level = ERROR if self.last_error else OK
        msg = self.last_error or "ok"
        st = diag_status(f"gaze4hri/{self.get_name()}", level, msg, {"address": self.address(), **self.diag_values()})
        self._diag_pub.publish(diag_array(self.now_ns(), [st], frame_id=self.frame_id))

    @staticmethod
    def status(level: int, name: str, message: str, values: dict) -> DiagnosticStatus:
        return diag_status(name, level, message, values)

    def handle_ping(self, req: dict) -> dict:
        return {"state": self._state_machine.current_state[1], "error": self.last_error}

    # The lifecycle services' transitions over the bus, for an orchestrator whose bus is
    # bridged to this process (the one-process CLI's devices in a second process,
    # gaze4hri_acq/split.py), where no DDS graph joins the two: the same transitions and
    # callbacks as change_state / get_state run.
    _TRIGGERS = {"configure": "trigger_configure", "activate": "trigger_activate",
                 "deactivate": "trigger_deactivate", "cleanup": "trigger_cleanup"}

    def handle_lifecycle(self, req: dict) -> dict:
        name = self._TRIGGERS.get(str(req.get("transition")))
        if name is None:
            raise Gaze4HRIError(f"{self.control_name}: unknown transition {req.get('transition')!r}")
        ret = getattr(self, name)()
        return {"success": ret == TransitionCallbackReturn.SUCCESS, "state": self._state_machine.current_state[1]}

    def handle_lifecycle_state(self, req: dict) -> dict:
        return {"state": self._state_machine.current_state[1]}
