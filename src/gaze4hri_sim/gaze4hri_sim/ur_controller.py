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
  ``pstop`` (protective stop now), ``unlock``, ``scaling X``, ``state`` (one JSON line).

The arm (gaze4hri_sim.ur_motion) moves on the core's kinematics; every data package
is built from one state snapshot. ``--pstop-after S`` sets a protective stop S
seconds after the first RTDE client starts streaming. ``--wobble AMP FREQ`` makes
every joint q_i(t) = q0_i + AMP sin(2 pi FREQ t) of the reported timestamp t (a pose
that is a known function of its timestamp, for checking that readers pair them).
"""
from __future__ import annotations

import argparse
import json
import re
import socket
import struct
import sys
import threading
import time

import numpy as np

from .ur_motion import ArmModel, MoveCmd, parse_move, parse_moves
from .ur_rtde_wire import input_type, output_type, pack_values, recv_package, send_package, unpack_values

__all__ = ["URController", "main", "RTDE_PORT", "DASHBOARD_PORT", "SCRIPT_PORTS"]

RTDE_PORT, DASHBOARD_PORT, SCRIPT_PORTS = 30004, 29999, (30001, 30002, 30003)
# RTDE enumerations (RTDE Guide, "robot_mode", "safety_mode", "runtime_state"; ur_rtde
# rtde_control_interface.h: SafetyStatus bits, RuntimeState)
ROBOT_MODE = {"POWER_OFF": 3, "POWER_ON": 4, "IDLE": 5, "RUNNING": 7}
SAFETY_NORMAL, SAFETY_PROTECTIVE_STOP = 1, 3
RUNTIME_STOPPED, RUNTIME_PLAYING, RUNTIME_PAUSED = 1, 2, 4
PSTOP_BIT = 1 << 2
VERSIONS = {"cb3": ((3, 15, 7, 106331), 125.0, "URSoftware 3.15.7.106331 (Apr 12 2021)"),
            "e": ((5, 11, 1, 108318), 500.0, "URSoftware 5.11.1.108318 (Jul 14 2021)")}
_WRITE_REG = re.compile(r"^\s*write_output_integer_register\(\s*(\d+)\s*(?:\+\s*(\d+)\s*)?,\s*(-?\d+)\s*\)")
_SLEEP = re.compile(r"^\s*sleep\(\s*([0-9.eE+-]+)\s*\)")
# ScriptClient::setScriptInjection puts the offset after the comment, on the next line
_OFFSET = re.compile(r"reg_offset_int\s*=\s*(?:#[^\n]*\n)?\s*(\d+)")


class _Client:
    """One RTDE connection: its output recipe, input recipes and stream period."""

    def __init__(self, sock: socket.socket):
        self.sock = sock
        self.names: list[str] = []
        self.types: list[str] = []
        self.inputs: dict[int, tuple[list[str], list[str]]] = {}
        self.every = 1
        self.streaming = False
        self.count = 0


#: the joints the emulator starts at unless told (the simulated arm's HOME_Q to 3 decimals, rad)
DEFAULT_Q = (-2.885, -1.209, 1.569, -0.506, 2.346, -1.673)


class URController:
    """Controller state (arm, registers, program, safety) stepped at the controller rate."""

    def __init__(self, host: str, series: str = "cb3", model: str = "ur5", q0=None, uptime: float = 1000.0,
                 scaling: float = 1.0, pstop_after: float | None = None, wobble=None, control_port: int = 30010,
                 remote_control: bool = True, log=None):
        self.host, self.series = host, series
        self.version, self.rate_hz, self.polyscope = VERSIONS[series]
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

    # ------------------------------------------------------------------ registers
    def _async(self, value: int) -> None:
        """write_async_progress_register of rtde_control.script: bits 24-30 op id, 16-23
        write count, 15 running, 0-14 progress; value 0 starts a new operation."""
        self.async_wr = 0 if self.async_wr + 1 > 127 else self.async_wr + 1
        if value == 0:
            self.async_op = 0 if self.async_op + 1 > 127 else self.async_op + 1
        reg = self.async_wr * 65536 + self.async_op * 16777216
        if value >= 0:
            reg += min(int(value), 32767) + 32768
        self.out_int[self.off + 2] = reg

    def _reg_int(self, i: int) -> int:
        return int(self.in_int[self.off + i])

    def _reg_double(self, i: int) -> float:
        return float(self.in_double[self.off + i])

    # ------------------------------------------------------------------ programs
    def load_program(self, text: str) -> None:
        """A complete program arrived on a script port: it replaces the running one."""
        with self.lock:
            self.arm.halt()
            name = re.search(r"^\s*(?:def|sec)\s+(\w+)\s*\(", text, re.M)
            self.program_name = name.group(1) if name else "<unnamed>"
            if "rtde_cmd" in text and "signal_ready" in text:
                m = _OFFSET.search(text)
                self.off = int(m.group(1)) if m else 0
                self.program = {"kind": "rtde", "path": parse_moves(text), "executing": False, "busy": None}
                self._async(-1)  # reset_async_progress()
                self.out_int[self.off + 0] = 1  # signal_ready()
            else:
                self.program = {"kind": "custom", "ops": self._custom_ops(text), "pc": 0, "wait_until": None}
            self.runtime = RUNTIME_PLAYING
            self._log("program", self.program_name, self.program["kind"],
                      len(self.program.get("path", self.program.get("ops", []))))

    @staticmethod
    def _custom_ops(text: str) -> list[tuple]:
        ops: list[tuple] = []
        for line in text.splitlines():
            mv = parse_move(line)
            w, s = _WRITE_REG.match(line), _SLEEP.match(line)
            if mv is not None:
                ops.append(("move", mv))
            elif w:
                ops.append(("reg", int(w.group(1)) + int(w.group(2) or 0), int(w.group(3))))
            elif s:
                ops.append(("sleep", float(s.group(1))))
            elif re.match(r"^\s*stop[lj]\(", line):
                ops.append(("stop", 3.0))
        return ops

    def _end_program(self) -> None:
        self.program = None
        self.runtime = RUNTIME_STOPPED

    def _step_custom(self, now: float) -> None:
        prog = self.program
        while prog is self.program and prog["pc"] < len(prog["ops"]):
            op = prog["ops"][prog["pc"]]
            if op[0] == "move":
                if prog["wait_until"] == "arm":
                    if self.arm.moving:
                        return
                    prog["wait_until"] = None
                    prog["pc"] += 1
                    continue
                moves = []
                k = prog["pc"]
                while k < len(prog["ops"]) and prog["ops"][k][0] == "move":
                    moves.append(prog["ops"][k][1])
                    k += 1
                self.arm.start(moves)
                prog["pc"], prog["wait_until"] = k - 1, "arm"
                return
            if op[0] == "sleep":
                if prog["wait_until"] is None:
                    prog["wait_until"] = now + op[1]
                if now < prog["wait_until"]:
                    return
                prog["wait_until"] = None
            elif op[0] == "reg":
                self.out_int[op[1]] = op[2]
            elif op[0] == "stop":
                self.arm.stop(op[1])
            prog["pc"] += 1
        if prog is self.program:
            self._end_program()

    # ------------------------------------------------------------------ rtde_control command loop
    def _moves_from_registers(self, cmd: int) -> list[MoveCmd] | None:
        vals = tuple(self._reg_double(i) for i in range(6))
        v, a = self._reg_double(6), self._reg_double(7)
        kind, is_pose = {1: ("movej", False), 2: ("movej", True), 3: ("movel", True), 4: ("movel", False)}[cmd]
        return [MoveCmd(kind, vals, is_pose, a, v)]

    def _process(self, cmd: int) -> str | None:
        """Run one command; returns 'arm' when the done signal waits for the arm to stop."""
        prog = self.program
        if cmd in (1, 2, 3, 4, 45):
            moves = prog["path"] if cmd == 45 else self._moves_from_registers(cmd)
            if prog.get("async"):  # stop_async_move(): the killed move reports finished
                self._async(-1)
            self.arm.start(moves)
            if self._reg_int(1) == 1:
                prog["async"] = True
                self._async(0)
                return None
            prog["async"] = False
            return "arm"
        if cmd in (33, 34):
            self.arm.stop(self._reg_double(0))
            if prog.get("async"):
                prog["async"] = False
                self._async(-1)
            return None if self._reg_int(1) == 1 else "arm"
        if cmd == 29:
            self.arm.set_tcp([self._reg_double(i) for i in range(6)])
        elif cmd == 40:
            for i, x in enumerate(self.arm.tcp.t.tolist() + self.arm.tcp.rotvec.tolist()):
                self.out_double[self.off + i] = float(x)
        elif cmd == 47:
            self.out_int[self.off + 1] = 0 if self.arm.moving else 1
        elif cmd == 31:
            self.trigger_pstop("protective_stop() command")
        return None

    def _step_rtde(self) -> None:
        prog = self.program
        if prog["busy"] == "arm":
            if self.arm.moving:
                return
            prog["busy"] = None
            self.out_int[self.off + 0] = 2  # signal_done_with_cmd()
            return
        if prog.get("async") and not self.arm.moving:
            prog["async"] = False
            self._async(-1)  # signal_async_operation_finished()
        elif prog.get("async"):
            self._async(self.arm.progress)  # signal_async_progress(i) of the path entry being run
        cmd = self._reg_int(0)
        if cmd == 0:
            prog["executing"] = False
            self.out_int[self.off + 0] = 1
            return
        if prog["executing"]:
            return
        prog["executing"] = True
        self._log("cmd", cmd)
        if cmd == 255:
            self.arm.stop(10.0)
            self._end_program()
            return
        busy = self._process(cmd)
        if busy is None:
            self.out_int[self.off + 0] = 2
        prog["busy"] = busy

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
            frozen = self.pstop or self.robot_mode != ROBOT_MODE["RUNNING"]
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
             "joint_mode": [253] * 6, "safety_mode": SAFETY_PROTECTIVE_STOP if self.pstop else SAFETY_NORMAL,
             "safety_status": SAFETY_PROTECTIVE_STOP if self.pstop else SAFETY_NORMAL,
             "safety_status_bits": 1 | PSTOP_BIT if self.pstop else 1, "runtime_state": self.runtime,
             "robot_status_bits": int(powered) | (2 if self.runtime == RUNTIME_PLAYING else 0),
             "actual_main_voltage": 48.0, "actual_robot_voltage": 48.0, "joint_temperatures": [30.0] * 6,
             "actual_execution_time": 0.3, "tcp_offset": None}
        for i in range(48):
            s[f"output_int_register_{i}"] = self.out_int[i]
            s[f"output_double_register_{i}"] = self.out_double[i]
            s[f"input_int_register_{i}"] = self.in_int[i]
            s[f"input_double_register_{i}"] = self.in_double[i]
        return s

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

    def _publish(self) -> None:
        snap = self.snapshot
        for c in list(self.clients):
            if not c.streaming:
                continue
            c.count += 1
            if c.count % c.every:
                continue
            vals = []
            for n, t in zip(c.names, c.types, strict=True):
                v = snap.get(n)
                if v is None:
                    v = [0] * (6 if t.startswith("VECTOR6") else 3 if t == "VECTOR3D" else 1)
                vals.append(v)
            try:
                send_package(c.sock, ord("U"), b"\x01" + pack_values(c.types, vals))
            except OSError:
                c.streaming = False

    # ------------------------------------------------------------------ servers
    def _listen(self, port: int) -> socket.socket:
        srv = socket.socket()
        srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        srv.bind((self.host, port))
        srv.listen(8)
        self._servers.append(srv)
        return srv

    def _serve(self, srv: socket.socket, handler) -> None:
        while not self._stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                return
            c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._guard, args=(handler, c), daemon=True).start()

    def _guard(self, handler, c: socket.socket) -> None:
        try:
            handler(c)
        except OSError:
            pass
        finally:
            c.close()

    def _rtde_session(self, sock: socket.socket) -> None:
        c = _Client(sock)
        next_input_id = 1
        try:
            while True:
                pkg = recv_package(sock)
                if pkg is None:
                    return
                kind, body = pkg
                k = chr(kind)
                if k == "V":
                    send_package(sock, kind, b"\x01")
                elif k == "v":
                    send_package(sock, kind, struct.pack(">IIII", *self.version))
                elif k == "O":
                    freq = struct.unpack(">d", body[:8])[0]
                    names = [n for n in body[8:].decode().split(",") if n]
                    types = [output_type(n) for n in names]
                    self._log("output_setup", freq, ",".join(f"{n}:{t}" for n, t in zip(names, types, strict=True)))
                    ok = "NOT_FOUND" not in types
                    if ok:
                        c.names, c.types = names, types
                        c.every = max(1, int(round(self.rate_hz / freq))) if freq > 0 else 1
                    send_package(sock, kind, bytes([1 if ok else 0]) + ",".join(types).encode())
                elif k == "I":
                    names = [n for n in body.decode().split(",") if n]
                    types = [input_type(n) for n in names]
                    self._log("input_setup", ",".join(f"{n}:{t}" for n, t in zip(names, types, strict=True)))
                    rid = 0
                    if "NOT_FOUND" not in types:
                        rid, next_input_id = next_input_id, next_input_id + 1
                        c.inputs[rid] = (names, types)
                    send_package(sock, kind, bytes([rid]) + ",".join(types).encode())
                elif k == "S":
                    with self.lock:
                        self.clients.append(c)
                        c.streaming = True
                        if self.stream_t0 is None:
                            self.stream_t0 = time.monotonic()
                    send_package(sock, kind, b"\x01")
                elif k == "P":
                    c.streaming = False
                    send_package(sock, kind, b"\x01")
                elif k == "U":
                    self._apply_input(c, body)
        finally:
            c.streaming = False
            with self.lock:
                if c in self.clients:
                    self.clients.remove(c)

    def _apply_input(self, c: _Client, body: bytes) -> None:
        recipe = c.inputs.get(body[0])
        if recipe is None:
            return
        names, types = recipe
        vals = unpack_values(types, body[1:])
        with self.lock:
            for n, v in zip(names, vals, strict=True):
                if n.startswith("input_int_register_"):
                    self.in_int[int(n.rsplit("_", 1)[1])] = int(v)
                elif n.startswith("input_double_register_"):
                    self.in_double[int(n.rsplit("_", 1)[1])] = float(v)
                elif n == "speed_slider_fraction":
                    self.scaling = float(v)

    def _dashboard_session(self, sock: socket.socket) -> None:
        sock.sendall(b"Connected: Universal Robots Dashboard Server\n")
        f = sock.makefile("r", encoding="utf-8", newline="\n")
        for line in f:
            req = line.strip()
            reply = self.dashboard(req)
            self._log("dashboard", repr(req), "->", repr(reply))
            sock.sendall((reply + "\n").encode())
            if req == "quit":
                return

    def dashboard(self, req: str) -> str:
        """One dashboard request -> its answer (the strings dashboard_client.cpp expects)."""
        modes = {v: k for k, v in ROBOT_MODE.items()}
        states = {RUNTIME_STOPPED: "STOPPED", RUNTIME_PLAYING: "PLAYING", RUNTIME_PAUSED: "PAUSED"}
        with self.lock:
            low = req.lower()
            if low == "polyscopeversion":
                return self.polyscope
            if low == "robotmode":
                return f"Robotmode: {modes.get(self.robot_mode, 'RUNNING')}"
            if low in ("safetystatus", "safetymode"):
                return f"{'Safetystatus' if low == 'safetystatus' else 'Safetymode'}: " + (
                    "PROTECTIVE_STOP" if self.pstop else "NORMAL")
            if low == "unlock protective stop":
                self.unlock_pstop()
                return "Protective stop releasing"
            if low == "close safety popup":
                return "closing safety popup"
            if low == "power on":
                self.robot_mode = max(self.robot_mode, ROBOT_MODE["IDLE"])
                return "Powering on"
            if low == "power off":
                self.robot_mode = ROBOT_MODE["POWER_OFF"]
                self.arm.halt()
                return "Powering off"
            if low == "brake release":
                if self.robot_mode >= ROBOT_MODE["IDLE"]:
                    self.robot_mode = ROBOT_MODE["RUNNING"]
                return "Brake releasing"
            if low == "play":
                if self.program is None:
                    return "Failed to execute: play"
                self.runtime = RUNTIME_PLAYING
                return "Starting program"
            if low == "stop":
                self.arm.stop(3.0)
                self._end_program()
                return "Stopped"
            if low == "pause":
                if self.runtime == RUNTIME_PLAYING:
                    self.runtime = RUNTIME_PAUSED
                return "Pausing program"
            if low == "programstate":
                return f"{states[self.runtime]} {self.program_name}"
            if low == "running":
                return f"Program running: {'true' if self.runtime == RUNTIME_PLAYING else 'false'}"
            if low == "is in remote control":
                return "true" if self.remote_control else "false"
            if low == "get serial number":
                return "20185500000"
            if low == "get robot model":
                return self.model.upper().removesuffix("E")
            if low == "get loaded program":
                return "No program loaded"
            if low.startswith("popup "):
                return "showing popup"
            if low == "close popup":
                return "closing popup"
            if low.startswith("addtolog "):
                return "Added log message"
            if low == "isprogramsaved":
                return f"true {self.program_name}"
            if low == "quit":
                return "Disconnected"
            return f"could not understand: '{req}'"

    def _script_session(self, sock: socket.socket) -> None:
        buf, lines, in_def = "", [], False
        while True:
            data = sock.recv(65536)
            if not data:
                return
            buf += data.decode("utf-8", "replace")
            while "\n" in buf:
                line, buf = buf.split("\n", 1)
                top = line[:1] not in (" ", "\t", "")
                if not in_def and top and re.match(r"^(def|sec)\s+\w+\s*\(", line):
                    in_def, lines = True, [line]
                elif in_def:
                    lines.append(line)
                    if top and line.strip() == "end":
                        in_def = False
                        self._log("script", f"{len(lines)} lines")
                        self.load_program("\n".join(lines))
                elif line.strip() and parse_move(line) is not None:  # a bare primary-interface command
                    self.load_program(f"def cmd():\n{line}\nend")

    def _control_session(self, sock: socket.socket) -> None:
        f = sock.makefile("r", encoding="utf-8", newline="\n")
        for line in f:
            req = line.strip().split()
            with self.lock:
                if req[:1] == ["pstop"]:
                    self.trigger_pstop("control port")
                    reply = "ok"
                elif req[:1] == ["unlock"]:
                    self.unlock_pstop()
                    reply = "ok"
                elif req[:1] == ["scaling"] and len(req) == 2:
                    try:
                        v = float(req[1])
                    except ValueError:
                        v = float("nan")
                    if 0.0 < v <= 1.0:
                        self.scaling = v
                        reply = "ok"
                    else:
                        reply = f"error: bad scaling {req[1]!r}: give a number in (0, 1]"
                elif req[:1] == ["state"]:
                    s = self.snapshot
                    reply = json.dumps({k: s[k] for k in ("timestamp", "actual_q", "actual_TCP_pose", "actual_TCP_speed",
                                                           "runtime_state", "safety_status_bits", "robot_mode")}
                                       | {"moving": self.arm.moving, "program": self.program_name})
                else:
                    reply = f"unknown request {line.strip()!r}"
            sock.sendall((reply + "\n").encode())

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
    ap.add_argument("--series", choices=sorted(VERSIONS), default="cb3", help="cb3: 3.15 at 125 Hz; e: 5.11 at 500 Hz")
    ap.add_argument("--model", choices=["ur5", "ur5e"], default="ur5")
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
