"""The NatNet backend against an emulated Motive: real NatNet 4.1 packets over
loopback UDP (unicast), parsed by the real ``natnet`` client; and a real Motive 2.1 /
NatNet 3.0 capture replayed over loopback, with faults made from its packets (issue 20:
a foreign source, truncated and garbage packets, non-finite or non-unit poses)."""
import time

import numpy as np
import pytest
from gaze4hri_acq.drivers.mocap_natnet import ClockFrequencyEstimator
from gaze4hri_acq.drivers.registry import make_mocap
from gaze4hri_acq.testing.natnet_emulator import (
    FAULT_KINDS,
    EmulatedBody,
    MotiveCapture,
    MotiveEmulator,
    find_capture_dir,
    frame_number_v3,
    frame_packet,
    modeldef_packet,
    read_sample_client,
    replay_capture,
    rigid_bodies_v3,
)
from gaze4hri_core.device_config import MocapConfig
from gaze4hri_core.devices import DeviceError
from gaze4hri_core.transforms import SE3, motive_yup_to_zup
from scipy.spatial.transform import Rotation

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
    body = d.rigid_bodies[0]
    assert body.name == "HeadBand" and body.id_num == 7 and len(body.markers) == 3
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
                         "Probe": ((0.2, 0.8, 0.1), (0.0, 0.0, 0.0, 1.0), True) if k < 10
                         else ((0.0,) * 3, (0.0,) * 4, False)}
                t_send = time.time_ns()
                emu.send_frame(500 + k, poses)
                sent.append(t_send)
                time.sleep(0.002)
            frames = _read_all(m, 19)
        finally:
            m.close()
    assert [f.frame_number for f in frames] == [500 + k for k in range(20) if k != 7]
    assert m.frames_missed == 1 and m.counters["frames_missed"] == 1
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


# ------------------------------------------------------------------ the real capture
@pytest.fixture(scope="module")
def capture():
    d = find_capture_dir()
    if d is None:
        pytest.skip("shared/reference/reliability_data/natnet_motive21_v3 is not beside the repository")
    return MotiveCapture(d), read_sample_client(d / "SampleClient_output.txt")


def _check_poses(run, cap, sample_client, skip=()):
    """Each tracked frame against an independent decode of its bytes (float32, 1e-6 m
    after Y-up -> Z-up) and against what the SDK's SampleClient printed (2 decimals)."""
    by_fn = {frame_number_v3(p.payload): p.payload for p in cap.frames}
    n_sc = 0
    for f in run.frames:
        b = f.bodies["race_quad"]
        if f.frame_number in skip:
            continue
        assert b.tracking_valid, f.frame_number
        (_, rid, pos, quat, err), = rigid_bodies_v3(by_fn[f.frame_number])
        p, q = motive_yup_to_zup(pos, quat)
        np.testing.assert_allclose(b.position, p, atol=1e-6)
        assert abs(float(np.dot(b.quat_xyzw, q))) == pytest.approx(1.0, abs=1e-6)
        assert b.id == rid == 2 and b.marker_error_m == pytest.approx(err)
        sc = sample_client.get(f.frame_number)
        if sc is not None:  # SampleClient prints "%3.2f": half a unit of the last digit
            n_sc += 1
            np.testing.assert_allclose(b.position, motive_yup_to_zup(sc["pos"], (0, 0, 0, 1))[0], atol=0.005 + 1e-9)
            q_sc = motive_yup_to_zup((0, 0, 0), np.asarray(sc["quat"]) / np.linalg.norm(sc["quat"]))[1]
            assert abs(float(np.dot(b.quat_xyzw, q_sc))) == pytest.approx(1.0, abs=1e-4)
            if f is not run.frames[0]:  # the clock rate is estimated from the second frame on
                assert f.latency_ns / 1e6 == pytest.approx(sc["system_latency_ms"], abs=0.01)
    return n_sc


def test_real_capture_replays_to_what_sampleclient_printed(capture):
    """100 frames of Motive 2.1 (NatNet 3.0, rigid body 'RaceQuad') at 10x, server
    replies from the capture: every frame delivered, poses and latency as the SDK saw."""
    cap, sc = capture
    run = replay_capture(cap, 100, speed=10.0)
    fns = [frame_number_v3(p.payload) for p in cap.frames[:100]]
    assert [f.frame_number for f in run.frames] == fns == list(range(162734, 162834))
    assert _check_poses(run, cap, sc) == 100
    assert run.counters == {"packets": 102, "frames_received": 100, "frames_missed": 0, "packets_foreign": 0,
                            "packets_malformed": 0, "poses_untracked": 0, "poses_invalid": 0}
    assert run.driver.rigid_body_names == {2: "race_quad"} and run.driver.last_fault is None


