"""One pass over a recorded trial: detect + track + EAR + landmark head pose, then the
face-based validity reasons (EAR blinks unless annotated; no_face)."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.faces.blinks import face_reasons
from gaze4hri_bench.pipeline.face_pass import FACE_COLUMNS, track_trial

pytestmark = pytest.mark.replay


class _F:
    def __init__(self, i, img):
        self.index, self.image = i, img


def test_track_trial_on_frames_with_a_face_and_empty_frames():
    pytest.importorskip("mediapipe")
    import cv2
    import skimage.data
    from gaze4hri_bench.faces.detectors import get_detector

    face = cv2.resize(skimage.data.astronaut()[30:250, 120:340], (200, 200))
    frames = []
    for i in range(6):
        img = np.full((360, 640, 3), 80, np.uint8)
        if i != 3:  # frame 3: nobody
            img[80:280, 200 + 4 * i:400 + 4 * i] = face
        frames.append(_F(i, img))
    K = np.array([[500.0, 0, 319.5], [0, 500.0, 179.5], [0, 0, 1]])
    det = get_detector("mediapipe")
    df = track_trial(frames, det, intrinsics=K)
    det.close()
    assert list(df.columns) == FACE_COLUMNS and list(df["frame"]) == list(range(6))
    seen = df.drop(index=3)
    assert df.loc[3, "x1"] != df.loc[3, "x1"] and df.loc[3, "n_faces"] == 0  # NaN: no face
    assert seen["track_id"].nunique() == 1 and (seen["ear"] > 0.2).all()
    # the landmark head pose puts the face in front of the camera, roughly frontal
    assert (seen["lm_face_cz"] > 0.1).all()
    R = seen[[f"lm_R_head_{i}{j}" for i in range(3) for j in range(3)]].to_numpy(float).reshape(-1, 3, 3)
    assert (np.einsum("nii->n", R) > 2.0).all()  # rotation angle below ~60 deg from identity

    gt = pd.DataFrame({"frame": range(6), "valid": True, "invalid_reason": ""})
    gt.loc[0, ["valid", "invalid_reason"]] = [False, "mocap_lost"]
    df.loc[1, "ear"] = 0.05  # a blink by EAR
    out = face_reasons(gt, df, annotated=False)
    assert list(out["invalid_reason"]) == ["mocap_lost", "blink", "", "no_face", "", ""]
    out = face_reasons(gt, df, annotated=True)  # the annotation decides blinks
    assert list(out["invalid_reason"]) == ["mocap_lost", "", "", "no_face", "", ""]


def test_ear_for_a_detector_without_landmarks_comes_from_the_face_mesh():
    """Haar boxes have no landmarks: the face mesh on the subject box supplies EAR, and
    ear_blinks marks the frame whose EAR dips below 0.85 x the trial median."""
    pytest.importorskip("mediapipe")
    import skimage.data
    from gaze4hri_bench.faces.blinks import ear_blinks
    from gaze4hri_bench.faces.detectors import get_detector
    from gaze4hri_bench.faces.landmarks import FaceMesh

    face = skimage.data.astronaut()[0:300, 100:400]  # with hair and shoulders, as the cascade needs
    frames = []
    for i in range(4):
        img = np.full((360, 640, 3), 80, np.uint8)
        img[30:330, 200 + 4 * i:500 + 4 * i] = face
        frames.append(_F(i, img))
    det, mesh = get_detector("opencv_haar"), FaceMesh()
    no_lm = track_trial(frames, det)
    assert no_lm["x1"].notna().all() and no_lm["ear"].isna().all()
    df = track_trial(frames, det, landmarker=mesh.landmarks)
    mesh.close()
    assert (df["ear"] > 0.2).all() and (df["ear"] < 0.45).all()
    gt = pd.DataFrame({"frame": range(5), "valid": True, "invalid_reason": ""})  # frame 4: not in the face table
    df.loc[2, "ear"] = 0.5 * df["ear"].median()
    assert list(ear_blinks(gt, df)) == [False, False, True, False, False]


def test_an_unreadable_face_cache_is_rebuilt_not_fatal(tmp_path):
    """A face cache that does not parse (e.g. a file cut by hand) is ignored; the trial's
    faces are computed again and the cache is rewritten."""
    from gaze4hri_bench.pipeline.face_pass import FaceModels, TrialFaces

    class _NoFaces:
        name, has_landmarks = "none", True

        def detect(self, image):
            return []

        def close(self):
            pass

    cache = tmp_path / "S01__t__none__s1.parquet"
    cache.write_bytes(b"PAR1 cut short")
    models = FaceModels("none")
    models._det = _NoFaces()
    tf = TrialFaces(models, cache, landmarks=True)
    assert not tf.cached
    assert tf.box(0, np.zeros((36, 64, 3), np.uint8)) is None
    tf.save()
    again = TrialFaces(models, cache, landmarks=True)
    assert again.cached and list(again.table()["frame"]) == [0] and again.table()["x1"].isna().all()
