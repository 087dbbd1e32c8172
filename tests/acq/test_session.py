"""A simulated session end to end through the nodes, the orchestrator and the
recorder: statuses in session.yaml, one bag per trial read back with rosbags AND
mcap, topics, frames and timing; resume and redo."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy")
from gaze4hri_acq.recorder.bag import mcap_file  # noqa: E402
from gaze4hri_core.errors import SessionError  # noqa: E402
from gaze4hri_core.session import FRAMES, MSG_TYPES, Topics, bag_dir, load_manifest  # noqa: E402
from mcap.reader import make_reader  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402

from .conftest import SHORT_TRIALS  # noqa: E402

pytestmark = pytest.mark.node


def _msgs(bag):
    with Reader(bag) as r:
        return [(c.topic, c.msgtype, t, bytes(raw)) for c, t, raw in r.messages()]


def _cls(ty):
    import importlib

    pkg, _, name = ty.split("/")
    return getattr(importlib.import_module(f"{pkg}.msg"), name)


def test_every_trial_done_with_frames_and_no_drops(short_session):
    m = load_manifest(short_session)
    assert list(m.trials) == SHORT_TRIALS
    for tid, rec in m.trials.items():
        assert rec.status == "done", (tid, rec.reason)
        assert rec.attempts == 1 and rec.dropped_frames == 0
        assert rec.bag == f"bags/{tid}"
        # how fast the simulated clock ran over the recording (device s per wall s), up to the requested 50x
        assert 0.05 < rec.real_time_factor <= 50 * 1.2, (tid, rec.real_time_factor)
    assert m.settings["resolution"] == [320, 180] and m.settings["real_time_factor"] == 50
    assert (short_session / "calibration" / "registration.yaml").is_file()
    assert set(m.calibration["hashes"]) >= {"camera_info.yaml", "hand_eye.yaml", "registration.yaml"}


@pytest.mark.replay
@pytest.mark.parametrize("trial", SHORT_TRIALS)
def test_bag_reads_with_rosbags_and_mcap_alike(short_session, trial):
    b = bag_dir(short_session, trial)
    a = _msgs(b)
    with open(mcap_file(b), "rb") as f:
        mm = [(ch.topic, m.log_time) for _s, ch, m in make_reader(f).iter_messages()]
    assert len(a) == len(mm) > 0
    assert sorted((t, ts) for t, _ty, ts, _ in a) == sorted(mm)
    for topic, ty, _t, _raw in a:
        assert MSG_TYPES[topic] == ty


@pytest.mark.replay
def test_fixed_trial_contents(short_session):
    rec = load_manifest(short_session).trials["illum010_P1"]
    msgs = _msgs(bag_dir(short_session, "illum010_P1"))
    by = {}
    for topic, ty, t, raw in msgs:
        if ty == "tf2_msgs/msg/TFMessage":  # no rclpy class without a ROS install: tests/acq/test_tf.py reads them
            continue
        by.setdefault(topic, []).append((t, deserialize_message(raw, _cls(ty))))
    # frames: 0.5 s at 30 fps, stamps on the 30 Hz grid, consecutive frame numbers
    imgs = by[Topics.IMAGE]
    assert len(imgs) == rec.frames and 14 <= len(imgs) <= 17
    st = np.array([m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for _t, m in imgs])
    assert np.allclose(np.diff(st), 1e9 / 30, atol=1e3)
    assert all(m.header.frame_id == FRAMES["camera"] and m.encoding == "rgb8" and (m.width, m.height) == (320, 180)
               for _t, m in imgs)
    nums = [int({kv.key: kv.value for kv in m.values}["frame_number"]) for _t, m in by[Topics.FRAME_META]]
    assert nums == list(range(nums[0], nums[0] + len(nums)))
    info = by[Topics.CAMERA_INFO][0][1]
    assert (info.width, info.height) == (320, 180) and info.header.frame_id == FRAMES["camera"]
    # poses: head band in the world at 100 Hz, tool0 in base at 125 Hz
    heads = by[Topics.HEAD_POSE]
    assert all(m.header.frame_id == "world" for _t, m in heads) and 40 <= len(heads) <= 60
    tcps = by[Topics.TCP_POSE]
    assert all(m.header.frame_id == "base" for _t, m in tcps) and 50 <= len(tcps) <= 75
    # log time = capture stamp
    assert all(t == m.header.stamp.sec * 10**9 + m.header.stamp.nanosec for t, m in imgs)
    # events: start (with target and condition) then stop
    ev = [json.loads(m.data) for _t, m in by[Topics.EVENTS]]
    kinds = [e["event"] for e in ev]
    assert kinds[0] == "start" and kinds[-1] == "stop"
    assert ev[0]["target"] == "P1" and ev[0]["condition"] == "10" and ev[0]["illumination"] == 10
    # simulator truth travels with the frames
    assert len(by[Topics.SIM_GAZE_TRUTH]) == len(by[Topics.FRAME_META]) == len(imgs)


@pytest.mark.replay
def test_conflict_trial_head_yaw_held(short_session):
    """The head-pose check passed before recording: the head band's yaw is near +25 deg."""
    from gaze4hri_acq.orchestrator.session import head_yaw_deg
    from gaze4hri_core.calibration import load_calibration, load_eye_head
    from gaze4hri_core.transforms import SE3

    cal = load_calibration(short_session / "calibration")
    # S01 has no eye-head file: the simulated subject wears the default subject's head band
    Te = load_eye_head(Path(__file__).resolve().parents[2] / "calibration" / "subjects" / "default.yaml")
    yaws = []
    for topic, ty, _t, raw in _msgs(bag_dir(short_session, "conflict_left_H1")):
        if topic == Topics.HEAD_POSE:
            m = deserialize_message(raw, _cls(ty))
            p, q = m.pose.position, m.pose.orientation
            head = SE3.from_quat([p.x, p.y, p.z], [q.x, q.y, q.z, q.w])
            yaws.append(head_yaw_deg(head, cal.subject_forward_world, Te))
    assert yaws and abs(np.median(yaws) - 25.0) < 10.0


