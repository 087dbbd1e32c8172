"""The one-process runner: the nodes of nodes/table.py in one rclpy context with one
executor thread and the in-process bus (what ``gaze4hri-acq session`` runs where
``ros2 launch`` is absent). Each runner has its own rclpy Context, so tests can
start and stop several in one interpreter; the DDS graph stays inside the process
(ROS_AUTOMATIC_DISCOVERY_RANGE=OFF) unless ``share_graph`` asks to be visible to
other ROS tools on the machine.
"""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

import rclpy
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor

from .nodes._bus import IntraProcessBus
from .nodes.common import CONFIG_DIR, load_param_yaml
from .nodes.table import NODES, node_class

__all__ = ["Stack", "StackConfig", "node_parameters"]


def node_parameters(name: str, overrides: dict | None = None, config_dir: Path = CONFIG_DIR) -> dict:
    """config/<name>.yaml (what launch loads) with ``overrides`` on top."""
    p = config_dir / f"{name}.yaml"
    params = load_param_yaml(p, name) if p.is_file() else {}
    params.update({k: v for k, v in (overrides or {}).items() if v is not None})
    return params


@dataclass
class StackConfig:
    backend: str = "sim"
    params: dict[str, dict] = field(default_factory=dict)  # node name -> parameter overrides
    sim: dict = field(default_factory=dict)  # SimConfig fields (sim backend)
    share_graph: bool = False
    intra_process: bool = True  # False: talk over DDS only (device nodes in other processes)
    # with intra_process: topics other processes publish too, taken from DDS only (the
    # device nodes of a launched sim session get the orchestrator's control and events)
    dds_topics: tuple[str, ...] = ()
    ros_args: tuple[str, ...] = ()  # --ros-args ... from launch (parameter files, remaps)
    load_config: bool = True  # read config/<node>.yaml here (launch passes the files itself)
    wrap_drivers: dict = field(default_factory=dict)  # sim only: node name -> f(driver, world) -> driver (benchmarks)
    nodes: tuple[str, ...] = tuple(NODES.names())


