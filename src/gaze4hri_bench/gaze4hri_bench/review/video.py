"""H.264 MP4 through the ffmpeg that imageio-ffmpeg ships (libx264, yuv420p, so
every browser plays it), frame counting by decoding it back, and the contact sheet."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError

__all__ = ["Mp4Writer", "count_frames", "contact_sheet", "write_png"]


def _ffmpeg():
    try:
        import imageio_ffmpeg
    except ImportError:
        raise Gaze4HRIError(
            "review videos need imageio-ffmpeg",
            "gaze4hri-bench review",
            "pip install 'imageio-ffmpeg==0.8.1' (requirements/base.txt)",
        ) from None
    return imageio_ffmpeg


class Mp4Writer:
    """Write RGB frames of one size to ``path`` (H.264, CRF ``crf``); the file appears
    atomically on close (written under a temporary name)."""

    def __init__(self, path: str | Path, fps: float, crf: int = 23):
        self.path = Path(path)
        self.fps = float(fps)
        self.crf = int(crf)
        self._tmp = self.path.with_name(f".{self.path.stem}.{os.getpid()}.tmp.mp4")
        self._gen = None
        self.frames = 0
        self.size: tuple[int, int] | None = None

    def write(self, rgb: np.ndarray) -> None:
        h, w = rgb.shape[:2]
        if self._gen is None:
            self.size = (w - w % 2, h - h % 2)  # yuv420p needs even sizes
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._gen = _ffmpeg().write_frames(
                str(self._tmp),
                self.size,
                fps=self.fps,
                codec="libx264",
                pix_fmt_in="rgb24",
                pix_fmt_out="yuv420p",
                quality=None,
                macro_block_size=1,
                output_params=["-crf", str(self.crf), "-preset", "veryfast", "-movflags", "+faststart"],
                ffmpeg_log_level="error",
            )
            self._gen.send(None)
        w2, h2 = self.size
        self._gen.send(np.ascontiguousarray(rgb[:h2, :w2, :3]))
        self.frames += 1

    def close(self) -> Path:
        if self._gen is None:
            raise Gaze4HRIError("no frame to write", str(self.path), "check that the trial has frames")
        self._gen.close()
        self._gen = None
        os.replace(self._tmp, self.path)
        return self.path

    def abort(self) -> None:
        if self._gen is not None:
            try:
                self._gen.close()
            except Exception:  # noqa: BLE001 - aborting
                pass
            self._gen = None
        self._tmp.unlink(missing_ok=True)


def count_frames(path: str | Path) -> tuple[int, str]:
    """(frames decoded, codec name) of a video: decodes the whole file with ffmpeg."""
    import subprocess

    ff = _ffmpeg()
    n, _secs = ff.count_frames_and_secs(str(path))
    probe = subprocess.run([ff.get_ffmpeg_exe(), "-hide_banner", "-i", str(path)], capture_output=True, text=True)
    codec = "h264" if "Video: h264" in probe.stderr else "unknown"
    return int(n), codec


def contact_sheet(frames: list[np.ndarray], cols: int = 4, width: int = 1600) -> np.ndarray:
    """A grid of frames (RGB, same size), scaled so the sheet is ``width`` px wide."""
    import cv2

    if not frames:
        raise ValueError("no frames for a contact sheet")
    cols = min(cols, len(frames))
    rows = -(-len(frames) // cols)
    h, w = frames[0].shape[:2]
    tw = max(1, width // cols)
    th = max(1, int(round(h * tw / w)))
    sheet = np.zeros((rows * th, cols * tw, 3), np.uint8)
    for i, f in enumerate(frames):
        r, c = divmod(i, cols)
        sheet[r * th : (r + 1) * th, c * tw : (c + 1) * tw] = cv2.resize(f, (tw, th), interpolation=cv2.INTER_AREA)
    return sheet


def write_png(path: str | Path, rgb: np.ndarray) -> Path:
    import cv2

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.tmp.png")
    if not cv2.imwrite(str(tmp), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)):
        raise Gaze4HRIError("cannot write PNG", str(path), "check the output folder is writable")
    os.replace(tmp, path)
    return path
