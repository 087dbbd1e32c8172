"""Per-trial frame streams for one method: decode -> detect/track -> pre-process ->
samples ready for batched inference (images or clips), with per-stage timing.

This generator runs in the prefetch thread (runtime.prefetch) so that it overlaps
inference. Clip assembly follows methods.clips (GaT centred windows, MCGaze sliding
windows); memory stays bounded by the window length.
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from ..methods.base import FrameContext, Prepared
from ..methods.clips import CentredWindow, SlidingWindow

__all__ = ["Sample", "Direct", "StageTimes", "Assembler", "assemble", "stack_inputs", "run_samples"]


@dataclass
class StageTimes:
    """Seconds spent per stage (summed over frames) and frames decoded: decode, ground
    truth (``gt_s``), faces (``detect_s``: detection, tracking, landmarks, cache reads),
    pre-processing, inference and writing (``write_s``: rows, blink mask, face cache,
    part file)."""

    decode_s: float = 0.0
    detect_s: float = 0.0
    preprocess_s: float = 0.0
    infer_s: float = 0.0
    frames: int = 0
    excluded: str | None = None  # why the profile excluded the whole trial (study: a frame without its face)
    gt_s: float = 0.0
    write_s: float = 0.0

    STAGES = ("decode_s", "gt_s", "detect_s", "preprocess_s", "infer_s", "write_s")

    def add(self, other: StageTimes) -> None:
        for k in (*self.STAGES, "frames"):
            setattr(self, k, getattr(self, k) + getattr(other, k))


@dataclass
class Sample:
    """One network input: tensor (C,H,W) or clip (T,C,H,W); to_cam (3,3) or (T,3,3);
    frames: the frame index each output position belongs to (None: padding, unused);
    read: the output position to keep (centred windows) or None (use every position);
    hw: each frame's image size (2,) or (T, 2) for networks that take it (specs.FRAME_HW)."""

    tensor: np.ndarray
    to_cam: np.ndarray
    frames: list[int | None]
    read: int | None = None
    hw: np.ndarray | None = None


def stack_inputs(batch: list[Sample]) -> list[np.ndarray]:
    """A batch's network inputs in spec order: the tensors, then the image sizes when
    the network takes them."""
    xs = [np.stack([s.tensor for s in batch])]
    if batch and batch[0].hw is not None:
        xs.append(np.stack([s.hw for s in batch]))
    return xs


def run_samples(run, batch: list[Sample]) -> list[np.ndarray]:
    """``run(*inputs)`` (runtime.Runner.run) over a batch whose samples may differ in
    image size (MCGaze clips cut to their padded size): one call per size, outputs
    back in batch order."""
    groups: dict[tuple, list[int]] = {}
    for i, s in enumerate(batch):
        groups.setdefault(s.tensor.shape, []).append(i)
    if len(groups) == 1:
        return run(*stack_inputs(batch))
    outs: list[np.ndarray] | None = None
    for idx in groups.values():
        part = run(*stack_inputs([batch[i] for i in idx]))
        if outs is None:
            outs = [np.empty((len(batch), *a.shape[1:]), a.dtype) for a in part]
        for k, a in enumerate(part):
            outs[k][idx] = a
    return outs


@dataclass
class Direct:
    """A frame predicted without a network (baselines): frame index and vector."""

    frame: int
    vector: np.ndarray


@dataclass
class _Slot:
    frame: int
    prepared: Prepared | None = field(default=None)


def _clip_sample(method, slots: list[_Slot | None], frames_of: list[int | None], read: int | None) -> Sample | None:
    """A clip from its slots; a slot without input (outside the video, or no face) is a
    black frame, or an absent one for policies with ``pad="absent"`` (methods.clips)."""
    ref = next((s.prepared for s in slots if s is not None and s.prepared is not None), None)
    if ref is None:
        return None
    pad = method.absent if getattr(method.clip_policy, "pad", "") == "absent" else method.black
    items = [s.prepared if (s is not None and s.prepared is not None) else pad(ref) for s in slots]
    hw = np.stack([p.hw for p in items]) if ref.hw is not None else None
    clip = np.stack([p.tensor for p in items])
    if hasattr(method, "fit_clip"):
        clip = method.fit_clip(clip, hw)
    return Sample(clip, np.stack([p.to_cam for p in items]), frames_of, read, hw)


