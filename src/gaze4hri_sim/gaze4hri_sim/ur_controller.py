"""A loopback UR controller for the real ur_rtde client (RTDEReceiveInterface,
RTDEControlInterface, DashboardClient), run as its own process:

    python -m gaze4hri_sim.ur_controller --host 127.0.0.5 [--series cb3|e] [--q ...]

ur_rtde's constructors block holding the GIL and its ports are fixed, so each test
runs one emulator process on its own loopback address 127.0.0.N. It speaks:

- RTDE on 30004 (gaze4hri_sim.ur_rtde_wire; Universal Robots "RTDE Guide", v2):
  protocol and controller version (CB3 3.15.7 at 125 Hz, e-Series 5.11.1 at 500 Hz),
  output/input recipe setup (NOT_FOUND only for names the guide does not list),
  start/pause, one data package per client period, input packages into registers.
- the dashboard server on 29999 (one line per request, one line per answer; the
  requests and expected answers of ur_rtde's dashboard_client.cpp).
- the script servers on 30001-30003: a program (``def name(): ... end``) replaces
  the running one. ur_rtde's control script (ScriptClient uploads rtde_control.script
  to 30003) is recognised by its command loop and emulated here: each controller
  cycle it reads input_int_register_0 (+ offset 0 or 24) as the command, answers
  1 (ready) / 2 (done) in output_int_register_0 and reports asynchronous progress in
  output_int_register_2. Source: rtde_control.script as ur_rtde 1.6.5 uploads it
  (default flags; captured on this emulator's script port): signal_ready /
  signal_done_with_cmd l.446-452, write_async_progress_register l.96-128,
  stop_async_move (a killed move reports finished) l.189-200, process_cmd l.467-1055
  (ids 1-4 movej/movej_ik/movel/movel_fk, 29 set_tcp, 31 protective_stop, 33/34
  stopl/stopj l.768-773, 40 get_tcp_offset, 45 move_path l.863-875, 47 is_steady,
  255 stop script l.1046-1054: no done signal), main loop l.1072-1093
  (``cmd == 0 -> ready; otherwise process once, then done``). The path of movePath is
  the ``movel(p[..],a=,v=,r=)`` lines ur_rtde injects into exec_move_path. Any other
  program runs its literal moves, write_output_integer_register and sleep calls in
  order (sendCustomScript).
- a control port (``--control-port``, default 30010, one line per request):
  ``pstop`` (protective stop now), ``unlock``, ``estop`` / ``release`` (the emergency stop),
  ``scaling X``, ``state`` (one JSON line).

The arm (gaze4hri_sim.ur_motion) moves on the core's kinematics; every data package
is built from one state snapshot. ``--pstop-after S`` sets a protective stop S
seconds after the first RTDE client starts streaming. ``--wobble AMP FREQ`` makes
every joint q_i(t) = q0_i + AMP sin(2 pi FREQ t) of the reported timestamp t (a pose
that is a known function of its timestamp, for checking that readers pair them).
"""
from __future__ import annotations

import argparse
import socket
import sys
import threading
import time

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.kinematics import MODELS

from .ur_codes import (
    DASHBOARD_PORT,
    ESTOP_BITS,
    PSTOP_BIT,
    ROBOT_MODE,
    RTDE_PORT,
    RUNTIME_PAUSED,
    RUNTIME_PLAYING,
    RUNTIME_STOPPED,
    SAFETY_NORMAL,
    SAFETY_PROTECTIVE_STOP,
    SAFETY_ROBOT_EMERGENCY_STOP,
    SCRIPT_PORTS,
    SERIES,
)
from .ur_motion import ArmModel
from .ur_programs import Programs
from .ur_servers import Servers, _Client

__all__ = ["URController", "main", "RTDE_PORT", "DASHBOARD_PORT", "SCRIPT_PORTS", "SERIES"]

#: the joints the emulator starts at unless told (the simulated arm's HOME_Q to 3 decimals, rad)
DEFAULT_Q = (-2.885, -1.209, 1.569, -0.506, 2.346, -1.673)


