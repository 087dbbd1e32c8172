"""The generic 3D face model shared by the ground truth and the benchmark's face
normalization: six points matched to the ETH-XGaze choice and the ETH face centre's
offset from the eye-corner centre. Pure data and geometry, no I/O (moved here from
gaze4hri_bench.faces.normalization, which re-exports it, so that the ground truth in
gaze4hri_bench.data needs no import from the face package above it)."""
from __future__ import annotations

import numpy as np

__all__ = ["FACE_MODEL_MESH_IDS", "FACE_MODEL_MM", "face_center_from_model_points", "EYE_TO_FACE_CENTRE_MM"]

# Six points matched to the ETH-XGaze choice (dlib-68 36, 39, 42, 45, 31, 35: four eye
# corners and the two nose wings; methods.md "Data normalization", step 1), taken from
# MediaPipe's canonical face model (mediapipe/modules/face_geometry/data/
# canonical_face_model.obj, Apache-2.0; vertex i = face-mesh landmark i, units cm,
# axes x to the subject's left, y up, z out of the face). Converted here to the
# OpenCV head frame (x, -y, -z) and millimetres.
FACE_MODEL_MESH_IDS = (33, 133, 362, 263, 98, 327)  # R outer, R inner, L inner, L outer eye corners; R, L nose wing
_CANONICAL_CM = np.array([
    [-4.445859, 2.663991, 3.173422],   # 33  right eye outer corner (dlib 36)
    [-1.856432, 2.585245, 3.757904],   # 133 right eye inner corner (dlib 39)
    [1.856432, 2.585245, 3.757904],    # 362 left eye inner corner (dlib 42)
    [4.445859, 2.663991, 3.173422],    # 263 left eye outer corner (dlib 45)
    [-1.405627, -1.714196, 5.241087],  # 98  right nose wing (dlib 31)
    [1.405627, -1.714196, 5.241087],   # 327 left nose wing (dlib 35)
])
FACE_MODEL_MM = _CANONICAL_CM * np.array([1.0, -1.0, -1.0]) * 10.0


def face_center_from_model_points(points) -> np.ndarray:
    """ETH-XGaze face centre: mean of (centre of the four eye corners, centre of the two
    nose wings) of the six points in FACE_MODEL_MESH_IDS order (any frame, any unit)."""
    p = np.asarray(points, float).reshape(6, 3)
    return 0.5 * (p[:4].mean(axis=0) + p[4:].mean(axis=0))


# Offset of the ETH face centre from the eye-corner centre in the OpenCV head frame (mm):
# about 22 mm below the eyes and 9 mm in front of them on the canonical model. Motion
# capture gives the interpupillary midpoint, which we take as the eye-corner centre.
EYE_TO_FACE_CENTRE_MM = face_center_from_model_points(FACE_MODEL_MM) - FACE_MODEL_MM[:4].mean(axis=0)
