"""One frame at a time through a registered method, with the benchmark's own code:
frame + head pose + camera intrinsics -> gaze in the camera frame.

What the live gaze node (gaze4hri_acq.nodes.gaze_node) runs. Nothing here is a second
implementation: the face comes from the same detector registry and SubjectTracker as
the benchmark's face pass (pipeline.face_pass), the frame context from
``pipeline.frames.frame_context``, the network input from the method's ``prepare``
(the spec's crop rule or Zhang et al. 2018 data normalization), clips from
``pipeline.frames.assemble`` (GaT centred windows, MCGaze sliding windows), inference
from the same ``runtime.Runner`` (ONNX Runtime session, spec-checked), decoding and
``to_camera`` from the method. So on the same frames it returns what
``gaze4hri-bench run`` writes (tests/acq/test_gaze_node.py checks 1e-5).

Head pose: from motion capture when the head-band and robot poses are given
(:func:`mocap_geometry`: ``data.frame_truth.compute_ground_truth`` on one frame, the
benchmark's interpolation), else from face-mesh landmarks by solvePnP against the
generic face model (``faces.normalization.head_pose_from_landmarks``).
"""
from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.gaze import normalize

from ..methods.clips import SlidingWindow, combine
from .frames import Direct, Sample, assemble, frame_context, stack_inputs

__all__ = ["Estimate", "FrameEstimator", "mocap_geometry", "landmark_geometry", "LIVE_TRIAL"]


def _live_trial():
    from gaze4hri_core.protocol import CameraMotion, Trial

    # compute_ground_truth needs a trial; "camera" as target needs no surveyed target
    return Trial("live", "live", "", "camera", CameraMotion("fixed"))


LIVE_TRIAL = None  # built lazily (_live_trial)


@dataclass
class Estimate:
    """One frame's output: ``gaze`` unit vector in the camera optical frame (NaN when
    none), ``box`` face box [x1, y1, x2, y2] px or None, ``eye`` eye midpoint in the
    camera frame (m; NaN when unknown), ``head_source`` mocap | landmarks | none,
    ``reason`` why there is no gaze ('' when there is)."""

    index: int
    t_ns: int
    gaze: np.ndarray
    box: np.ndarray | None
    eye: np.ndarray
    head_source: str
    reason: str = ""


def mocap_geometry(t_ns: int, head, robot, cal, options=None) -> tuple[dict | None, str]:
    """Head geometry at ``t_ns`` from motion capture: (dict with face_center_cam,
    R_head_cam, head_forward, eye_cam, or None; reason). ``head``/``robot`` are
    data.frame_truth.PoseStream (head band in the world, tool0 in Base) around t_ns;
    one-row ``compute_ground_truth`` (the benchmark's interpolation and gap rules)."""
    from ..data.frame_truth import FrameTable, GTOptions, compute_ground_truth

    global LIVE_TRIAL
    if LIVE_TRIAL is None:
        LIVE_TRIAL = _live_trial()
    ft = FrameTable(np.array([0]), np.array([int(t_ns)], np.int64), np.array([-1]), np.array(["ok"]))
    gt = compute_ground_truth(ft, _window(head, t_ns), _window(robot, t_ns), cal, LIVE_TRIAL, options or GTOptions())
    r = gt.iloc[0]
    if not bool(r["valid"]):
        return None, str(r["invalid_reason"])
    R = np.array([[r[f"R_head_{i}{j}"] for j in range(3)] for i in range(3)], float)
    return {"face_center_cam": np.array([r["face_cx"], r["face_cy"], r["face_cz"]], float), "R_head_cam": R,
            "head_forward": np.array([r["head_fwd_x"], r["head_fwd_y"], r["head_fwd_z"]], float),
            "eye_cam": np.array([r["eye_cx"], r["eye_cy"], r["eye_cz"]], float)}, ""


def _window(stream, t_ns: int, k: int = 2):
    """The samples bracketing ``t_ns`` (``k`` on each side): all that interpolation and
    the gap rules read, so the one-row ground truth costs the same at any history length."""
    from ..data.frame_truth import PoseStream

    s = stream.sorted_unique()
    i = int(np.searchsorted(s.t_ns, int(t_ns)))
    lo, hi = max(0, i - k), min(len(s.t_ns), i + k)
    return PoseStream(s.t_ns[lo:hi], s.p[lo:hi], s.q[lo:hi])


