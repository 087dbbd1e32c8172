"""The network side of the UR controller emulator (gaze4hri_sim.ur_controller): the
RTDE server (recipes, streaming, input packages), the dashboard server, the script
ports and the control port, each connection in its own thread."""
from __future__ import annotations

import json
import re
import socket
import struct
import threading
import time

from .ur_codes import ROBOT_MODE, RUNTIME_PAUSED, RUNTIME_PLAYING, RUNTIME_STOPPED
from .ur_motion import parse_move
from .ur_rtde_wire import input_type, output_type, pack_values, recv_package, send_package, unpack_values

__all__ = ["Servers"]


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


class Servers:
    """The server half of URController (a mixin over its state, lock and snapshot)."""

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
                    self._write_command_register(int(n.rsplit("_", 1)[1]), int(v))
                elif n.startswith("input_double_register_"):
                    self.in_double[int(n.rsplit("_", 1)[1])] = float(v)
                elif n == "speed_slider_fraction":
                    self.scaling = float(v)

    def _write_command_register(self, i: int, v: int) -> None:
        """An input int register written by ur_rtde. A clear (0) of the command register ends
        the command at once, not at the program's next cycle: under load a clear and the next
        command can arrive between two cycles, and a cycle that saw only the second would take
        it for the command still executing and never run it (movePath then waits forever)."""
        self.in_int[i] = v
        prog = self.program
        if v == 0 and i == self.off and prog is not None and prog["kind"] == "rtde":
            prog["executing"] = False

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
                    "ROBOT_EMERGENCY_STOP" if self.estop else "PROTECTIVE_STOP" if self.pstop else "NORMAL")
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
                elif req[:1] in (["estop"], ["release"]):  # the emergency stop button pressed / released
                    self.estop = req[0] == "estop"
                    self.arm.halt()
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
                    keys = ("timestamp", "actual_q", "actual_TCP_pose", "actual_TCP_speed", "runtime_state",
                            "safety_status_bits", "robot_mode")
                    reply = json.dumps({k: s[k] for k in keys}
                                       | {"moving": self.arm.moving, "program": self.program_name})
                else:
                    reply = f"unknown request {line.strip()!r}"
            sock.sendall((reply + "\n").encode())
