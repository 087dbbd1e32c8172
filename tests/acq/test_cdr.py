"""The hand-rolled Image CDR decodes with rclpy to the same message."""
import numpy as np
import pytest

pytest.importorskip("rclpy")
from gaze4hri_acq.nodes._cdr import encode_image, header_stamp_ns  # noqa: E402
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from sensor_msgs.msg import Image  # noqa: E402


@pytest.mark.unit
@pytest.mark.parametrize("frame_id", ["camera_color_optical_frame", "a", "ab", "abc", ""])
@pytest.mark.parametrize("shape,enc", [((5, 7, 3), "rgb8"), ((4, 6), "mono8"), ((3, 2, 3), "bgr8")])
def test_encode_image_round_trip(frame_id, shape, enc):
    img = np.random.default_rng(0).integers(0, 255, shape, dtype=np.uint8)
    stamp = 1_700_000_123_456_789_012
    m = deserialize_message(encode_image(stamp, frame_id, img, enc), Image)
    assert (m.header.stamp.sec, m.header.stamp.nanosec) == (stamp // 10**9, stamp % 10**9)
    assert m.header.frame_id == frame_id and m.encoding == enc
    assert (m.height, m.width, m.step) == (shape[0], shape[1], img.strides[0])
    assert bytes(m.data) == img.tobytes()


@pytest.mark.unit
def test_header_stamp_peek_matches_rclpy():
    m = Image()
    m.header.stamp.sec, m.header.stamp.nanosec = 42, 7
    assert header_stamp_ns(serialize_message(m)) == 42_000_000_007


@pytest.mark.unit
def test_encode_image_rejects_non_uint8():
    with pytest.raises(ValueError, match="uint8"):
        encode_image(0, "x", np.zeros((2, 2, 3), np.float32))
