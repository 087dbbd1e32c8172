"""Every trial bag carries /tf and /tf_static consistent with its pose topics and the
session's calibration, a frame_id on every header, and metadata.yaml as rosbag2
writes it (the ROS distro in use, the publishers' offered QoS); read with the
``mcap`` library's own reader, as Foxglove and other MCAP tools do."""
from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("rclpy")

from tests.acq.conftest import SHORT_TRIALS  # noqa: E402


def _messages(path: Path):
    from mcap.reader import make_reader

    with open(path, "rb") as f:
        for schema, channel, message in make_reader(f).iter_messages(log_time_order=True):
            yield schema.name, channel.topic, message.log_time, message.data


def _stamp(h) -> int:
    return h.stamp.sec * 1_000_000_000 + h.stamp.nanosec


@pytest.mark.node
@pytest.mark.parametrize("trial", SHORT_TRIALS)
def test_tf_matches_the_pose_topics_and_the_calibration(short_session, trial):
    from gaze4hri_acq.recorder.bag import mcap_file
    from gaze4hri_acq.recorder.tf import body_frame
    from gaze4hri_core.calibration import load_calibration
    from gaze4hri_core.session import Topics, bag_dir
    from geometry_msgs.msg import PoseStamped
    from rclpy.serialization import deserialize_message
    from rosbags.typesys import Stores, get_typestore

    ts = get_typestore(Stores.ROS2_KILTED)
    poses, tfs, static, frames, n_tf = [], {}, [], {}, 0
    for schema, topic, _t, data in _messages(mcap_file(bag_dir(short_session, trial))):
        if topic == "/tf_static":
            static.append(ts.deserialize_cdr(data, schema))
        elif topic == "/tf":
            for tr in ts.deserialize_cdr(data, schema).transforms:
                tfs[(tr.header.frame_id, tr.child_frame_id, _stamp(tr.header))] = tr.transform
                n_tf += 1
        elif schema == "geometry_msgs/msg/PoseStamped":
            m = deserialize_message(data, PoseStamped)
            child = "tool0" if topic == Topics.TCP_POSE else body_frame(topic.split("/")[3])
            poses.append((m.header.frame_id, child, _stamp(m.header), m.pose))
        if (
            schema in ts.fielddefs
            and "header" in [f[0] for f in ts.fielddefs[schema][1]]
            and topic not in ("/tf", "/tf_static")
        ):
            pkg, _, name = schema.split("/")
            cls = getattr(importlib.import_module(f"{pkg}.msg"), name)
            frames.setdefault(topic, set()).add(deserialize_message(data, cls).header.frame_id)
    assert poses and n_tf == len(poses)  # one transform per pose message
    for parent, child, stamp, p in poses:
        tr = tfs[(parent, child, stamp)]  # the same instant, the same frames
        np.testing.assert_allclose(
            [tr.translation.x, tr.translation.y, tr.translation.z],
            [p.position.x, p.position.y, p.position.z],
            atol=1e-9,
            rtol=0,
        )
        np.testing.assert_allclose(
            [tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w],
            [p.orientation.x, p.orientation.y, p.orientation.z, p.orientation.w],
            atol=1e-9,
            rtol=0,
        )
    assert {c for _p, c, _s, _q in poses} >= {"tool0", "head_band"}

    assert len(static) == 1  # once per trial, at its start
    st = {(t.header.frame_id, t.child_frame_id): t.transform for t in static[0].transforms}
    cal = load_calibration(short_session / "calibration", None)
    for key, T in (
        (("world", "base"), cal.T_world_base),
        (("tool0", "camera_color_optical_frame"), cal.T_tool0_camera),
    ):
        tr = st[key]
        np.testing.assert_allclose([tr.translation.x, tr.translation.y, tr.translation.z], T.t, atol=1e-9, rtol=0)
        q = np.array([tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w])
        np.testing.assert_allclose(q * np.sign(q @ T.quat_xyzw), T.quat_xyzw, atol=1e-9, rtol=0)
    for name, p in cal.targets.items():
        tr = st[("world", f"target_{name}")]
        np.testing.assert_allclose([tr.translation.x, tr.translation.y, tr.translation.z], p, atol=1e-9, rtol=0)

    # a frame_id on every header (REP-103/105 names, docs/session_layout.md)
    allowed = {"world", "base", "tool0", "camera_color_optical_frame"}
    for topic, ids in frames.items():
        assert ids and ids <= allowed, (topic, ids)


@pytest.mark.node
def test_metadata_names_the_ros_distro_and_the_offered_qos(short_session):
    from gaze4hri_acq.recorder.bag import ros_distro
    from gaze4hri_core.session import bag_dir

    meta = yaml.safe_load((bag_dir(short_session, SHORT_TRIALS[0]) / "metadata.yaml").read_text())[
        "rosbag2_bagfile_information"
    ]
    assert meta["ros_distro"] == ros_distro() != "rosbags"
    qos = {
        t["topic_metadata"]["name"]: t["topic_metadata"]["offered_qos_profiles"]
        for t in meta["topics_with_message_count"]
    }
    assert qos["/camera/color/camera_info"][0]["durability"] == "transient_local"  # the latched CameraInfo publisher
    assert qos["/camera/color/image_raw"][0]["reliability"] == "reliable"
    assert qos["/tf_static"][0]["durability"] == "transient_local" and qos["/tf"][0]["durability"] == "volatile"
