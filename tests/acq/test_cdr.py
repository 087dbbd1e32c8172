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


def _same_but_padding(ours: bytes, theirs: bytes, msg_type) -> None:
    """Our CDR and rclpy's: the same length and the same message (rclpy leaves padding bytes unset)."""
    assert len(ours) == len(theirs)
    assert deserialize_message(ours, msg_type) == deserialize_message(theirs, msg_type)


_FRAMES = ["world", "base", "a", "ab", "abc", "camera_body", ""]


@pytest.mark.unit
@pytest.mark.parametrize("frame_id", _FRAMES)
def test_pose_cdr_equals_rclpys_and_reads_back(frame_id):
    from gaze4hri_acq.nodes._cdr import decode_pose, encode_pose
    from gaze4hri_acq.nodes.mocap_node import pose_msg
    from geometry_msgs.msg import PoseStamped

    rng = np.random.default_rng(len(frame_id))
    for _ in range(20):
        stamp, xyz, q = int(rng.integers(0, 2_000_000_000 * 10**9)), rng.normal(size=3), rng.normal(size=4)
        ours = encode_pose(stamp, frame_id, xyz, q)
        _same_but_padding(ours, serialize_message(pose_msg(stamp, frame_id, xyz, q)), PoseStamped)
        m, v = deserialize_message(ours, PoseStamped), decode_pose(ours)
        assert (v.header.stamp.sec, v.header.stamp.nanosec, v.header.frame_id) == (
            m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id)
        for a, b in ((v.pose.position, m.pose.position), (v.pose.orientation, m.pose.orientation)):
            assert all(getattr(a, k) == getattr(b, k) for k in "xyz") and getattr(a, "w", 0) == getattr(b, "w", 0)


@pytest.mark.unit
@pytest.mark.parametrize("frame_id", _FRAMES)
def test_robot_state_cdr_equals_rclpys(frame_id):
    from gaze4hri_acq.nodes._cdr import encode_joint_state, encode_twist, serialize
    from gaze4hri_acq.nodes.common import stamp_msg
    from gaze4hri_acq.nodes.robot_node import JOINT_NAMES
    from geometry_msgs.msg import TwistStamped
    from sensor_msgs.msg import JointState

    rng = np.random.default_rng(1)
    q, qd, stamp = rng.normal(size=6), rng.normal(size=6), 1_700_000_000_123_456_789
    js = JointState(name=JOINT_NAMES, position=list(q), velocity=list(qd))
    stamp_msg(js.header, stamp, frame_id)
    _same_but_padding(encode_joint_state(stamp, frame_id, JOINT_NAMES, q, qd), serialize(js), JointState)
    cmd = TwistStamped()
    stamp_msg(cmd.header, stamp, frame_id)
    cmd.twist.linear.x = 0.125
    _same_but_padding(encode_twist(stamp, frame_id, (0.125, 0.0, 0.0)), serialize(cmd), TwistStamped)


@pytest.mark.unit
@pytest.mark.parametrize("frame_id", _FRAMES[:4])
def test_diagnostics_cdr_equals_rclpys_and_reads_back(frame_id):
    from diagnostic_msgs.msg import DiagnosticArray
    from gaze4hri_acq.nodes._cdr import decode_diagnostics, encode_diagnostics
    from gaze4hri_acq.nodes.common import diag_array, diag_status

    statuses = [(0, "head_band", "tracked", "", {"id": 1, "tracking_valid": True, "marker_error_m": 0.00012}),
                (1, "table", "lost", "hw7", {}), (2, "c", "", "", {"frame_number": 12345, "é": "ü"})]
    stamp = 99_000_000_123
    ours = encode_diagnostics(stamp, frame_id, statuses)
    theirs = serialize_message(diag_array(stamp, [diag_status(n, lv, msg, vals, hw)
                                                  for lv, n, msg, hw, vals in statuses], frame_id=frame_id))
    _same_but_padding(ours, theirs, DiagnosticArray)
    m, v = deserialize_message(ours, DiagnosticArray), decode_diagnostics(ours)
    assert (v.header.stamp.sec, v.header.stamp.nanosec, v.header.frame_id) == (
        m.header.stamp.sec, m.header.stamp.nanosec, m.header.frame_id)
    assert len(v.status) == len(m.status)
    for a, b in zip(v.status, m.status, strict=True):
        assert (a.level, a.name, a.message, a.hardware_id) == (b.level, b.name, b.message, b.hardware_id)
        assert [(kv.key, kv.value) for kv in a.values] == [(kv.key, kv.value) for kv in b.values]