def test_real_capture_survives_each_fault(capture):
    """One of each fault in a 100-frame slice: a spoofed source (127.0.0.2), truncated
    packets (header size kept / made to match), garbage, a 3-byte runt, a NaN position,
    an infinite quaternion component, a non-unit quaternion. Each is counted once, the
    next genuine frame arrives, and the stream runs to the end."""
    cap, sc = capture
    faults = {5 + 10 * i: kind for i, kind in enumerate(FAULT_KINDS)}
    run = replay_capture(cap, 100, speed=10.0, faults=faults)
    assert [o.kind for o in run.outcomes] == list(FAULT_KINDS)
    assert all(o.survived for o in run.outcomes), [o for o in run.outcomes if not o.survived]
    damaged = {o.frame_number for o in run.outcomes
               if o.kind in ("nan_position", "inf_orientation", "nonunit_quaternion")}
    assert [f.frame_number for f in run.frames] == list(range(162734, 162834))  # nothing lost, nothing extra
    assert {f.frame_number for f in run.frames if not f.bodies["race_quad"].tracking_valid} == damaged
    for f in run.frames:  # the spoofed pose (9.5, 9.5, 9.5) never got in
        assert np.all(np.abs(f.bodies["race_quad"].position) < 5.0)
    assert _check_poses(run, cap, sc, skip=damaged) == 97
    assert run.counters == {"packets": 108, "frames_received": 100, "frames_missed": 0, "packets_foreign": 1,
                            "packets_malformed": 5, "poses_untracked": 3, "poses_invalid": 3}
    last = run.driver.last_fault
    assert "\n" not in last and "malformed" in last and "127.0.0.1" in last


def test_whole_capture_with_a_fault_every_fifth_frame(capture):
    """All 518 frames at 10x with a fault at every fifth frame, the kinds in turn (103
    faults; about 1.5 s)."""
    cap, sc = capture
    faults = {k: FAULT_KINDS[(k // 5) % len(FAULT_KINDS)] for k in range(2, len(cap.frames) - 1, 5)}
    run = replay_capture(cap, speed=10.0, faults=faults)
    assert len(run.outcomes) == len(faults) and all(o.survived for o in run.outcomes), \
        [o for o in run.outcomes if not o.survived]
    damaged = {o.frame_number for o in run.outcomes
               if o.kind in ("nan_position", "inf_orientation", "nonunit_quaternion")}
    assert [f.frame_number for f in run.frames] == list(range(162734, 162734 + 518))
    assert _check_poses(run, cap, sc, skip=damaged) == 251 - len(damaged & set(sc))
    assert run.counters["frames_received"] == 518 and run.counters["frames_missed"] == 0


def test_pose_validity_rules():
    """Untracked: Motive says so, a NaN / inf value, or |q| off 1 by more than QUAT_NORM_TOL
    (1e-3); a float32-rounded unit quaternion passes."""
    from types import SimpleNamespace

    from gaze4hri_acq.drivers.mocap_natnet import QUAT_NORM_TOL, NatNetMocap

    m = NatNetMocap(MocapConfig(up_axis="z"))
    q = np.array([0.1, 0.2, 0.3, 0.9])
    q /= np.linalg.norm(q)

    def conv(pos=(0.1, 0.2, 0.3), rot=tuple(q), valid=True):
        return m._convert("b", SimpleNamespace(id_num=1, pos=pos, rot=rot, tracking_valid=valid, marker_error=0.001))

    assert conv().tracking_valid and conv(rot=tuple(np.float32(q))).tracking_valid
    assert conv(rot=tuple(q * (1 + 0.5 * QUAT_NORM_TOL))).tracking_valid
    assert m.poses_invalid == 0
    bad = [conv(pos=(np.nan, 0, 0)), conv(pos=(0, np.inf, 0)), conv(rot=(0, 0, -np.inf, 1)), conv(rot=(np.nan,) * 4),
           conv(rot=tuple(q * (1 + 2 * QUAT_NORM_TOL))), conv(rot=(0, 0, 0, 0))]
    assert not any(b.tracking_valid for b in bad) and m.poses_invalid == 6
    assert all(np.all(np.isfinite(b.position)) and np.all(np.isfinite(b.quat_xyzw)) for b in bad)
    assert not conv(pos=(0, 0, 0), rot=(0, 0, 0, 0), valid=False).tracking_valid  # Motive's own "lost"
    assert m.poses_invalid == 6 and m.poses_untracked == 7


def test_mocap_node_publishes_the_counters_on_diagnostics(capture):
    """The node's /diagnostics status carries the driver's counters and last fault."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from gaze4hri_acq.nodes._bus import IntraProcessBus
    from gaze4hri_acq.nodes.mocap_node import MocapNode
    from gaze4hri_core.session import Topics
    from rclpy.context import Context
    from rclpy.serialization import deserialize_message

    cap, _ = capture
    run = replay_capture(cap, 12, faults={3: "spoofed_source", 6: "garbage", 9: "nan_position"})
    assert all(o.survived for o in run.outcomes)
    ctx = Context()
    rclpy.init(context=ctx, args=[])
    bus, got = IntraProcessBus(), []
    bus.subscribe(Topics.DIAGNOSTICS, lambda _t, data: got.append(deserialize_message(data, DiagnosticArray)))
    try:
        node = MocapNode(context=ctx, bus=bus, parameter_overrides={"backend": "real"})
        node.driver = run.driver
        node._publish_diag()
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)
    (st,) = got[-1].status
    vals = {kv.key: kv.value for kv in st.values}
    assert vals["natnet.packets_foreign"] == "1" and vals["natnet.packets_malformed"] == "1"
    assert vals["natnet.poses_invalid"] == "1" and vals["natnet.frames_received"] == "12"
    assert vals["natnet.packets"] == "16" and "malformed" in vals["natnet.last_fault"]
