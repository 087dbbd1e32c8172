"""Facts of the study's released per-trial dataset layout, shared by the ``study``
reader backend and the ``study`` exporter (docs/study_dataset.md).

``BASE/<YYYY-MM-DD>/<subject>/<exp_type>/<point>/<stamp_ms>/`` holding npy streams and
``rgb_video.mp4`` (GazeForHRI/Gaze4HRI@main: the data-collection and analysis scripts,
restated in /work/shared/reference/study-code.md). Here: the folder <-> trial-id table,
the file names, the axis conventions as constant rotations, and a pickle loader for
``camera_intrinsics.npy`` that executes nothing but numpy's array reconstruction.
No geometry beyond constant axis changes (the maths is gaze4hri_core's).
"""
from __future__ import annotations

import io
import pickle
import re
from pathlib import Path

import numpy as np
from gaze4hri_core.errors import SessionError

__all__ = [
    "EXP_TYPES", "trial_id_for", "folder_for", "R_OPT_FROM_BODY", "R_BAND_EYE", "pose_rows", "rows_to_poses",
    "load_intrinsics_pickle", "save_intrinsics_pickle", "FILES", "REQUIRED", "BLINK_GLOB", "VIDEO_MP4", "VIDEO_MKV",
    "ms_to_ns", "ns_to_ms", "BLINK_CODES",
]

# exp_type folder -> (trial-id template, allowed points); study-code.md "Raw per-trial layout"
EXP_TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    **{f"lighting_{lvl}": (f"illum{lvl:03d}_P{{n}}",
                           tuple(f"p{i}" for i in range(1, 10))) for lvl in (10, 25, 50, 100)},
    "circular_movement": ("arc_P{n}", tuple(f"p{i}" for i in range(1, 10))),
    "head_pose_left": ("conflict_left_H{n}", ("h1", "h2", "h4", "h5")),
    "head_pose_middle": ("conflict_center_H{n}", tuple(f"h{i}" for i in range(1, 7))),
    "head_pose_right": ("conflict_right_H{n}", ("h2", "h3", "h5", "h6")),
    "line_movement_slow": ("mutual_{axis}_slow", ("horizontal", "vertical")),
    "line_movement_fast": ("mutual_{axis}_fast", ("horizontal", "vertical")),
}

VIDEO_MP4 = "rgb_video.mp4"
VIDEO_MKV = "rgb_video.mkv"  # lossless FFV1 copy written beside the mp4 by our exporter
BLINK_GLOB = "blink_annotations_by_*.npy"
#: file -> (required by the reader, expected shape with -1 for any length)
FILES: dict[str, tuple[bool, tuple[int, ...]]] = {
    "rgb_timestamps.npy": (True, (-1,)),
    "head_poses.npy": (True, (-1, 17)),
    "camera_poses.npy": (True, (-1, 17)),
    "target_positions.npy": (True, (-1, 4)),
    "eye_position_in_head_frame.npy": (True, (3,)),
    "camera_intrinsics.npy": (True, ()),
    "eye_positions.npy": (False, (-1, 4)),
    "head_bboxes.npy": (False, (-1, 6)),
    "table_pose.npy": (False, (4, 4)),
    "ur5_base_pose.npy": (False, (4, 4)),
    "ur5_joint_states.npy": (False, (-1, 7)),
}
REQUIRED = tuple(k for k, (req, _s) in FILES.items() if req)
#: blink annotation codes (study-code.md): 2 and 3 are excluded from evaluation
BLINK_CODES = {"unlabelled": 0, "open": 1, "uncertain": 2, "blink": 3}

# camera_poses hold rgb_camera_link (ROS body axes: x forward, y left, z up); the
# optical frame is [x, y, z]_opt = [-y, -z, x]_body, i.e. v_opt = R_OPT_FROM_BODY v_body
# and R_world_opt = R_world_body R_OPT_FROM_BODY^T.
R_OPT_FROM_BODY = np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]])
# head_poses hold the head band with axes x forward, y up, z right; our eye frame is
# REP-103 (x forward, y left, z up): columns = eye axes in band coordinates.
R_BAND_EYE = np.array([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, -1.0, 0.0]])


def trial_id_for(exp_type: str, point: str) -> str | None:
    """Our trial id of a study folder pair (``lighting_25``, ``p3`` -> ``illum025_P3``),
    None when the exp_type or the point is not in the table."""
    spec = EXP_TYPES.get(exp_type)
    if spec is None or point not in spec[1]:
        return None
    tmpl = spec[0]
    if "{axis}" in tmpl:
        return tmpl.format(axis=point[0])
    return tmpl.format(n=int(re.sub(r"\D", "", point)))


