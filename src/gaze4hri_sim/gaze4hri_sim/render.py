"""Face renderer for the simulated camera: a real face photograph (scikit-image's
``astronaut``, public domain, NASA) on a plane through the subject's eyes that turns
with the head, projected by the camera's pinhole model with one homography
(``cv2.warpPerspective``; a plane maps to the image by a homography, Hartley &
Zisserman, Multiple View Geometry, 2nd ed., Sec. 2.3). Eye lids are painted closed
during blinks. Brightness follows the light level through the camera's fixed
exposure (``exposure_factor``): the signal is proportional to light x exposure x gain,
and the 8-bit output is gamma-encoded, so pixel values scale by that factor^(1/2.2).

Cost: one warp of the face's bounding box into a pre-rendered background, about a
millisecond at 640x360 on one core.
"""
from __future__ import annotations

import cv2
import numpy as np
from gaze4hri_core.calibration import CameraIntrinsics
from gaze4hri_core.device_config import CameraSettings
from gaze4hri_core.transforms import SE3

__all__ = ["FaceRenderer", "FACE_CROP", "EYE_MID_PX", "M_PER_PX", "exposure_factor", "pixel_scale", "GAMMA"]

GAMMA = 2.2  # display gamma of the camera's 8-bit output (sRGB-like encoding)


def exposure_factor(illumination: float, settings: CameraSettings | None = None) -> float:
    """Linear sensor signal relative to the study's set-up at full light: light level x
    exposure / 250 x gain / 90. The texture is the scene at 100 % light with the study's
    settings (exposure 250, gain 90). With auto exposure on, the camera's control loop
    brings the signal back to its target whatever the light (factor 1): the reason the
    study fixed the exposure (GazeForHRI/Gaze4HRI@main:data_collector.py:110-123)."""
    s = settings or CameraSettings()
    if s.auto_exposure:
        return 1.0
    return max(float(illumination), 0.1) / 100.0 * s.exposure / 250.0 * s.gain / 90.0


def pixel_scale(illumination: float, settings: CameraSettings | None = None) -> float:
    """Factor on 8-bit pixel values: a gamma-encoded value scales by k^(1/gamma) when
    the linear signal scales by k (before clipping)."""
    return float(exposure_factor(illumination, settings) ** (1.0 / GAMMA))

# In skimage.data.astronaut() (512x512): OpenCV's Haar detectors find the face at
# x 177-272, y 66-161 and the eyes centred at (201.5, 100.5) and (247, 104).
FACE_CROP = (150, 30, 300, 215)  # x0, y0, x1, y1 of the texture (px)
EYE_MID_PX = (224.25, 102.25)
_LEFT_EYE_PX, _RIGHT_EYE_PX = (201.5, 100.5), (247.0, 104.0)
# 45.5 px between the pupils for a 63 mm interpupillary distance (adult mean,
# Dodgson 2004, "Variation and extrema of human interpupillary distance").
M_PER_PX = 0.063 / 45.5
FACE_PLANE_AHEAD_M = 0.012  # the face surface lies ahead of the eye midpoint


def _load_texture() -> np.ndarray:
    from skimage import data

    return np.ascontiguousarray(data.astronaut())  # RGB uint8


