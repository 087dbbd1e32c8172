"""Session manifest: atomic writes, resume bookkeeping, bad manifests."""
import os

import pytest
from gaze4hri_core.errors import SessionError

from gaze4hri_core import session as S

pytestmark = pytest.mark.unit


def test_manifest_round_trip_and_pending(tmp_path, default_calibration_dir):
    d = S.session_dir(tmp_path, "S12")
    m = S.new_manifest("S12", "sim")
    m.calibration = S.copy_calibration(default_calibration_dir, d, "default")
    S.mark(m, "illum010_P1", "recording")
    S.mark(m, "illum010_P1", "done", frames=60)
    S.save_manifest(d, m)
    back = S.load_manifest(d)
    assert back.trials["illum010_P1"].status == "done" and back.trials["illum010_P1"].attempts == 1
    assert back.pending()[0] == "illum010_P2" and len(back.pending()) == 62
    assert (d / "calibration" / "targets.yaml").is_file()
    assert back.software["git"] and back.protocol_version


def test_atomic_write_leaves_no_temp_files(tmp_path):
    m = S.new_manifest("S01", "sim")
    for _ in range(3):
        S.save_manifest(tmp_path, m)
    assert sorted(os.listdir(tmp_path)) == ["session.yaml"]


def test_bad_manifest_and_subject(tmp_path):
    (tmp_path / "session.yaml").write_text("format: gaze4hri/session@1\nsubject: S1\nbackend: sim\n")
    with pytest.raises(SessionError, match="software"):
        S.load_manifest(tmp_path)
    with pytest.raises(SessionError, match="not found"):
        S.load_manifest(tmp_path / "none")
    with pytest.raises(SessionError, match="invalid subject"):
        S.session_dir(tmp_path, "../x")


def test_topics_have_types():
    for name, value in vars(S.Topics).items():
        if name.isupper() and not name.endswith("_PREFIX"):
            assert value in S.MSG_TYPES, name
