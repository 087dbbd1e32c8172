"""Operator view: the status table and the final summary from session.yaml."""
import pytest
from rich.console import Console

pytest.importorskip("rclpy")
from gaze4hri_acq.operator_view import render_status, summary_table  # noqa: E402


@pytest.mark.unit
def test_status_table_shows_every_field():
    state = {"trial": "2/63  illum010_P2", "prompt": "set the light to 10 %, ask the subject to look at P2, press Enter",
             "camera": "30.0 fps, 60 frames, 0 dropped", "mocap": "head_band tracked", "robot": "still", "safety": "ok",
             "recorder": "idle", "disk": "50.0 GB"}
    c = Console(record=True, width=200)
    c.print(render_status(state))
    text = c.export_text()
    for v in state.values():
        assert v in text


@pytest.mark.node
def test_summary_counts_trials_and_frames(short_session):
    c = Console(record=True, width=200)
    c.print(summary_table(short_session))
    text = c.export_text()
    assert "done" in text and " 3 " in text
