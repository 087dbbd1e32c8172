"""The NatNet backend against an emulated Motive: real NatNet 4.1 packets over
loopback UDP (unicast), parsed by the real ``natnet`` client."""
import time

import numpy as np
import pytest
from gaze4hri_acq.drivers.mocap_natnet import ClockFrequencyEstimator
from gaze4hri_acq.drivers.registry import make_mocap
from gaze4hri_core.device_config import MocapConfig
from gaze4hri_core.devices import DeviceError
from gaze4hri_core.transforms import SE3, motive_yup_to_zup
from scipy.spatial.transform import Rotation

from .natnet_emulator import EmulatedBody, MotiveEmulator, frame_packet, modeldef_packet

pytestmark = pytest.mark.replay
NAMES = {"HeadBand": "head_band", "CalibTool": "calib_tool", "Probe": "probe"}


def _cfg(port, **kw):
    return MocapConfig(server_ip="127.0.0.1", local_ip="127.0.0.1", command_port=port, bodies=NAMES,
                       connect_timeout_s=kw.pop("timeout", 2.0), **kw)


def _read_all(m, n, timeout_s=3.0):
    out, t_end = [], time.monotonic() + timeout_s
    while len(out) < n and time.monotonic() < t_end:
        f = m.read(0.2)
        if f is not None:
            out.append(f)
    return out


def test_packets_parse_with_the_natnet_library():
    """The emulator's bytes are what natnet's own parsers accept (no sockets)."""
    from natnet.data_descriptions import DataDescriptions
    from natnet.data_frame import DataFrame
    from natnet.packet_buffer import PacketBuffer
    from natnet.version import Version

    pkt = modeldef_packet([EmulatedBody("HeadBand", 7)])
    buf = PacketBuffer(pkt)
    assert buf.read_uint16() == 5 and buf.read_uint16() == len(pkt) - 4
    d = DataDescriptions.read_from_buffer(buf, Version(4, 1))
    assert d.rigid_bodies[0].name == "HeadBand" and d.rigid_bodies[0].id_num == 7 and len(d.rigid_bodies[0].markers) == 3
    assert buf.pointer == len(pkt)
    pkt = frame_packet(42, {7: ((1.0, 2.0, 3.0), (0.0, 0.0, 0.0, 1.0), True, 0.0002)}, 0.42, 1000, 1010, 1040)
    buf = PacketBuffer(pkt)
    buf.read_uint16(), buf.read_uint16()
    f = DataFrame.read_from_buffer(buf, Version(4, 1))
    rb = f.rigid_bodies[0]
    assert f.prefix.frame_number == 42 and rb.id_num == 7 and rb.tracking_valid and np.allclose(rb.pos, (1, 2, 3))
    assert f.suffix.timestamp == 0.42 and f.suffix.stamp_camera_mid_exposure == 1000 and f.suffix.stamp_transmit == 1040
    # natnet 0.3 stops before the 4.x precision timestamp (8 bytes) and reads params early
    assert len(pkt) - buf.pointer == 8


def test_stream_over_loopback_converts_to_zup_and_maps_time():
    bodies = [EmulatedBody("HeadBand", 1), EmulatedBody("CalibTool", 2), EmulatedBody("Probe", 3)]
    R_y = Rotation.from_euler("y", 30, degrees=True)  # Motive Y-up: a 30 deg turn about "up"
    with MotiveEmulator(bodies, latency_s=0.004) as emu:
        m = make_mocap("real", _cfg(emu.port))
        m.connect()
        try:
            assert m.rigid_body_names == {1: "head_band", 2: "calib_tool", 3: "probe"}
            assert emu.client_addr[0] == "127.0.0.1"
            sent = []
            for k in range(20):
                if k == 7:
                    continue  # a frame lost on the wire
                poses = {"HeadBand": ((0.1, 1.2, -0.3), tuple(R_y.as_quat()), True),
                         "CalibTool": ((0.1, 1.3, -0.25), (0.0, 0.0, 0.0, 1.0), True),
                         # Motive sends zeros for an untracked body
                         "Probe": ((0.2, 0.8, 0.1), (0.0, 0.0, 0.0, 1.0), True) if k < 10 else ((0.0,) * 3, (0.0,) * 4, False)}
                t_send = time.time_ns()
                emu.send_frame(500 + k, poses)
                sent.append(t_send)
                time.sleep(0.002)
            frames = _read_all(m, 19)
        finally:
            m.close()
    assert [f.frame_number for f in frames] == [500 + k for k in range(20) if k != 7]
    assert m.frames_dropped == 1
    hb = frames[-1].bodies["head_band"]
    p, q = motive_yup_to_zup((0.1, 1.2, -0.3), R_y.as_quat())
    np.testing.assert_allclose(hb.position, [0.1, 0.3, 1.2], atol=1e-6)  # height 1.2 m is z now
    np.testing.assert_allclose(hb.position, p, atol=1e-6)
    # a turn about Motive's up axis is a turn about world z
    np.testing.assert_allclose(SE3.from_quat(hb.position, hb.quat_xyzw).rotvec, [0, 0, np.radians(30)], atol=1e-6)
    assert frames[5].bodies["probe"].tracking_valid and not frames[-1].bodies["probe"].tracking_valid
    # exposure time = arrival - 4 ms latency (from the 10 MHz tick stamps), after the first frame
    assert all(f.latency_ns == pytest.approx(4_000_000, abs=2) for f in frames[1:])
    for f, t_send in zip(frames[1:], sent[1:], strict=False):
        assert -0.0045e9 < f.stamp_ns - t_send < 0.05e9


def test_clock_frequency_estimate():
    est = ClockFrequencyEstimator()
    assert est.add(0.0, 5_000) is None
    assert est.add(0.01, 5_000 + 100_000) == pytest.approx(1e7)
    assert ClockFrequencyEstimator(3e6).add(0.0, 1) == 3e6


def test_silent_server_is_a_one_line_error():
    with MotiveEmulator([EmulatedBody("HeadBand", 1)], answer=False) as emu:
        m = make_mocap("real", _cfg(emu.port, timeout=0.5))
        t = time.monotonic()
        with pytest.raises(DeviceError) as e:
            m.connect()
        assert time.monotonic() - t < 3.0
        assert emu.requests and emu.requests[0] == 0  # it did send NAT_CONNECT
    msg = str(e.value)
    assert "\n" not in msg and "OptiTrack Motive" in msg and f"127.0.0.1:{emu.port}" in msg and "Streaming" in msg
