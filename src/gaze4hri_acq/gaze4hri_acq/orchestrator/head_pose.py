"""The subject's head and eyes as the orchestrator measures them: the head yaw and the
check that holds a trial until the head is turned as asked, and the eye position a
trial's camera path is planned from."""
from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
from gaze4hri_core.protocol import Trial

from .client import DeviceClient
from .errors import TrialFailed

__all__ = ["head_yaw_deg", "eye_head", "eye_world", "head_check"]


def head_yaw_deg(T_world_head, forward_world, T_head_eye=None) -> float:
    """Head yaw about world z relative to the subject's forward (+left): the x axis of
    the eye frame (head band x eye-head offset, as groundtruth.head_forward_in_camera)."""
    fx = (T_world_head @ T_head_eye).R[:, 0] if T_head_eye is not None else T_world_head.R[:, 0]
    f = np.asarray(forward_world, float)
    a = math.atan2(fx[1], fx[0]) - math.atan2(f[1], f[0])
    return math.degrees((a + math.pi) % (2 * math.pi) - math.pi)


def eye_head(calib):
    """The subject's eye-head offset, else the calibration's default subject's."""
    if calib.T_head_eye is not None:
        return calib.T_head_eye
    p = Path(calib.directory) / "subjects" / "default.yaml"
    if p.is_file():
        from gaze4hri_core.calibration import load_eye_head

        return load_eye_head(p)
    return None


def eye_world(client: DeviceClient, calib) -> np.ndarray:
    """The subject's eye midpoint in the world: the head band's pose with the eye-head
    offset, the calibration's nominal eye before any head pose arrived."""
    if client.head is None:
        return calib.eye_nominal_world
    T = client.head[1]
    Te = eye_head(calib)
    return T.apply(Te.t) if Te is not None else T.t - np.array([0, 0, calib.head_band_above_eye_m])


def head_check(cfg, client: DeviceClient, calib, trial: Trial, check) -> float:
    """Yaw within tolerance for ``head_hold_s`` of device time before recording starts;
    returns the last measured yaw (deg)."""
    deadline = time.monotonic() + cfg.head_check_timeout_s
    ok_since = None
    yaw = float("nan")
    while True:
        check()
        if client.head is not None:
            t, T = client.head
            yaw = head_yaw_deg(T, calib.subject_forward_world, eye_head(calib))
            if abs(yaw - trial.head_yaw_deg) <= cfg.head_yaw_tolerance_deg:
                ok_since = t if ok_since is None else ok_since
                if t - ok_since >= cfg.head_hold_s * 1e9:
                    return yaw
            else:
                ok_since = None
        if time.monotonic() > deadline:
            raise TrialFailed(f"head-pose check: yaw {yaw:+.1f} deg, need {trial.head_yaw_deg:+.0f} "
                              f"+/- {cfg.head_yaw_tolerance_deg:.0f} deg")
        time.sleep(0.01)
