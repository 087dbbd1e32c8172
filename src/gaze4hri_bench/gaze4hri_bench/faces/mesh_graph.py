"""MediaPipe's face-mesh graph (face_landmark_front_cpu, in the 0.10.21 wheel) run with
less Python around it than ``SolutionBase.process``: one image packet in, the landmark
list read back from its serialized bytes in one numpy view. ``process`` builds a
namedtuple class and parses 468 protobuf messages per call: ~1 ms of a 5 ms frame.
Each call finds the face anew (the graph's own detector on the crop); the tracked EAR
pass runs the landmark model without the graph (faces.mesh_lite).
"""
from __future__ import annotations

import numpy as np

__all__ = ["MeshGraph", "parse_landmark_list", "mediapipe_import", "mediapipe_model", "litert_model",
           "faces_extra_import"]

GRAPH = "mediapipe/modules/face_landmark/face_landmark_front_cpu.binarypb"

# NormalizedLandmark (mediapipe/framework/formats/landmark.proto) as serialized when only
# x, y, z are set: field 1 (the list's repeated landmark, length 15), then fixed32 fields
# 1, 2, 3; 17 bytes per point. Any other layout is parsed by protobuf.
_PACKED = np.dtype([("tag", "u1"), ("len", "u1"), ("tx", "u1"), ("x", "<f4"), ("ty", "u1"), ("y", "<f4"),
                    ("tz", "u1"), ("z", "<f4")])
assert _PACKED.itemsize == 17


def faces_extra_import(module: str, what: str):
    """Import ``module`` (a package of the benchmark's faces extra) or raise one line saying
    how to install it."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as e:
        from gaze4hri_core.errors import Gaze4HRIError

        raise Gaze4HRIError(
            f"{what} is not importable ({e})",
            "faces",
            "install the benchmark's faces extra: python scripts/build_wheels.py, then "
            'pip install --find-links dist "gaze4hri-bench[faces]" (README, "Install the benchmark alone")',
        ) from None


def mediapipe_import():
    """Import mediapipe or raise one line saying how to install it."""
    return faces_extra_import("mediapipe", "mediapipe")


def mediapipe_model(relpath: str) -> str:
    """The path of a model file of the mediapipe wheel (``relpath`` from the site-packages
    root, e.g. mediapipe/modules/...), found without importing mediapipe (~0.6 CPU-s: its
    solutions import matplotlib), or one line saying how to install it."""
    import importlib.util
    import os

    spec = importlib.util.find_spec("mediapipe")
    path = os.path.join(os.path.dirname(spec.origin), *relpath.split("/")[1:]) if spec and spec.origin else None
    if path is None or not os.path.isfile(path):
        mediapipe_import()  # not installed: its one-line fix
        from gaze4hri_core.errors import Gaze4HRIError

        raise Gaze4HRIError(f"the mediapipe package has no {relpath}", path or "mediapipe",
                            "reinstall the benchmark's faces extra (mediapipe==0.10.21)")
    return path


def litert_model(relpath: str, threads: int = 1):
    """A LiteRT interpreter (tensors allocated) for a model file of the mediapipe wheel
    (:func:`mediapipe_model`), or one line saying how to install what is missing."""
    Interpreter = faces_extra_import("ai_edge_litert.interpreter", "LiteRT").Interpreter
    it = Interpreter(model_path=mediapipe_model(relpath), num_threads=threads)
    it.allocate_tensors()
    return it


def parse_landmark_list(data: bytes) -> np.ndarray:
    """(N, 3) normalized x, y, z of one serialized NormalizedLandmarkList."""
    if len(data) % 17 == 0:
        a = np.frombuffer(data, _PACKED)
        if (a["tag"] == 0x0A).all() and (a["len"] == 15).all() and (a["tx"] == 0x0D).all() \
                and (a["ty"] == 0x15).all() and (a["tz"] == 0x1D).all():
            return np.stack([a["x"], a["y"], a["z"]], axis=1).astype(float)
    from mediapipe.framework.formats import landmark_pb2

    msg = landmark_pb2.NormalizedLandmarkList.FromString(data)
    return np.array([(p.x, p.y, p.z) for p in msg.landmark], float).reshape(-1, 3)


class MeshGraph:
    """One face-mesh graph: ``run(rgb) -> (468|478, 3)`` normalized landmarks of the
    first face, or None."""

    def __init__(self, refine: bool = False):
        mediapipe_import()
        from mediapipe.python import packet_creator
        from mediapipe.python._framework_bindings import _packet_getter, image_frame
        from mediapipe.python.solution_base import SolutionBase

        self._sb = SolutionBase(
            binary_graph_path=GRAPH,
            side_inputs={"num_faces": 1, "with_attention": bool(refine), "use_prev_landmarks": False},
            outputs=["multi_face_landmarks"],
        )
        # SolutionBase's graph and its output callback (mediapipe==0.10.21, pinned in requirements/nodeps.txt)
        self._graph, self._outputs = self._sb._graph, self._sb._graph_outputs
        self._create, self._fmt = packet_creator.create_image, image_frame.ImageFormat.SRGB
        self._serialized = _packet_getter._get_serialized_proto_list
        self._ts = 0

    def run(self, rgb: np.ndarray) -> np.ndarray | None:
        self._outputs.clear()
        self._ts += 33333  # microseconds: the graph wants increasing timestamps (30 fps, as SolutionBase)
        self._graph.add_packet_to_input_stream(stream="image", packet=self._create(
            np.ascontiguousarray(rgb), image_format=self._fmt).at(self._ts))
        self._graph.wait_until_idle()
        pkt = self._outputs.get("multi_face_landmarks")
        if pkt is None or pkt.is_empty():
            return None
        faces = self._serialized(pkt)
        return parse_landmark_list(faces[0]) if faces else None

    def close(self) -> None:
        self._sb.close()
