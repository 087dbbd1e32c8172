"""The bag fields rosbag2's own writer fills in and rosbags' does not: the ROS distro, each
topic's offered QoS and its type hash (tests/acq/test_bag_rosbag2_fields.py compares field by
field with ros2/rosbag2 jazzy, rosbag2_storage_mcap/src/mcap_storage.cpp).

- each channel's metadata holds ``offered_qos_profiles`` (the publishers' QoS as YAML) and
  ``topic_type_hash`` (the type's RIHS01 hash, "RIHS01_<64 hex>"), mcap_storage.cpp:932-938
  (create_topic); the hash is the one rosbag2's recorder takes from the publishers' endpoint
  info (rosbag2_transport/src/rosbag2_transport/recorder.cpp:630-683), which rosidl computes
  at build time into ``share/<pkg>/msg/<Type>.json`` (``type_hash``);
- the "rosbag2" metadata record's ``serialized_metadata`` is the bag's metadata YAML
  (mcap_storage.cpp:955-972, update_metadata) with the ROS distro in use as ``ros_distro``
  (rosbag2_cpp/src/rosbag2_cpp/writers/sequential_writer.cpp:89: $ROS_DISTRO), not rosbags'
  ``ros_distro: rosbags``;
- every topic has offered QoS, also a topic that no publisher offered when the bag opened
  (rosbag2 would not have subscribed to it yet): the profile the project's publisher of that
  topic declares (``PUBLISHER_QOS``); all in the form discovery reports them, which is what
  rosbag2 records (history unknown, depth 0, infinite durations: rclpy's TopicEndpointInfo).
"""
from __future__ import annotations

import functools
import os
from pathlib import Path

from gaze4hri_core.session import Topics
from rosbags.typesys import Stores, get_typestore

__all__ = ["typestore", "ros_distro", "bag_qos", "type_hash", "PUBLISHER_QOS", "as_discovered", "declared_qos",
           "with_distro", "set_ros_distro"]

_TYPESTORE = None


def typestore():
    """rosbags' Kilted type store (cached: building it costs ~0.3 s and it is immutable)."""
    global _TYPESTORE
    if _TYPESTORE is None:
        _TYPESTORE = get_typestore(Stores.ROS2_KILTED)
    return _TYPESTORE


def ros_distro() -> str:
    """The ROS 2 distribution in use, as rosbag2 records it in metadata.yaml: $ROS_DISTRO
    (a sourced ROS), else the distro of the installed rclpy wheel (ros-<distro>-rclpy)."""
    if os.environ.get("ROS_DISTRO"):
        return os.environ["ROS_DISTRO"]
    return _wheel_distro()


@functools.lru_cache(maxsize=1)
def _wheel_distro() -> str:
    """The distro of the installed ros-<distro>-rclpy wheel (a walk over every installed
    distribution, ~30 ms: once per process)."""
    from importlib import metadata

    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower().replace("_", "-")
        if name.startswith("ros-") and name.endswith("-rclpy"):
            return name[len("ros-"):-len("-rclpy")]
    return "unknown"


