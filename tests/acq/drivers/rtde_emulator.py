"""An RTDE receive emulator for tests: speaks the RTDE protocol v2 of Universal Robots'
"Real-Time Data Exchange (RTDE) Guide" on 127.0.0.1 so that ur_rtde's real
RTDEReceiveInterface connects, negotiates its output recipe and streams state.

Runs as its own process (``python rtde_emulator.py --port 30004 ...``): ur_rtde's
constructor blocks while holding the GIL, so a server thread in the test process
would never answer. Packages: uint16 size (incl. header), uint8 type, payload;
big-endian. Handled: V (protocol version), v (controller version), O (output setup),
I (input setup: NOT_FOUND), S (start), P (pause); then U (data) at ``--rate`` Hz.
The state: joints ``--q`` (rad), TCP pose from the UR5 forward kinematics, controller
uptime from ``--uptime``, speed scaling ``--scaling``; after ``--pstop-after`` seconds
of streaming the protective-stop bit (safety status bit 2) is set.
"""
from __future__ import annotations

import argparse
import select
import socket
import struct
import sys
import time

import numpy as np

VEC6 = {"target_q", "target_qd", "target_qdd", "target_current", "target_moment", "actual_q", "actual_qd", "actual_current",
        "joint_control_output", "actual_TCP_pose", "actual_TCP_speed", "actual_TCP_force", "target_TCP_pose", "target_TCP_speed",
        "joint_temperatures", "actual_joint_voltage", "payload_inertia", "ft_raw_wrench", "actual_tool_accelerometer6"}
VEC3 = {"actual_tool_accelerometer", "payload_cog", "elbow_position", "elbow_velocity"}
UINT64 = {"actual_digital_input_bits", "actual_digital_output_bits"}
UINT32 = {"runtime_state", "robot_status_bits", "safety_status_bits", "output_bit_registers0_to_31", "output_bit_registers32_to_63"}
INT32 = {"robot_mode", "safety_mode"}
VEC6INT32 = {"joint_mode"}
FMT = {"DOUBLE": "d", "VECTOR6D": "6d", "VECTOR3D": "3d", "UINT64": "Q", "UINT32": "I", "INT32": "i", "VECTOR6INT32": "6i", "UINT8": "B", "BOOL": "?"}


def rtde_type(name: str) -> str:
    if name in VEC6:
        return "VECTOR6D"
    if name in VEC3:
        return "VECTOR3D"
    if name in UINT64:
        return "UINT64"
    if name in UINT32:
        return "UINT32"
    if name in INT32 or name.startswith("output_int_register"):
        return "INT32"
    if name in VEC6INT32:
        return "VECTOR6INT32"
    return "DOUBLE"  # timestamp, speed_scaling, voltages, analog I/O, output_double_register_N, ...


def _send(c: socket.socket, kind: int, payload: bytes) -> None:
    c.sendall(struct.pack(">HB", len(payload) + 3, kind) + payload)


def _recv(c: socket.socket) -> tuple[int | None, bytes]:
    head = b""
    while len(head) < 3:
        x = c.recv(3 - len(head))
        if not x:
            return None, b""
        head += x
    size, kind = struct.unpack(">HB", head)
    body = b""
    while len(body) < size - 3:
        x = c.recv(size - 3 - len(body))
        if not x:
            return None, b""
        body += x
    return kind, body


def state_values(names, q, uptime, scaling, pstop):
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[3] / "src" / "gaze4hri_core"))
    from scipy.spatial.transform import Rotation

    from gaze4hri_core import kinematics

    T = kinematics.forward(q)
    pose = [*T[:3, 3], *Rotation.from_matrix(T[:3, :3]).as_rotvec()]
    vals = {"timestamp": uptime, "actual_q": list(q), "target_q": list(q), "actual_TCP_pose": pose, "target_TCP_pose": pose,
            "speed_scaling": scaling, "target_speed_fraction": 1.0, "robot_mode": 7, "safety_mode": 3 if pstop else 1,
            "safety_status_bits": (1 | (1 << 2)) if pstop else 1, "runtime_state": 2, "robot_status_bits": 0b1011}
    out = []
    for n in names:
        t = rtde_type(n)
        default = [0] * (6 if t in ("VECTOR6D", "VECTOR6INT32") else 3 if t == "VECTOR3D" else 1)
        v = vals.get(n, default)
        out.append(v if isinstance(v, list) else [v])
    return out


def serve(port: int, q, uptime0: float, scaling: float, rate: float, pstop_after: float | None, lifetime_s: float) -> None:
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", port))
    srv.listen(1)
    srv.settimeout(lifetime_s)
    print("ready", flush=True)
    t_end = time.monotonic() + lifetime_s
    while time.monotonic() < t_end:  # one client after another (a probe, then ur_rtde)
        srv.settimeout(max(0.1, t_end - time.monotonic()))
        try:
            c, _ = srv.accept()
        except TimeoutError:
            return
        with c:
            _session(c, q, uptime0, scaling, rate, pstop_after, t_end)


def _session(c, q, uptime0, scaling, rate, pstop_after, t_end) -> None:
    names: list[str] = []
    types: list[str] = []
    streaming_since = None
    next_t = time.monotonic()
    while time.monotonic() < t_end:
        r, _, _ = select.select([c], [], [], max(0.0, next_t - time.monotonic()) if streaming_since else 0.5)
        if r:
            try:
                kind, body = _recv(c)
            except OSError:
                return
            if kind is None:
                return
            if kind == ord("V"):
                _send(c, kind, b"\x01")
            elif kind == ord("v"):
                _send(c, kind, struct.pack(">IIII", 3, 15, 8, 0))
            elif kind == ord("O"):
                names = [n for n in body[8:].decode().split(",") if n]
                types = [rtde_type(n) for n in names]
                _send(c, kind, b"\x01" + ",".join(types).encode())
            elif kind == ord("I"):
                _send(c, kind, b"\x00" + ",".join("NOT_FOUND" for n in body.decode().split(",") if n).encode())
            elif kind == ord("S"):
                _send(c, kind, b"\x01")
                streaming_since = time.monotonic()
            elif kind == ord("P"):
                _send(c, kind, b"\x01")
                streaming_since = None
        if streaming_since is not None and time.monotonic() >= next_t:
            dt = time.monotonic() - streaming_since
            pstop = pstop_after is not None and dt >= pstop_after
            payload = b"\x01"
            for t, v in zip(types, state_values(names, q, uptime0 + dt, scaling, pstop), strict=True):
                payload += struct.pack(">" + FMT[t], *v)
            try:
                _send(c, ord("U"), payload)
            except OSError:
                return
            next_t += 1.0 / rate


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=30004)
    ap.add_argument("--q", type=float, nargs=6, default=[-2.885, -1.209, 1.569, -0.506, 2.346, -1.673])
    ap.add_argument("--uptime", type=float, default=1000.0)
    ap.add_argument("--scaling", type=float, default=0.75)
    ap.add_argument("--rate", type=float, default=125.0)
    ap.add_argument("--pstop-after", type=float, default=None)
    ap.add_argument("--lifetime", type=float, default=30.0)
    a = ap.parse_args()
    serve(a.port, np.array(a.q), a.uptime, a.scaling, a.rate, a.pstop_after, a.lifetime)


if __name__ == "__main__":
    main()