@pytest.mark.replay
def test_mutual_trial_camera_moves(short_session):
    tcps = []
    for topic, ty, _t, raw in _msgs(bag_dir(short_session, "mutual_v_fast")):
        if topic == Topics.TCP_POSE:
            m = deserialize_message(raw, _cls(ty))
            tcps.append([m.pose.position.x, m.pose.position.y, m.pose.position.z])
    tcps = np.array(tcps)
    # the raster ends at the opposite corner (0.5 m across, 0.2 m along)
    assert np.linalg.norm(tcps[-1] - tcps[0]) > 0.15


def test_existing_session_needs_resume(short_session):
    from gaze4hri_acq.simulate import run_sim_session

    with pytest.raises(SessionError, match="exists already.*--resume"):
        run_sim_session(short_session.parent, subject="S01", trial_ids=SHORT_TRIALS, resolution=(320, 180))


def test_camera_settings_in_session_yaml_and_at_every_trial_start(short_session):
    """The study's fixed colour settings, as the (simulated) camera reports them, are
    in session.yaml and in a camera_settings event at each trial's start (issue 13)."""
    from std_msgs.msg import String

    want = {"enable_auto_exposure": 0.0, "enable_auto_white_balance": 0.0, "exposure": 250.0, "gain": 90.0,
            "white_balance": 3000.0, "saturation": 68.0}
    # all 16 options: test_camera_options.py
    assert want.items() <= load_manifest(short_session).settings["camera_settings"].items()
    for tid in SHORT_TRIALS:
        events = [json.loads(deserialize_message(raw, String).data)
                  for tp, _ty, _t, raw in _msgs(bag_dir(short_session, tid)) if tp == Topics.EVENTS]
        names = [e["event"] for e in events]
        assert "camera_settings" in names and names.index("camera_settings") <= names.index("start") + 1
        ev = next(e for e in events if e["event"] == "camera_settings")
        assert ev["trial"] == tid and want.items() <= ev["settings"].items()


def test_check_inputs_runs_once_per_session(tmp_path, monkeypatch):
    """session_assembly validates once and hands the result on (before: the assembly,
    run_session and its locked part each ran check_inputs, three times a session)."""
    from gaze4hri_acq.orchestrator import session as orch
    from gaze4hri_acq.simulate import run_sim_session

    calls = []
    real = orch.check_inputs

    def counted(cfg):
        calls.append(cfg.subject)
        return real(cfg)

    monkeypatch.setattr(orch, "check_inputs", counted)  # a counter around our own function; it still runs
    sdir = run_sim_session(tmp_path, subject="S03", trial_ids=["illum010_P1"], resolution=(160, 90), trial_seconds=0.5,
                           real_time_factor=50)
    assert load_manifest(sdir).trials["illum010_P1"].status == "done"
    assert calls == ["S03"]
