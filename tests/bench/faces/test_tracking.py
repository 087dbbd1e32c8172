"""BYTETracker (Ultralytics, fed our detections) keeps one id for the subject across a
moving sequence and picks the subject among two faces."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.faces.detectors import FaceDetection, get_detector
from gaze4hri_bench.faces.tracking import SubjectTracker

pytestmark = pytest.mark.replay


def _scene(t: int, second: bool = False) -> np.ndarray:
    """640x360 frame: the astronaut's head (200 px) moving right 6 px a frame; with
    ``second``, a smaller copy (150 px) near the right edge (a bystander)."""
    import cv2
    import skimage.data

    face = skimage.data.astronaut()[30:250, 120:340]
    img = np.full((360, 640, 3), 80, np.uint8)
    big = cv2.resize(face, (200, 200))
    x = 160 + 6 * t
    img[80:280, x:x + 200] = big
    if second:
        small = cv2.resize(face, (150, 150))
        img[10:160, 485:635] = small
    return img


@pytest.fixture(scope="module")
def det():
    pytest.importorskip("mediapipe")
    d = get_detector("mediapipe", landmarks=False)
    yield d
    d.close()


def test_one_track_id_across_a_moving_sequence(det):
    trk = SubjectTracker()
    ids, xs = [], []
    for t in range(12):
        s = trk.update(det.detect(_scene(t)), (360, 640, 3))
        assert s is not None, t
        ids.append(s.track_id)
        xs.append(s.center[0])
    assert len(set(ids)) == 1
    assert np.all(np.diff(xs) > 0)  # follows the motion


def test_subject_kept_when_a_second_face_appears_and_chosen_among_two(det):
    trk = SubjectTracker()
    first = None
    for t in range(10):
        s = trk.update(det.detect(_scene(t, second=t >= 4)), (360, 640, 3))
        first = first or s.track_id
        assert s.track_id == first and s.center[0] < 450  # never the bystander at the edge
    # both faces from the first frame: the large central one is the subject
    trk2 = SubjectTracker()
    both = 0
    for t in range(5):
        dets = det.detect(_scene(t, second=True))
        both += len(dets) >= 2
        s = trk2.update(dets, (360, 640, 3))
        assert s is not None and s.center[0] < 450
    assert both >= 3  # the bystander was really there


def test_subject_survives_missed_detections_and_reset():
    trk = SubjectTracker()
    box = np.array([100.0, 100.0, 200.0, 200.0])
    ids = []
    for t in range(15):
        dets = [] if t in (6, 7) else [FaceDetection(box + [3 * t, 0, 3 * t, 0], 0.9)]
        s = trk.update(dets, (480, 640, 3))
        if t in (6, 7):
            assert s is None
        else:
            ids.append(s.track_id)
    assert len(set(ids)) == 1
    trk.reset()
    assert trk.update([], (480, 640, 3)) is None and trk.subject_id is None
