"""The ``study`` reader on a study-layout fixture with the released dataset's quirks
(issue 23 item 3): a re-muxed mp4 with its index at the front, truncated; the study's
``{"subjects": [...]}`` subject_info.json; two blink annotators; a re-recording whose
newest folder by modification time is not the latest by name; ``table_pose.npy`` saved
as None and an empty ``ur5_joint_states.npy``; an empty subject folder. The study's
rules are re-derived here from its code (GazeForHRI/Gaze4HRI@main, cited per check)."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest
from gaze4hri_bench.data.reader import Dataset

from . import _study as S

pytestmark = pytest.mark.replay


def _faststart_truncated(video) -> None:
    """Re-mux ``video`` with its index (moov) at the front, as a web release does, then
    cut the file to two thirds: it still opens and decodes its first frames."""
    ffmpeg = pytest.importorskip("imageio_ffmpeg").get_ffmpeg_exe()
    tmp = video.with_name("remux.mp4")
    subprocess.run([ffmpeg, "-v", "error", "-y", "-i", str(video), "-c", "copy", "-movflags", "+faststart", str(tmp)],
                   check=True)
    data = tmp.read_bytes()
    assert data[4:8] == b"ftyp" and data.find(b"moov") < data.find(b"mdat")  # index first
    video.write_bytes(data[: 2 * len(data) // 3])
    tmp.unlink()


def _study_latest(point_dir) -> str:
    """GazeForHRI/Gaze4HRI@main:data_loader.py:38-43: the sub-folder with the largest
    os.path.getmtime."""
    subdirs = [os.path.join(point_dir, d) for d in os.listdir(point_dir) if os.path.isdir(os.path.join(point_dir, d))]
    return os.path.basename(max(subdirs, key=os.path.getmtime))


def _study_blink_file(trial_dir) -> str:
    """data_loader.py:373-384: blink_annotations_by_*.npy names, sorted, the first."""
    c = sorted(f for f in os.listdir(trial_dir) if f.startswith("blink_annotations_by_") and f.endswith(".npy"))
    return c[0]


def _study_subject_meta(path) -> dict:
    """frame_db.py:84-93: data["subjects"][0]'s gender, birth_year, glasses, height_cm."""
    with open(path, encoding="utf-8") as f:
        subj = json.load(f)["subjects"][0]
    return {k: subj.get(k) for k in ("gender", "birth_year", "glasses", "height_cm")}


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    b = tmp_path_factory.mktemp("release") / "BASE"
    info = {
        "subjects": [{"name": "Jane Doe", "gender": "female", "birth_year": 1994, "glasses": True, "height_cm": 171}]
    }
    zeynep = np.ones(12, np.int16)
    zeynep[[2, 3]] = 3
    ahmet = np.ones(12, np.int16)
    ahmet[[6]] = 3
    ahmet[[9]] = 2
    good = S.write_trial(b, info=info, blinks={"zeynep": zeynep, "ahmet": ahmet})
    trunc = S.write_trial(b, exp="lighting_50", point="p5", info=info)
    _faststart_truncated(trunc / "rgb_video.mp4")
    odd = S.write_trial(b, exp="lighting_25", point="p5", info=info)
    np.save(odd / "table_pose.npy", np.array(None, dtype=object), allow_pickle=True)  # saved as None
    np.save(odd / "ur5_joint_states.npy", np.zeros((0,)))  # empty
    # a re-recording: the folder written last (by time) has the smaller stamp in its name
    new = S.write_trial(b, exp="circular_movement", point="p3", stamp=1700000000000, info=info)
    old = S.write_trial(b, exp="circular_movement", point="p3", stamp=1700000500000, info=info)
    t = old.stat().st_mtime
    os.utime(old, (t - 3600, t - 3600))
    os.utime(new, (t, t))
    (b / "2025-03-04" / "0009").mkdir()  # an empty subject folder
    return b, good, trunc, odd, new


