"""rosbags' Writer.add_connection and Writer.close (rosbags 0.11.9, pinned in
requirements/base.txt) without their per-call ruamel.yaml work: a trial bag opens ~20
connections and closes once per trial, and ruamel's dumps, with the type hashes and
message definitions looked up again each time, made the recorder's start and stop take
0.3-0.5 s of every trial (docs/perf/acq.md, "Between trials").

The bytes are rosbags' and rosbag2's: a channel's QoS YAML is rosbags' own dump (ruamel),
computed once per distinct QoS list; the metadata is rosbags' dictionary with the distro
in use (rosbag2_fields.ros_distro), written with sorted keys (as rosbags' ruamel dump) by
the libyaml emitter that rewrote rosbags' text before (tests/acq/test_bag_writer.py
compares the two paths byte for byte).
"""
from __future__ import annotations

import functools
import os
from io import StringIO

from rosbags.interfaces import Connection, ConnectionExtRosbag2, MessageDefinition, MessageDefinitionFormat
from rosbags.rosbag2.metadata import dump_qos_v9

from .rosbag2_fields import ros_distro, typestore

__all__ = ["add_connection", "close_writer", "metadata_of", "msgdef"]


@functools.cache
def msgdef(msgtype: str) -> str:
    """The ros2msg definition rosbags generates for ``msgtype`` (Kilted type store)."""
    return typestore().generate_msgdef(msgtype, ros_version=2)[0]


@functools.cache
def _qos_yaml(qos: tuple) -> str:
    """A channel's ``offered_qos_profiles`` string, as rosbags' add_connection dumps it."""
    from rosbags.rosbag2.writer import YAML  # the YAML class rosbags' writer dumps with (ruamel.yaml's)

    stream = StringIO()
    yaml = YAML(typ="safe")
    yaml.default_flow_style = False
    yaml.dump(dump_qos_v9(list(qos)), stream)
    return stream.getvalue().strip()


def add_connection(writer, topic: str, msgtype: str, rihs01: str, offered_qos_profiles) -> Connection:
    """``writer.add_connection(topic, msgtype, msgdef=..., rihs01=..., offered_qos_profiles=...)``
    of a version-9 MCAP writer, with the definition and the QoS string taken from the caches."""
    qos = list(offered_qos_profiles)
    conn = Connection(
        id=len(writer.connections) + 1, topic=topic, msgtype=msgtype,
        msgdef=MessageDefinition(MessageDefinitionFormat.MSG, msgdef(msgtype)), digest=rihs01, msgcount=0,
        ext=ConnectionExtRosbag2(serialization_format="cdr", offered_qos_profiles=qos), owner=writer,
    )
    if any(c.topic == topic and c.msgtype == msgtype and c.ext == conn.ext for c in writer.connections):
        raise ValueError(f"connection added twice: {topic} ({msgtype})")
    if msgtype not in writer.added_types:
        writer.storage.add_msgtype(conn)
        writer.added_types.add(msgtype)
    writer.storage.add_connection(conn, _qos_yaml(tuple(qos)))
    writer.connections.append(conn)
    writer.counts[conn.id] = 0
    return conn


def metadata_of(writer) -> dict:
    """``rosbag2_bagfile_information`` as rosbags' Writer.close builds it (no file-level
    compression: the chunks are compressed), with the distro in use as rosbag2 writes it."""
    duration = max(0, writer.max_timestamp - writer.min_timestamp)
    start, count, name = writer.min_timestamp, sum(writer.counts.values()), writer.storage.path.name
    return {
        "version": writer.version,
        "storage_identifier": writer.storage_plugin.name.lower(),
        "relative_file_paths": [name],
        "duration": {"nanoseconds": duration},
        "starting_time": {"nanoseconds_since_epoch": start},
        "message_count": count,
        "topics_with_message_count": [
            {"topic_metadata": {"name": c.topic, "type": c.msgtype, "serialization_format": c.ext.serialization_format,
                                "offered_qos_profiles": dump_qos_v9(c.ext.offered_qos_profiles),
                                "type_description_hash": c.digest},
             "message_count": writer.counts[c.id]}
            for c in writer.connections if isinstance(c.ext, ConnectionExtRosbag2)
        ],
        "compression_format": "",
        "compression_mode": "",
        "files": [{"path": name, "starting_time": {"nanoseconds_since_epoch": start},
                   "duration": {"nanoseconds": duration}, "message_count": count}],
        "custom_data": writer.custom_data or None,
        "ros_distro": ros_distro(),
    }


def close_writer(writer) -> None:
    """``writer.close()``: the MCAP summary with the metadata record, then metadata.yaml
    written atomically (a temporary file in the bag directory, then os.replace)."""
    from gaze4hri_core.fileio import dump_yaml

    info = metadata_of(writer)
    # keys sorted at every level, as rosbags' ruamel dump (and so every bag before) has them
    writer.storage.close(writer.version, dump_yaml(info, sort_keys=True).strip())
    writer.storage = None
    tmp = writer.metapath.with_name(".metadata.yaml.tmp")
    tmp.write_text(dump_yaml({"rosbag2_bagfile_information": info}, sort_keys=True), "utf-8")
    os.replace(tmp, writer.metapath)
