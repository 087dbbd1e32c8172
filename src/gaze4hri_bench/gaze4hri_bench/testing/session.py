"""Write small but real Gaze4HRI sessions for the data tests: a session directory
(session.yaml, calibration snapshot) and one MCAP rosbag2 bag per trial written with
rosbags' Writer on the core's Topics / MSG_TYPES, holding synthetic but geometrically
exact streams: head band at 100 Hz, robot tool pose at 125 Hz (and joint states),
camera frames at 30 Hz with frame metadata, and the exact gaze at each frame stamp on
Topics.SIM_GAZE_TRUTH (computed from the continuous motion, not from the samples).
Images show the astronaut photograph (a real face) moving across a grey frame.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from gaze4hri_core.calibration import load_calibration
from gaze4hri_core.device_config import DEFAULT_CALIBRATION
from gaze4hri_core.groundtruth import gaze_in_camera
from gaze4hri_core.protocol import trial_by_id
from gaze4hri_core.rig import camera_on_arc
from gaze4hri_core.session import MSG_TYPES, Topics, copy_calibration, mark, new_manifest, save_manifest
from gaze4hri_core.transforms import SE3, look_at

T0 = 1_763_700_000_000_000_000  # an epoch-like host stamp (ns)


@dataclass
class TrialSpec:
    trial: str
    seconds: float = 1.0
    size: tuple[int, int] = (160, 90)
    encoding: str = "rgb8"
    drop: tuple[int, ...] = ()  # frame indices the camera counted but the bag lacks
    no_face: tuple[int, ...] = ()  # frame indices rendered without the face (an empty grey frame)
    duplicate: tuple[int, ...] = ()  # frame indices written twice
    mocap_gap: tuple[float, float] | None = None  # (start, end) s with no head-band pose
    robot_gap: tuple[float, float] | None = None
    omit_topics: tuple[str, ...] = ()
    status: str = "done"
    head_yaw_amp_deg: float = 12.0
    extra: dict = field(default_factory=dict)


def _ts():
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_KILTED)


def calibration_source(tmp: Path, subject: str) -> Path:
    """The repository's default calibration with a subject file for ``subject``."""
    src = tmp / "calib_src"
    if not src.exists():
        shutil.copytree(DEFAULT_CALIBRATION, src)
    if not (src / "subjects" / f"{subject}.yaml").is_file():
        shutil.copy2(src / "subjects" / "default.yaml", src / "subjects" / f"{subject}.yaml")
    return src


def head_pose(cal, t: float, amp_deg: float) -> SE3:
    """Head band in the world at time t: the eyes sway and the head turns (yaw) and
    nods (pitch) sinusoidally about the nominal seat, facing forward."""
    from scipy.spatial.transform import Rotation

    eye = cal.eye_nominal_world + np.array([0.01 * np.sin(1.3 * t), 0.015 * np.sin(2.1 * t), 0.005 * np.cos(1.7 * t)])
    yaw = np.radians(amp_deg) * np.sin(2 * np.pi * 0.6 * t)
    pitch = np.radians(-15.0 + 5.0 * np.sin(2 * np.pi * 0.4 * t))  # looking down at the table
    f = cal.subject_forward_world
    base = np.column_stack([f, np.cross([0, 0, 1.0], f), [0, 0, 1.0]])  # REP-103 eye frame: x fwd, y left, z up
    # intrinsic yaw about z, then a rotation of -pitch about the (left) y axis, which
    # tips the forward axis down for pitch < 0
    R = base @ Rotation.from_euler("ZY", [yaw, -pitch]).as_matrix()
    T_world_eye = SE3(R, eye)
    return T_world_eye @ cal.T_head_eye.inv()


def camera_pose(cal, trial, t: float, seconds: float) -> SE3:
    eye = cal.eye_nominal_world
    f = cal.subject_forward_world
    m = trial.camera_motion
    if m.kind == "arc":
        a, b = m.yaw_deg
        yaw = a + (b - a) * t / seconds
        return camera_on_arc(eye, f, m.radius_m, yaw, cal.front_camera_elevation_deg)
    T = camera_on_arc(eye, f, cal.front_camera_distance_m, 0.0, cal.front_camera_elevation_deg)
    if m.kind == "line":
        d = T.R[:, 0 if m.axis == "h" else 1]
        p = T.t + d * m.speed_mps * (t - seconds / 2)
        return look_at(p, p + T.R[:, 2], up=(0.0, 0.0, 1.0))
    return T


