"""gaze4hri-bench review: the overlay geometry (a synthetic frame with a known gaze
draws the arrow where the pinhole projection says), an H.264 MP4 that decodes back
with one frame per trial frame, the contact sheet, best/worst picks, and one-line
errors for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from gaze4hri_bench.pipeline.run import RunConfig, run_benchmark
from gaze4hri_bench.review.draw import GT_COLOR, draw_frame
from gaze4hri_bench.review.overlay import arrow_segment, frame_arrows, project
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.gaze import pitchyaw_to_vector

from .._synth import H, K, SynthDataset, W

EYE = np.array([0.02, -0.01, 0.6])


@pytest.mark.unit
def test_projection_of_a_known_gaze():
    g = pitchyaw_to_vector(np.radians(-10.0), np.radians(20.0))  # Frame A, a unit vector
    start, end = arrow_segment(K, EYE, g, 0.25)
    e3 = EYE + 0.25 * g
    # pinhole by hand: u = fx X/Z + cx, v = fy Y/Z + cy
    np.testing.assert_allclose(start, [80 * 0.02 / 0.6 + 47.5, 80 * -0.01 / 0.6 + 35.5], atol=1e-9)
    np.testing.assert_allclose(end, [80 * e3[0] / e3[2] + 47.5, 80 * e3[1] / e3[2] + 35.5], atol=1e-9)
    assert np.isnan(project(K, [0.0, 0.0, -1.0])).all()


@pytest.mark.unit
def test_arrow_behind_the_camera_is_clipped_or_dropped():
    start, end = arrow_segment(K, [0.0, 0.0, 0.1], [0.0, 0.0, -1.0], 0.25, near_m=0.05)
    np.testing.assert_allclose(end, project(K, [0.0, 0.0, 0.05]))
    assert arrow_segment(K, [0.0, 0.0, 0.01], [0.0, 0.0, -1.0], 0.25) is None
    assert arrow_segment(K, EYE, [np.nan, 0, 1], 0.25) is None


@pytest.mark.unit
def test_synthetic_frame_draws_the_arrow_where_the_projection_says():
    img = np.zeros((H * 4, W * 4, 3), np.uint8)
    K4 = K * np.array([[4], [4], [1]])  # intrinsics of the 4x image
    g = np.array([0.3, 0.0, -1.0]) / np.linalg.norm([0.3, 0.0, -1.0])  # to the image's right
    arrows = frame_arrows(K4, EYE, g, {}, {}, 0.25)
    assert [a.name for a in arrows] == ["gt"]
    out = draw_frame(img, arrows, {}, "", "", [])
    a = arrows[0]
    for s in (0.2, 0.5, 0.8):  # points along the projected segment are painted in the GT colour
        u, v = (a.start + s * (a.end - a.start)).round().astype(int)
        assert tuple(out[v, u]) == GT_COLOR
    far = (a.start + np.array([0.0, 60.0])).round().astype(int)  # off the segment: untouched
    assert tuple(out[far[1], far[0]]) == (0, 0, 0)
    green = np.argwhere((out == GT_COLOR).all(axis=2))
    assert green[:, 1].min() >= a.start[0] - 4 and green[:, 1].max() <= a.end[0] + 4  # nothing drawn outside the arrow


class _Synth(SynthDataset):
    """The run-loop test dataset plus the eye midpoint the review draws from."""

    def trial_ground_truth(self, ref):
        gt = super().trial_ground_truth(ref)
        gt["eye_cx"], gt["eye_cy"], gt["eye_cz"] = EYE
        return gt

    def camera_info(self, ref):
        return ref.calibration.intrinsics


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = tmp_path_factory.mktemp("review_results")
    cfg = RunConfig(
        methods=("straight", "head_pose"),
        data=Path("/synthetic"),
        out=out,
        progress=False,
        command_line="gaze4hri-bench run --data /synthetic",
    )
    run_benchmark(cfg, log=lambda *_: None, dataset=_Synth())
    return out


@pytest.mark.replay
def test_review_writes_h264_mp4_with_every_frame_and_a_contact_sheet(results, tmp_path):
    import cv2
    from gaze4hri_bench.review.render import ReviewConfig, review_trial
    from gaze4hri_bench.review.video import count_frames

    ds = _Synth()
    r = review_trial(
        ReviewConfig(results, "mutual_h_fast", "S01", None, None, tmp_path), log=lambda *_: None, dataset=ds
    )
    n, codec = count_frames(r.mp4)
    assert n == ds.n == r.frames and codec == "h264"
    sheet = cv2.imread(str(r.png))
    assert sheet is not None and sheet.shape[1] >= 400
    with pytest.raises(Gaze4HRIError, match="add --subject, one of S01, S02"):
        review_trial(ReviewConfig(results, "mutual_h_fast"), dataset=ds)
    with pytest.raises(Gaze4HRIError, match="did you mean mutual_h_fast"):
        review_trial(ReviewConfig(results, "mutual_h_fst", "S01"), dataset=ds)
    with pytest.raises(Gaze4HRIError, match="did you mean head_pose"):
        review_trial(ReviewConfig(results, "mutual_h_fast", "S01", ("head_pos",)), dataset=ds)


@pytest.mark.unit
def test_data_folder_defaults_to_the_runs_data(results):
    from gaze4hri_bench.review.render import data_root, result_files

    assert data_root(result_files(results)) == Path("/synthetic")


@pytest.mark.unit
def test_best_and_worst_trial_per_method(results):
    from gaze4hri_bench.review.extremes import best_worst, trial_means
    from gaze4hri_bench.review.render import result_files

    files = result_files(results)
    picks = best_worst(files)
    m = trial_means(files)
    for p in picks:
        g = m[m["key"] == p["key"]]
        want = g["mean_error_deg"].min() if p["which"] == "best" else g["mean_error_deg"].max()
        assert p["mean_error_deg"] == pytest.approx(want)
    assert sorted((p["key"], p["which"]) for p in picks) == [
        ("head_pose__none", "best"),
        ("head_pose__none", "worst"),
        ("straight__none", "best"),
        ("straight__none", "worst"),
    ]


@pytest.mark.unit
def test_cli_bad_input_is_one_line(tmp_path, capsys):
    from gaze4hri_bench.cli import main

    assert main(["review", str(tmp_path / "nope"), "--trial", "arc_P5"]) == 2
    err = capsys.readouterr().err
    assert "results folder not found" in err and err.strip().count("\n") == 0


def test_extremes_index_and_report_links(results, tmp_path, monkeypatch):
    from gaze4hri_bench.review import extremes, render

    monkeypatch.setattr(render, "data_root", lambda files: Path("/synthetic"))
    real = render.review_trial
    monkeypatch.setattr(extremes, "review_trial", lambda cfg, log=print: real(cfg, log, dataset=_Synth()))
    report = tmp_path / "report"
    idx = extremes.render_extremes(results, report / "review", log=lambda *_: None)
    entries = json.loads(idx.read_text())
    assert len(entries) == 4 and all(
        (idx.parent / e["mp4"]).is_file() and (idx.parent / e["png"]).is_file() for e in entries
    )
    # the HTML report links each method's best and worst clip (stats.review_links reads review/index.json)
    from gaze4hri_bench.stats import analyze

    analyze([results], report, figures=False)
    page = (report / "report.html").read_text()
    md = (report / "report.md").read_text()
    for e in entries:
        assert f"src='review/{e['mp4']}'" in page and f"(review/{e['mp4']})" in md
        assert (report / "review" / e["mp4"]).is_file()
