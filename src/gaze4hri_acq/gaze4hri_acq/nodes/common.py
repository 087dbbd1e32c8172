"""What every Gaze4HRI node shares: typed parameters with descriptions and ranges,
the control/acknowledgement protocol, QoS profiles, subscriptions that use the
intra-process bus when one is given, diagnostics helpers.

Control protocol (mocap4r2's Control START/ACK_START idea, JSON in std_msgs/String
because an ament_python package cannot generate interfaces):
  /gaze4hri/control  {"to": node, "cmd": ..., "seq": n, "session": id, ...}
  /gaze4hri/ack      {"from": node, "seq": n, "ok": true|false, "error": "...", ...}
"""
from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from gaze4hri_core.errors import Gaze4HRIError
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from std_msgs.msg import String

from ._bus import IntraProcessBus
from ._cdr import FAST_DECODERS

__all__ = [
    "CONTROL", "ACK", "Param", "declare_params", "read_params", "load_param_yaml", "CONFIG_DIR",
    "QOS_SENSOR", "QOS_RELIABLE", "QOS_LATCHED", "ControlMixin", "subscribe", "diag_status", "to_json",
    "ParameterError", "stamp_msg", "disk_free_bytes",
]

CONTROL = "/gaze4hri/control"
# rosgraph_msgs/Clock: the device time the orchestrator has seen (runner.Stack)
SESSION_CLOCK = "/gaze4hri/session_clock"
ACK = "/gaze4hri/ack"


def _config_dir() -> Path:
    """config/ of the source tree (checkout, colcon --symlink-install), else the
    installed share/gaze4hri_acq/config (ament index)."""
    from gaze4hri_core.device_config import share_dir

    src = Path(__file__).resolve().parents[2] / "config"
    if (src / "orchestrator.yaml").is_file():
        return src
    share = share_dir("gaze4hri_acq")
    return share / "config" if share is not None else src


CONFIG_DIR = _config_dir()

# Frames and poses: reliable, keep-last deep enough for a 1 s burst at the highest rate.
QOS_SENSOR = QoSProfile(depth=200, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
QOS_RELIABLE = QoSProfile(depth=100, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
QOS_LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)


class ParameterError(Gaze4HRIError):
    """A node parameter is outside its allowed values."""


@dataclass(frozen=True)
class Param:
    """One declared parameter: name, default, description and allowed values."""

    name: str
    default: Any
    description: str
    choices: tuple | None = None
    range: tuple[float, float] | None = None

    def descriptor(self) -> ParameterDescriptor:
        d = ParameterDescriptor(description=self.description)
        if self.choices:
            d.additional_constraints = "one of: " + ", ".join(str(c) for c in self.choices)
        if self.range is not None:
            lo, hi = self.range
            if isinstance(self.default, bool):
                pass
            elif isinstance(self.default, int):
                d.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi), step=0)]
            elif isinstance(self.default, float):
                d.floating_point_range = [FloatingPointRange(from_value=float(lo), to_value=float(hi), step=0.0)]
        return d

    def check(self, node_name: str, value: Any) -> Any:
        if self.choices and value not in self.choices:
            raise ParameterError(f"parameter '{self.name}' is {value!r}", node_name,
                                 f"use one of {', '.join(map(str, self.choices))}")
        if self.range is not None and not isinstance(value, (bool, str)):
            lo, hi = self.range
            if not (lo <= value <= hi):
                raise ParameterError(f"parameter '{self.name}' is {value}", node_name, f"allowed range is [{lo}, {hi}]")
        return value


def declare_params(node, params: tuple[Param, ...]) -> None:
    """Declare with descriptions and ranges; an override outside them fails in one line."""
    from rclpy.exceptions import InvalidParameterTypeException, InvalidParameterValueException

    kinds = {bool: "true or false", int: "a whole number", float: "a number", str: "a string"}
    for p in params:
        try:
            node.declare_parameter(p.name, p.default, p.descriptor())
        except (InvalidParameterValueException, InvalidParameterTypeException) as e:
            allowed = f"allowed range is [{p.range[0]}, {p.range[1]}]" if p.range else (
                f"use one of {', '.join(map(str, p.choices))}" if p.choices else "")
            if isinstance(e, InvalidParameterTypeException):  # e.g. 30.0 for an integer parameter
                kind = kinds.get(type(p.default), type(p.default).__name__)
                allowed = f"use {kind}" + (f"; {allowed}" if allowed else "")
            raise ParameterError(f"parameter '{p.name}' rejected ({e})".replace("\n", " "), node.get_name(),
                                 allowed or None) from None


