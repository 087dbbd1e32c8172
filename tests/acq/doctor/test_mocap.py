"""The doctor's motion-capture checks against the real Motive capture (Motive 2.1 /
NatNet 3.0, shared/reference/reliability_data) replayed over loopback to the real natnet
client: a healthy stream passes; a renamed rigid body, an untracked body, a foreign
sender and no Motive at all each give their fail line."""
import struct
import threading
import time
from types import SimpleNamespace

import pytest
from gaze4hri_acq.doctor.mocap import MocapReport, mocap_checks
from gaze4hri_acq.doctor.record import exit_code
from gaze4hri_core.device_config import MocapConfig

pytest.importorskip("natnet")
pytest.importorskip("dpkt")
from gaze4hri_acq.doctor.mocap import gather_mocap  # noqa: E402 - after the importorskip
from gaze4hri_acq.testing.natnet_emulator import (  # noqa: E402
    LOOPBACK,
    CaptureReplayer,
    MotiveCapture,
    find_capture_dir,
    rigid_bodies_v3,
)

RATE = 120.0  # the capture's frame rate
EXPECTED = {"head_band": "fail"}  # the capture's one body, RaceQuad, stands in for the head band


@pytest.fixture(scope="module")
def capture():
    folder = find_capture_dir()
    if folder is None:
        pytest.skip("the Motive capture (shared/reference/reliability_data) is not here")
    return MotiveCapture(folder)


def _untracked(frame: bytes) -> bytes:
    """The frame with its rigid body's params (bit 0: tracking valid) cleared."""
    b = bytearray(frame)
    off = rigid_bodies_v3(frame)[0][0]
    struct.pack_into("<h", b, off + 36, 0)
    return bytes(b)


def _run(capture, modeldef=None, frame=lambda f: f, spoof=False, seconds=1.0):
    """Replay the capture at its rate while the doctor reads ``seconds`` of it."""
    cap = SimpleNamespace(server_info=capture.server_info, modeldef=modeldef or capture.modeldef,
                          frames=capture.frames)
    stop = threading.Event()
    with CaptureReplayer(cap) as rep:
        def send():
            while rep.client_addr is None and not stop.wait(0.005):
                pass
            t0 = time.monotonic()
            for k, f in enumerate(cap.frames):  # on a schedule: a late sender catches up
                if stop.wait(max(0.0, t0 + k / RATE - time.monotonic())):
                    return
                rep.send(frame(f.payload))
                if spoof:
                    rep.send(f.payload, spoofed=True)

        sender = threading.Thread(target=send, daemon=True)
        sender.start()
        cfg = MocapConfig(server_ip=LOOPBACK, local_ip=LOOPBACK, command_port=rep.port, use_multicast=False,
                          bodies={"RaceQuad": "head_band"}, rate_hz=RATE, connect_timeout_s=5.0)
        try:
            report = gather_mocap(cfg, seconds)
        finally:
            stop.set()
            sender.join(timeout=2)
    return {c.name: c for c in mocap_checks(report, EXPECTED, RATE)}, report


@pytest.mark.replay
def test_the_captured_stream_passes(capture):
    checks, report = _run(capture)
    assert exit_code(list(checks.values())) == 0, [c.line() for c in checks.values() if c.status != "pass"]
    assert checks["server"].value.endswith(": Motive 2.1.0.0, NatNet 3.0.0.0")
    assert checks["sender"].line() == "PASS mocap sender: frames from the server only"
    assert checks["body head_band"].value.startswith("tracked in 100% of ")
    assert checks["rate"].status == "pass" and report.frames > 60
    assert checks["latency"].status == "pass"


@pytest.mark.replay
def test_a_renamed_rigid_body_fails(capture):
    renamed = capture.modeldef.replace(b"RaceQuad\0", b"RaceQuaX\0")
    assert renamed != capture.modeldef
    checks, _ = _run(capture, modeldef=renamed)
    assert checks["body head_band"].line() == (
        "FAIL mocap body head_band: not among Motive's rigid bodies (RaceQuaX) -> create (or rename) the rigid body "
        "'head_band' in Motive and enable it in the streaming pane")


@pytest.mark.replay
def test_an_untracked_body_fails(capture):
    checks, report = _run(capture, frame=_untracked)
    assert checks["body head_band"].line() == (
        f"FAIL mocap body head_band: tracked in 0% of {report.frames} frames -> clear the line of sight to its "
        "markers; check the markers and the cameras' masks")


@pytest.mark.replay
def test_a_foreign_sender_fails(capture):
    checks, report = _run(capture, spoof=True)
    assert report.foreign > 0
    assert checks["sender"].line().startswith(f"FAIL mocap sender: {report.foreign} datagrams from another sender "
                                              "(dropped a datagram from 127.0.0.2:")
    assert checks["sender"].fix.startswith("stop the other NatNet source")
    assert checks["body head_band"].status == "pass"  # the server's own frames still arrive


@pytest.mark.replay
def test_no_motive_is_one_fail_line():
    import socket

    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((LOOPBACK, 0))  # a port nobody answers on
    port = s.getsockname()[1]
    try:
        cfg = MocapConfig(server_ip=LOOPBACK, local_ip=LOOPBACK, command_port=port, connect_timeout_s=0.5)
        checks = mocap_checks(gather_mocap(cfg, 0.2), EXPECTED, RATE)
    finally:
        s.close()
    assert [c.line() for c in checks] == [
        f"FAIL mocap server: {LOOPBACK}:{port} (unicast, local {LOOPBACK}): no server info reply within 0.5 s -> "
        "start Motive, enable Streaming, match unicast/multicast and check --motive-ip / --local-ip"]


@pytest.mark.unit
def test_rate_latency_and_up_axis_are_judged():
    r = MocapReport("m", application="Motive", server_version="3.0.1.0", natnet_version="4.1.0.0",
                    bodies=("head_band",), frames=50, seconds=1.0, tracked={"head_band": 1.0}, latency_ms=40.0)
    c = {x.name: x for x in mocap_checks(r, {"head_band": "fail", "table": "warn"}, 100.0)}
    assert c["rate"].line().startswith("FAIL mocap rate: 49 Hz over 1.0 s (expected 100 Hz)")
    assert c["latency"].status == "fail" and c["body table"].status == "warn"
    assert c["server"].status == "pass"