class FaceRenderer:
    """Render the face seen from a camera pose. Thread-compatible (no shared state written)."""

    def __init__(self, intrinsics: CameraIntrinsics, seed: int = 0):
        self.intr = intrinsics
        self.W, self.H = intrinsics.width, intrinsics.height
        img = _load_texture()
        x0, y0, x1, y1 = FACE_CROP
        tex = img[y0:y1, x0:x1].copy()
        self.tex_open = tex
        self.tex_closed = self._close_lids(tex, x0, y0)
        h, w = tex.shape[:2]
        # texture corners (px) and the same corners on the face plane in the eye frame
        # (x forward, y left, z up); image right shows the subject's left
        self._src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
        ex, ey = EYE_MID_PX[0] - x0, EYE_MID_PX[1] - y0
        self._plane = np.array([[FACE_PLANE_AHEAD_M, (u - ex) * M_PER_PX, -(v - ey) * M_PER_PX] for u, v in self._src])
        self._background = self._make_background(seed)
        rng = np.random.default_rng(seed + 1)
        self._noise = rng.normal(0.0, 1.0, size=(self.H, self.W, 1)).astype(np.float32)
        self._level: tuple | None = None  # (pixel scale, dimmed background, noise x sigma): _dim_level

    @staticmethod
    def _close_lids(tex: np.ndarray, x0: int, y0: int) -> np.ndarray:
        out = tex.copy()
        skin = tuple(int(c) for c in np.median(tex[145 - y0:155 - y0, 205 - x0:240 - x0].reshape(-1, 3), axis=0))
        for cx, cy in (_LEFT_EYE_PX, _RIGHT_EYE_PX):
            c = (int(round(cx - x0)), int(round(cy - y0)))
            cv2.ellipse(out, c, (13, 8), 0, 0, 360, skin, -1, cv2.LINE_AA)
            cv2.line(out, (c[0] - 12, c[1] + 2), (c[0] + 12, c[1] + 2), (60, 40, 35), 2, cv2.LINE_AA)
        return out

    def _make_background(self, seed: int) -> np.ndarray:
        yy, xx = np.mgrid[0:self.H, 0:self.W].astype(np.float32)
        base = 150 + 40 * (yy / self.H) - 20 * (xx / self.W)
        rng = np.random.default_rng(seed)
        tex = cv2.GaussianBlur(rng.normal(0, 12, size=(self.H, self.W)).astype(np.float32), (0, 0), 3)
        bg = np.clip(base + tex, 0, 255)
        return np.dstack([bg * 0.95, bg * 0.97, bg]).astype(np.uint8)

    def face_corners_px(self, T_world_camera: SE3, T_world_eye: SE3) -> np.ndarray | None:
        """Pixel corners of the face plane, or None when it faces away or is behind the camera."""
        Rc = T_world_camera.R.T  # camera <- world, composed by hand (hot path)
        T_ce_R, T_ce_t = Rc @ T_world_eye.R, Rc @ (T_world_eye.t - T_world_camera.t)
        P = self._plane @ T_ce_R.T + T_ce_t
        if np.any(P[:, 2] < 0.05):
            return None
        normal_cam = T_ce_R[:, 0]  # face normal = eye x axis
        to_cam = -T_ce_t
        if normal_cam @ to_cam <= 0:
            return None
        return self.intr.project(P).astype(np.float32)

    def render(self, T_world_camera: SE3, T_world_eye: SE3, blink: bool = False, illumination: float = 100.0,
               settings: CameraSettings | None = None) -> np.ndarray:
        """RGB uint8 image (H, W, 3) of the scene from ``T_world_camera`` at light level
        ``illumination`` (%) with the camera's colour ``settings`` (the study's by default)."""
        # fixed exposure: pixel values follow the light level (darker and, as the sensor's
        # signal falls against its read noise, noisier): clip(pixel x f + noise x sigma)
        f = pixel_scale(illumination, settings)
        out = self._background.copy() if f == 1.0 else self._dim_level(f)[0].copy()
        dst = self.face_corners_px(T_world_camera, T_world_eye)
        if dst is not None:
            x0, y0 = np.floor(dst.min(0)).astype(int)
            x1, y1 = np.ceil(dst.max(0)).astype(int)
            x0, y0 = max(x0, 0), max(y0, 0)
            x1, y1 = min(x1, self.W), min(y1, self.H)
            if x1 > x0 and y1 > y0:
                Hm = cv2.getPerspectiveTransform(self._src, dst - np.float32([x0, y0]))
                roi = out[y0:y1, x0:x1]
                if f != 1.0:  # the face goes onto the undimmed background, then the box is dimmed
                    roi[:] = self._background[y0:y1, x0:x1]
                cv2.warpPerspective(self.tex_closed if blink else self.tex_open, Hm, (x1 - x0, y1 - y0), dst=roi,
                                    flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_TRANSPARENT)
                if f != 1.0:
                    roi[:] = self._dim(roi, f, self._dim_level(f)[1][y0:y1, x0:x1])
        return out

    def _dim_level(self, f: float) -> tuple[np.ndarray, np.ndarray]:
        """(the dimmed background, the noise image x sigma) at pixel scale ``f``: fixed per
        light level, so computed once per level instead of per frame; only the face's box
        is dimmed per frame (the same values as dimming the whole image; docs/perf/acq.md)."""
        level = self._level
        if level is None or level[0] != f:
            sigma = 6.0 * max(0.0, 1.0 - f)
            noise = np.ascontiguousarray(np.broadcast_to(self._noise * sigma, self._background.shape), np.float32)
            level = self._level = (f, self._dim(self._background, f, noise), noise)  # replaced whole: thread-safe
        return level[1], level[2]

    @staticmethod
    def _dim(img: np.ndarray, f: float, noise: np.ndarray) -> np.ndarray:
        """clip(img x f + noise) in float32, truncated to uint8."""
        x = np.multiply(img, np.float32(f), dtype=np.float32)
        np.add(x, noise, out=x)
        np.clip(x, 0, 255, out=x)
        return x.astype(np.uint8)

    def eye_pixel(self, T_world_camera: SE3, eye_world) -> np.ndarray:
        """Where the eye midpoint projects (for tests)."""
        p = T_world_camera.inv().apply(np.asarray(eye_world, float))
        return self.intr.project(p)[0]