def landmark_geometry(landmarks: np.ndarray, K: np.ndarray) -> dict | None:
    """Head geometry from face-mesh landmarks (pixels) by solvePnP against the generic
    face model; eye midpoint = centre of the four eye corners; head forward = -z of the
    OpenCV head frame. None when solvePnP fails."""
    from ..faces.normalization import FACE_MODEL_MESH_IDS, FACE_MODEL_MM, head_pose_from_landmarks

    lm = np.asarray(landmarks, float)
    try:
        R, t, c = head_pose_from_landmarks(lm[list(FACE_MODEL_MESH_IDS), :2], K)
    except (ValueError, IndexError):
        return None
    eye = (FACE_MODEL_MM[:4].mean(axis=0) / 1000.0) @ R.T + t
    return {"face_center_cam": c, "R_head_cam": R, "head_forward": normalize(-R[:, 2]), "eye_cam": eye}


class _Feed:
    """Push frames into the benchmark's pull-style ``assemble`` generator: a helper
    thread runs it; :meth:`push` hands one prepared frame over and returns the samples
    it completed, once the generator asks for the next frame (deterministic)."""

    _END = object()

    def __init__(self, method):
        self._in: queue.Queue = queue.Queue(maxsize=1)
        self._ready = threading.Event()
        self._out: list[Sample] = []
        self._err: BaseException | None = None
        self._thread = threading.Thread(target=self._work, args=(method,), name="gaze4hri-clip-feed", daemon=True)
        self._thread.start()
        self._ready.wait()

    def _frames(self) -> Iterator:
        while True:
            self._ready.set()
            item = self._in.get()
            if item is self._END:
                return
            yield item

    def _work(self, method) -> None:
        try:
            for s in assemble(method, self._frames()):
                self._out.append(s)
        except BaseException as e:  # noqa: BLE001 - handed to push()
            self._err = e
        finally:
            self._ready.set()

    def _exchange(self, item) -> list[Sample]:
        self._ready.clear()
        self._in.put(item)
        self._ready.wait()
        if self._err is not None:
            raise self._err
        out, self._out = self._out, []
        return out

    def push(self, index: int, prepared) -> list[Sample]:
        return self._exchange((index, prepared))

    def finish(self) -> list[Sample]:
        out = self._exchange(self._END)
        self._thread.join(timeout=1.0)
        return out