def test_truncated_faststart_video_skips_its_trial_only(release):
    import cv2

    b, _good, trunc, _odd, _new = release
    cap = cv2.VideoCapture(str(trunc / "rgb_video.mp4"))
    assert cap.isOpened() and cap.read()[0] and int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 12  # the quirk: it opens
    cap.release()
    ds = Dataset(b)
    trials = [r.trial for r in ds.trials()]
    assert sorted(trials) == ["arc_P3", "illum025_P5", "illum100_P5"]
    why = {(s.subject, s.trial): s.reason for s in ds.skipped}
    assert "cannot be decoded to its last frame (12)" in why[("0005", "illum050_P5")]
    assert "\n" not in why[("0005", "illum050_P5")]
    for r in ds.trials():  # every listed trial decodes to its end
        assert len(list(ds.iter_frames(r))) == 12


def test_empty_subject_folder_is_named(release):
    b = release[0]
    for root in (b, b / "2025-03-04"):
        ds = Dataset(root)
        ds.trials()
        s = [x for x in ds.skipped if x.subject == "0009"]
        assert len(s) == 1 and "empty subject folder" in s[0].reason and s[0].where.endswith("0009"), root


def test_study_subject_info_format(release):
    b, good = release[0], release[1]
    ds = Dataset(b)
    info = ds.subject_info("0005")
    want = _study_subject_meta(good.parents[2] / "subject_info.json")
    assert {k: info.get(k) for k in want} == want and info["glasses"] is True and info["gender"] == "female"
    assert "name" not in info  # a person's name stays out of the results
    assert ds.trials()[0].subject_info == info and not [w for w in ds.warnings if "subject_info" in w]


def test_first_annotator_by_name_as_the_study(release):
    b, good = release[0], release[1]
    assert _study_blink_file(good) == "blink_annotations_by_ahmet.npy"
    ds = Dataset(b, trials=["illum100_P5"])
    r = ds.trial_ground_truth(ds.trials()[0])["invalid_reason"].tolist()
    ahmet = np.load(good / _study_blink_file(good))
    want = ["blink" if c == 3 else "blink_uncertain" if c == 2 else "" for c in ahmet]
    assert r == want  # zeynep's blinks (frames 2, 3) are not used


def test_rerecording_by_modification_time(release):
    b, new = release[0], release[4]
    ds = Dataset(b, trials=["arc_P3"])
    [ref] = ds.trials()
    assert ref.bag_dir.name == _study_latest(new.parent) == "1700000000000"
    assert [p.name for p in ref.rerecordings] == ["1700000500000"]


def test_unreadable_optional_files_keep_the_trial(release):
    b, odd = release[0], release[3]
    assert (
        np.load(odd / "ur5_joint_states.npy").size == 0
        and np.load(odd / "table_pose.npy", allow_pickle=True).item() is None
    )
    ds = Dataset(b, trials=["illum025_P5"])
    [ref] = ds.trials()
    gt = ds.trial_ground_truth(ref)
    assert len(gt) == 12 and gt["valid"].all() and {s.subject for s in ds.skipped} == {"0009"}
    w = " ".join(ds.warnings)
    assert "table_pose.npy" in w and "ur5_joint_states.npy" in w and "optional" in w


def test_run_goes_on_past_the_truncated_video(release, tmp_path, capsys):
    import pandas as pd
    from gaze4hri_bench.cli import main

    out = tmp_path / "res"
    rc = main(
        [
            "run",
            "--data",
            str(release[0]),
            "--format",
            "study",
            "--method",
            "head_pose",
            "--out",
            str(out),
            "--no-progress",
            "--trials",
            "illum100_P5",
            "illum050_P5",
        ]
    )
    text = capsys.readouterr()
    assert rc == 0, text.err
    assert "illum050_P5" in text.out + text.err and "last frame" in text.out + text.err
    df = pd.read_parquet(out / "head_pose__none.parquet")
    assert set(df["trial"]) == {"illum100_P5"}