class Stack:
    """Builds the nodes, spins them, shuts them down (context manager)."""

    def __init__(self, cfg: StackConfig):
        self.cfg = cfg
        if not cfg.share_graph:
            os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF")
        self.context = Context()
        # our entry points own SIGINT/SIGTERM (session_assembly, node_host): rclpy's own
        # handler would shut every context down at the first Ctrl-C, so an orchestrator
        # talking over DDS could no longer mark its trial or close the bag (issue 20)
        from rclpy.signals import SignalHandlerOptions

        rclpy.init(context=self.context, args=["gaze4hri-acq", *cfg.ros_args] if cfg.ros_args else [],
                   signal_handler_options=SignalHandlerOptions.NO)
        self.bus = IntraProcessBus(cfg.dds_topics) if cfg.intra_process else None
        self.world = None
        self.nodes: dict = {}
        self.executor = MultiThreadedExecutor(num_threads=2, context=self.context)
        self._thread: threading.Thread | None = None
        self._closing = False
        self._pacer: _Pacer | None = None
        self._extra_nodes: list = []
        try:
            factories = self._factories()
            for spec in NODES.values():
                if spec.name not in cfg.nodes:
                    continue
                cls = node_class(spec.name)
                over = dict(cfg.params.get(spec.name, {}))
                if spec.lifecycle:
                    over = {"backend": cfg.backend, **over}
                params = node_parameters(spec.name, over) if cfg.load_config else dict(over)
                if spec.name == "orchestrator":
                    params = {}
                kw = {"bus": self.bus, "context": self.context, "parameter_overrides": params}
                if spec.lifecycle and spec.name in factories:
                    kw["driver_factory"] = factories[spec.name]
                self.nodes[spec.name] = cls(spec.name, **kw)
                self.executor.add_node(self.nodes[spec.name])
            if "orchestrator" in self.nodes and not cfg.intra_process:  # device nodes elsewhere (ros2 launch)
                self._publish_session_clock(self.nodes["orchestrator"])
            for n in self._extra_nodes:
                self.executor.add_node(n)
        except BaseException:
            self.close()
            raise

    def _factories(self) -> dict:
        """Drivers sharing one simulated world (sim), or none: nodes build their own."""
        if self.cfg.backend != "sim" or not {"camera", "mocap", "robot"} & set(self.cfg.nodes):
            return {}  # no simulated device here (the orchestrator of a launched session): no world
        # sim code loads only for the sim backend
        from gaze4hri_core.device_config import CameraConfig, MocapConfig, RobotConfig, SimConfig, validate
        from gaze4hri_sim.clock import SimClock
        from gaze4hri_sim.world import SimWorld

        from .drivers.registry import make_camera, make_mocap, make_robot

        simcfg = validate(SimConfig, self.cfg.sim, "simulation settings")
        self.world = w = SimWorld(simcfg, clock=SimClock(manual=True))
        self._pacer = _Pacer(w.clock, self, max_rate=simcfg.real_time_factor)
        self._subscribe_sim_subject()

        # built at each node's configure from its validated parameters (YAML, launch or CLI)
        def camera():
            p = self.nodes["camera"].params
            from .nodes.camera_node import color_settings

            vals = {"width": p["width"], "height": p["height"], "fps": p["fps"],
                    "calibration_dir": simcfg.calibration_dir, "color": color_settings(p)}
            return make_camera("sim", validate(CameraConfig, vals, "camera parameters"), world=w)

        def robot():
            node = self.nodes["robot"]
            p = node.params
            vals = {"model": p["robot_model"], "calibration_dir": p["calibration_dir"] or simcfg.calibration_dir,
                    "limits": node._limits()}
            # the node's one monitor (RobotNode.prepare): the simulated controller checks it too
            return make_robot("sim", validate(RobotConfig, vals, "robot parameters"), world=w, safety=node.monitor)

        facs = {"camera": camera, "mocap": lambda: make_mocap("sim", MocapConfig(), world=w), "robot": robot}
        for name, wrap in self.cfg.wrap_drivers.items():
            facs[name] = (lambda f, g: lambda: g(f(), w))(facs[name], wrap)
        return facs

    def _subscribe_sim_subject(self) -> None:
        """The simulated subject (and light) follow the operator's prompt event, as the
        real subject follows the operator: the prompt is the only coupling."""
        import json

        from gaze4hri_core.protocol import trial_by_id
        from gaze4hri_core.session import Topics

        def on_event(_topic: str, data: bytes) -> None:
            from rclpy.serialization import deserialize_message
            from std_msgs.msg import String

            try:
                e = json.loads(deserialize_message(data, String).data)
            except ValueError:
                return
            if e.get("event") == "prompt" and e.get("trial"):
                self.world.set_trial(trial_by_id(e["trial"]))

        if self.bus is not None and Topics.EVENTS not in self.bus.dds_topics:
            self.bus.subscribe(Topics.EVENTS, on_event)
        else:  # device nodes under ros2 launch: the orchestrator's prompt arrives over DDS
            from rclpy.serialization import serialize_message
            from std_msgs.msg import String

            self._sim_node = rclpy.create_node("sim_world", context=self.context)
            self._sim_node.create_subscription(String, Topics.EVENTS,
                                               lambda m: on_event(Topics.EVENTS, serialize_message(m)), 10)
            self._extra_nodes.append(self._sim_node)
            self._follow_session_clock(self._sim_node)

    # ------------------------------------------------- orchestrator elsewhere (launch)
    # The one-process CLI delivers every sample to the orchestrator synchronously; under
    # ros2 launch the orchestrator reads the device streams over DDS in another process
    # and, on a busy machine, sees the device clock late (1-2 simulated s at a real-time
    # factor of 6), so it stopped trials seconds after their end. The orchestrator
    # therefore publishes the device time it has seen (SESSION_CLOCK) and the simulation
    # clock never runs more than EXTERNAL_LEAD_S ahead of it: the same session timing
    # as one process (issue 14).
    EXTERNAL_LEAD_S = 0.03

    def _follow_session_clock(self, node) -> None:
        from rosgraph_msgs.msg import Clock

        from .nodes.common import SESSION_CLOCK

        self._orch = (0, 0.0)

        def on_clock(m: Clock) -> None:
            import time

            self._orch = (m.clock.sec * 1_000_000_000 + m.clock.nanosec, time.monotonic())
            if self.world is not None:
                self.world.clock.poke()  # the pacer may be waiting for it

        node.create_subscription(Clock, SESSION_CLOCK, on_clock, 10)

    def external_clock_ns(self) -> int | None:
        """The device time the orchestrator in another process has seen, while it is
        alive (heard within the last second); None: no such orchestrator."""
        import time

        t, wall = getattr(self, "_orch", (0, 0.0))
        return t if t and time.monotonic() - wall < 1.0 else None

    def _publish_session_clock(self, client) -> None:
        from rosgraph_msgs.msg import Clock

        from .nodes.common import QOS_RELIABLE, SESSION_CLOCK

        pub = client.create_publisher(Clock, SESSION_CLOCK, QOS_RELIABLE)

        def tick() -> None:
            ns = int(client.device_ns)
            if ns:
                m = Clock()
                m.clock.sec, m.clock.nanosec = ns // 1_000_000_000, ns % 1_000_000_000
                pub.publish(m)

        client.create_timer(0.002, tick)

    def start(self) -> Stack:
        self._thread = threading.Thread(target=self._spin, name="executor", daemon=True)
        self._thread.start()
        if self._pacer is not None:
            self._pacer.start()
        return self

    def _spin(self) -> None:
        """Spin until close. A callback's exception is reported once and spinning goes on
        (rclpy's ``spin`` would re-raise it and stop every node's callbacks); the
        teardown's "cannot use Destroyable" errors are expected and dropped."""
        ex = self.executor
        while self.context.ok() and not getattr(ex, "_is_shutdown", False) and not self._closing:
            try:
                ex.spin_once(timeout_sec=0.1)
            except Exception as e:  # noqa: BLE001 - one callback's fault must not stop the others
                if self._closing or not self.context.ok():
                    break
                if not _is_teardown_error(e):
                    print(f"warning: callback failed: {type(e).__name__}: {e}", file=sys.stderr)

    def _retrieve_callback_errors(self) -> None:
        """Fetch the exceptions of finished callback tasks, so none is printed later by
        rclpy's ``Future.__del__`` ("The following exception was never retrieved: cannot
        use Destroyable ...") after the operator's error line: teardown errors are
        dropped, any other is reported here, before the error line."""
        ex = self.executor
        tasks = [t for t, _e, _n in list(getattr(ex, "_tasks", []))] + list(getattr(ex, "_futures", []))
        for t in tasks:
            try:
                done = t.done()
            except Exception:  # noqa: BLE001
                continue
            if not done:
                try:
                    t.cancel()
                except Exception:  # noqa: BLE001
                    pass
                continue
            err = t.exception()
            if err is not None and not _is_teardown_error(err):
                print(f"warning: callback failed during shutdown: {type(err).__name__}: {err}", file=sys.stderr)
        if hasattr(ex, "_futures"):
            ex._futures = []
        if hasattr(ex, "_tasks"):
            ex._tasks = []

    def __enter__(self) -> Stack:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop streams, close the recorder's bag, destroy nodes, shut the context down."""
        if self._pacer is not None:
            self._pacer.stop()
        rec = self.nodes.get("recorder")
        if rec is not None:
            try:
                rec.shutdown()
            except Exception as e:  # keep closing the rest; the bag is repaired on the next start
                print(f"warning: recorder shutdown: {e}")
        for name in ("robot", "camera", "mocap"):
            n = self.nodes.get(name)
            if n is not None:
                n._stop_thread()
                try:
                    n.release()
                except Exception:
                    pass
        # stop spinning first and wait for the spin thread, so no callback runs while
        # (or after) the nodes are destroyed
        self._closing = True
        if self._thread is not None:
            self._thread.join(timeout=3.0)
        try:
            self.executor.shutdown(timeout_sec=2.0)
        except Exception:
            pass
        for n in [*self.nodes.values(), *self._extra_nodes]:
            try:
                n.destroy_node()
            except Exception:
                pass
        if self.world is not None and hasattr(self.world, "close"):
            self.world.close()
        if self.context.ok():
            rclpy.shutdown(context=self.context)
        self._retrieve_callback_errors()


