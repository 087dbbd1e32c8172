"""The doctor's camera checks on RealSense playback files made by librealsense's own
software device and recorder (the resolution recorded, the colour options in effect, the
timestamp domain), the absent camera, and the pure USB / firmware checks."""
import time

import numpy as np
import pytest
from gaze4hri_acq.doctor.camera import CameraReport, camera_checks
from gaze4hri_acq.doctor.record import exit_code
from gaze4hri_core.device_config import CameraSettings

rs = pytest.importorskip("pyrealsense2")
from gaze4hri_acq.doctor.camera import gather_camera  # noqa: E402 - after the importorskip

_RANGES = {"enable_auto_exposure": (0, 1, 1, 1), "enable_auto_white_balance": (0, 1, 1, 1),
           "exposure": (1, 10000, 1, 166), "gain": (0, 128, 1, 64), "white_balance": (2800, 6500, 10, 4600),
           "saturation": (0, 100, 1, 64)}


def _record(path, w, h, study_settings: bool, domain=None, n=24):
    """A recording of ``n`` frames at 30 fps from a software colour sensor with the D435i's
    options, the study's settings applied before recording or left at the defaults."""
    from gaze4hri_acq.drivers.camera_realsense import apply_color_settings

    dev = rs.software_device()
    sensor = dev.add_sensor("RGB Camera")
    for name, (lo, hi, step, default) in _RANGES.items():
        r = rs.option_range()
        r.min, r.max, r.step, r.default = lo, hi, step, default
        sensor.add_option(getattr(rs.option, name), r, True)
    intr = rs.intrinsics()
    intr.width, intr.height, intr.fx, intr.fy, intr.ppx, intr.ppy = w, h, 46.0, 46.0, w / 2, h / 2
    vs = rs.video_stream()
    vs.type, vs.index, vs.uid, vs.width, vs.height, vs.fps, vs.bpp, vs.fmt = (rs.stream.color, 0, 0, w, h, 30, 3,
                                                                              rs.format.rgb8)
    vs.intrinsics = intr
    prof = sensor.add_video_stream(vs)
    rec = rs.recorder(str(path), dev)
    if study_settings:
        apply_color_settings(rs, sensor, CameraSettings())
    q = rs.frame_queue(64)
    sensor.open(prof)
    sensor.start(q)
    for k in range(n):
        f = rs.software_video_frame()
        img = np.full((h, w, 3), k, np.uint8)
        f.pixels, f.stride, f.bpp = img, w * 3, 3
        f.timestamp, f.frame_number = 1.7e12 + k * 1000 / 30, k
        f.domain = domain or rs.timestamp_domain.global_time
        f.profile = prof.as_video_stream_profile()
        sensor.on_video_frame(f)
        time.sleep(1 / 30)
    time.sleep(0.2)
    sensor.stop()
    sensor.close()
    del rec


def _by_name(checks):
    return {c.name: c for c in checks}


@pytest.mark.replay
def test_a_recording_at_the_sessions_mode_with_the_study_settings_passes(tmp_path):
    path = tmp_path / "good.db3"
    _record(path, 64, 36, study_settings=True)
    checks = camera_checks(gather_camera(64, 36, 30, playback=path, seconds=3.0), 64, 36, 30)
    assert exit_code(checks) == 0, [c.line() for c in checks]
    c = _by_name(checks)
    assert c["resolution"].line() == "PASS camera resolution: 64x36 as the session records"
    assert c["colour settings"].value.startswith("the study's 6 options recorded: enable_auto_exposure 0")
    assert c["stream"].status == "pass" and c["stream"].value.endswith("fps (wanted 30), 0 dropped")
    assert c["timestamps"].line() == "PASS camera timestamps: timestamps global_time"


@pytest.mark.replay
def test_the_wrong_resolution_and_options_not_in_effect_fail(tmp_path):
    path = tmp_path / "bad.db3"
    _record(path, 64, 36, study_settings=False, domain=rs.timestamp_domain.system_time)
    checks = camera_checks(gather_camera(640, 360, 30, playback=path, seconds=3.0), 640, 360, 30)
    assert exit_code(checks) == 1
    c = _by_name(checks)
    assert c["resolution"].line() == ("FAIL camera resolution: stream 64x36, the session records 640x360 -> "
                                      "record/stream at the session's resolution, or pass --resolution 64x36")
    assert c["colour settings"].line().startswith(
        "FAIL camera colour settings: 4 not in effect: exposure reads 166 (the study: 250); gain reads 64 (the study: "
        "90); white_balance reads 4600 (the study: 3000); saturation reads 64 (the study: 68)")
    assert c["colour settings"].fix == "record again with the study's settings applied"
    assert c["timestamps"].status == "warn" and "system_time" in c["timestamps"].value


@pytest.mark.replay
def test_no_camera_is_one_fail_line():
    if len(rs.context().query_devices()):
        pytest.skip("a RealSense camera is connected")
    checks = camera_checks(gather_camera(1920, 1080, 30, seconds=0.1), 1920, 1080, 30)
    assert [c.line() for c in checks] == [
        "FAIL camera device: USB serial any: no RealSense camera found -> plug the camera into a USB 3 port, check "
        "'rs-enumerate-devices' and the udev rules"]


@pytest.mark.unit
def test_usb2_firmware_serial_and_a_refused_option_are_judged():
    r = CameraReport("USB serial 123", serial="123", firmware="5.12.7.100", recommended_firmware="5.13.0.50",
                     usb_type="2.1", settings_error="Intel RealSense D435i: cannot set exposure to 250 (out of range)",
                     width=1920, height=1080, frames=60, seconds=59 / 30, domains=("global_time",))
    c = _by_name(camera_checks(r, 1920, 1080, 30, serial="999"))
    assert c["usb"].line() == ("FAIL camera usb: USB 2.1: 1920x1080@30 needs USB 3 -> plug the camera into a USB 3 "
                               "port with a USB 3 cable (blue port, short cable)")
    assert c["firmware"].status == "warn" and c["serial"].status == "fail"
    assert c["colour settings"].status == "fail" and "cannot set exposure" in c["colour settings"].value
    assert c["stream"].status == "pass"
    assert _by_name(camera_checks(r, 640, 360, 30))["usb"].status == "warn"  # USB 2 carries 640x360