class FrameEstimator:
    """A registered method run frame by frame (see the module docstring).

    ``step(index, t_ns, image, K, geometry)`` returns the estimates that became final
    with this frame: one for single-image methods and baselines; for clip methods the
    frames whose windows are complete (GaT: the frame ``lookahead`` frames back; MCGaze:
    the first ``step`` frames of each window, averaged over the windows that cover
    them, as the benchmark does). ``finish()`` flushes the rest (end of a trial).
    """

    def __init__(self, method: str, input: str = "best", models_dir: str | Path | None = None, device: str = "cpu",
                 detector: str = "auto", threads: int | None = None, landmarks: bool = True,
                 profile: str | None = None):
        from .jobs import plan_job
        from .runtime import Runner

        # the method, its spec, profile record and model, resolved once as for a run (unknown names: one line)
        self.job = plan_job(method, input, profile, models_dir)
        self.profile = self.job.profile
        self.method = self.job.method
        rec = self.job.record
        self.smoothing = rec.smoothing if rec is not None else None
        self._sm_pending: list[Estimate] = []
        self._sm_prev: np.ndarray | None = None
        self._sm_count = 0
        self.input_type = self.job.input_type
        self.model = self.job.model
        self.runner = (Runner(self.model.path, self.job.spec, device, batch=1, threads=threads)
                       if self.model is not None else None)
        self.detector_name = detector
        self._det = None
        self._mesh = None
        self._tracker = None
        self._want_landmarks = landmarks
        self.landmark_pose = landmarks  # head pose from landmarks when no geometry is given
        self._feed: _Feed | None = None
        self._meta: dict[int, dict] = {}
        self._acc: dict[int, tuple[np.ndarray, int]] = {}

    def offline_only(self) -> list[str]:
        """The profile settings of this method that need the whole trial and are not
        applied frame by frame (the run loop applies them): face rules of a pre-pass,
        whole-trial exclusion, the study's clip shift."""
        rec = self.job.record
        if rec is None:
            return []
        out = []
        if self.needs_face:
            from .face_pass import needs_profile_pass

            if needs_profile_pass(rec):
                out.append(f"face rule (track_rule={rec.track_rule}, box_margin={rec.box_margin}, "
                           f"face_boxes={rec.face_boxes})")
            if rec.missing_face == "trial":
                out.append("missing_face=trial")
        if rec.clip_shift:
            out.append(f"clip_shift={rec.clip_shift}")
        return out

    # -- temporal smoothing (the official MCGaze evaluation filter, methods.clips.smooth_sequence) --
    def _smooth(self, ests: list[Estimate], end: bool = False) -> list[Estimate]:
        """Online form of ``smooth_sequence`` over the frames with a gaze, in frame order:
        a frame is released once the next frame with a gaze is known (one frame later),
        the last at ``end``; frames without a gaze keep their place in the order."""
        if self.smoothing is None:
            return ests
        a = float(self.smoothing)
        self._sm_pending.extend(ests)
        valid = [i for i, e in enumerate(self._sm_pending) if np.isfinite(e.gaze).all()]
        cut = len(self._sm_pending) if end else (valid[-1] if valid else len(self._sm_pending))
        out = []
        for i, e in enumerate(self._sm_pending[:cut]):
            if np.isfinite(e.gaze).all():
                nxt = next((self._sm_pending[j].gaze for j in valid if j > i), None)
                v = e.gaze
                if self._sm_prev is None and nxt is None:
                    g = v.copy()  # a one-frame sequence is kept
                elif self._sm_prev is None:
                    g = a * v + (1 - a) * nxt
                elif nxt is None:
                    g = a * v + (1 - a) * self._sm_prev
                else:
                    g = a * v + (1 - a) * (self._sm_prev + nxt) / 2
                self._sm_prev = v
                e = Estimate(e.index, e.t_ns, normalize(g), e.box, e.eye, e.head_source, e.reason)
            out.append(e)
        self._sm_pending = self._sm_pending[cut:]
        if end:
            self._sm_prev = None
        return out

    # -- faces ----------------------------------------------------------------------
    def _face(self, image: np.ndarray):
        """(box or None, face-mesh landmarks or None) of the tracked subject."""
        from ..faces.detectors import get_detector
        from ..faces.tracking import SubjectTracker

        if self._det is None:
            self._det = get_detector(self.detector_name)
            self._tracker = SubjectTracker()
        s = self._tracker.update(self._det.detect(image), image.shape)
        if s is None:
            return None, None
        b = np.asarray(s.box, float).reshape(-1)[:4]
        box = b if np.isfinite(b).all() else None
        lm = s.landmarks
        if lm is None and self._want_landmarks and box is not None:
            if self._mesh is None:
                from ..faces.landmarks import FaceMesh

                try:
                    self._mesh = FaceMesh()
                except Gaze4HRIError:
                    self._want_landmarks = False
            if self._mesh is not None:
                lm = self._mesh.landmarks(image, box)
        return box, lm

    def warm_up(self, width: int = 640, height: int = 360) -> None:
        """Build the face models and run each model once, so the first live frame does
        not pay for it (MediaPipe graphs take seconds to build). The detector and face
        mesh keep no state between images, so later results do not change."""
        from ..faces.detectors import get_detector
        from ..faces.tracking import SubjectTracker

        img = np.full((height, width, 3), 128, np.uint8)
        if self.needs_face or self.landmark_pose:
            if self._det is None:
                self._det = get_detector(self.detector_name)
                self._tracker = SubjectTracker()
            self._det.detect(img)
        if self.runner is not None:
            size = self.method.spec.size  # named image axes (MCGaze's H, W) at their largest
            self.runner.run(*(np.zeros([1 if d == "B" else size if isinstance(d, str) else int(d) for d in dims],
                                       np.float32)
                              for dims in self.method.spec.onnx_inputs.values()))

    @property
    def needs_face(self) -> bool:
        return self.method.needs_face(self.input_type)

    # -- one frame ------------------------------------------------------------------
    def step(self, index: int, t_ns: int, image: np.ndarray, K: np.ndarray,
             geometry: dict | None = None) -> list[Estimate]:
        """Process one frame; ``geometry`` from :func:`mocap_geometry` (None: use landmarks)."""
        K = np.asarray(K, float)
        box = lm = None
        if self.needs_face or (geometry is None and self.landmark_pose):
            box, lm = self._face(image)
        source = "mocap" if geometry is not None else "none"
        if geometry is None and lm is not None and self.landmark_pose:
            geometry = landmark_geometry(lm, K)
            source = "landmarks" if geometry is not None else "none"
        eye = np.asarray((geometry or {}).get("eye_cam", np.full(3, np.nan)), float)
        self._meta[index] = {"t_ns": int(t_ns), "box": box, "eye": eye, "source": source}
        ctx = frame_context(index, int(t_ns), image, box if self.needs_face else None, K, geometry)
        if self.method.kind != "onnx":
            return self._final([Direct(index, self.method.predict(ctx))], [index])
        p = self.method.prepare(ctx, self.input_type)
        if self.method.clip_policy is None:
            samples = [Sample(p.tensor, p.to_cam, [index], None, p.hw)] if p is not None else []
            return self._smooth(self._run(samples, [index]))
        if self._feed is None:
            self._feed = _Feed(self.method)
        return self._smooth(self._run(self._feed.push(index, p), None))

    def finish(self) -> list[Estimate]:
        """Flush clip windows at the end of a stream (a trial); then start afresh."""
        out: list[Estimate] = []
        if self._feed is not None:
            out = self._run(self._feed.finish(), sorted(self._meta))
            self._feed = None
        out += self._final([], sorted(self._meta))
        out = self._smooth(out, end=True)
        self._meta.clear()
        self._acc.clear()
        if self._tracker is not None:
            from ..faces.tracking import SubjectTracker

            self._tracker = SubjectTracker()
        return out

    def _run(self, samples: list[Sample], final: list[int] | None) -> list[Estimate]:
        """Infer each sample (batch of one), accumulate per frame like the benchmark's
        ``_infer``, and return the frames that are final."""
        done: set[int] = set(final or [])
        m = self.method
        for s in samples:
            g = m.decode(self.runner.run(*stack_inputs([s])))
            if g.ndim == 2:
                self._add(s.frames[0], m.to_camera(g[0][None], s.to_cam[None])[0])
                done.add(s.frames[0])
                continue
            positions = [s.read] if s.read is not None else range(g.shape[1])
            for k in positions:
                f = s.frames[k]
                if f is not None:
                    self._add(f, m.to_camera(g[0, k][None], s.to_cam[k][None])[0])
            if s.read is not None:
                if s.frames[s.read] is not None:
                    done.add(s.frames[s.read])
            elif isinstance(m.clip_policy, SlidingWindow):
                done.update(f for f in s.frames[: m.clip_policy.step] if f is not None)
        if final is None:  # clip methods: frames older than the newest final one get no more windows
            newest = max(done) if done else None
            done.update(f for f in self._meta if newest is not None and f < newest)
        return self._final([], sorted(done))

    def _add(self, f: int, v: np.ndarray) -> None:
        self._acc[f] = combine(self.method.clip_policy, self._acc.get(f), v)

    def _final(self, direct: list[Direct], frames: list[int]) -> list[Estimate]:
        for d in direct:
            self._acc[d.frame] = (np.asarray(d.vector, float), 1)
        out = []
        for f in frames:
            meta = self._meta.pop(f, None)
            if meta is None:
                continue
            acc = self._acc.pop(f, None)
            if acc is not None:
                g = normalize(acc[0] / acc[1])
            else:
                g = np.full(3, np.nan)
            reason = ""
            if not np.isfinite(g).all():
                g = np.full(3, np.nan)
                reason = "no_face" if (self.needs_face and meta["box"] is None) else "no_head_pose"
            out.append(Estimate(f, meta["t_ns"], g, meta["box"], meta["eye"], meta["source"], reason))
        return out

    def close(self) -> None:
        for x in (self._det, self._mesh):
            if x is not None:
                x.close()
        self._det = self._mesh = None
        if self._feed is not None:
            try:
                self._feed.finish()
            except Exception:  # noqa: BLE001 - closing
                pass
            self._feed = None
