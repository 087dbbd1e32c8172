"""Data normalization (Zhang, Sugano, Bulling, "Revisiting Data Normalization for
Appearance-Based Gaze Estimation", ETRA 2018, Sec. 3; ETH-XGaze, ECCV 2020) and its
inverse for predictions.

A virtual camera (focal ``focal_px``, principal point at the patch centre) is rotated
to look at the face centre ``c`` with its x axis in the plane of the head's x axis, and
moved to ``distance_mm`` from ``c`` by scaling z; the image is re-projected with one
homography. Pure numpy/OpenCV, no I/O. Units: ``c`` in metres (as the ground truth),
``distance_mm`` in millimetres (as the papers), converted once here.

Head frame convention (ETH-XGaze / OpenCV head axes): the columns of ``R_head_cam``
are the head's x (towards the subject's left, i.e. image right for a frontal face),
y (down) and z (from the face to the back of the head) in the camera frame, so a
frontal, upright face looking into the camera has ``R_head_cam`` ~ identity and gives
an upright patch. gaze4hri_bench.data.frame_truth produces this convention from
motion capture; :func:`head_pose_from_landmarks` from 2D landmarks.
"""
from __future__ import annotations

import cv2
import numpy as np
from gaze4hri_core.face_model import (  # re-exported (__all__): the model lives in the core
    EYE_TO_FACE_CENTRE_MM,
    FACE_MODEL_MESH_IDS,
    FACE_MODEL_MM,
    face_center_from_model_points,
)

__all__ = [
    "normalization_rotation",
    "normalization_homography",
    "normalize",
    "denormalize",
    "normalize_gaze",
    "normalize_head",
    "FACE_MODEL_MM",
    "FACE_MODEL_MESH_IDS",
    "face_center_from_model_points",
    "head_pose_from_landmarks",
    "EYE_TO_FACE_CENTRE_MM",
    "study_head_rotation",
    "denormalization_map",
]


def _K(intrinsics) -> np.ndarray:
    K = getattr(intrinsics, "K", intrinsics)
    K = np.asarray(K, float)
    if K.shape != (3, 3):
        raise ValueError(f"intrinsics must be a CameraIntrinsics or a 3x3 matrix, got shape {K.shape}")
    return K


def _size(size) -> tuple[int, int]:
    if np.ndim(size) == 0:
        return int(size), int(size)
    w, h = size
    return int(w), int(h)


def normalization_rotation(face_center_cam, R_head_cam) -> np.ndarray:
    """Rotation R (rows x, y, z) of the normalized camera (Zhang et al. 2018, Sec. 3.1):
    z = c/|c|, y = z x x_head normalized, x = y x z."""
    c = np.asarray(face_center_cam, float).reshape(3)
    Rh = np.asarray(R_head_cam, float).reshape(3, 3)
    z = c / np.linalg.norm(c)
    y = np.cross(z, Rh[:, 0])
    ny = np.linalg.norm(y)
    if not np.isfinite(ny) or ny < 1e-9:
        raise ValueError("normalization: head x axis is parallel to the camera->face ray")
    y /= ny
    x = np.cross(y, z)
    return np.stack([x, y, z])


def normalization_homography(intrinsics, face_center_cam, R_head_cam, focal_px: float = 960.0,
                             distance_mm: float = 600.0, size=224) -> tuple[np.ndarray, np.ndarray]:
    """(W, R): the 3x3 image warp W = C_n S R C_r^-1 with S = diag(1, 1, d_n/|c|) and the
    normalization rotation R (Zhang et al. 2018, Sec. 3.1, Eq. 1-2)."""
    c = np.asarray(face_center_cam, float).reshape(3)
    R = normalization_rotation(c, R_head_cam)
    w, h = _size(size)
    d = float(distance_mm) / 1000.0  # same unit as c (m)
    S = np.diag([1.0, 1.0, d / np.linalg.norm(c)])
    Cn = np.array([[focal_px, 0.0, w / 2.0], [0.0, focal_px, h / 2.0], [0.0, 0.0, 1.0]])
    W = Cn @ S @ R @ np.linalg.inv(_K(intrinsics))
    return W, R