def bag_qos(profile):
    """An rclpy QoSProfile (a publisher's offered QoS) as rosbags' Qos, which it writes
    like rosbag2: metadata.yaml's offered_qos_profiles and the MCAP channel's
    'offered_qos_profiles' YAML string."""
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    def t(d) -> QosTime:
        ns = int(d.nanoseconds)
        return QosTime(ns // 1_000_000_000, ns % 1_000_000_000)

    return Qos(QosHistory[profile.history.name], int(profile.depth), QosReliability[profile.reliability.name],
               QosDurability[profile.durability.name], t(profile.deadline), t(profile.lifespan),
               QosLiveliness[profile.liveliness.name], t(profile.liveliness_lease_duration),
               bool(profile.avoid_ros_namespace_conventions))


def _type_json_candidates(pkg: str, name: str) -> list[Path]:
    """Where rosidl put ``<pkg>/msg/<name>``'s type description: the ament index's prefixes,
    then the prefix of the package's Python module (``<prefix>/lib/pythonX.Y/site-packages/<pkg>``)."""
    import importlib.util

    candidates = []
    if os.environ.get("AMENT_PREFIX_PATH"):
        candidates += [Path(p) / "share" / pkg / "msg" / f"{name}.json"
                       for p in os.environ["AMENT_PREFIX_PATH"].split(os.pathsep) if p]
    try:
        spec = importlib.util.find_spec(pkg)
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.origin:
        prefix = Path(spec.origin).resolve().parents[4 if Path(spec.origin).name == "__init__.py" else 3]
        candidates.append(prefix / "share" / pkg / "msg" / f"{name}.json")
    return candidates


def type_hash(msgtype: str) -> str:
    """RIHS01 type hash of ``pkg/msg/Name`` (``_type_hash``), looked up once per type and
    ament prefix path: the recorder asks for ~20 types at every trial's start."""
    return _type_hash(msgtype, os.environ.get("AMENT_PREFIX_PATH", ""))


@functools.cache
def _type_hash(msgtype: str, _ament_prefix_path: str) -> str:
    """RIHS01 type hash of ``pkg/msg/Name`` as the installed distro built it: rosidl's
    ``share/<pkg>/msg/<Name>.json`` (found through the ament index where AMENT_PREFIX_PATH is
    set, else beside the package's Python module: ``<prefix>/lib/pythonX.Y/site-packages/<pkg>``),
    the value rclpy reports as TopicEndpointInfo.topic_type_hash; for a type not installed
    here (tf2_msgs without a sourced ROS), rosbags' own RIHS01 computation of the Kilted type."""
    import json

    pkg, _, name = msgtype.split("/")
    for c in _type_json_candidates(pkg, name):
        try:
            hashes = json.loads(c.read_text("utf-8"))["type_hashes"]
        except (OSError, ValueError, KeyError):
            continue
        for h in hashes:
            if h.get("type_name") == msgtype:
                return str(h["hash_string"])
    return typestore().hash_rihs01(msgtype)


# The QoS each topic's publisher declares (nodes/common.py QOS_*; camera_node.py:98-102,
# mocap_node.py:66-71, robot_node.py:129-134, recorder/node.py:129-130, device.py:54), for a
# topic that no publisher offered when the bag opened. Everything else: QOS_SENSOR.
PUBLISHER_QOS = {
    Topics.CAMERA_INFO: "QOS_LATCHED",
    Topics.EVENTS: "QOS_RELIABLE",
    Topics.SAFETY: "QOS_RELIABLE",
    Topics.DIAGNOSTICS: "QOS_RELIABLE",
}
_INFINITE = (9223372036, 854775807)  # RMW_DURATION_INFINITE as rosbag2 writes it (sec, nsec)


def as_discovered(q):
    """A rosbags Qos in the form discovery reports an endpoint's offered QoS, which is what
    rosbag2 records (recorder.cpp:620-628, TopicEndpointInfo.qos_profile): history unknown,
    depth 0, unset (zero) durations infinite, system-default liveliness automatic."""
    from rosbags.interfaces import QosHistory, QosLiveliness, QosTime

    def t(d):
        return QosTime(*_INFINITE) if (d.sec, d.nsec) == (0, 0) else d

    live = QosLiveliness.AUTOMATIC if q.liveliness == QosLiveliness.SYSTEM_DEFAULT else q.liveliness
    return q._replace(history=QosHistory.UNKNOWN, depth=0, deadline=t(q.deadline), lifespan=t(q.lifespan),
                      liveliness=live, liveliness_lease_duration=t(q.liveliness_lease_duration))


def declared_qos(topic: str):
    """The offered QoS of ``topic``'s publisher (PUBLISHER_QOS), as discovery would report it."""
    from ..nodes import common

    return as_discovered(bag_qos(getattr(common, PUBLISHER_QOS.get(topic, "QOS_SENSOR"))))


def with_distro(serialized: str) -> str:
    """rosbags' serialized metadata with the distro in use instead of ``ros_distro: rosbags``."""
    from gaze4hri_core.fileio import dump_yaml, load_yaml

    if "ros_distro: rosbags" not in serialized:  # written with the distro already (bag_writer.close_writer)
        return serialized
    data = load_yaml(serialized)
    if not isinstance(data, dict):
        return serialized
    data["ros_distro"] = ros_distro()
    return dump_yaml(data, sort_keys=False).strip()


def set_ros_distro(bag_dir: Path) -> None:
    """rosbags writes ``ros_distro: rosbags``; rosbag2 writes the distro in use: replace
    it atomically (same directory, os.replace) so metadata.yaml is never half-written."""
    from gaze4hri_core.fileio import dump_yaml, load_yaml

    meta = Path(bag_dir) / "metadata.yaml"
    data = load_yaml(meta.read_text("utf-8"))
    data["rosbag2_bagfile_information"]["ros_distro"] = ros_distro()
    tmp = meta.with_name(".metadata.yaml.tmp")
    tmp.write_text(dump_yaml(data, sort_keys=False), "utf-8")
    os.replace(tmp, meta)
