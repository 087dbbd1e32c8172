"""Clip windows (GaT centred, MCGaze sliding) and their streaming assembly."""
from __future__ import annotations

import numpy as np
import pytest
from gaze4hri_bench.methods import get_method
from gaze4hri_bench.methods.base import Prepared
from gaze4hri_bench.methods.clips import CentredWindow, SlidingWindow
from gaze4hri_bench.pipeline.frames import assemble

pytestmark = pytest.mark.unit


def test_gat_window_is_f_minus_3_to_f_plus_4():
    pol = get_method("gat").clip_policy
    assert isinstance(pol, CentredWindow) and pol.length == 8 and pol.out_index == 3
    assert pol.window(10, 100) == list(range(7, 15))
    assert pol.window(0, 100) == [None, None, None, 0, 1, 2, 3, 4]
    assert pol.window(99, 100) == [96, 97, 98, 99, None, None, None, None]
    assert CentredWindow(8, 3, stride=2).window(10, 100) == [4, 6, 8, 10, 12, 14, 16, 18]


def test_mcgaze_windows_cover_every_frame():
    pol = get_method("mcgaze").clip_policy
    assert isinstance(pol, SlidingWindow) and (pol.length, pol.step) == (7, 4)
    assert pol.starts(20) == [0, 4, 8, 12, 13]
    assert pol.starts(15) == [0, 4, 8]
    # a video shorter than a window: one shorter clip (the rest absent), as officially
    assert pol.pad == "absent" and pol.starts(5) == [0] and pol.window(0, 5) == [0, 1, 2, 3, 4, None, None]
    assert SlidingWindow(7, 4, pad="edge").window(0, 5) == [0, 1, 2, 3, 4, 4, 4]
    for n in range(1, 40):
        covered = {i for s in pol.starts(n) for i in pol.window(s, n)} - {None}
        assert covered == set(range(n))


class _Fake:
    """A method whose prepared tensors carry their frame index (tensor value), for
    checking which frames land in which clip position."""

    def __init__(self, policy):
        self.clip_policy = policy

    def black(self, like):
        return Prepared(np.full((1,), -1.0), like.to_cam)


def _stream(n, missing=()):
    for f in range(n):
        yield 100 + f, (None if f in missing else Prepared(np.full((1,), float(100 + f)), np.eye(3)))


def test_centred_assembly_streams_every_frame_with_black_padding():
    samples = list(assemble(_Fake(CentredWindow(8, 3)), _stream(10, missing={5})))
    centres = [s.frames[s.read] for s in samples]
    assert centres == [100 + f for f in range(10) if f != 5]  # no prediction without a face
    first = samples[0]
    assert first.tensor[:, 0].tolist() == [-1, -1, -1, 100, 101, 102, 103, 104]
    assert first.frames[:3] == [None, None, None]
    s4 = samples[4]  # centre 104: frame 105 has no face -> black
    assert s4.tensor[:, 0].tolist() == [101, 102, 103, 104, -1, 106, 107, 108]
    last = samples[-1]
    assert last.tensor[:, 0].tolist() == [106, 107, 108, 109, -1, -1, -1, -1]


def test_sliding_assembly_windows_and_edge_padding():
    samples = list(assemble(_Fake(SlidingWindow(7, 4)), _stream(13)))
    assert [s.tensor[0, 0] for s in samples] == [100, 104, 106]  # starts 0, 4, then 6 = 13 - 7
    assert all(s.read is None for s in samples)
    short = list(assemble(_Fake(SlidingWindow(7, 4)), _stream(3)))
    assert len(short) == 1 and short[0].tensor[:, 0].tolist() == [100, 101, 102, 102, 102, 102, 102]