class Assembler:
    """Push-style clip assembly of one method over one trial: :meth:`push` takes a
    frame's prepared input (frame index, Prepared or None) and returns the samples it
    completes; :meth:`finish` returns the rest at the trial's end. The same windows, in
    the same order, as :func:`assemble` (which is this class driven by an iterator), so
    one decode can feed several methods frame by frame (run.py, decode once)."""

    def __init__(self, method):
        self.method = method
        self.pol = getattr(method, "clip_policy", None)
        if self.pol is not None and not isinstance(self.pol, (CentredWindow, SlidingWindow)):
            raise TypeError(f"unknown clip policy {self.pol!r}")
        self.pos = -1
        self.last_start = None
        if self.pol is None:
            n = 1
        elif isinstance(self.pol, CentredWindow):
            n = self.pol.lookbehind + self.pol.lookahead + 1
        else:
            n = self.pol.length
        self.buf: deque[_Slot] = deque(maxlen=n)

    def _centred(self, c: int) -> Sample | None:
        pol, buf, last = self.pol, self.buf, self.pos
        first = last - len(buf) + 1  # stream position of buf[0]
        if buf[c - first].prepared is None:
            return None  # no input for the centre frame: no prediction
        qs = [c + (k - pol.out_index) * pol.stride for k in range(pol.length)]
        slots = [buf[q - first] if first <= q <= last else None for q in qs]
        return _clip_sample(self.method, slots, [s.frame if s is not None else None for s in slots], pol.out_index)

    def push(self, f: int, p: Prepared | None) -> list[Sample]:
        pol = self.pol
        if pol is None:
            return [Sample(p.tensor, p.to_cam, [f], None, p.hw)] if p is not None else []
        self.pos += 1
        self.buf.append(_Slot(f, p))
        if isinstance(pol, CentredWindow):
            c = self.pos - pol.lookahead
            s = self._centred(c) if c >= 0 else None
            return [s] if s is not None else []
        s0 = self.pos - pol.length + 1
        if s0 >= 0 and s0 % pol.step == 0:
            self.last_start = s0
            buf = self.buf
            frames = [sl.frame if sl.prepared is not None else None for sl in buf]
            smp = _clip_sample(self.method, list(buf), frames, None)
            return [smp] if smp is not None else []
        return []

    def finish(self) -> list[Sample]:
        pol, pos = self.pol, self.pos
        out: list[Sample] = []
        if pol is None:
            return out
        if isinstance(pol, CentredWindow):
            for c in range(max(0, pos - pol.lookahead + 1), pos + 1):
                s = self._centred(c)
                if s is not None:
                    out.append(s)
            return out
        n = pos + 1
        if n == 0:
            return out
        starts = pol.starts(n)
        if starts[-1] != self.last_start:  # final window (or the only one, edge-padded)
            s0 = starts[-1]
            first = n - len(self.buf)
            slots = [self.buf[q - first] if q is not None else None for q in pol.window(s0, n)]
            frames = [sl.frame if sl is not None and sl.prepared is not None else None for sl in slots]
            smp = _clip_sample(self.method, slots, frames, None)
            if smp is not None:
                out.append(smp)
        return out


def assemble(method, prepared: Iterator[tuple[int, Prepared | None]]) -> Iterator[Sample]:
    """Turn per-frame prepared inputs (frame index, Prepared or None) into samples
    according to the method's clip policy (:class:`Assembler` over an iterator)."""
    a = Assembler(method)
    for f, p in prepared:
        yield from a.push(f, p)
    yield from a.finish()


def timed_iter(it, times: StageTimes, attr: str):
    """Yield from ``it`` adding the time spent in next() to ``times.<attr>``."""
    it = iter(it)
    while True:
        t0 = time.perf_counter()
        try:
            x = next(it)
        except StopIteration:
            setattr(times, attr, getattr(times, attr) + time.perf_counter() - t0)
            return
        setattr(times, attr, getattr(times, attr) + time.perf_counter() - t0)
        yield x


def frame_context(index: int, t_ns: int, image, box, K, gt_row: dict | None) -> FrameContext:
    nan3 = np.full(3, np.nan)
    g = gt_row or {}
    return FrameContext(index=index, t_ns=t_ns, image=image, box=box, K=K,
                        face_center_cam=g.get("face_center_cam", nan3),
                        R_head_cam=g.get("R_head_cam", np.full((3, 3), np.nan)),
                        head_forward=g.get("head_forward", nan3), eye_center_cam=g.get("eye_center_cam", nan3))
