"""Bad sessions fail with one line (what, where, fix), never a traceback: corrupt or
truncated bags, missing topics, a session without calibration, missing bags."""
from __future__ import annotations

import shutil

import pytest
from gaze4hri_bench.data.reader import Dataset
from gaze4hri_bench.testing.session import TrialSpec, write_session
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.session import Topics

pytestmark = pytest.mark.replay


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bad")
    root = tmp / "root"
    write_session(root, "S01", [TrialSpec("illum100_P1", seconds=0.4)], tmp=tmp)
    return root


def _copy(small, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(small, root)
    return root


def _one_line(e: Gaze4HRIError, *parts: str) -> str:
    msg = str(e)
    assert "\n" not in msg and e.where and e.fix, msg
    for p in parts:
        assert p in msg, msg
    return msg


def _read_all(root):
    ds = Dataset(root)
    ref = ds.trials()[0]
    ds.trial_ground_truth(ref)
    for _ in ds.iter_frames(ref):
        pass


def test_corrupt_bag(small, tmp_path):
    root = _copy(small, tmp_path)
    mcap = next((root / "S01" / "bags" / "illum100_P1").glob("*.mcap"))
    mcap.write_bytes(b"\x89MCAP0\r\n" + b"garbage" * 1000)
    with pytest.raises(Gaze4HRIError) as ei:
        _read_all(root)
    _one_line(ei.value, "illum100_P1", "re-record")


def test_truncated_bag(small, tmp_path):
    root = _copy(small, tmp_path)
    mcap = next((root / "S01" / "bags" / "illum100_P1").glob("*.mcap"))
    data = mcap.read_bytes()
    mcap.write_bytes(data[: len(data) // 2])
    with pytest.raises(Gaze4HRIError) as ei:
        _read_all(root)
    _one_line(ei.value, "illum100_P1")


def test_missing_metadata_and_bag(small, tmp_path):
    root = _copy(small, tmp_path)
    bag = root / "S01" / "bags" / "illum100_P1"
    (bag / "metadata.yaml").unlink()
    with pytest.raises(Gaze4HRIError) as ei:
        _read_all(root)
    _one_line(ei.value, "metadata.yaml")
    shutil.rmtree(bag)
    with pytest.raises(Gaze4HRIError) as ei:
        _read_all(root)
    _one_line(ei.value, "trial bag not found")


def test_missing_topic(tmp_path):
    root = tmp_path / "root"
    write_session(root, "S01", [TrialSpec("illum100_P1", seconds=0.3, omit_topics=(Topics.HEAD_POSE,))], tmp=tmp_path)
    with pytest.raises(Gaze4HRIError) as ei:
        _read_all(root)
    _one_line(ei.value, Topics.HEAD_POSE, "missing")


def test_session_without_calibration(small, tmp_path):
    root = _copy(small, tmp_path)
    shutil.rmtree(root / "S01" / "calibration")
    with pytest.raises(Gaze4HRIError) as ei:
        Dataset(root).trials()
    _one_line(ei.value, "calibration")


def test_no_session_and_bad_manifest(tmp_path, small):
    with pytest.raises(Gaze4HRIError) as ei:
        Dataset(tmp_path).trials()
    _one_line(ei.value, "no session found")
    root = _copy(small, tmp_path / "x")
    (root / "S01" / "session.yaml").write_text("format: [unclosed\n")
    with pytest.raises(Gaze4HRIError) as ei:
        Dataset(root).trials()
    _one_line(ei.value, "session.yaml")
