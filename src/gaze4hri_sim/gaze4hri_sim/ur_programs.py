"""The programs of the UR controller emulator (gaze4hri_sim.ur_controller): ur_rtde's
control script, recognised by its command loop and emulated command by command, and
any other program run line by line (moves, register writes, sleeps). Source lines of
rtde_control.script are cited in ur_controller's docstring."""
from __future__ import annotations

import re

from .ur_codes import RUNTIME_PLAYING, RUNTIME_STOPPED
from .ur_motion import MoveCmd, parse_move, parse_moves

__all__ = ["Programs"]

_WRITE_REG = re.compile(r"^\s*write_output_integer_register\(\s*(\d+)\s*(?:\+\s*(\d+)\s*)?,\s*(-?\d+)\s*\)")
_SLEEP = re.compile(r"^\s*sleep\(\s*([0-9.eE+-]+)\s*\)")
# ScriptClient::setScriptInjection puts the offset after the comment, on the next line
_OFFSET = re.compile(r"reg_offset_int\s*=\s*(?:#[^\n]*\n)?\s*(\d+)")


class Programs:
    """The program half of URController (a mixin over its registers, arm and lock):
    loading a program and stepping it once per controller cycle."""

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
                # A real controller takes far longer to start a program than to apply an RTDE input
                # package, so ur_rtde's clear after stopScript (movePath re-uploads the script) always
                # lands first; this emulator's script and RTDE sockets have no such order. A command
                # still in the register when the program starts was meant for the program before:
                # it counts as executing until cleared (else a stale 255 ends the new program and
                # movePath waits for it forever, as seen under load).
                self.program = {"kind": "rtde", "path": parse_moves(text), "executing": self._reg_int(0) != 0,
                                "busy": None}
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
