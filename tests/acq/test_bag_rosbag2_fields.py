"""Every trial bag's MCAP fields as rosbag2's own MCAP writer writes them (issue 21 item 6),
checked field by field on a recorded session against ros2/rosbag2, branch jazzy (commit
64717ee802a29b15acdcecd36f3f8ef286ad18b8):
- header profile "ros2": rosbag2_storage_mcap/src/mcap_storage.cpp:97;
- channel: message encoding "cdr", metadata exactly {offered_qos_profiles, topic_type_hash}:
  mcap_storage.cpp:930-938 (create_topic); the hash as the recorder takes it from the
  publishers' endpoint info, "RIHS01_<hex>": rosbag2_transport/.../recorder.cpp:630-683;
- offered_qos_profiles: a YAML list of QoS with rosbag2_storage's version 9 fields and string
  enums: rosbag2_storage/src/rosbag2_storage/qos.cpp:45-115, 151-163; discovered QoS (history
  unknown, depth 0): recorder.cpp:620-628;
- messages: sequence 0, log time = receive time, so never backwards per channel in file
  order: mcap_storage.cpp:871-876;
- metadata record "rosbag2" with the single key serialized_metadata, the BagMetadata YAML:
  mcap_storage.cpp:955-972, rosbag2_storage/include/rosbag2_storage/yaml.hpp:257-274, with
  ros_distro = $ROS_DISTRO: rosbag2_cpp/src/rosbag2_cpp/writers/sequential_writer.cpp:89.
Read with the ``mcap`` library's reader (what Foxglove and the mcap CLI use).
"""
from __future__ import annotations

import importlib
import re

import pytest
import yaml

pytest.importorskip("rclpy")

from tests.acq.conftest import SHORT_TRIALS  # noqa: E402

pytestmark = pytest.mark.node

QOS_FIELDS = {
    "history",
    "depth",
    "reliability",
    "durability",
    "deadline",
    "lifespan",
    "liveliness",
    "liveliness_lease_duration",
    "avoid_ros_namespace_conventions",
}
BAG_FIELDS = {
    "version",
    "storage_identifier",
    "duration",
    "starting_time",
    "message_count",
    "topics_with_message_count",
    "compression_format",
    "compression_mode",
    "relative_file_paths",
    "files",
    "custom_data",
    "ros_distro",
}


def _read(path):
    from mcap.reader import make_reader

    with open(path, "rb") as f:
        r = make_reader(f)
        header = r.get_header()
        summary = r.get_summary()
        metas = list(r.iter_metadata())
        msgs = [(ch.topic, m.sequence, m.log_time, m.data) for _s, ch, m in r.iter_messages(log_time_order=False)]
    return header, summary, metas, msgs


def _endpoint_hash(msgtype: str) -> str | None:
    """The RIHS01 hash rclpy reports for a live publisher of ``msgtype`` (TopicEndpointInfo,
    what rosbag2's recorder records); None when the type is not installed here."""
    import rclpy
    from rclpy.context import Context

    pkg, _, name = msgtype.split("/")
    try:
        cls = getattr(importlib.import_module(f"{pkg}.msg"), name)
    except ImportError:
        return None
    ctx = Context()
    rclpy.init(context=ctx, args=[])
    try:
        node = rclpy.create_node("hash_probe", context=ctx)
        node.create_publisher(cls, "/hash_probe", 1)
        return str(
            node.get_publishers_info_by_topic("/hash_probe")[0].topic_type_hash
        )  # rclpy TypeHash: "RIHS01_<hex>"
    finally:
        rclpy.shutdown(context=ctx)