def _stamp(ts, t_ns: int):
    return ts.types["builtin_interfaces/msg/Time"](sec=int(t_ns // 1_000_000_000), nanosec=int(t_ns % 1_000_000_000))


def _header(ts, t_ns: int, frame: str):
    return ts.types["std_msgs/msg/Header"](stamp=_stamp(ts, t_ns), frame_id=frame)


def _pose_msg(ts, t_ns: int, frame: str, T: SE3):
    g = ts.types
    q = T.quat_xyzw
    return g["geometry_msgs/msg/PoseStamped"](
        header=_header(ts, t_ns, frame),
        pose=g["geometry_msgs/msg/Pose"](position=g["geometry_msgs/msg/Point"](x=T.t[0], y=T.t[1], z=T.t[2]),
                                         orientation=g["geometry_msgs/msg/Quaternion"](x=q[0], y=q[1], z=q[2], w=q[3])))


_FACE = None


def face_image() -> np.ndarray:
    global _FACE
    if _FACE is None:
        import skimage.data

        _FACE = skimage.data.astronaut()[40:240, 130:330]  # the astronaut's head, 200x200
    return _FACE


def render(size: tuple[int, int], t: float) -> np.ndarray:
    """Grey frame with the face photograph, moving horizontally with t."""
    import cv2

    w, h = size
    img = np.full((h, w, 3), 90, np.uint8)
    s = int(0.7 * h)
    face = cv2.resize(face_image(), (s, s), interpolation=cv2.INTER_AREA)
    x = int(w / 2 - s / 2 + 0.15 * w * np.sin(2 * np.pi * 0.5 * t))
    y = int(h / 2 - s / 2)
    x = min(max(x, 0), w - s)
    img[y:y + s, x:x + s] = face
    return img


def write_trial(session: Path, cal, spec: TrialSpec) -> tuple[Path, int]:
    """Write the bag of one trial; returns (bag dir, recorded frame count)."""
    from rosbags.rosbag2 import StoragePlugin, Writer

    ts = _ts()
    bag = session / "bags" / spec.trial
    if bag.exists():
        shutil.rmtree(bag)
    bag.parent.mkdir(parents=True, exist_ok=True)
    topics = [t for t in (Topics.IMAGE, Topics.CAMERA_INFO, Topics.FRAME_META, Topics.HEAD_POSE, Topics.TCP_POSE,
                          Topics.JOINT_STATES, Topics.SIM_GAZE_TRUTH, Topics.EVENTS) if t not in spec.omit_topics]
    with Writer(bag, version=9, storage_plugin=StoragePlugin.MCAP) as wr:
        conns = {t: wr.add_connection(t, MSG_TYPES[t], typestore=ts) for t in topics}
        msgs: list[tuple[int, str, object]] = []

        def put(topic, t_ns, msg):
            if topic in conns:
                msgs.append((t_ns, topic, msg))

        recorded = _put_trial(put, ts, cal, spec)
        for t_ns, topic, msg in sorted(msgs, key=lambda m: m[0]):  # stable: same-stamp messages keep their order
            wr.write(conns[topic], t_ns, ts.serialize_cdr(msg, MSG_TYPES[topic]))
    return bag, recorded


def _put_trial(put, ts, cal, spec: TrialSpec) -> int:
    """Hand every message of one trial to ``put(topic, t_ns, msg)``: start event, camera info, poses,
    frames, stop event, in that order; returns the recorded frame count."""
    g = ts.types
    trial = trial_by_id(spec.trial)
    w, h = spec.size
    K = cal.intrinsics.scaled(w, h).K
    start = json.dumps({"event": "start", "trial": spec.trial, "target": trial.target})
    put(Topics.EVENTS, T0, g["std_msgs/msg/String"](data=start))
    info = g["sensor_msgs/msg/CameraInfo"](
        header=_header(ts, T0, "camera_color_optical_frame"), height=h, width=w, distortion_model="plumb_bob",
        d=np.zeros(5), k=K.ravel(), r=np.eye(3).ravel(), p=np.hstack([K, np.zeros((3, 1))]).ravel(),
        binning_x=0, binning_y=0,
        roi=g["sensor_msgs/msg/RegionOfInterest"](x_offset=0, y_offset=0, height=0, width=0, do_rectify=False))
    put(Topics.CAMERA_INFO, T0, info)
    _put_poses(put, ts, cal, spec, trial)
    recorded = _put_frames(put, ts, cal, spec, trial)
    stop = json.dumps({"event": "stop", "trial": spec.trial})
    put(Topics.EVENTS, T0 + int(spec.seconds * 1e9), g["std_msgs/msg/String"](data=stop))
    return recorded


def _put_poses(put, ts, cal, spec: TrialSpec, trial) -> None:
    """Head band at 100 Hz (with a small stamp jitter) and robot at 125 Hz, covering the trial."""
    g = ts.types
    T_wb_inv = cal.T_world_base.inv()
    T_ct = cal.T_tool0_camera.inv()
    dur = spec.seconds + 0.1
    for k in range(int(dur * 100) + 1):
        t = -0.05 + k * 0.01 + 0.0007 * np.sin(k)
        if spec.mocap_gap and spec.mocap_gap[0] <= t <= spec.mocap_gap[1]:
            continue
        t_ns = T0 + int(round(t * 1e9))
        put(Topics.HEAD_POSE, t_ns, _pose_msg(ts, t_ns, "world", head_pose(cal, t, spec.head_yaw_amp_deg)))
    q_prev = None
    for k in range(int(dur * 125) + 1):
        t = -0.05 + k * 0.008
        if spec.robot_gap and spec.robot_gap[0] <= t <= spec.robot_gap[1]:
            continue
        t_ns = T0 + int(round(t * 1e9))
        T_bt = T_wb_inv @ camera_pose(cal, trial, t, spec.seconds) @ T_ct
        put(Topics.TCP_POSE, t_ns, _pose_msg(ts, t_ns, "base", T_bt))
        if spec.extra.get("joints"):
            from gaze4hri_core.kinematics import inverse

            q = inverse(T_bt.matrix, cal.robot_model, q_near=q_prev)[0]
            q_prev = q
            js = g["sensor_msgs/msg/JointState"](header=_header(ts, t_ns, "base"), name=[f"j{j}" for j in range(6)],
                                                 position=np.asarray(q, float), velocity=np.zeros(0),
                                                 effort=np.zeros(0))
            put(Topics.JOINT_STATES, t_ns, js)


def _put_frames(put, ts, cal, spec: TrialSpec, trial) -> int:
    """Camera frames at 30 Hz with their metadata and the exact gaze at each stamp; returns the recorded count."""
    g = ts.types
    w, h = spec.size
    kv = g["diagnostic_msgs/msg/KeyValue"]
    period = 1.0 / 30.0
    recorded = 0
    for i in range(int(round(spec.seconds * 30))):
        t = 0.003 + i * period
        t_ns = T0 + int(round(t * 1e9))
        if i in spec.drop:
            continue
        img = render(spec.size, t)
        if i in spec.no_face:
            img[:] = 90
        data = img[..., ::-1] if spec.encoding == "bgr8" else img
        msg = g["sensor_msgs/msg/Image"](header=_header(ts, t_ns, "camera_color_optical_frame"), height=h, width=w,
                                         encoding=spec.encoding, is_bigendian=0, step=w * 3,
                                         data=np.ascontiguousarray(data).reshape(-1))
        meta = g["diagnostic_msgs/msg/DiagnosticStatus"](
            level=b"\x00"[0], name="frame", message="", hardware_id="sim", values=[
                kv(key="frame_number", value=str(1000 + i)), kv(key="stamp_ns", value=str(t_ns)),
                kv(key="timestamp_domain", value="global_time"),
                kv(key="device_timestamp_ms", value=f"{t * 1000:.3f}")])
        T_wc = camera_pose(cal, trial, t, spec.seconds)
        T_wh = head_pose(cal, t, spec.head_yaw_amp_deg)
        target = T_wc.t if trial.target == "camera" else cal.targets[trial.target]
        gv = gaze_in_camera(T_wh, cal.eye_in_head, target, T_wc)
        truth = g["geometry_msgs/msg/Vector3Stamped"](header=_header(ts, t_ns, "camera_color_optical_frame"),
                                                      vector=g["geometry_msgs/msg/Vector3"](x=gv[0], y=gv[1], z=gv[2]))
        for _rep in range(2 if i in spec.duplicate else 1):
            put(Topics.IMAGE, t_ns, msg)
            put(Topics.FRAME_META, t_ns, meta)
            recorded += 1
        put(Topics.SIM_GAZE_TRUTH, t_ns, truth)
    return recorded


def write_session(root: Path, subject: str = "S01", specs: list[TrialSpec] | None = None, tmp: Path | None = None,
                  with_calibration: bool = True) -> Path:
    """A session directory ``root/subject`` holding ``specs`` (default: one fixed trial)."""
    specs = specs or [TrialSpec("illum100_P5")]
    session = root / subject
    session.mkdir(parents=True, exist_ok=True)
    src = calibration_source(tmp or root.parent, subject)
    man = new_manifest(subject, "synthetic-test", [s.trial for s in specs], settings={"fps": 30})
    if with_calibration:
        man.calibration = copy_calibration(src, session, subject)
    cal = load_calibration(src, subject)
    for s in specs:
        bag, n = write_trial(session, cal, s)
        mark(man, s.trial, "recording")
        mark(man, s.trial, s.status, bag=str(bag.relative_to(session)), frames=n, dropped_frames=len(s.drop))
    save_manifest(session, man)
    return session
