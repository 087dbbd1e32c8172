"""Every colour option of the camera is read back at each trial's start and recorded
with the trial (its bag's camera_settings event) and in session.yaml, as the study
saves rgb_camera_settings.json per trial (issue 20, item 9): the study's fixed values
and every other option, reset to its default."""
from __future__ import annotations

import json

import pytest

pytest.importorskip("rclpy")
from gaze4hri_core.device_config import CameraSettings  # noqa: E402
from gaze4hri_core.session import Topics, bag_dir, load_manifest  # noqa: E402
from gaze4hri_sim.camera import D435I_COLOR_DEFAULTS  # noqa: E402
from rclpy.serialization import deserialize_message  # noqa: E402
from rosbags.rosbag2 import Reader  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from .conftest import SHORT_TRIALS  # noqa: E402

pytestmark = pytest.mark.node


def test_each_trial_records_every_colour_option_with_its_value(short_session):
    want = {**D435I_COLOR_DEFAULTS, **CameraSettings().as_options()}
    assert len(want) == 16  # the study's 6 and the D435i's 10 others
    assert load_manifest(short_session).settings["camera_settings"] == want
    for tid in SHORT_TRIALS:
        with Reader(bag_dir(short_session, tid)) as r:
            ev = [json.loads(deserialize_message(raw, String).data) for c, _t, raw in r.messages()
                  if c.topic == Topics.EVENTS]
        cs = [e for e in ev if e["event"] == "camera_settings"]
        assert len(cs) == 1 and cs[0]["trial"] == tid
        assert cs[0]["settings"] == want  # every option, the others at their defaults