@pytest.mark.parametrize("trial", SHORT_TRIALS)
def test_mcap_fields_are_rosbag2s(short_session, trial):
    from gaze4hri_acq.recorder.bag import mcap_file, ros_distro, type_hash
    from gaze4hri_core.session import bag_dir

    bag = bag_dir(short_session, trial)
    header, summary, metas, msgs = _read(mcap_file(bag))
    assert header.profile == "ros2"
    channels = list(summary.channels.values())
    assert channels
    hashes = {}
    for ch in channels:
        schema = summary.schemas[ch.schema_id]
        assert ch.message_encoding == "cdr" and schema.encoding in ("ros2msg", "ros2idl")
        assert set(ch.metadata) == {"offered_qos_profiles", "topic_type_hash"}, (ch.topic, ch.metadata)
        h = ch.metadata["topic_type_hash"]
        assert re.fullmatch(r"RIHS01_[0-9a-f]{64}", h), (ch.topic, h)
        assert h == type_hash(schema.name)
        hashes[ch.topic] = h
        qos = yaml.safe_load(ch.metadata["offered_qos_profiles"])
        assert isinstance(qos, list) and qos, f"{ch.topic}: no offered QoS"  # also a topic without messages
        for q in qos:
            assert set(q) == QOS_FIELDS, (ch.topic, q)
            assert (q["history"], q["depth"]) == ("unknown", 0)  # as discovery reports a publisher
            assert q["reliability"] in ("reliable", "best_effort") and q["durability"] in (
                "volatile",
                "transient_local",
            )
            assert q["liveliness"] == "automatic" and all(
                set(q[k]) == {"sec", "nsec"} for k in ("deadline", "lifespan", "liveliness_lease_duration")
            )
    by_topic = {ch.topic: ch for ch in channels}
    assert yaml.safe_load(by_topic["/tf_static"].metadata["offered_qos_profiles"])[0]["durability"] == "transient_local"
    assert (
        yaml.safe_load(by_topic["/camera/color/camera_info"].metadata["offered_qos_profiles"])[0]["durability"]
        == "transient_local"
    )

    # messages: sequence 0, log times never backwards within a channel in file order
    last: dict[str, int] = {}
    for topic, seq, t, _data in msgs:
        assert seq == 0
        assert t >= last.get(topic, 0), f"{topic}: log time goes back in file order"
        last[topic] = t
    assert "/tf" in last and {c.topic for c in channels} - set(last)  # /tf written; some topics carry no message

    # the embedded rosbag2 record: the bag's metadata YAML with the distro in use
    (meta,) = [m for m in metas if m.name == "rosbag2"]
    assert set(meta.metadata) == {"serialized_metadata"}
    info = yaml.safe_load(meta.metadata["serialized_metadata"])
    assert set(info) == BAG_FIELDS and info["version"] == 9 and info["storage_identifier"] == "mcap"
    assert info["ros_distro"] == ros_distro() != "rosbags"
    for ti in info["topics_with_message_count"]:
        tm = ti["topic_metadata"]
        assert tm["type_description_hash"] == hashes[tm["name"]] and tm["offered_qos_profiles"]
    # metadata.yaml says the same
    side = yaml.safe_load((bag / "metadata.yaml").read_text("utf-8"))["rosbag2_bagfile_information"]
    assert side["ros_distro"] == info["ros_distro"]
    assert {
        t["topic_metadata"]["name"]: t["topic_metadata"]["type_description_hash"]
        for t in side["topics_with_message_count"]
    } == hashes


def test_type_hash_is_what_rclpy_reports_for_a_publisher(short_session):
    """Each recorded type's channel hash equals TopicEndpointInfo.topic_type_hash of a live
    publisher of that type (rosbag2's source), where the type is installed (tf2_msgs may not be
    here: then rosbags' own RIHS01 of the Kilted definition, the same algorithm)."""
    from gaze4hri_acq.recorder.bag import mcap_file, type_hash
    from gaze4hri_acq.recorder.rosbag2_fields import typestore
    from gaze4hri_core.session import bag_dir

    _h, summary, _m, _msgs = _read(mcap_file(bag_dir(short_session, SHORT_TRIALS[0])))
    types = {summary.schemas[c.schema_id].name: c.metadata["topic_type_hash"] for c in summary.channels.values()}
    checked = 0
    for ty, h in sorted(types.items()):
        live = _endpoint_hash(ty)
        if live is None:
            assert h == typestore().hash_rihs01(ty)
            continue
        assert h == live == type_hash(ty), ty
        checked += 1
    assert checked >= 5


def test_a_topic_without_publisher_gets_its_publishers_declared_qos():
    """PUBLISHER_QOS agrees with the profiles the nodes declare, in discovered form: the latched
    CameraInfo transient_local, the rest volatile and reliable."""
    from gaze4hri_acq.recorder.bag import declared_qos
    from gaze4hri_core.session import Topics
    from rosbags.interfaces import QosDurability, QosHistory, QosReliability

    info, pose = declared_qos(Topics.CAMERA_INFO), declared_qos(Topics.rigid_body("probe"))
    assert info.durability == QosDurability.TRANSIENT_LOCAL and pose.durability == QosDurability.VOLATILE
    assert pose.reliability == info.reliability == QosReliability.RELIABLE
    assert pose.history == QosHistory.UNKNOWN and pose.depth == 0 and pose.deadline.sec == 9223372036