def read_params(node, params: tuple[Param, ...]) -> dict[str, Any]:
    """Current values, validated: an invalid value names the parameter and the range."""
    out = {}
    for p in params:
        v = node.get_parameter(p.name).value
        if isinstance(p.default, float) and isinstance(v, int):
            v = float(v)
        out[p.name] = p.check(node.get_name(), v)
    return out


def load_param_yaml(path: Path, node_name: str) -> dict[str, Any]:
    """The ``ros__parameters`` of ``node_name`` in a ROS parameter YAML (what launch loads)."""
    data = yaml.safe_load(Path(path).read_text("utf-8")) or {}
    for key in (node_name, f"/{node_name}", "/**"):
        if key in data:
            return dict(data[key].get("ros__parameters", {}))
    return {}


def to_json(obj: dict) -> String:
    return String(data=json.dumps(obj, separators=(",", ":"), default=str))


def stamp_msg(header, stamp_ns: int, frame_id: str) -> None:
    header.stamp.sec = int(stamp_ns // 1_000_000_000)
    header.stamp.nanosec = int(stamp_ns % 1_000_000_000)
    header.frame_id = frame_id


def diag_status(name: str, level: int, message: str, values: dict[str, Any], hardware_id: str = "") -> DiagnosticStatus:
    return DiagnosticStatus(level=bytes([level]), name=name, message=message, hardware_id=hardware_id,
                            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])


def diag_array(stamp_ns: int, statuses: list[DiagnosticStatus], frame_id: str = "world") -> DiagnosticArray:
    """Diagnostics stamped on the session clock, in the frame of the device they
    describe (docs/session_layout.md, Frames; never an empty frame_id)."""
    a = DiagnosticArray(status=statuses)
    stamp_msg(a.header, stamp_ns, frame_id)
    return a


def disk_free_bytes(path: Path) -> int:
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


def subscribe(node, bus: IntraProcessBus | None, msg_type, topic: str, callback: Callable, qos=QOS_RELIABLE,
              raw: bool = False):
    """Subscribe through the in-process bus when given (one-process runner), else (or
    for the bus's ``dds_topics``, published by other processes too) over DDS.
    ``raw`` callbacks get (topic, cdr_bytes); others get the message."""
    if bus is not None and topic not in bus.dds_topics:
        if raw:
            bus.subscribe(topic, callback)
        else:  # the 100-125 Hz streams decoded without rclpy's message objects (same fields)
            fast = FAST_DECODERS.get(msg_type)
            if fast is not None:
                bus.subscribe(topic, lambda _t, b: callback(fast(b)))
            else:
                bus.subscribe(topic, lambda _t, b: callback(deserialize_message(b, msg_type)))
        return None
    if raw:
        return node.create_subscription(msg_type, topic, lambda b: callback(topic, b), qos, raw=True)
    return node.create_subscription(msg_type, topic, callback, qos)


class ControlMixin:
    """Receives control commands addressed to this node and acknowledges them.

    Subclasses implement ``handle_<cmd>(req) -> dict`` (extra ack fields) and raise
    Gaze4HRIError (or return {"ok": False, "error": ...}) to refuse.
    """

    control_name: str = ""

    def _init_control(self, bus: IntraProcessBus | None) -> None:
        from ._bus import FastPublisher

        self._ack_pub = FastPublisher(self, String, ACK, QOS_RELIABLE, bus)
        subscribe(self, bus, String, CONTROL, self._on_control, QOS_RELIABLE)

    def ack(self, seq: int, ok: bool, **fields) -> None:
        self._ack_pub.publish(to_json({"from": self.control_name, "seq": seq, "ok": ok, **fields}))

    def _on_control(self, msg: String) -> None:
        try:
            req = json.loads(msg.data)
        except ValueError:
            return
        if req.get("to") not in (self.control_name, "*"):
            return
        seq = int(req.get("seq", -1))
        handler = getattr(self, f"handle_{req.get('cmd')}", None)
        if handler is None:
            self.ack(seq, False, error=f"{self.control_name}: unknown command {req.get('cmd')!r}")
            return
        try:
            extra = handler(req) or {}
        except Gaze4HRIError as e:
            self.ack(seq, False, error=e.line())
            return
        except Exception as e:  # a handler bug must not kill the executor; the orchestrator sees it
            self.get_logger().error(f"{req.get('cmd')}: {type(e).__name__}: {e}")
            self.ack(seq, False, error=f"{self.control_name}: {type(e).__name__}: {e}")
            return
        ok = extra.pop("ok", True)
        self.ack(seq, ok, **extra)