class URController(Programs, Servers):
    """Controller state (arm, registers, program, safety) stepped at the controller rate;
    programs (ur_programs) and servers (ur_servers) act on it."""

    def __init__(self, host: str, series: str = "cb3", model: str = "ur5", q0=None, uptime: float = 1000.0,
                 scaling: float = 1.0, pstop_after: float | None = None, wobble=None, control_port: int = 30010,
                 remote_control: bool = True, log=None):
        self.host, self.series = host, series
        self.version, self.rate_hz, self.polyscope = SERIES.get(series)
        self.lock = threading.RLock()
        q0 = DEFAULT_Q if q0 is None else q0
        self.arm = ArmModel(model, q0)
        self.q0 = np.asarray(q0, float).copy()
        self.model = model
        self.uptime0, self.t0 = float(uptime), time.monotonic()
        self.scaling = float(scaling)
        self.pstop_after, self.wobble = pstop_after, wobble
        self.control_port, self.remote_control = control_port, remote_control
        self.log = log
        self.in_int, self.in_double = [0] * 48, [0.0] * 48
        self.out_int, self.out_double = [0] * 48, [0.0] * 48
        self.robot_mode = ROBOT_MODE["RUNNING"]
        self.pstop = False
        self.estop = False  # emergency stop (control port 'estop'; 'release' clears it)
        self.runtime = RUNTIME_STOPPED
        self.program_name = "<none>"
        self.program: dict | None = None  # {"kind": "rtde"|"custom", ...}
        self.off = 0
        self.async_wr = self.async_op = 0
        self.clients: list[_Client] = []
        self.stream_t0: float | None = None
        self.snapshot: dict = {}
        self._stop = threading.Event()
        self._servers: list[socket.socket] = []

    # ------------------------------------------------------------------ logging
    def _log(self, *parts) -> None:
        if self.log is not None:
            self.log.write(" ".join(str(p) for p in parts) + "\n")
            self.log.flush()

    # ------------------------------------------------------------------ safety
    def trigger_pstop(self, why: str) -> None:
        with self.lock:
            if self.pstop:
                return
            self._log("pstop", why)
            self.pstop = True
            self.arm.halt()
            if self.program is not None and self.program.get("async"):
                self.program["async"] = False
                self._async(-1)
            if self.runtime == RUNTIME_PLAYING:
                self.runtime = RUNTIME_PAUSED

    def unlock_pstop(self) -> None:
        with self.lock:
            self.pstop = False
            if self.runtime == RUNTIME_PAUSED:  # the paused program is aborted; ur_rtde re-uploads it
                self._end_program()

    # ------------------------------------------------------------------ the cycle
    def uptime(self) -> float:
        return self.uptime0 + (time.monotonic() - self.t0)

    def tick(self, dt: float) -> None:
        with self.lock:
            now = time.monotonic()
            if self.pstop_after is not None and self.stream_t0 is not None and now - self.stream_t0 >= self.pstop_after:
                self.pstop_after = None
                self.trigger_pstop("--pstop-after")
            frozen = self.pstop or self.estop or self.robot_mode != ROBOT_MODE["RUNNING"]
            if not frozen:
                self.arm.step(dt, self.scaling)
            else:
                self.arm.step(dt, 0.0)  # held: zero speeds
            if self.program is not None and self.runtime == RUNTIME_PLAYING and not frozen:
                if self.program["kind"] == "rtde":
                    self._step_rtde()
                else:
                    self._step_custom(now)
            self.snapshot = self._state(self.uptime())

    def _state(self, t: float) -> dict:
        arm = self.arm
        q, qd, pose, speed = arm.q, arm.qd, arm.pose_list(), arm.tcp_speed.tolist()
        if self.wobble is not None:
            amp, freq = self.wobble
            w = 2 * np.pi * freq
            q = self.q0 + amp * np.sin(w * t)
            qd = np.full(6, amp * w * np.cos(w * t))
            pose = ArmModel(self.model, q).pose_list()
        powered = self.robot_mode >= ROBOT_MODE["IDLE"]
        s = {"timestamp": t, "actual_q": list(q), "target_q": list(q), "actual_qd": list(qd), "target_qd": list(qd),
             "actual_TCP_pose": pose, "target_TCP_pose": pose, "actual_TCP_speed": speed, "target_TCP_speed": speed,
             "speed_scaling": self.scaling, "target_speed_fraction": 1.0, "robot_mode": self.robot_mode,
             "joint_mode": [253] * 6, "safety_mode": self._safety_mode(), "safety_status": self._safety_mode(),
             "safety_status_bits": (1 | PSTOP_BIT if self.pstop else 1) | (ESTOP_BITS if self.estop else 0),
             "runtime_state": self.runtime,
             "robot_status_bits": int(powered) | (2 if self.runtime == RUNTIME_PLAYING else 0),
             "actual_main_voltage": 48.0, "actual_robot_voltage": 48.0, "joint_temperatures": [30.0] * 6,
             "actual_execution_time": 0.3, "tcp_offset": None}
        for i in range(48):
            s[f"output_int_register_{i}"] = self.out_int[i]
            s[f"output_double_register_{i}"] = self.out_double[i]
            s[f"input_int_register_{i}"] = self.in_int[i]
            s[f"input_double_register_{i}"] = self.in_double[i]
        return s

    def _safety_mode(self) -> int:
        return SAFETY_ROBOT_EMERGENCY_STOP if self.estop else SAFETY_PROTECTIVE_STOP if self.pstop else SAFETY_NORMAL

    def run(self) -> None:
        period = 1.0 / self.rate_hz
        last = time.monotonic()
        nxt = last + period
        while not self._stop.is_set():
            delay = nxt - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            now = time.monotonic()
            self.tick(now - last)
            last = now
            nxt += period
            if now - nxt > 10 * period:  # fell far behind (loaded machine): resynchronise
                nxt = now + period
            self._publish()

    def start(self) -> None:
        """Bind every port, then run the cycle and the servers in daemon threads."""
        plan = [(RTDE_PORT, self._rtde_session), (DASHBOARD_PORT, self._dashboard_session),
                *[(p, self._script_session) for p in SCRIPT_PORTS], (self.control_port, self._control_session)]
        srvs = [(self._listen(p), h) for p, h in plan]
        self.tick(0.0)
        threading.Thread(target=self.run, name="ur-cycle", daemon=True).start()
        for srv, h in srvs:
            threading.Thread(target=self._serve, args=(srv, h), daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        for s in self._servers:
            s.close()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m gaze4hri_sim.ur_controller", description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1", help="loopback address to serve on (one per emulator)")
    ap.add_argument("--series", default="cb3", metavar="{" + ",".join(SERIES) + "}",
                    help="cb3: 3.15 at 125 Hz; e: 5.11 at 500 Hz")
    ap.add_argument("--model", default="ur5", metavar="{" + ",".join(MODELS) + "}")
    ap.add_argument("--q", type=float, nargs=6, default=list(DEFAULT_Q),
                    help="initial joints (rad)")
    ap.add_argument("--uptime", type=float, default=1000.0, help="controller uptime at start (s)")
    ap.add_argument("--scaling", type=float, default=1.0, help="speed scaling (the speed slider)")
    ap.add_argument("--pstop-after", type=float, default=None, help="protective stop S s after RTDE streaming starts")
    ap.add_argument("--wobble", type=float, nargs=2, default=None, metavar=("AMP", "FREQ"),
                    help="report q_i = q0_i + AMP sin(2 pi FREQ timestamp) instead of the arm")
    ap.add_argument("--control-port", type=int, default=30010)
    ap.add_argument("--local-control", action="store_true", help="answer 'is in remote control' with false")
    ap.add_argument("--lifetime", type=float, default=600.0, help="exit after this many seconds")
    ap.add_argument("--log", default=None, help="append requests, programs and commands to this file")
    a = ap.parse_args(argv)
    try:  # the registries' one-line error for an unknown name
        SERIES.get(a.series)
        MODELS.get(a.model, "--model")
    except Gaze4HRIError as e:
        print(f"error: {e.line()}", file=sys.stderr)
        sys.exit(2)
    a.series, a.model = a.series.lower(), a.model.lower()  # the registries' case rule
    log = open(a.log, "a", encoding="utf-8") if a.log else None  # noqa: SIM115 - open for the process lifetime
    ctl = URController(a.host, a.series, a.model, a.q, a.uptime, a.scaling, a.pstop_after, a.wobble,
                       a.control_port, not a.local_control, log)
    try:
        ctl.start()
    except OSError as e:
        print(f"UR controller emulator: cannot listen on {a.host} ({e.strerror}); pick another 127.0.0.N or stop "
              "the process holding the port", file=sys.stderr)
        sys.exit(2)
    print("ready", flush=True)
    try:
        ctl._stop.wait(a.lifetime)
    except KeyboardInterrupt:
        pass
    ctl.close()


if __name__ == "__main__":
    main()