def folder_for(trial_id: str) -> tuple[str, str]:
    """(exp_type, point) folders of one of our trial ids (the inverse of trial_id_for)."""
    for exp, (_tmpl, points) in EXP_TYPES.items():
        for p in points:
            if trial_id_for(exp, p) == trial_id:
                return exp, p
    raise SessionError(f"trial {trial_id} has no folder in the study layout", trial_id,
                       "only the 63 protocol trials (study-code.md table) can be exported")


def ms_to_ns(ms) -> np.ndarray:
    return np.rint(np.asarray(ms, float) * 1e6).astype(np.int64)


def ns_to_ms(ns) -> np.ndarray:
    return np.asarray(ns, np.int64) / 1e6


def pose_rows(t_ns, R, p) -> np.ndarray:
    """(N, 17) rows [t_ms, 4x4 row-major] from stamps, rotations (N,3,3), positions (N,3)."""
    n = len(t_ns)
    T = np.zeros((n, 4, 4))
    T[:, :3, :3] = R
    T[:, :3, 3] = p
    T[:, 3, 3] = 1.0
    return np.column_stack([ns_to_ms(t_ns), T.reshape(n, 16)])


def rows_to_poses(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_ns, R (N,3,3), p (N,3)) from (N, 17) rows."""
    T = np.asarray(rows[:, 1:17], float).reshape(-1, 4, 4)
    return ms_to_ns(rows[:, 0]), T[:, :3, :3], T[:, :3, 3]


# -- camera_intrinsics.npy: a 0-d object array holding a dict, pickled by np.save ----------
_NUMPY_OK = {
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "scalar"), ("numpy.core.multiarray", "scalar"),
    ("numpy", "ndarray"), ("numpy", "dtype"),
}
_BUILTINS_OK = {"dict", "float", "int", "list", "tuple", "str"}


class _RestrictedUnpickler(pickle.Unpickler):
    """Resolves only numpy's array/scalar reconstruction and plain builtins; any other
    global (os.system, eval, a class of some package) is refused before it can run."""

    def find_class(self, module, name):
        if (module, name) in _NUMPY_OK:
            mod = module.replace("numpy.core.", "numpy._core.")
            import importlib

            return getattr(importlib.import_module(mod), name)
        if module == "builtins" and name in _BUILTINS_OK:
            import builtins

            return getattr(builtins, name)
        raise pickle.UnpicklingError(f"refused global {module}.{name}")


def load_intrinsics_pickle(path: Path | str) -> dict[str, object]:
    """fx, fy, cx, cy (floats) and distortion_coeffs (float array) from the study's
    ``camera_intrinsics.npy`` without executing arbitrary pickles: only a plain dict of
    numbers is accepted; anything else is a one-line SessionError."""
    path = Path(path)
    fix = ("write camera_intrinsics.npy as np.save(path, {'fx': .., 'fy': .., 'cx': .., 'cy': .., "
           "'distortion_coeffs': [..]})")
    try:
        with path.open("rb") as f:
            version = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            _shape, _fortran, dtype = read(f)
            if dtype.hasobject:
                obj = _RestrictedUnpickler(io.BytesIO(f.read())).load()
            else:
                f.seek(0)
                obj = np.load(f, allow_pickle=False)
    except FileNotFoundError:
        raise SessionError("camera_intrinsics.npy missing", str(path), fix) from None
    except (pickle.UnpicklingError, ValueError, EOFError, OSError, AttributeError, TypeError, ImportError) as e:
        raise SessionError(f"camera_intrinsics.npy refused ({str(e).splitlines()[0][:120]})", str(path), fix) from None
    if isinstance(obj, np.ndarray) and obj.dtype.hasobject and obj.shape == ():
        obj = obj.item()
    if not isinstance(obj, dict):
        raise SessionError(f"camera_intrinsics.npy holds a {type(obj).__name__}, not a dict", str(path), fix)
    out: dict[str, object] = {}
    for k in ("fx", "fy", "cx", "cy"):
        v = obj.get(k)
        if not isinstance(v, (int, float, np.integer, np.floating)) or not np.isfinite(float(v)):
            raise SessionError(f"camera_intrinsics.npy: {k} missing or not a number", str(path), fix)
        out[k] = float(v)
    d = obj.get("distortion_coeffs", [])
    try:
        d = np.asarray(d, float).reshape(-1)
    except (TypeError, ValueError):
        raise SessionError("camera_intrinsics.npy: distortion_coeffs is not a list of numbers", str(path),
                           fix) from None
    out["distortion_coeffs"] = d
    return out


def save_intrinsics_pickle(path: Path | str, fx: float, fy: float, cx: float, cy: float, distortion) -> None:
    """Write ``camera_intrinsics.npy`` as the study does (a 0-d pickled dict)."""
    d = {"fx": float(fx), "fy": float(fy), "cx": float(cx), "cy": float(cy),
         "distortion_coeffs": [float(x) for x in np.asarray(distortion, float).reshape(-1)]}
    np.save(Path(path), np.array(d, dtype=object), allow_pickle=True)
