"""``gaze4hri-bench predict`` (issue 24): a registered method on a video file and on a
camera stand-in (OpenCV VideoCapture on a small video passed as the camera argument),
each made by the test from the simulator's face renderer (gaze4hri_sim.render). Checks
the per-frame Parquet and CSV (columns, one row per frame, faces found, gaze in the
camera frame agrees with pitch/yaw), that the annotated MP4 decodes with as many frames,
the RANDOM WEIGHTS banner for a random-weight model, the landmark head pose feeding the
rectified input, and one-line bad input."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from gaze4hri_bench.cli import main as bench_main
from gaze4hri_bench.predict import COLUMNS

W, H = 224, 168


def face_scene(w: int, h: int):
    """The simulator's face renderer (gaze4hri_sim.render) for a ``w`` x ``h`` camera 0.55 m
    in front of the subject's eyes, and that camera's pose (world frame at the eyes)."""
    from gaze4hri_core.calibration import CameraIntrinsics
    from gaze4hri_core.transforms import SE3
    from gaze4hri_sim.render import FaceRenderer

    K = np.array([[0.9 * w, 0, w / 2], [0, 0.9 * w, h / 2], [0, 0, 1.0]])
    # camera on the world x axis looking back at the eyes (-x): image right = +y, image down = -z
    T_cam = SE3(np.column_stack([[0, 1, 0], [0, 0, -1], [-1, 0, 0]]).astype(float), np.array([0.55, 0.0, 0.0]))
    return FaceRenderer(CameraIntrinsics(w, h, K, np.zeros(5))), T_cam


def _face_video(path: Path, n: int, fourcc: str = "MJPG") -> Path:
    """``n`` rendered frames of the simulated subject 0.55 m in front of the camera,
    head turning from -10 to +10 degrees of yaw."""
    import cv2
    from gaze4hri_core.transforms import SE3

    r, T_cam = face_scene(W, H)
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 10, (W, H))
    assert vw.isOpened()
    for i in range(n):
        yaw = np.radians(-10 + 20 * i / max(1, n - 1))
        Rz = np.array([[np.cos(yaw), -np.sin(yaw), 0], [np.sin(yaw), np.cos(yaw), 0], [0, 0, 1]])
        vw.write(cv2.cvtColor(r.render(T_cam, SE3(Rz, np.zeros(3))), cv2.COLOR_RGB2BGR))
    vw.release()
    return path


def _check_outputs(out: Path, stem: str, n: int) -> pd.DataFrame:
    from gaze4hri_bench.review.video import count_frames
    from gaze4hri_core.gaze import pitchyaw_to_vector

    df = pd.read_parquet(out / f"{stem}.parquet")
    csv = pd.read_csv(out / f"{stem}.csv", keep_default_na=False, na_values=[""])
    assert list(df.columns) == COLUMNS and list(csv.columns) == COLUMNS
    assert df["frame"].tolist() == list(range(n)) and len(csv) == n
    frames, codec = count_frames(out / f"{stem}.mp4")
    assert (frames, codec) == (n, "h264")
    ok = df[df["valid"]]
    assert len(ok) > 0
    g = ok[["gaze_x", "gaze_y", "gaze_z"]].to_numpy(float)
    np.testing.assert_allclose(np.linalg.norm(g, axis=1), 1.0, atol=1e-6)
    back = pitchyaw_to_vector(np.radians(ok["pitch_deg"].to_numpy()), np.radians(ok["yaw_deg"].to_numpy()))
    np.testing.assert_allclose(back, g, atol=1e-6)
    np.testing.assert_allclose(csv.loc[df["valid"].to_numpy(), "gaze_x"].to_numpy(float), g[:, 0], atol=1e-9)
    assert (df.loc[~df["valid"], "reason"] != "").all() and (ok["reason"] == "").all()
    return df


def test_predict_video_random_weights_banner(tiny_models, tmp_path, capsys):
    """A network on a video file: files, row count, decoded frame count, faces, banner."""
    video = _face_video(tmp_path / "face.avi", 5)
    rc = bench_main(["predict", "--video", str(video), "--method", "l2cs_gaze360", "--input", "crop",
                     "--models-dir", str(tiny_models), "--out", str(tmp_path / "out")])
    o = capsys.readouterr().out
    assert rc == 0, o
    df = _check_outputs(tmp_path / "out", "face__l2cs_gaze360__crop", 5)
    assert (
        df[["face_x1", "face_y1", "face_x2", "face_y2"]].notna().all(axis=None)
    )  # the rendered face is found in every frame
    assert df["valid"].all()
    box_w = (df["face_x2"] - df["face_x1"]).to_numpy()
    assert ((box_w > 0.15 * W) & (box_w < 0.8 * W)).all(), box_w
    np.testing.assert_allclose(df["t_s"].to_numpy(), np.arange(5) / 10.0, atol=1e-3)
    assert "RANDOM WEIGHTS" in o  # the run's plan banner
    assert "predict: 5 frames, face found in 5 (100 %), gaze in 5" in o


def test_predict_camera_stand_in_rectified_from_landmarks(tiny_models, tmp_path, capsys):
    """A camera argument that OpenCV VideoCapture opens (a small video standing in for a
    webcam), ``--input rectified``: the head pose comes from landmarks (solvePnP)."""
    cam = _face_video(tmp_path / "cam.avi", 4)
    rc = bench_main(
        [
            "predict",
            "--camera",
            str(cam),
            "--method",
            "puregaze_eth",
            "--input",
            "rectified",
            "--models-dir",
            str(tiny_models),
            "--out",
            str(tmp_path / "out"),
            "--max-frames",
            "3",
        ]
    )
    o = capsys.readouterr().out
    assert rc == 0, o
    df = _check_outputs(tmp_path / "out", "cam__puregaze_eth__rectified", 3)  # --max-frames
    assert (df["head_source"] == "landmarks").all() and df["valid"].all()
    # the eye midpoint from the PnP head pose lies in front of the camera, near the rendered 0.55 m
    assert ((df["eye_z"] > 0.3) & (df["eye_z"] < 0.9)).all(), df["eye_z"].tolist()


@pytest.mark.parametrize(
    "argv, what",
    [
        (["--video", "/nonexistent/x.mp4", "--method", "straight"], "video file not found"),
        (["--images", "/nonexistent", "--method", "straight"], "image folder not found"),
        (["--images", "EMPTY", "--method", "straight"], "no images in the folder"),
        (["--video", "BROKEN", "--method", "straight"], "cannot open the video"),
        (["--video", "BROKEN", "--method", "head_pose", "--max-frames", "0"], "--max-frames must be at least 1"),
        (["--video", "BROKEN", "--method", "no_such_method"], "no_such_method"),
    ],
)
def test_predict_bad_input_is_one_line(argv, what, capsys, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "broken.mp4").write_bytes(b"not a video")
    argv = [
        str(tmp_path / "empty") if a == "EMPTY" else str(tmp_path / "broken.mp4") if a == "BROKEN" else a for a in argv
    ]
    rc = bench_main(["predict", *argv, "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert rc == 2 and what in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_predict_out_naming_a_file_is_one_line(capsys, tmp_path):
    (tmp_path / "broken.mp4").write_bytes(b"not a video")
    (tmp_path / "taken").write_text("a file")
    rc = bench_main(
        ["predict", "--video", str(tmp_path / "broken.mp4"), "--method", "straight", "--out", str(tmp_path / "taken")]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "cannot create the output folder" in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    "yaml_text, what",
    [
        ("image_width: [unclosed\n", "camera_info"),  # not YAML
        ("image_width: 224\nimage_height: 168\n", "camera_info"),  # YAML, fields missing
        (None, "camera_info"),  # no such file
    ],
)
def test_predict_bad_camera_info_fails_before_any_model_loads(yaml_text, what, capsys, tmp_path):
    """--camera-info is checked with the other inputs, before the model: here the model's
    ONNX file is absent too, so a model load first would end in 'weights missing' (exit 3)
    instead (before the fix the YAML was read at the first frame, after the model)."""
    import time

    import cv2

    frames = tmp_path / "frames"
    frames.mkdir()
    cv2.imwrite(str(frames / "0000.png"), np.full((H, W, 3), 128, np.uint8))
    info = tmp_path / "camera_info.yaml"
    if yaml_text is not None:
        info.write_text(yaml_text)
    (tmp_path / "no_models").mkdir()
    t0 = time.monotonic()
    rc = bench_main(
        [
            "predict",
            "--images",
            str(frames),
            "--method",
            "l2cs_gaze360",
            "--camera-info",
            str(info),
            "--models-dir",
            str(tmp_path / "no_models"),
            "--out",
            str(tmp_path / "o"),
        ]
    )
    wall = time.monotonic() - t0
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and what in lines[0] and str(info) in lines[0] and "Traceback" not in cap.err, (
        cap.err
    )
    assert "weights missing" not in cap.err and cap.out == ""  # no plan line: FrameEstimator was never built
    assert not (tmp_path / "o").exists()  # nothing created for a run that cannot start
    assert wall < 5.0, wall


@pytest.mark.skipif(
    not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
    reason="root writes in a read-only folder",
)
def test_predict_unwritable_out_fails_before_any_model_loads(capsys, tmp_path):
    import cv2

    frames = tmp_path / "frames"
    frames.mkdir()
    cv2.imwrite(str(frames / "0000.png"), np.full((H, W, 3), 128, np.uint8))
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    (tmp_path / "no_models").mkdir()
    try:
        rc = bench_main(
            [
                "predict",
                "--images",
                str(frames),
                "--method",
                "l2cs_gaze360",
                "--models-dir",
                str(tmp_path / "no_models"),
                "--out",
                str(ro),
            ]
        )
    finally:
        ro.chmod(0o755)
    err = capsys.readouterr().err
    assert rc == 2 and "cannot write in the output folder" in err and len(err.strip().splitlines()) == 1, err


def test_predict_camera_info_loaded_up_front_is_used(capsys, tmp_path):
    """A valid --camera-info, read before the source opens, is the run's intrinsics (a
    calibration of twice the frame size, scaled to it; straight: no model, no face needed)."""
    import cv2
    from gaze4hri_core.calibration import CameraIntrinsics, save_camera_info

    frames = tmp_path / "frames"
    frames.mkdir()
    cv2.imwrite(str(frames / "0000.png"), np.full((H, W, 3), 128, np.uint8))
    info = tmp_path / "camera_info.yaml"
    save_camera_info(
        info, CameraIntrinsics(2 * W, 2 * H, np.array([[400.0, 0, W], [0, 400.0, H], [0, 0, 1]]), np.zeros(5))
    )
    rc = bench_main(
        [
            "predict",
            "--images",
            str(frames),
            "--method",
            "straight",
            "--camera-info",
            str(info),
            "--out",
            str(tmp_path / "o"),
            "--no-video",
        ]
    )
    o = capsys.readouterr().out
    assert rc == 0 and f"camera intrinsics: {info}" in o, o
    assert len(pd.read_parquet(next((tmp_path / "o").glob("frames__straight__*.parquet")))) == 1