def _is_teardown_error(e: BaseException) -> bool:
    """rclpy's error for an entity used after its destruction was requested."""
    names = ("InvalidHandle", "ExternalShutdownException", "ShutdownException")
    return "Destroyable" in str(e) or type(e).__name__ in names


class _Pacer(threading.Thread):
    """Drives the simulation clock: as fast as every active stream keeps up (the clock
    never leads the slowest of camera, motion capture and robot by more than
    ``lead_s``, which must exceed the longest sample period, 33 ms at 30 fps) and at
    most ``max_rate`` simulated seconds per wall second. So no simulated device ever
    falls behind its own clock, and a session runs as fast as this machine renders and
    records it (docs/acquisition.md, "Simulation time").

    An event clock, not a polling loop: each device sleeps in ``SimClock.sleep_until``
    on its next sample time; the pacer sleeps until the earliest of those is due at
    ``max_rate`` (at most ``idle_step_s`` of simulated time per step when no device
    waits), then advances the clock straight to it, which wakes that device. While the
    slowest stream holds the clock back it sleeps until a device asks for its next
    sample or the orchestrator's clock moves (``SimClock.wait_change``; ``recheck_s`` at
    the latest). The stamps are those of the continuous pacer it replaces (each
    device's own grid); the clock only stands still between samples, where nothing is
    due (docs/perf/acq.md, "Simulation pacer")."""

    def __init__(self, clock, stack: Stack, max_rate: float, step_s: float = 0.002, lead_s: float = 0.05,
                 idle_step_s: float = 0.01, recheck_s: float = 0.05):
        super().__init__(name="sim-pacer", daemon=True)
        self.clock, self.stack, self.max_rate = clock, stack, max_rate
        # step_s: the most simulated time a late wake-up catches up at once (the old
        # loop's per-iteration step); idle_step_s: the longest jump with no device due
        self.step_ns, self.lead_ns = int(step_s * 1e9), int(lead_s * 1e9)
        self.idle_step_ns, self.recheck_s = int(idle_step_s * 1e9), recheck_s
        self._halt = threading.Event()
        self.wakeups = 0  # loop iterations (benchmarks/acq_idle_cpu.py, tests)
        self.advances = 0

    def _slowest(self) -> tuple[int | None, bool]:
        """(latest stamp of the slowest streaming device, whether a configured device
        has not streamed yet)."""
        stamps, waiting = [], False
        for name in ("camera", "mocap", "robot"):
            n = self.stack.nodes.get(name)
            if n is None or getattr(n, "driver", None) is None:
                continue
            t = getattr(n, "stream_ns", 0) if getattr(n, "streaming", False) else 0
            if t:
                stamps.append(t)
            else:
                waiting = True
        return (min(stamps) if stamps else None), waiting

    def start(self) -> None:
        self.clock.attach_pacer()  # before any device sleeps on it
        super().start()

    def run(self) -> None:
        import time

        clock = self.clock
        try:
            anchor_ns, anchor_wall = clock.now_ns(), time.monotonic()  # the clock ran at `rate` from here
            while not self._halt.is_set():
                self.wakeups += 1
                seen = clock.changes()  # before reading anything the plan depends on: no lost wake-up
                now, wall = clock.now_ns(), time.monotonic()
                if now != anchor_ns:  # moved by someone else (a test stepping it)
                    anchor_ns, anchor_wall = now, wall
                slow, waiting = self._slowest()
                # while a configured device has not streamed yet (bring-up), run at real
                # time: running ahead would leave it a backlog of samples in the past
                rate = 1.0 if waiting else self.max_rate
                due = clock.next_due_ns()
                target = now + self.idle_step_ns if due is None else min(due, now + self.idle_step_ns)
                if slow is not None:
                    target = min(target, slow + self.lead_ns)
                ext = self.stack.external_clock_ns()
                if ext is not None:  # an orchestrator in another process: never far ahead of what it has seen
                    target = min(target, ext + int(self.stack.EXTERNAL_LEAD_S * 1e9))
                if target <= now:  # held back: until a device asks for more or the orchestrator moves on
                    clock.wait_change(seen, self.recheck_s)
                    anchor_ns, anchor_wall = clock.now_ns(), time.monotonic()  # resumes at `rate` from here
                    continue
                at = anchor_wall + (target - anchor_ns) / (rate * 1e9)
                if wall < at:  # not due yet: sleep; an earlier request or a stop wakes it
                    clock.wait_change(seen, at - wall)
                    continue
                clock.advance_to(target)
                self.advances += 1
                anchor_ns, anchor_wall = target, max(at, wall - self.step_ns / (rate * 1e9))
        finally:
            clock.detach_pacer()  # sleepers return (not reached); sleep_until no longer blocks

    def stop(self) -> None:
        self._halt.set()
        self.clock.poke()
        if self.is_alive():
            self.join(timeout=2.0)
        else:
            self.clock.detach_pacer()
