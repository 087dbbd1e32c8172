"""The recorder's add_connection and close (recorder/bag_writer.py) write the bytes that
rosbags' own Writer.add_connection and Writer.close, followed by the distro rewrite,
wrote before: the same MCAP file and the same metadata.yaml, byte for byte."""
from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytestmark = pytest.mark.replay
from gaze4hri_acq.nodes._cdr import encode_image, encode_pose  # noqa: E402
from gaze4hri_acq.recorder import bag as bagmod  # noqa: E402
from gaze4hri_acq.recorder.bag import TrialBag, mcap_file  # noqa: E402
from gaze4hri_acq.recorder.bag_writer import metadata_of  # noqa: E402
from gaze4hri_acq.recorder.rosbag2_fields import ros_distro, set_ros_distro, typestore  # noqa: E402
from gaze4hri_core.session import MSG_TYPES, Topics  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402

TOPICS = {t: MSG_TYPES[t] for t in (Topics.IMAGE, Topics.EVENTS, Topics.HEAD_POSE, Topics.TCP_POSE,
                                      Topics.CAMERA_INFO, Topics.DIAGNOSTICS)}


def _record(d, compression: str) -> None:
    b = TrialBag(d, TOPICS, compression=compression, flush_interval_s=0.0)
    for i in range(40):
        t = 1_000_000_000 + i * 10_000_000
        b.write(Topics.HEAD_POSE, t, encode_pose(t, "world", (0.1 * i, 0.2, 0.3), (0.0, 0.0, 0.0, 1.0)))
        if i % 3 == 0:
            b.write(Topics.IMAGE, t, encode_image(t, "cam", np.full((90, 160, 3), i, np.uint8)))
    b.close()


def _rosbags_own(monkeypatch) -> None:
    """The path before bag_writer: rosbags' add_connection (with its msgdef) and close,
    then metadata.yaml rewritten with the distro in use."""
    def add(writer, topic, msgtype, rihs01, qos):
        msgdef = typestore().generate_msgdef(msgtype, ros_version=2)[0]
        return writer.add_connection(topic, msgtype, msgdef=msgdef, rihs01=rihs01, offered_qos_profiles=qos)

    def close(writer):
        path = writer.path
        writer.close()
        set_ros_distro(path)

    monkeypatch.setattr(bagmod, "add_connection", add)
    monkeypatch.setattr(bagmod, "close_writer", close)


@pytest.mark.parametrize("compression", ["none", "zstd"])
def test_bytes_equal_rosbags_own_writer(tmp_path, monkeypatch, compression):
    ours, theirs = tmp_path / "ours" / "trial", tmp_path / "theirs" / "trial"  # one bag name: it is in the bytes
    _record(ours, compression)
    with monkeypatch.context() as m:
        _rosbags_own(m)
        _record(theirs, compression)
    assert mcap_file(ours).read_bytes() == mcap_file(theirs).read_bytes()
    assert (ours / "metadata.yaml").read_text() == (theirs / "metadata.yaml").read_text()
    assert not list(ours.glob(".*tmp"))  # the atomic write left no temporary file
    with Reader(ours) as r:
        assert r.message_count == 40 + 14
    assert f"ros_distro: {ros_distro()}" in (ours / "metadata.yaml").read_text()


def test_metadata_is_rosbags_dictionary_with_the_distro(tmp_path):
    """metadata_of is what rosbags' close builds: checked against the file rosbags' Reader reads."""
    b = TrialBag(tmp_path / "b", TOPICS, flush_interval_s=0.0)
    b.write(Topics.HEAD_POSE, 5, encode_pose(5, "world", (0, 0, 0), (0, 0, 0, 1)))
    info = metadata_of(b._w)
    b.close()
    assert info["message_count"] == 1 and info["ros_distro"] == ros_distro()
    with Reader(tmp_path / "b") as r:
        assert r.duration == info["duration"]["nanoseconds"] + 1  # rosbags' Reader: end - start + 1
        assert {c.topic for c in r.connections} == set(TOPICS)
