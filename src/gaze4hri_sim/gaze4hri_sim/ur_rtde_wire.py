"""RTDE wire format for the UR controller emulator (controller side).

Universal Robots, "Real-Time Data Exchange (RTDE) Guide" (protocol v2): every package
is ``uint16 size (header included) | uint8 type | payload``, big-endian. Types used:
V (request protocol version), v (controller version), O (output setup: double
frequency + comma-separated names -> uint8 recipe id + types), I (input setup:
names -> uint8 recipe id + types), S (start), P (pause), U (data package: uint8
recipe id + values in recipe order, both directions), M (text message).
Variable names and types: the guide's tables "Field names and associated types".
"""
from __future__ import annotations

import re
import socket
import struct

__all__ = ["output_type", "input_type", "FMT", "send_package", "recv_package", "pack_values", "unpack_values"]

_VEC6D = {"target_q", "target_qd", "target_qdd", "target_current", "target_moment", "actual_q", "actual_qd",
          "actual_current", "joint_control_output", "actual_TCP_pose", "actual_TCP_speed", "actual_TCP_force",
          "target_TCP_pose", "target_TCP_speed", "joint_temperatures", "actual_joint_voltage", "payload_inertia",
          "ft_raw_wrench", "actual_current_window", "actual_current_as_torque", "target_current_window",
          "joint_position_deviation_ratio", "external_force_torque"}
_VEC3D = {"actual_tool_accelerometer", "payload_cog", "elbow_position", "elbow_velocity", "tcp_offset"}
_UINT64 = {"actual_digital_input_bits", "actual_digital_output_bits", "actual_configurable_digital_input_bits"}
_UINT32 = {"runtime_state", "robot_status_bits", "safety_status_bits", "analog_io_types", "euromap67_input_bits",
           "euromap67_output_bits", "tool_mode", "tool_analog_input_types", "output_bit_registers0_to_31",
           "output_bit_registers32_to_63", "input_bit_registers0_to_31", "input_bit_registers32_to_63",
           "script_control_line", "speed_slider_mask", "joint_mode_bits"}
_INT32 = {"robot_mode", "safety_mode", "safety_status", "tool_output_voltage"}
_VEC6INT32 = {"joint_mode"}
_UINT8 = {"tool_output_mode", "tool_digital_output0_mode", "tool_digital_output1_mode", "standard_digital_output_mask",
          "standard_digital_output", "configurable_digital_output_mask", "configurable_digital_output",
          "tool_digital_output_mask", "tool_digital_output", "standard_analog_output_mask",
          "standard_analog_output_type"}
_DOUBLE = {"timestamp", "actual_execution_time", "speed_scaling", "target_speed_fraction", "actual_momentum",
           "actual_main_voltage", "actual_robot_voltage", "actual_robot_current", "standard_analog_input0",
           "standard_analog_input1", "standard_analog_output0", "standard_analog_output1", "io_current",
           "euromap67_24V_voltage", "euromap67_24V_current", "tool_analog_input0", "tool_analog_input1",
           "tool_output_current", "tool_temperature", "tcp_force_scalar", "payload", "collision_detection_ratio",
           "speed_slider_fraction", "standard_analog_output_0", "standard_analog_output_1"}
_INPUTS = {"speed_slider_mask", "speed_slider_fraction", "standard_digital_output_mask", "standard_digital_output",
           "configurable_digital_output_mask", "configurable_digital_output", "tool_digital_output_mask",
           "tool_digital_output", "standard_analog_output_mask", "standard_analog_output_type",
           "standard_analog_output_0", "standard_analog_output_1", "input_bit_registers0_to_31",
           "input_bit_registers32_to_63", "external_force_torque"}

# struct format per RTDE type (guide, "Data types"); BOOL is one byte.
FMT = {"DOUBLE": "d", "VECTOR6D": "6d", "VECTOR3D": "3d", "UINT64": "Q", "UINT32": "I", "INT32": "i",
       "VECTOR6INT32": "6i", "VECTOR6UINT32": "6I", "UINT8": "B", "BOOL": "?"}
_REG = re.compile(r"^(input|output)_(int|double|bit)_register_(\d+)$")


def _register_type(name: str) -> str | None:
    m = _REG.match(name)
    if not m:
        return None
    n = int(m.group(3))
    if m.group(2) == "bit":
        return "BOOL" if 64 <= n <= 127 else None
    if n > 47:
        return None
    return "INT32" if m.group(2) == "int" else "DOUBLE"


def output_type(name: str) -> str:
    """RTDE type of an output (controller -> client) variable, or NOT_FOUND."""
    reg = _register_type(name)
    if reg is not None:
        return reg
    for names, t in ((_VEC6D, "VECTOR6D"), (_VEC3D, "VECTOR3D"), (_UINT64, "UINT64"), (_UINT32, "UINT32"),
                     (_INT32, "INT32"), (_VEC6INT32, "VECTOR6INT32"), (_UINT8, "UINT8"), (_DOUBLE, "DOUBLE")):
        if name in names:
            return t
    return "NOT_FOUND"


def input_type(name: str) -> str:
    """RTDE type of an input (client -> controller) variable, or NOT_FOUND."""
    if _REG.match(name):
        return (_register_type(name) or "NOT_FOUND") if name.startswith("input_") else "NOT_FOUND"
    return output_type(name) if name in _INPUTS else "NOT_FOUND"


def send_package(sock: socket.socket, kind: int, payload: bytes) -> None:
    sock.sendall(struct.pack(">HB", len(payload) + 3, kind) + payload)


def _read_exact(sock: socket.socket, n: int) -> bytes | None:
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv_package(sock: socket.socket) -> tuple[int, bytes] | None:
    """One package (type, payload), or None when the peer closed the connection."""
    head = _read_exact(sock, 3)
    if head is None:
        return None
    size, kind = struct.unpack(">HB", head)
    body = _read_exact(sock, size - 3) if size > 3 else b""
    return None if body is None else (kind, body)


def pack_values(types: list[str], values: list) -> bytes:
    out = b""
    for t, v in zip(types, values, strict=True):
        out += struct.pack(">" + FMT[t], *(v if isinstance(v, (list, tuple)) else [v]))
    return out


def unpack_values(types: list[str], payload: bytes) -> list:
    out, off = [], 0
    for t in types:
        fmt = ">" + FMT[t]
        vals = struct.unpack_from(fmt, payload, off)
        off += struct.calcsize(fmt)
        out.append(list(vals) if len(vals) > 1 else vals[0])
    return out