def test_mcgaze_short_video_is_one_shorter_clip_at_its_official_padded_size():
    """A 3-frame video: one clip whose last 4 positions are absent (frame_hw (0, 0)), its
    frames cut at the border (300 x 448 images) padded to 320 x 448 as the official
    collate pads them; a frame without a face inside a window is absent too."""
    from gaze4hri_bench.faces.crops import clip_pad_size

    m = get_method("mcgaze_gaze360")

    def stream(n, missing=()):
        for f in range(n):
            x = np.zeros((3, 448, 448), np.float32)
            x[:, :300] = f + 1
            yield f, None if f in missing else Prepared(x, np.eye(3), None, np.array([300.0, 448.0], np.float32))

    (s,) = list(assemble(m, stream(3)))
    assert s.frames == [0, 1, 2, None, None, None, None]
    assert s.hw.tolist() == [[300, 448]] * 3 + [[0, 0]] * 4
    assert s.tensor.shape == (7, 3, 320, 448)
    assert [float(s.tensor[k, 0, 0, 0]) for k in range(7)] == [1, 2, 3, 0, 0, 0, 0] and not s.tensor[:, :, 300:].any()
    samples = list(assemble(m, stream(9, missing={5})))
    assert samples[0].frames[5] is None and samples[0].hw[5].tolist() == [0, 0]
    assert clip_pad_size([[448, 300], [0, 0], [440, 250]], 448) == (448, 320) and clip_pad_size(
        np.zeros((7, 2)), 448
    ) == (448, 448)


def test_run_samples_groups_clips_of_different_sizes():
    from gaze4hri_bench.pipeline.frames import Sample, run_samples

    calls = []

    def run(x, hw):
        calls.append(x.shape)
        return [x.reshape(len(x), -1)[:, :1] * 0 + np.array(x.shape[-2:]).prod()]

    batch = [
        Sample(np.ones((7, 3, h, 448), np.float32), np.eye(3), [0], None, np.zeros((7, 2))) for h in (448, 320, 448)
    ]
    (out,) = run_samples(run, batch)
    assert out[:, 0].tolist() == [448 * 448, 320 * 448, 448 * 448] and len(calls) == 2


def test_single_image_assembly_skips_frames_without_input():
    m = get_method("tiny_test")
    out = list(assemble(m, _stream(4, missing={2})))
    assert [s.frames for s in out] == [[100], [101], [103]]


def _official_mcgaze(n: int, out) -> list[float]:
    """MCGaze's official test loop re-derived from its description (tools/test_gaze360_gaze.py,
    main(): clips of 7 every 4, the last clip the last 7 frames, the frames a new clip
    shares with the video so far set to (old + new) / 2); ``out(clip, frame)`` a clip's
    output for a frame."""
    import math

    num = 1 if n <= 7 else math.ceil((n - 7) / 4) + 1
    video: list[float] = []
    for c in range(num):
        if c != num - 1:
            frames, overlap = list(range(4 * c, 4 * c + 7)), 3
        else:
            frames = list(range(n - 7, n))
            overlap = 7 - (n - 7) % 4 if (n - 7) % 4 else 3
        vals = [out(c, f) for f in frames]
        if c == 0:
            video = vals
            continue
        video = video + vals[overlap:]
        for k in range(overlap):
            i = len(video) - 7 + k
            video[i] = (video[i] + vals[k]) / 2
    return video


def test_mcgaze_overlaps_are_averaged_pairwise_as_its_official_test():
    """Every video length from 7 to 40 with a different output per (clip, frame): our
    windows combined per frame (clips.combine, as the run loop and live node do) equal the
    official loop; a frame in three windows weighs them 1/4, 1/4, 1/2, not 1/3 each."""
    from gaze4hri_bench.methods.clips import combine

    pol = get_method("mcgaze").clip_policy
    assert pol.overlap == "pairwise"
    rng = np.random.default_rng(0)
    for n in range(7, 41):
        table = rng.normal(size=(20, n))
        acc: dict[int, tuple] = {}
        for c, s in enumerate(pol.starts(n)):
            for f in pol.window(s, n):
                acc[f] = combine(pol, acc.get(f), table[c, f])
        ours = [acc[f][0] / acc[f][1] for f in range(n)]
        np.testing.assert_allclose(ours, _official_mcgaze(n, lambda c, f, t=table: t[c, f]), atol=1e-12)
    # n = 20: frame 13 lies in the windows starting at 8, 12 and 13
    acc = {}
    for v in (1.0, 2.0, 4.0):
        acc[13] = combine(pol, acc.get(13), v)
    assert acc[13][0] / acc[13][1] == 0.25 * 1 + 0.25 * 2 + 0.5 * 4
    mean = SlidingWindow(7, 4)  # the plain mean, for contrast
    a = None
    for v in (1.0, 2.0, 4.0):
        a = combine(mean, a, v)
    assert a[0] / a[1] == 7 / 3
