"""The recorder's stop keeps each frame whole: a stop that arrives between a frame's
image and its metadata / simulator truth (the camera publishes them one after another)
waits for them, so the bag never holds an image without its companions (a flaky
`test_fixed_trial_contents` showed 16 images and 15 truths before this)."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")
import rclpy  # noqa: E402
from gaze4hri_acq.nodes._bus import IntraProcessBus  # noqa: E402
from gaze4hri_acq.nodes._cdr import encode_image  # noqa: E402
from gaze4hri_acq.nodes.common import diag_status, stamp_msg  # noqa: E402
from gaze4hri_acq.recorder.node import RecorderNode  # noqa: E402
from gaze4hri_core.session import Topics  # noqa: E402
from geometry_msgs.msg import Vector3Stamped  # noqa: E402
from rclpy.context import Context  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402

pytestmark = pytest.mark.node

T0 = 1_700_000_000_000_000_000
DT = 33_333_333


def _image(k: int) -> bytes:
    return encode_image(T0 + k * DT, "camera_color_optical_frame", np.zeros((4, 6, 3), np.uint8))


def _meta(k: int) -> bytes:
    return serialize_message(diag_status("frame_meta", 0, "", {"frame_number": k, "stamp_ns": T0 + k * DT}))


def _truth(k: int) -> bytes:
    v = Vector3Stamped()
    stamp_msg(v.header, T0 + k * DT, "camera_color_optical_frame")
    v.vector.z = 1.0
    return serialize_message(v)


@pytest.fixture
def recorder():
    ctx = Context()
    rclpy.init(context=ctx, args=[])
    bus = IntraProcessBus()
    node = RecorderNode("recorder", bus=bus, context=ctx)
    try:
        yield node, bus
    finally:
        node.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def test_stop_between_an_image_and_its_truth_keeps_the_frame_whole(recorder, tmp_path):
    node, bus = recorder
    bag_dir = tmp_path / "bags" / "t"
    node.handle_start({"bag_dir": str(bag_dir), "trial": "t", "start_ns": T0, "need_bytes": 0})
    for k in range(3):
        bus.deliver(Topics.IMAGE, _image(k))
        bus.deliver(Topics.FRAME_META, _meta(k))
        bus.deliver(Topics.SIM_GAZE_TRUTH, _truth(k))
    bus.deliver(Topics.IMAGE, _image(3))  # the camera is about to publish frame 3's metadata and truth
    acks: list[dict] = []
    stopper = threading.Thread(target=lambda: acks.append(node.handle_stop({"end_ns": T0 + 10 * DT})))
    stopper.start()
    time.sleep(0.2)
    bus.deliver(Topics.FRAME_META, _meta(3))
    bus.deliver(Topics.SIM_GAZE_TRUTH, _truth(3))
    stopper.join(10)
    assert acks and not acks[0].get("fault")
    with Reader(bag_dir) as r:
        counts: dict[str, int] = {}
        for c, _t, _raw in r.messages():
            counts[c.topic] = counts.get(c.topic, 0) + 1
    assert counts[Topics.IMAGE] == counts[Topics.FRAME_META] == counts[Topics.SIM_GAZE_TRUTH] == 4


def test_stop_does_not_wait_for_companions_of_frames_after_the_window(recorder, tmp_path):
    """An image stamped after the window's end is not waited for; a stalled camera costs
    at most the bounded wait, and the stop still closes the bag."""
    node, bus = recorder
    bag_dir = tmp_path / "bags" / "t"
    node.handle_start({"bag_dir": str(bag_dir), "trial": "t", "start_ns": T0, "need_bytes": 0})
    for k in range(2):
        bus.deliver(Topics.IMAGE, _image(k))
        bus.deliver(Topics.SIM_GAZE_TRUTH, _truth(k))
    bus.deliver(Topics.IMAGE, _image(2))  # after the window's end below: dropped, nothing awaited
    t = time.monotonic()
    node.handle_stop({"end_ns": T0 + DT + DT // 2})
    assert time.monotonic() - t < 0.5
    with Reader(bag_dir) as r:
        topics = [c.topic for c, _t, _raw in r.messages()]
    assert topics.count(Topics.IMAGE) == topics.count(Topics.SIM_GAZE_TRUTH) == 2
