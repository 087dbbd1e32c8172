"""``gaze4hri-bench predict``: a registered gaze method on your own video, image folder
or camera, without a recorded session (issue 24; ptgaze's ``ptgaze --video FILE`` as
the first contact).

What it writes, in ``--out``:

- ``<stem>__<method>__<input>.mp4``: the frames with the face box and the gaze arrow
  drawn by the review module (``review.overlay.frame_arrows`` + ``review.draw.draw_frame``:
  the method's report colour, the legend with pitch/yaw, the reason a frame has no gaze);
- ``<stem>__<method>__<input>.parquet`` and ``.csv``: one row per frame (frame, time,
  face box, pitch/yaw in degrees, gaze vector in the camera frame, eye midpoint,
  head-pose source, valid, reason);
- on the console: what runs (the run's own plan line, so RANDOM weights are announced
  with the same banner as ``gaze4hri-bench run``), then a summary (frames, faces found,
  gaze given, frames per second).

Same code as the benchmark and the live gaze node: every frame goes through
``pipeline.single_frame.FrameEstimator`` (the face detector registry and the subject
tracker of the face pass, the method's own ``prepare``, the ONNX Runtime ``Runner``,
``decode`` and ``to_camera``; clip methods through ``assemble``). There is no motion
capture here, so the head pose comes from face-mesh landmarks: solvePnP of six
landmarks (eye corners, nose wings) against the generic 3D face model
(``faces.normalization.head_pose_from_landmarks``), as ptgaze
(hysts/pytorch_mpiigaze_demo, ``HeadPoseNormalizer`` / ``FaceModel.estimate_head_pose``)
and the ETH-XGaze normalization code (Zhang et al., ECCV 2020,
xucong-zhang/ETH-XGaze ``normalization_example.py``, ``estimateHeadPose``) do. It feeds
``--input rectified`` (Zhang et al. 2018 data normalization), the eye midpoint the
arrow starts from, and the ``head_pose`` baseline (then the landmark head-forward
direction, not motion capture). ``straight`` is the constant (0, 0, -1).

Camera intrinsics: ``--camera-info`` (the project's camera_info.yaml, scaled to the
frame size) or, by default, a nominal pinhole with f = frame width in pixels and the
principal point at the centre (about 53 degrees horizontal field of view; ptgaze's
sample calibration for a 640x480 webcam has f = 640). The rectified input and the
pitch/yaw depend on it; say which with ``--camera-info`` when it matters.
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["add_arguments", "main", "PredictConfig", "predict", "COLUMNS", "nominal_K"]

IMAGE_EXT = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
COLUMNS = ["frame", "t_s", "method", "input", "face_x1", "face_y1", "face_x2", "face_y2", "pitch_deg", "yaw_deg",
           "gaze_x", "gaze_y", "gaze_z", "eye_x", "eye_y", "eye_z", "head_source", "valid", "reason"]
FACE_WIDTH_M = 0.15  # nominal face width for an arrow origin when no landmarks are found

_EPILOG = """\
examples:
  gaze4hri-bench predict --video my.mp4 --method l2cs_gaze360 --out predict
  gaze4hri-bench predict --images frames/ --method puregaze_eth --input rectified --fps 30
  gaze4hri-bench predict --camera 0 --method head_pose --max-frames 300    # webcam; Ctrl-C ends and writes

methods: every `gaze4hri-bench methods` entry. Networks need their ONNX file
(`gaze4hri-bench models import METHOD CHECKPOINT`; a random-weight file from
`models export METHOD --random-init` runs and is announced as RANDOM WEIGHTS).
Without motion capture the weight-free baselines mean: head_pose = head-forward
direction from face landmarks (solvePnP on a 3D face model), straight = (0, 0, -1).

