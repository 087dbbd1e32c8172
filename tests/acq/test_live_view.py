"""The Foxglove live view (gaze4hri_acq.live_view, issue 24): during a short simulated
session a WebSocket client speaking the Foxglove WebSocket protocol (offering the
subprotocols ``foxglove.websocket.v1`` and ``foxglove.sdk.v1`` as the Foxglove app does;
foxglove-sdk 0.30 answers ``foxglove.sdk.v1``; a minimal RFC 6455 client written here)
connects, reads the advertised channels and their schemas, subscribes, and receives the
camera image (foxglove.RawImage at the session's frame size), the
3D scene (foxglove.SceneUpdate, decoded with the advertised protobuf schema: targets,
robot tool, camera frustum, head band, eye midpoint and the ground-truth gaze ray from
the eye midpoint to the current target) and the session state (JSON: the trial, status
and the recorder's recording flag). Also: the address field's one-line errors, and a
taken port asked for is one line before any node starts."""
from __future__ import annotations

import base64
import json
import os
import socket
import struct
import threading
import time

import numpy as np
import pytest

pytest.importorskip("rclpy")
pytest.importorskip("foxglove")
from gaze4hri_acq.live_view import MSG_TYPES, LiveTopics, LiveView  # noqa: E402
from gaze4hri_acq.session_assembly import SessionArgs, run_session_args  # noqa: E402
from gaze4hri_core.errors import Gaze4HRIError  # noqa: E402

from .conftest import own_domain  # noqa: E402

pytestmark = pytest.mark.node

TRIAL = "illum100_P3"