def normalize(image: np.ndarray, intrinsics, face_center_cam, R_head_cam, focal_px: float = 960.0,
              distance_mm: float = 600.0, size=224) -> tuple[np.ndarray, np.ndarray]:
    """Warp ``image`` (H, W, 3 uint8, any channel order: kept) into the normalized
    patch; returns (patch (size, size, 3), R_norm). Defaults: ETH-XGaze demo / GazeHub
    (f = 960, d = 600 mm, 224 px: 1.6 px/mm); ``size`` may be an int or (w, h).
    The image is assumed undistorted (pinhole)."""
    W, R = normalization_homography(intrinsics, face_center_cam, R_head_cam, focal_px, distance_mm, size)
    patch = cv2.warpPerspective(image, W, _size(size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    return patch, R


def normalize_gaze(g_cam, R_norm) -> np.ndarray:
    """Camera-frame gaze -> normalized space, g_n = R g (the 2018 scheme: rotation only,
    no S on gaze; Zhang et al. 2018, Sec. 3.2). Vectorised over leading axes."""
    return np.asarray(g_cam, float) @ np.asarray(R_norm, float).T


def denormalize(g_n, R_norm) -> np.ndarray:
    """Normalized-space prediction -> camera frame, g_cam = R^T g_n (Zhang et al. 2018,
    Sec. 3.2). Vectorised over leading axes of ``g_n`` (one R_norm) or pairwise (R_norm (N,3,3))."""
    g = np.asarray(g_n, float)
    R = np.asarray(R_norm, float)
    if R.ndim == 3:
        return np.einsum("nji,nj->ni", R, g.reshape(-1, 3)).reshape(g.shape)
    return g @ R


# The study's head-axis chain (GazeForHRI/GazeModels@puregaze:gaze_estimation.py:156-214):
# the band rotation (axes x forward, y up, z right; study-code.md) in rgb_camera_link is
# turned into a rotation vector, re-based to the optical axes ([-y, -z, x] of the body
# vector), flipped 180 deg about y (left product) and turned -90 deg about z (left
# product). In this module's OpenCV head axes (R_band = R_head_cam P) that is
# R_s = Rz(-90) F R_head_cam P B^T with P B^T below; only its first column is used.
_STUDY_RIGHT = np.array([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -1.0]])  # P B^T
_STUDY_LEFT = np.array([[0.0, 1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]) @ np.diag([-1.0, 1.0, -1.0])  # Rz(-90) F


def study_head_rotation(R_head_cam) -> np.ndarray:
    """The head rotation the study's rectification used, from ours (profile ``study``,
    setting ``rect_head_axis_chain``). Its x axis is the head's down axis turned into
    the image plane: equal to ours for an upright head, but it rolls the other way
    (a head roll r gives a patch rolled by -r relative to Zhang et al. 2018's rule)."""
    return _STUDY_LEFT @ np.asarray(R_head_cam, float).reshape(3, 3) @ _STUDY_RIGHT


def denormalization_map(R_norm, face_center_cam, distance_mm: float = 600.0, rule: str = "rotation") -> np.ndarray:
    """3x3 map of a normalized-space prediction to the camera frame (then re-normalized).
    ``rotation``: R^T (Zhang et al. 2018, Sec. 3.2); ``inverse_warp``: M^-1 = R^T S^-1
    with S = diag(1, 1, d_n/|c|), the study's rule (GazeForHRI/GazeModels@gazetr:
    gaze_estimation.py:264-271); the two agree only when |c| = d_n."""
    R = np.asarray(R_norm, float).reshape(3, 3)
    if rule == "rotation":
        return R.T
    if rule == "inverse_warp":
        c = np.linalg.norm(np.asarray(face_center_cam, float))
        return R.T @ np.diag([1.0, 1.0, c / (float(distance_mm) / 1000.0)])
    raise ValueError(f"unknown de-normalization rule {rule!r}; known: rotation, inverse_warp")


def normalize_head(R_head_cam, R_norm) -> np.ndarray:
    """Head rotation in the normalized camera, R_n = R R_head (Zhang et al. 2018, Sec. 3.1)."""
    return np.asarray(R_norm, float) @ np.asarray(R_head_cam, float)


# -- generic 3D face model: gaze4hri_core.face_model (re-exported) --------------------------


def head_pose_from_landmarks(
    landmarks_2d, intrinsics, model_mm=FACE_MODEL_MM
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Head pose from six 2D landmarks (FACE_MODEL_MESH_IDS order, pixels) by solvePnP
    against the generic face model (what a deployed robot without motion capture has;
    methods.md step 1). Returns (R_head_cam, t_head_cam (m), face_center_cam (m))."""
    pts = np.asarray(landmarks_2d, float).reshape(-1, 2)
    mdl = np.asarray(model_mm, float).reshape(-1, 3)
    if len(pts) != len(mdl):
        raise ValueError(f"expected {len(mdl)} landmarks, got {len(pts)}")
    K = _K(intrinsics)
    D = np.asarray(getattr(intrinsics, "D", np.zeros(5)), float)
    ok, rvec, tvec = cv2.solvePnP(mdl, pts, K, D, flags=cv2.SOLVEPNP_EPNP)
    if ok:
        ok, rvec, tvec = cv2.solvePnP(mdl, pts, K, D, rvec, tvec, useExtrinsicGuess=True, flags=cv2.SOLVEPNP_ITERATIVE)
    if not ok:
        raise ValueError("solvePnP failed for these landmarks")
    R = cv2.Rodrigues(rvec)[0]
    t = tvec.reshape(3) / 1000.0
    pts_cam = mdl @ R.T / 1000.0 + t
    return R, t, face_center_from_model_points(pts_cam)
