"""The protocol as data matches the study's Table I (gaze4hri.md)."""
from collections import Counter

import pytest

from gaze4hri_core import protocol

pytestmark = pytest.mark.unit


def test_sixty_three_trials_per_experiment():
    ts = protocol.trials()
    assert len(ts) == 63
    assert Counter(t.experiment for t in ts) == {"illumination": 36, "viewpoint": 9, "conflict": 14, "mutual": 4}
    assert len({t.trial_id for t in ts}) == 63
    assert [t.index for t in ts] == list(range(63))


def test_trial_details():
    t = protocol.trial_by_id("illum025_P3")
    assert (t.experiment, t.condition, t.target, t.illumination, t.camera_motion.kind) == (
        "illumination",
        "25",
        "P3",
        25,
        "fixed",
    )
    a = protocol.trial_by_id("arc_P5")
    assert (
        a.camera_motion.kind == "arc" and a.camera_motion.radius_m == 0.5 and a.camera_motion.yaw_deg == (-30.0, 30.0)
    )
    c = protocol.trial_by_id("conflict_left_H2")
    assert c.head_yaw_deg == 25.0 and c.illumination == 100
    assert protocol.trial_by_id("conflict_right_H6").head_yaw_deg == -25.0
    m = protocol.trial_by_id("mutual_h_fast")
    assert (m.target, m.camera_motion.kind, m.camera_motion.axis, m.camera_motion.speed_mps) == (
        "camera",
        "line",
        "h",
        0.1,
    )
    assert protocol.trial_by_id("mutual_v_slow").camera_motion.speed_mps == 0.05


def test_conflict_targets_per_head_position():
    got = {
        s: [t.target for t in protocol.select(experiments=["conflict"], conditions=[s])]
        for s in ("left", "center", "right")
    }
    assert got == {
        "left": ["H1", "H2", "H4", "H5"],
        "center": ["H1", "H2", "H3", "H4", "H5", "H6"],
        "right": ["H2", "H3", "H5", "H6"],
    }


def test_select_and_errors():
    assert len(protocol.select(experiments=["illumination"], conditions=["100"])) == 9
    assert len(protocol.select(targets=["P5"])) == 5
    with pytest.raises(ValueError, match="unknown experiment"):
        protocol.select(experiments=["lighting"])
    with pytest.raises(KeyError, match="did you mean"):
        protocol.trial_by_id("illum25_P3")


def test_unknown_trial_id_is_the_registry_line_with_its_place():
    from gaze4hri_core.registry import UnknownName

    with pytest.raises(UnknownName) as e:
        protocol.trial_by_id("illum25_P3")
    assert e.value.line().startswith("unknown trial id 'illum25_P3' (--trials): did you mean illum025_P3")
    assert "known: illum010_P1, illum010_P2" in e.value.line() and "\n" not in e.value.line()
    with pytest.raises(UnknownName, match=r"^unknown trial id 'arc_p1' \(--redo\): did you mean arc_P1"):
        protocol.trial_by_id("arc_p1", where="--redo")  # ids are case-sensitive: the right case is suggested
    with pytest.raises(UnknownName, match=r"\(manifest\)"):
        protocol.select(trial_ids=["zzz"], where="manifest")
    assert [t.trial_id for t in protocol.TRIALS.values()] == [t.trial_id for t in protocol.trials()]


def test_grid_layout_rows_from_subject_columns_from_camera():
    assert protocol.P_GRID["closest"] == {"left": "P9", "middle": "P8", "right": "P7"}
    assert protocol.P_GRID["farthest"]["right"] == "P1"


def test_study_motion_parameters():
    """The study's values (GazeForHRI/Gaze4HRI@main:config.py:59-69, 299-354): line scans
    +-0.25 m horizontal / +-0.10 m vertical, arc over the 10 s recording, 5 s fixed trials."""
    from gaze4hri_core.protocol import ARC_DURATION_S, FIXED_TRIAL_S, LINE_HALF_LENGTH_M, MUTUAL_SPEEDS_MPS
    from gaze4hri_core.trajectories import TrajectorySettings

    assert LINE_HALF_LENGTH_M == {"h": 0.25, "v": 0.10}
    assert (ARC_DURATION_S, FIXED_TRIAL_S) == (10.0, 5.0)
    assert MUTUAL_SPEEDS_MPS == {"slow": 0.05, "fast": 0.1}
    s = TrajectorySettings()
    assert (s.line_half_length_m("h"), s.line_half_length_m("v"), s.arc_duration_s) == (0.25, 0.10, 10.0)
    for name in ("line_half_length_h_m", "line_half_length_v_m", "arc_duration_s"):
        assert "GazeForHRI/Gaze4HRI@main:config.py" in TrajectorySettings.model_fields[name].description