class FoxgloveClient:
    """The client side of the Foxglove WebSocket protocol over a plain socket: opening
    handshake with the subprotocol, masked client frames, unmasked server frames."""

    def __init__(self, port: int, timeout: float = 10.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                           "Sec-WebSocket-Protocol: foxglove.websocket.v1, foxglove.sdk.v1\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        lines = head.decode("latin-1").split("\r\n")
        assert " 101 " in lines[0], lines[0]
        # foxglove-sdk 0.30 picks foxglove.sdk.v1, the Foxglove WebSocket protocol's current name
        # (the Foxglove app offers both); the messages below are those of foxglove.websocket.v1
        assert any(h.lower() == "sec-websocket-protocol: foxglove.sdk.v1" for h in lines), lines

    def _exact(self, n: int) -> bytes:
        b = b""
        while len(b) < n:
            chunk = self.sock.recv(n - len(b))
            if not chunk:
                raise ConnectionError("server closed the connection")
            b += chunk
        return b

    def recv(self) -> tuple[int, bytes]:
        """(opcode, payload) of the next whole message (fragments joined; pings answered)."""
        data, op0 = b"", None
        while True:
            b0, b1 = self._exact(2)
            op, fin, n = b0 & 0x0F, b0 & 0x80, b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            mask = self._exact(4) if b1 & 0x80 else None
            payload = self._exact(n)
            if mask:
                payload = bytes(c ^ mask[i % 4] for i, c in enumerate(payload))
            if op == 0x9:
                self._send(0xA, payload)
                continue
            if op == 0x8:
                raise ConnectionError("server closed the connection")
            op0 = op if op != 0 else op0
            data += payload
            if fin:
                return op0, data

    def _send(self, op: int, payload: bytes) -> None:
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
        self.sock.sendall(head + mask + bytes(c ^ mask[i % 4] for i, c in enumerate(payload)))

    def send_json(self, obj) -> None:
        self._send(0x1, json.dumps(obj).encode())

    def close(self) -> None:
        try:
            self._send(0x8, b"")
        except OSError:
            pass
        self.sock.close()


def _decoder(channel: dict):
    """A function bytes -> message from the advertised schema (protobuf FileDescriptorSet, JSON)."""
    if channel["encoding"] == "json":
        return lambda b: json.loads(b)
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    assert channel["encoding"] == "protobuf" and channel["schemaEncoding"] == "protobuf"
    fds = descriptor_pb2.FileDescriptorSet.FromString(base64.b64decode(channel["schema"]))
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    cls = message_factory.GetMessageClass(pool.FindMessageTypeByName(channel["schemaName"]))
    return cls.FromString


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _client(port: int, got: dict, channels: dict, stop: threading.Event, errors: list) -> None:
    try:
        deadline = time.monotonic() + 60
        while True:  # the server binds when the session starts
            try:
                c = FoxgloveClient(port)
                break
            except OSError:
                if time.monotonic() > deadline or stop.is_set():
                    raise
                time.sleep(0.05)
        subs: dict[int, dict] = {}
        try:
            while not stop.is_set():
                op, data = c.recv()
                if op == 0x1:
                    msg = json.loads(data)
                    if msg.get("op") == "advertise":
                        for ch in msg["channels"]:
                            channels[ch["topic"]] = ch
                            if ch["topic"] in MSG_TYPES and ch["id"] not in {s["id"] for s in subs.values()}:
                                sid = len(subs) + 1
                                subs[sid] = ch
                                c.send_json({"op": "subscribe", "subscriptions": [{"id": sid, "channelId": ch["id"]}]})
                elif op == 0x2 and data[0] == 0x01:  # message data: opcode, subscription id, log time, payload
                    sid, _log_ns = struct.unpack_from("<IQ", data, 1)
                    ch = subs[sid]
                    got.setdefault(ch["topic"], []).append(_decoder(ch)(data[13:]))
        finally:
            c.close()
    except ConnectionError:
        pass  # the session ended and its live view closed the connection
    except OSError as e:
        if not stop.is_set():
            errors.append(repr(e))
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.append(repr(e))


def test_live_view_serves_image_scene_and_state_during_a_session(tmp_path):
    port = _free_port()
    got: dict[str, list] = {}
    channels: dict[str, dict] = {}
    stop, errors = threading.Event(), []
    t = threading.Thread(target=_client, args=(port, got, channels, stop, errors), daemon=True)
    t.start()
    try:
        # a second of recording: the recorder's 2 Hz diagnostics say so
        sdir = run_session_args(SessionArgs(subject="S07", backend="sim", out_dir=tmp_path, trial_ids=(TRIAL,),
                                            resolution=(160, 90), trial_seconds=1.0, real_time_factor=1.0, quiet=True,
                                            yes=True, live_view=f"127.0.0.1:{port}"))
    finally:
        t.join(timeout=10)  # the live view sends its last state and closes the connection when the session ends
        stop.set()
        t.join(timeout=5)
    assert not errors, errors
    assert sdir.is_dir()
    # every channel advertised with its schema
    for topic, schema in MSG_TYPES.items():
        assert channels[topic]["schemaName"] == schema, channels.get(topic)
        assert channels[topic]["schema"], topic
    assert got.get(LiveTopics.IMAGE) and got.get(LiveTopics.SCENE) and got.get(LiveTopics.STATE), {
        k: len(v) for k, v in got.items()}
    # image: the session's frame, rgb8, not all-equal pixels
    im = got[LiveTopics.IMAGE][-1]
    assert (im.width, im.height, im.encoding, im.step) == (160, 90, "rgb8", 480)
    assert im.frame_id == "camera_color_optical_frame"
    px = np.frombuffer(im.data, np.uint8).reshape(90, 160, 3)
    assert px.std() > 5
    # scene: the full set of entities once the trial's target is known
    full = [u for u in got[LiveTopics.SCENE] if "gaze_truth" in {e.id for e in u.entities}]
    assert full, [sorted(e.id for e in u.entities) for u in got[LiveTopics.SCENE][-3:]]
    ents = {e.id: e for e in full[-1].entities}
    assert {"targets", "robot_tool", "camera_frustum", "head_band", "eye_midpoint", "gaze_truth"} <= set(ents)
    assert all(e.frame_id == "world" for e in ents.values())
    assert "P3" in {x.text for x in ents["targets"].texts}
    ray = ents["gaze_truth"].lines[0].points
    eye = ents["eye_midpoint"].spheres[0].pose.position
    assert (ray[0].x, ray[0].y, ray[0].z) == pytest.approx((eye.x, eye.y, eye.z))
    from gaze4hri_core.calibration import load_calibration

    p3 = load_calibration(sdir / "calibration").targets["P3"]
    assert (ray[1].x, ray[1].y, ray[1].z) == pytest.approx(tuple(p3))  # the ray ends at the current target
    assert len(ents["camera_frustum"].lines[0].points) == 16  # 4 edges from the centre + 4 of the image rectangle
    # state: the trial, recording while the recorder had the bag open, then stopped
    states = got[LiveTopics.STATE]
    assert any(s["trial"] == TRIAL and s["recording"] and s["status"] == "recording" for s in states), states[-3:]
    assert states[-1]["subject"] == "S07" and not states[-1]["recording"] and states[-1]["status"].startswith("stopped")
    assert states[-1]["last_error"] == "", states[-1]  # the view's worker never failed


def test_live_view_address_errors_are_one_line(tmp_path):
    with pytest.raises(Gaze4HRIError, match="live view address must be HOST:PORT"):
        from gaze4hri_acq.session_config import session_config

        session_config(subject="S01", live_view="localhost:http")
    with socket.socket() as s:  # a port another program holds
        s.bind(("127.0.0.1", 0))
        s.listen(1)
        taken = s.getsockname()[1]
        with pytest.raises(Gaze4HRIError, match=f"live view cannot listen on 127.0.0.1:{taken}"):
            LiveView(port=taken).start()
        with pytest.raises(Gaze4HRIError, match="cannot listen"):  # before any node starts: nothing recorded
            run_session_args(SessionArgs(subject="S08", out_dir=tmp_path, trial_ids=(TRIAL,), quiet=True, yes=True,
                                         live_view=f"127.0.0.1:{taken}"))
    assert not (tmp_path / "S08").exists()


_GAZE_PUBLISHER = """
import sys, time
import rclpy
from geometry_msgs.msg import Vector3Stamped
from gaze4hri_acq.nodes.common import QOS_SENSOR
rclpy.init()
node = rclpy.create_node("gaze_elsewhere")
pub = node.create_publisher(Vector3Stamped, "/gaze4hri/gaze", QOS_SENSOR)  # the live gaze node's topic, type and QoS
print("publishing", flush=True)
t_end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < t_end:
    m = Vector3Stamped()
    m.header.frame_id = "camera_color_optical_frame"
    m.vector.x, m.vector.y, m.vector.z = 0.0, 0.0, 1.0  # along the optical axis
    pub.publish(m)
    time.sleep(0.05)
"""


def test_live_view_shows_the_gaze_estimate_of_a_node_in_another_process(tmp_path, monkeypatch):
    """A gaze estimate published by another process (rclpy, /gaze4hri/gaze, the live
    gaze node's message type and QoS) reaches the CLI session's live view over DDS while
    the session's own streams come from its in-process bus: the WebSocket client
    receives the scene's gaze_estimate arrow, pointing along the camera's optical axis
    (the published direction) from the eye midpoint. The graph is shared on this host
    only for this test (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, a domain of its own)."""
    import subprocess
    import sys

    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    monkeypatch.setenv("ROS_DOMAIN_ID", str(own_domain(60)))
    pub = subprocess.Popen([sys.executable, "-c", _GAZE_PUBLISHER, "60"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    port = _free_port()
    got: dict[str, list] = {}
    channels: dict[str, dict] = {}
    stop, errors = threading.Event(), []
    t = threading.Thread(target=_client, args=(port, got, channels, stop, errors), daemon=True)
    try:
        assert pub.stdout.readline().strip() == "publishing", pub.stderr.read()
        t.start()
        run_session_args(SessionArgs(subject="S07", backend="sim", out_dir=tmp_path, trial_ids=(TRIAL,),
                                     resolution=(160, 90), trial_seconds=3.0, real_time_factor=2.0, quiet=True,
                                     yes=True, live_view=f"127.0.0.1:{port}"))
    finally:
        t.join(timeout=10)
        stop.set()
        t.join(timeout=5)
        pub.kill()
        pub.wait()
    assert not errors, errors
    with_gaze = [u for u in got.get(LiveTopics.SCENE, []) if "gaze_estimate" in {e.id for e in u.entities}]
    assert with_gaze, f"no gaze_estimate in {len(got.get(LiveTopics.SCENE, []))} scene updates"
    ents = {e.id: e for e in with_gaze[-1].entities}
    arrow = ents["gaze_estimate"].arrows[0]
    eye = ents["eye_midpoint"].spheres[0].pose.position
    assert (arrow.pose.position.x, arrow.pose.position.y, arrow.pose.position.z) == pytest.approx((eye.x, eye.y, eye.z))
    from gaze4hri_core.transforms import quat_xyzw_to_matrix

    o = arrow.pose.orientation
    along = np.asarray(quat_xyzw_to_matrix(np.array([o.x, o.y, o.z, o.w])))[:, 0]  # Foxglove arrows point along +x
    # the camera's optical axis in the same update: from the frustum's apex to the centre of its far rectangle
    pts = np.array([(p.x, p.y, p.z) for p in ents["camera_frustum"].lines[0].points])
    apex, far = pts[0], pts[[1, 5, 9, 13]].mean(axis=0)
    axis = (far - apex) / np.linalg.norm(far - apex)
    assert float(along @ axis) > np.cos(np.radians(5)), (along, axis)


def _handshake(port: int, protocols: str) -> str:
    """The server's answer (status line and headers) to a WebSocket opening handshake."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                   f"Sec-WebSocket-Protocol: {protocols}\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(1024)
            if not chunk:
                break
            head += chunk
    return head.decode("latin-1")


def test_only_clients_offering_foxglove_sdk_v1_connect_and_the_startup_line_says_so():
    """foxglove-sdk's server accepts the subprotocol foxglove.sdk.v1 only (no option, no
    later release: docs/visualisation.md): a client offering only foxglove.websocket.v1
    (the open-source Foxglove Studio 1.x, Lichtblick < 1.22.1) is refused with HTTP 400, one
    offering foxglove.sdk.v1 is upgraded; the live view's startup line says which
    clients connect. Fails when a foxglove-sdk upgrade starts accepting the old name:
    then drop the hint."""
    from gaze4hri_acq.live_view import SUBPROTOCOL, start_live_view

    lines: list[str] = []
    view = start_live_view("127.0.0.1:0", log=lines.append)
    try:
        old = _handshake(view.port, "foxglove.websocket.v1")
        assert old.split("\r\n")[0].split()[1] == "400", old
        new = _handshake(view.port, f"foxglove.websocket.v1, {SUBPROTOCOL}")
        assert new.split("\r\n")[0].split()[1] == "101" and f"sec-websocket-protocol: {SUBPROTOCOL}" in new.lower(), new
    finally:
        view.stop()
    assert len(lines) == 1 and "foxglove.sdk.v1" in lines[0] and "foxglove.websocket.v1" in lines[0]
    assert "Lichtblick >= 1.22.1" in lines[0]
