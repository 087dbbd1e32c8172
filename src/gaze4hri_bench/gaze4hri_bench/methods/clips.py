"""Clip windows of the video methods (official test-time settings; methods.md).

GaT (idiap/gaze3d): for frame f the window is f-3s .. f+4s (8 frames, s = stride);
frames outside the video are black (cropped with the current box); the prediction for
f is read at index 3. MCGaze (zgchen33/MCGaze): windows of 7 consecutive frames
starting every 4 frames, the last one ending at the last frame; overlaps are averaged
pairwise in window order (zgchen33/MCGaze@0c681ba:tools/test_gaze360_gaze.py, main():
clip_len 7, stride 4, the last clip the last 7 frames, overlap = (old + new) / 2: a
frame in two windows gets 1/2, 1/2; one in three, at a video's end, 1/4, 1/4, 1/2).
A video shorter than a window runs officially as a shorter clip: the ONNX graph has a
fixed T = 7, and the missing positions are absent frames (``pad="absent"``: its
``frame_hw`` input marks them and the temporal attention ignores them, which gives the
present frames exactly the shorter clip's output; zoo/nets/mcgaze.py). Under the study's
causal windows the first frames of a video run as shorter clips the same way
(GazeForHRI/Gaze4HRI@main:gaze_model_mcgaze.py:71-76, "do not pad/duplicate").
"""
from __future__ import annotations

from dataclasses import dataclass

from ..specs import FRAME_HW

__all__ = ["CentredWindow", "SlidingWindow", "policy_for", "smooth_sequence", "combine"]


@dataclass(frozen=True)
class CentredWindow:
    """One window per frame; out-of-video positions are ``None``: black frames
    (``pad="black"``) or absent ones (``pad="absent"``)."""

    length: int
    out_index: int
    stride: int = 1
    pad: str = "black"

    def window(self, f: int, n: int) -> list[int | None]:
        idx = [f + (k - self.out_index) * self.stride for k in range(self.length)]
        return [i if 0 <= i < n else None for i in idx]

    @property
    def lookahead(self) -> int:
        """Frames after the centre needed before its window is complete."""
        return (self.length - 1 - self.out_index) * self.stride

    @property
    def lookbehind(self) -> int:
        return self.out_index * self.stride


@dataclass(frozen=True)
class SlidingWindow:
    """Windows of ``length`` frames every ``step`` frames, covering the whole video;
    overlapping predictions are combined per ``overlap`` (``mean`` of every window, or
    ``pairwise``: running (old + new) / 2 in window order). A video shorter than a
    window repeats its edge frames (``pad="edge"``) or leaves the rest of the window
    absent (``pad="absent"``, positions None)."""

    length: int
    step: int
    pad: str = "edge"
    overlap: str = "mean"

    def starts(self, n: int) -> list[int]:
        if n <= self.length:
            return [0]
        s = list(range(0, n - self.length + 1, self.step))
        if s[-1] + self.length < n:
            s.append(n - self.length)  # last window ends at the last frame
        return s

    def window(self, start: int, n: int) -> list[int | None]:
        if self.pad == "absent":
            return [start + k if 0 <= start + k < n else None for k in range(self.length)]
        return [min(max(start + k, 0), n - 1) for k in range(self.length)]


def smooth_sequence(vectors, alpha: float):
    """MCGaze's official temporal filter over a video's predictions (N, 3) in frame
    order: alpha x self + (1 - alpha)/2 x (previous + next); the first and last frames
    take (1 - alpha) x their one neighbour; re-normalized; fewer than 2 frames are kept
    (GazeForHRI/GazeModels@MCGaze:tools/calculate_mae_l2cs.py:16-28)."""
    import numpy as np

    v = np.asarray(vectors, float)
    if len(v) < 2:
        return v.copy()
    out = alpha * v
    out[0] += (1 - alpha) * v[1]
    out[-1] += (1 - alpha) * v[-2]
    out[1:-1] += (1 - alpha) * (v[:-2] + v[2:]) / 2
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def combine(policy, prev: tuple | None, v) -> tuple:
    """A frame's accumulator (sum, n; its value is sum / n) after one more window output
    ``v``: the mean over windows, or a :class:`SlidingWindow` with ``overlap="pairwise"``'s
    running pairwise mean."""
    if prev is None:
        return v, 1
    s, n = prev
    if getattr(policy, "overlap", "mean") == "pairwise":
        return 0.5 * (s / n + v), 1
    return s + v, n + 1


def policy_for(spec, record=None) -> CentredWindow | SlidingWindow | None:
    """The clip policy of a spec under a profile record (profiles.MethodProfile; None:
    official): None for single images. ``causal``: windows f-T+1..f read at the last
    position (the study: GazeForHRI/Gaze4HRI@main:gaze_model_mcgaze.py:71,88;
    GazeForHRI/GazeModels@gaze3d:gaze_model_gaze3d.py:91-99,161-164); frames before
    the first full window are absent for a network that can leave frames out (a
    ``frame_hw`` input: MCGaze, whose study code ran a shorter clip there), else black
    (GaT; the study gave it no output there)."""
    if spec.clip_len <= 1:
        return None
    pad = "absent" if FRAME_HW in spec.onnx_inputs else None
    if record is not None and record.clip == "causal":
        return CentredWindow(spec.clip_len, out_index=spec.clip_len - 1, stride=1, pad=pad or "black")
    if spec.family == "mcgaze":
        return SlidingWindow(spec.clip_len, step=4, overlap="pairwise", pad=pad or "edge")
    return CentredWindow(spec.clip_len, out_index=int(spec.out_index or 0), stride=spec.clip_stride)