exit codes: 0 done, 2 bad input (one line), 3 missing weights, 130 Ctrl-C on a video
or image folder (what was processed is written; on a camera Ctrl-C is the normal end).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.epilog = _EPILOG
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--video", type=Path, metavar="FILE", help="a video file (anything OpenCV's FFmpeg reads)")
    src.add_argument("--images", type=Path, metavar="DIR",
                     help=f"a folder of images ({', '.join(IMAGE_EXT)}), in name order")
    src.add_argument("--camera", metavar="INDEX",
                     help="a camera index for OpenCV VideoCapture (0 = first webcam), or a stream URL")
    p.add_argument("--method", "-m", required=True, help="a registered method or alias (`gaze4hri-bench methods`)")
    p.add_argument("--input", default="best", choices=("best", "crop", "rectified"),
                   help="network input: face crop or data-normalized (rectified, head pose from landmarks); "
                        "best = the method's own (default)")
    p.add_argument("--out", type=Path, default=Path("predict"), help="output folder (default: predict/)")
    p.add_argument("--max-frames", type=int, default=None, metavar="N", help="stop after N frames")
    p.add_argument("--camera-info", type=Path, default=None, metavar="YAML",
                   help="camera intrinsics (camera_info.yaml); default: nominal f = frame width, centred")
    p.add_argument("--fps", type=float, default=None,
                   help="frame rate of an image folder and of the output video (default: the source's, else 30)")
    p.add_argument("--models-dir", default=None, metavar="DIR",
                   help="ONNX models (default: $GAZE4HRI_MODELS, else models/)")
    p.add_argument("--device", default="cpu", choices=("auto", "cpu", "cuda", "tensorrt"),
                   help="ONNX Runtime device (default cpu)")
    p.add_argument("--detector", default="auto", help="face detector (default auto: the benchmark's choice)")
    p.add_argument("--arrow-length", type=float, default=0.25,
                   help="drawn arrow length in metres from the eye midpoint (default 0.25)")
    p.add_argument("--no-video", action="store_true", help="write only the Parquet and CSV tables")


@dataclass
class PredictConfig:
    method: str
    out: Path = Path("predict")
    video: Path | None = None
    images: Path | None = None
    camera: str | None = None
    input: str = "best"
    max_frames: int | None = None
    camera_info: Path | None = None
    fps: float | None = None
    models_dir: str | Path | None = None
    device: str = "cpu"
    detector: str = "auto"
    arrow_length: float = 0.25
    write_video: bool = True


@dataclass
class PredictResult:
    frames: int
    faces: int
    valid: int
    seconds: float
    table: Path
    csv: Path
    video: Path | None
    random_weights: bool
    interrupted: bool = False


def nominal_K(width: int, height: int) -> np.ndarray:
    """A nominal pinhole for an uncalibrated camera: f = width px, principal point at the centre."""
    f = float(width)
    return np.array([[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


# -- sources ------------------------------------------------------------------------
class _Source:
    """Frames (RGB uint8) with their time in seconds; ``name`` for output files."""

    name = "frames"
    fps: float | None = None
    live = False

    def __iter__(self):
        raise NotImplementedError

    def close(self) -> None:
        pass


class _Capture(_Source):
    def __init__(self, target, name: str, live: bool, what: str, where: str):
        import cv2

        self.cap = cv2.VideoCapture(target)
        if not self.cap.isOpened():
            raise Gaze4HRIError(f"cannot open {what}", where,
                                "check the path and that OpenCV's FFmpeg reads it" if not live else
                                "check the camera index (0 = first camera) and that no other program holds it")
        fps = float(self.cap.get(cv2.CAP_PROP_FPS) or 0.0)
        self.fps = fps if 1.0 <= fps <= 1000.0 else None
        self.name = name
        self.live = live

    def __iter__(self):
        import cv2

        t0 = time.monotonic()
        i = 0
        while True:
            ok, bgr = self.cap.read()
            if not ok or bgr is None:
                return
            if self.live:
                t = time.monotonic() - t0
            else:
                ms = float(self.cap.get(cv2.CAP_PROP_POS_MSEC) or 0.0)
                t = ms / 1000.0 if ms > 0 or i == 0 else i / (self.fps or 30.0)
            yield t, cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB) if bgr.ndim == 3 else cv2.cvtColor(bgr, cv2.COLOR_GRAY2RGB)
            i += 1

    def close(self) -> None:
        self.cap.release()


class _Folder(_Source):
    def __init__(self, folder: Path, fps: float | None):
        if not folder.is_dir():
            raise Gaze4HRIError("image folder not found", str(folder), "pass --images with an existing folder")
        self.files = sorted(p for p in folder.iterdir() if p.suffix.lower() in IMAGE_EXT)
        if not self.files:
            raise Gaze4HRIError("no images in the folder", str(folder),
                                f"add images ({', '.join(IMAGE_EXT)}) or pass --video")
        self.fps = fps
        self.name = folder.resolve().name or "images"

    def __iter__(self):
        import cv2

        for i, p in enumerate(self.files):
            bgr = cv2.imread(str(p), cv2.IMREAD_COLOR)
            if bgr is None:
                raise Gaze4HRIError("cannot read image", str(p), "remove the file or convert it to PNG/JPEG")
            yield i / (self.fps or 30.0), cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def open_source(cfg: PredictConfig) -> _Source:
    if cfg.video is not None:
        if not Path(cfg.video).is_file():
            raise Gaze4HRIError("video file not found", str(cfg.video), "pass --video with an existing file")
        return _Capture(str(cfg.video), Path(cfg.video).stem, False, "the video", str(cfg.video))
    if cfg.images is not None:
        return _Folder(Path(cfg.images), cfg.fps)
    cam = str(cfg.camera)
    target = int(cam) if cam.isdigit() else cam
    name = f"camera{cam}" if cam.isdigit() else Path(cam).stem or "camera"
    return _Capture(target, name, True, f"camera {cam}", "--camera")


def _load_camera_info(cfg: PredictConfig):
    """``--camera-info`` parsed and validated (a one-line CalibrationError when bad), or None."""
    if cfg.camera_info is None:
        return None
    from gaze4hri_core.calibration import load_camera_info

    return load_camera_info(cfg.camera_info)


def _intrinsics(cfg: PredictConfig, intr, w: int, h: int) -> tuple[np.ndarray, str]:
    """K for frames of w x h: ``intr`` (the loaded --camera-info) scaled to them, else nominal_K."""
    if intr is None:
        return nominal_K(w, h), f"nominal (f = {w} px, centred; pass --camera-info for a calibrated camera)"
    if (intr.width, intr.height) != (w, h):
        intr = intr.scaled(w, h)
    return np.asarray(intr.K, float), f"{cfg.camera_info}"


def _writable_out(out: Path) -> None:
    """Create ``--out`` and prove it takes a file (a probe written and removed), so a
    read-only folder fails now rather than after every frame was processed."""
    import tempfile

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise Gaze4HRIError(f"cannot create the output folder ({e.strerror})", str(out),
                            "pass --out DIR: a folder, not a file") from None
    try:
        with tempfile.TemporaryFile(dir=out):
            pass
    except OSError as e:
        raise Gaze4HRIError(f"cannot write in the output folder ({e.strerror})", str(out),
                            "pass --out DIR with a folder you can write to") from None


# -- drawing ------------------------------------------------------------------------
def _origin(e, K) -> np.ndarray:
    """Arrow origin: the eye midpoint from the landmark head pose; without landmarks, the
    face box centre at the depth a 15 cm wide face would have."""
    eye = np.asarray(e.eye, float)
    if np.isfinite(eye).all():
        return eye
    if e.box is None:
        return np.full(3, np.nan)
    x1, y1, x2, y2 = (float(v) for v in e.box[:4])
    z = K[0, 0] * FACE_WIDTH_M / max(x2 - x1, 1.0)
    u, v = (x1 + x2) / 2, (y1 + y2) / 2
    return np.array([(u - K[0, 2]) * z / K[0, 0], (v - K[1, 2]) * z / K[1, 1], z])


def _annotate(img: np.ndarray, e, K: np.ndarray, key: str, color, header: str, length_m: float) -> np.ndarray:
    import cv2

    from .review.draw import draw_frame
    from .review.overlay import frame_arrows

    base = img
    if e.box is not None:
        base = img.copy()
        x1, y1, x2, y2 = (int(round(float(v))) for v in e.box[:4])
        t = max(1, int(round(img.shape[0] / 360)))
        cv2.rectangle(base, (x1, y1), (x2, y2), (255, 255, 255), t + 2, cv2.LINE_AA)
        cv2.rectangle(base, (x1, y1), (x2, y2), color, t, cv2.LINE_AA)
    ok = not e.reason and np.isfinite(e.gaze).all()
    arrows = frame_arrows(K, _origin(e, K), np.full(3, np.nan), {key: e.gaze} if ok else {}, {}, length_m)
    if ok:
        from gaze4hri_core.gaze import vector_to_pitchyaw

        p, y = np.degrees(vector_to_pitchyaw(e.gaze))
        text = f"{key}: pitch {p:+.1f} yaw {y:+.1f} deg"
    else:
        text = f"{key}: {e.reason or 'no gaze'}"
    return draw_frame(base, arrows, {key: color}, header, e.reason, [(key, text)])


def _row(e, method: str, input_type: str, times: dict[int, float]) -> dict:
    from gaze4hri_core.gaze import vector_to_pitchyaw

    g = np.asarray(e.gaze, float)
    ok = not e.reason and np.isfinite(g).all()
    pitch, yaw = (np.degrees(vector_to_pitchyaw(g)) if ok else (np.nan, np.nan))
    box = [float(v) for v in e.box[:4]] if e.box is not None else [np.nan] * 4
    eye = np.asarray(e.eye, float)
    return {"frame": int(e.index), "t_s": float(times.get(e.index, np.nan)), "method": method, "input": input_type,
            "face_x1": box[0], "face_y1": box[1], "face_x2": box[2], "face_y2": box[3],
            "pitch_deg": float(pitch), "yaw_deg": float(yaw),
            "gaze_x": float(g[0]) if ok else np.nan, "gaze_y": float(g[1]) if ok else np.nan,
            "gaze_z": float(g[2]) if ok else np.nan,
            "eye_x": float(eye[0]), "eye_y": float(eye[1]), "eye_z": float(eye[2]),
            "head_source": e.head_source, "valid": bool(ok), "reason": "" if ok else (e.reason or "no_gaze")}


def _plan(est, cfg: PredictConfig) -> list[str]:
    """The run's own plan lines (pipeline.progress.plan_lines): RANDOM WEIGHTS said as loudly as in ``run``."""
    from types import SimpleNamespace

    from .pipeline.progress import plan_lines

    run = SimpleNamespace(models_dir=cfg.models_dir, detector=cfg.detector, blinks="off", profile=est.profile)
    return plan_lines([est.job], run, False)


# -- the command --------------------------------------------------------------------
def _check_args(cfg: PredictConfig) -> None:
    """The numeric options, each a one-line error."""
    if cfg.max_frames is not None and cfg.max_frames < 1:
        raise Gaze4HRIError(f"--max-frames must be at least 1, got {cfg.max_frames}", "--max-frames",
                            "use e.g. --max-frames 300")
    if cfg.arrow_length <= 0:
        raise Gaze4HRIError(f"--arrow-length must be positive, got {cfg.arrow_length}", "--arrow-length",
                            "use e.g. 0.25")
    if cfg.fps is not None and cfg.fps <= 0:
        raise Gaze4HRIError(f"--fps must be positive, got {cfg.fps}", "--fps", "use e.g. --fps 30")


class _Output:
    """The rows (and the annotated video) of the estimates as they become final."""

    def __init__(self, cfg: PredictConfig, est, out: Path, stem: str, fps: float | None):
        from .review.draw import hex_rgb
        from .stats.figures import method_color

        self.cfg, self.est = cfg, est
        self.name = est.method.name
        self.color = hex_rgb(method_color(self.name))
        self.random_w = bool(est.model is not None and est.model.random_init)
        self.header = f"{self.name} ({est.input_type})" + (" RANDOM WEIGHTS" if self.random_w else "")
        self.writer = None
        if cfg.write_video:
            from .review.video import Mp4Writer

            self.writer = Mp4Writer(out / f"{stem}.mp4", cfg.fps or fps or 30.0)
        self.rows: list[dict] = []
        self.pending: dict[int, np.ndarray] = {}
        self.times: dict[int, float] = {}
        self.K: np.ndarray | None = None

    def emit(self, ests) -> None:
        for e in ests:
            self.rows.append(_row(e, self.name, self.est.input_type, self.times))
            img = self.pending.pop(e.index, None)
            if self.writer is not None and img is not None:
                self.writer.write(_annotate(img, e, self.K, self.name, self.color, f"{self.header} frame {e.index}",
                                            self.cfg.arrow_length))


def _frames(cfg: PredictConfig, est, source, intr, o: _Output, log) -> tuple[int, float, float, bool]:
    """Every frame of ``source`` through ``est`` into ``o``: (frames, start time, time
    after the first frame, interrupted by Ctrl-C on a video or image folder)."""
    n, shape, interrupted = 0, None, False
    t0 = t1 = last_log = time.perf_counter()
    try:
        for t, img in source:
            if cfg.max_frames is not None and n >= cfg.max_frames:
                break
            if o.K is None:
                o.K, how = _intrinsics(cfg, intr, img.shape[1], img.shape[0])
                log(f"camera intrinsics: {how}")
                shape = img.shape
            elif img.shape != shape:
                raise Gaze4HRIError(f"frame {n} is {img.shape[1]}x{img.shape[0]}, the first was {shape[1]}x{shape[0]}",
                                    str(cfg.images or cfg.video or cfg.camera), "use frames of one size")
            o.times[n] = t
            o.pending[n] = img
            o.emit(est.step(n, int(round(t * 1e9)), img, o.K, None))
            n += 1
            if n == 1:
                t1 = time.perf_counter()  # the rate leaves out the first frame, which builds the models
            now = time.perf_counter()
            if source.live and now - last_log >= 5.0:
                log(f"predict: {n} frames ({n / (now - t0):.1f} frames/s); Ctrl-C ends and writes")
                last_log = now
    except KeyboardInterrupt:
        interrupted = not source.live
        log("predict: stopped (Ctrl-C); writing what was processed")
    return n, t0, t1, interrupted


def _write_tables(rows: list[dict], out: Path, stem: str):
    """The rows as ``<stem>.parquet`` and ``<stem>.csv`` (each atomically); (table, paths)."""
    import pandas as pd

    df = pd.DataFrame(rows, columns=COLUMNS).sort_values("frame").reset_index(drop=True)
    table = out / f"{stem}.parquet"
    csv = out / f"{stem}.csv"
    tmp = table.with_name(f".{table.name}.tmp")
    df.to_parquet(tmp, index=False)
    tmp.replace(table)
    tmp = csv.with_name(f".{csv.name}.tmp")
    df.to_csv(tmp, index=False)
    tmp.replace(csv)
    return df, table, csv


def predict(cfg: PredictConfig, log=print) -> PredictResult:
    """Run ``cfg.method`` over the source; write the tables (and the video); return the counts."""
    from .methods import METHODS, get_method
    from .methods.plugins import user_method
    from .pipeline.single_frame import FrameEstimator
    from .zoo.store import models_dir

    _check_args(cfg)
    name = user_method(METHODS, cfg.method, models_dir(cfg.models_dir))  # a spec file: registered here
    get_method(name).resolve_input(cfg.input)  # unknown method or input: one line, before opening anything
    # every input is checked before any model loads (FrameEstimator builds the ONNX session):
    # the camera info, the output folder, the source; each a one-line error
    intr = _load_camera_info(cfg)
    out = Path(cfg.out)
    _writable_out(out)
    source = open_source(cfg)
    try:
        est = FrameEstimator(cfg.method, cfg.input, cfg.models_dir, cfg.device, cfg.detector, landmarks=True)
    except BaseException:
        source.close()
        raise
    name = est.method.name
    for line in _plan(est, cfg):
        log(line)
    if est.method.kind != "onnx":
        log(f"note: no motion capture here: {name} = "
            + ("head-forward direction from face landmarks (solvePnP on a 3D face model)" if name == "head_pose"
               else "constant (0, 0, -1)"))
    stem = f"{source.name}__{name}__{est.input_type}"
    o = None
    try:
        o = _Output(cfg, est, out, stem, source.fps)
        n, t0, t1, interrupted = _frames(cfg, est, source, intr, o, log)
        if o.K is None:
            raise Gaze4HRIError("no frame could be read", str(cfg.video or cfg.images or cfg.camera),
                                "check that the source has frames (a camera may need a moment or another index)")
        o.emit(est.finish())
        secs = time.perf_counter() - t0
        rate = (n - 1) / (time.perf_counter() - t1) if n > 1 else float("nan")
        video = o.writer.close() if o.writer is not None else None
    except BaseException:
        if o is not None and o.writer is not None:
            o.writer.abort()
        raise
    finally:
        est.close()
        source.close()
    df, table, csv = _write_tables(o.rows, out, stem)
    faces = int(df[["face_x1", "face_y1", "face_x2", "face_y2"]].notna().all(axis=1).sum())
    valid = int(df["valid"].sum())
    log(f"predict: {n} frames, face found in {faces} ({100.0 * faces / max(n, 1):.0f} %), gaze in {valid}, "
        + (f"{rate:.1f} frames/s after the first frame (which builds the models)" if n > 1 else f"{secs:.1f} s"))
    log(f"wrote {table}, {csv}" + (f" and {video}" if video is not None else ""))
    if o.random_w:
        log(f"RANDOM WEIGHTS: {name} ran with randomly initialised weights; its gaze says nothing about the method.")
    return PredictResult(n, faces, valid, secs, table, csv, video, o.random_w, interrupted)


def main(args: argparse.Namespace) -> int:
    cfg = PredictConfig(method=args.method, out=args.out, video=args.video, images=args.images, camera=args.camera,
                        input=args.input, max_frames=args.max_frames, camera_info=args.camera_info, fps=args.fps,
                        models_dir=args.models_dir, device=args.device, detector=args.detector,
                        arrow_length=args.arrow_length, write_video=not args.no_video)
    res = predict(cfg, log=lambda s: print(s, file=sys.stdout, flush=True))
    return 130 if res.interrupted else 0
