"""The shipped Foxglove layout and RViz config parse, and every topic, message type,
frame and marker namespace they name is one the system publishes (gaze4hri_core.session
constants, the gaze node's topics and markers, the live view's channels), so a renamed topic breaks this test
rather than the 3D scene."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import yaml

pytest.importorskip("rclpy")
from gaze4hri_acq.live_view import MSG_TYPES as LIVE_TYPES  # noqa: E402
from gaze4hri_acq.live_view import LiveTopics  # noqa: E402
from gaze4hri_acq.nodes.gaze_node import MSG_TYPES as GAZE_TYPES  # noqa: E402
from gaze4hri_acq.nodes.gaze_node import GazeTopics, target_markers  # noqa: E402
from gaze4hri_core.session import FRAMES, MSG_TYPES  # noqa: E402

pytestmark = pytest.mark.unit

CONFIG = Path(__file__).resolve().parents[2] / "src" / "gaze4hri_acq" / "config"
TF = {"/tf": "tf2_msgs/msg/TFMessage", "/tf_static": "tf2_msgs/msg/TFMessage"}
KNOWN = {**MSG_TYPES, **GAZE_TYPES, **TF, **LIVE_TYPES}  # LIVE_TYPES: the session's Foxglove live view
RVIZ_CLASS_TYPES = {"rviz_default_plugins/Pose": "geometry_msgs/msg/PoseStamped",
                    "rviz_default_plugins/MarkerArray": "visualization_msgs/msg/MarkerArray",
                    "rviz_default_plugins/Camera": "sensor_msgs/msg/Image"}


def _layout_panels(node) -> list[str]:
    if isinstance(node, str):
        return [node]
    return _layout_panels(node["first"]) + _layout_panels(node["second"])


def test_foxglove_layout_references_existing_topics_and_frames():
    lay = json.loads((CONFIG / "foxglove_layout.json").read_text())
    panels = _layout_panels(lay["layout"])
    assert sorted(panels) == sorted(lay["configById"])  # every panel placed, none dangling
    topics, frames = set(), set()
    for cfg in lay["configById"].values():
        topics |= set(cfg.get("topics", {}))
        im = cfg.get("imageMode", {})
        topics |= {im[k] for k in ("imageTopic", "calibrationTopic") if k in im} | set(im.get("annotations", {}))
        topics |= {p["value"].split(".")[0] for p in cfg.get("paths", [])}
        topics |= {cfg[k] for k in ("topicToRender", "topicPath") if k in cfg}
        if "followTf" in cfg:
            frames.add(cfg["followTf"])
        frames |= {k.split(":", 1)[1] for k in cfg.get("transforms", {}) if k.startswith("frame:")}
        frames |= {layer["frameId"] for layer in cfg.get("layers", {}).values() if "frameId" in layer}
    unknown = sorted(t for t in topics if t not in KNOWN)
    assert not unknown, f"topics not published by Gaze4HRI: {unknown}"
    assert {GazeTopics.MARKERS, GazeTopics.SCENE, GazeTopics.GAZE} <= topics
    assert {LiveTopics.IMAGE, LiveTopics.SCENE, LiveTopics.STATE} <= topics  # every live view channel is shown
    assert frames and frames <= set(FRAMES.values())
    assert set(FRAMES.values()) <= frames  # the camera frame, robot and world are all shown


def test_rviz_config_references_existing_topics_frames_and_namespaces():
    cfg = yaml.safe_load((CONFIG / "gaze4hri.rviz").read_text())
    vm = cfg["Visualization Manager"]
    assert vm["Global Options"]["Fixed Frame"] in FRAMES.values()
    assert vm["Views"]["Current"]["Target Frame"] in FRAMES.values()
    names = {d["Name"] for d in vm["Displays"]}
    for d in vm["Displays"]:
        if "Reference Frame" in d:
            assert d["Reference Frame"] in FRAMES.values()
        if "Topic" in d:
            topic = d["Topic"]["Value"]
            assert topic in KNOWN, topic
            assert KNOWN[topic] == RVIZ_CLASS_TYPES[d["Class"]], (topic, d["Class"])
        if "Visibility" in d:
            assert set(d["Visibility"]) - {"Value"} <= names
    # the marker namespaces the displays list are the ones the gaze node publishes
    from gaze4hri_acq.nodes.gaze_node import GazeNode

    class _E:
        t_ns, gaze, eye, box, index, head_source = (
            0,
            np.array([0.0, 0.0, -1.0]),
            np.array([0.0, 0.0, 0.6]),
            None,
            0,
            "mocap",
        )

    fake = type("N", (), {"frame_id": FRAMES["camera"], "params": {"arrow_length_m": 0.4}})()
    live = {m.ns for m in GazeNode._markers(fake, _E()).markers}
    scene = {m.ns for m in target_markers({"P1": np.zeros(3)}, 0).markers}
    by_topic = {
        d["Topic"]["Value"]: set(d.get("Namespaces", {})) for d in vm["Displays"] if d["Class"].endswith("MarkerArray")
    }
    assert by_topic[GazeTopics.MARKERS] == live and by_topic[GazeTopics.SCENE] == scene
