"""faces.ear_pass.TrackedEar's sampling, with a stand-in face mesh whose EAR is a known
function of the frame: which frames are measured, refined or interpolated, re-detection
after a lost face, and the rows at a trial's end. (The real landmark model against the
full pass: tests/bench/data/test_sim_session.py.)"""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.faces.detectors import FaceDetection
from gaze4hri_bench.faces.ear_pass import EarPassSettings, TrackedEar
from gaze4hri_bench.faces.landmarks import EAR_LEFT, EAR_RIGHT

pytestmark = pytest.mark.unit


def _landmarks(ear: float, cx: float = 0.5, cy: float = 0.5) -> np.ndarray:
    """468 normalized points: a face around (cx, cy) whose eyes have EAR ``ear``."""
    pts = np.tile([cx, cy, 0.0], (468, 1))
    pts[:4, :2] = [[cx - 0.2, cy - 0.25], [cx + 0.2, cy - 0.25], [cx - 0.2, cy + 0.25], [cx + 0.2, cy + 0.25]]
    for ids, x0 in ((EAR_RIGHT, cx - 0.12), (EAR_LEFT, cx + 0.02)):
        w = 0.1
        h = ear * w  # EAR = (|p2-p6| + |p3-p5|) / (2 |p1-p4|) = 2h / 2w
        p1, p2, p3, p4, p5, p6 = ids
        pts[p1, :2], pts[p4, :2] = [x0, cy - 0.1], [x0 + w, cy - 0.1]
        pts[p2, :2], pts[p6, :2] = [x0 + w / 3, cy - 0.1 - h / 2], [x0 + w / 3, cy - 0.1 + h / 2]
        pts[p3, :2], pts[p5, :2] = [x0 + 2 * w / 3, cy - 0.1 - h / 2], [x0 + 2 * w / 3, cy - 0.1 + h / 2]
    return pts


class _Mesh:
    """The face mesh: EAR of the frame the image stands for (every pixel = its index), as
    image-pixel landmarks; it loses the face on its first try at a frame in ``lost`` and
    never finds one in ``gone``. ``runs``: the frames it measured, in order."""

    def __init__(self, ear, lost=(), gone=()):
        self.ear, self.lost, self.gone, self.runs = ear, set(lost), set(gone), []

    def __call__(self, image, roi):
        i = int(image[0, 0, 0])
        first = i not in self.runs
        self.runs.append(i)
        if i in self.gone or (first and i in self.lost):
            return None
        return _landmarks(self.ear(i)) * [200.0, 200.0, 1.0] + [100.0, 50.0, 0.0]


def _pass(ear, lost=(), no_face=(), **kw):
    mesh = _Mesh(ear, lost, no_face)
    detections: list[int] = []

    def detect(image):
        i = int(image[0, 0, 0])
        detections.append(i)
        return [] if i in no_face else [FaceDetection(np.array([100.0, 100.0, 200.0, 200.0]), 0.9)]

    tr = TrackedEar(detect, mesh, EarPassSettings(warmup=4, **kw))
    return tr, mesh, detections


def _frame(i: int) -> np.ndarray:
    """A frame whose crop keeps its index in the first pixel (the crop maps the face box's
    top-left corner region; every pixel holds the index)."""
    return np.full((360, 640, 3), i, np.uint8)


def _run(tr, n):
    for i in range(n):
        tr.step(i, _frame(i))
    return {r["frame"]: r for r in tr.rows()}


def test_open_eyes_measure_every_second_frame_and_interpolate_the_rest():
    tr, mesh, detections = _pass(lambda i: 0.3)
    rows = _run(tr, 21)
    assert sorted(rows) == list(range(21)) and all(r["ear"] == pytest.approx(0.3) for r in rows.values())
    assert detections == [0] and tr.refined == 1  # the last frame has no next neighbour: measured
    assert mesh.runs == [*range(4), *range(5, 20, 2), 20]  # the warm-up, then every second frame


def test_frames_next_to_a_blink_are_measured_not_interpolated():
    blink = {10, 11, 12}
    tr, mesh, _det = _pass(lambda i: 0.1 if i in blink else 0.3)
    rows = _run(tr, 20)
    assert {i for i, r in rows.items() if r["ear"] < 0.85 * 0.3} == blink  # every blinked frame found, no other
    assert {10, 12} <= set(mesh.runs) and tr.refined >= 2  # the skipped frames beside a low EAR (11): measured


def test_a_lost_face_is_found_again_by_the_detector():
    tr, _mesh, detections = _pass(lambda i: 0.3, lost={7})
    rows = _run(tr, 12)
    assert 7 in detections and all("ear" in r for r in rows.values())


def test_no_face_rows_stay_without_ear_and_their_neighbours_are_measured():
    tr, mesh, _det = _pass(lambda i: 0.3, no_face=set(range(8, 11)))
    rows = _run(tr, 16)
    assert [i for i, r in rows.items() if "ear" not in r] == [8, 9, 10]
    assert {8, 10} <= set(mesh.runs)  # skipped beside a frame without a face: measured


@pytest.mark.parametrize("stride", [2, 3])
def test_each_stride_covers_every_frame_once(stride):
    tr, mesh, _det = _pass(lambda i: 0.3 + 0.001 * (i % 2), stride=stride)
    rows = _run(tr, 30)
    assert sorted(rows) == list(range(30))
    measured = set(mesh.runs)
    assert len(measured) < 30  # frames were skipped
    gaps = [j - i - 1 for i, j in zip(sorted(measured), sorted(measured)[1:], strict=False)]
    assert 0 in measured and 29 in measured and max(gaps) == stride - 1  # at most stride - 1 in a row unmeasured
