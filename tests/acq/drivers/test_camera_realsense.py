"""The RealSense backend's replay path: a recording made with librealsense's own
software device and recorder, played back through the same pipeline code as live."""
import time

import numpy as np
import pytest
from gaze4hri_acq.drivers.camera_realsense import FrameCounter, TimestampMapper
from gaze4hri_acq.drivers.registry import make_camera
from gaze4hri_core.device_config import CameraConfig
from gaze4hri_core.devices import DeviceError

rs = pytest.importorskip("pyrealsense2")
W, H = 64, 36


def _record(path, frame_numbers, t0_ms=1.7e12, domain=None, fx=46.0):
    dev = rs.software_device()
    sensor = dev.add_sensor("RGB Camera")
    intr = rs.intrinsics()
    intr.width, intr.height, intr.fx, intr.fy, intr.ppx, intr.ppy = W, H, fx, fx, 31.5, 17.5
    intr.model = rs.distortion.brown_conrady
    intr.coeffs = [0.1, -0.05, 0.0, 0.0, 0.01]
    vs = rs.video_stream()
    vs.type, vs.index, vs.uid, vs.width, vs.height = rs.stream.color, 0, 0, W, H
    vs.fps, vs.bpp, vs.fmt = 30, 3, rs.format.rgb8
    vs.intrinsics = intr
    prof = sensor.add_video_stream(vs)
    rec = rs.recorder(str(path), dev)
    q = rs.frame_queue(64)
    sensor.open(prof)
    sensor.start(q)
    for n in frame_numbers:
        img = np.full((H, W, 3), n % 256, np.uint8)
        f = rs.software_video_frame()
        f.pixels, f.stride, f.bpp = img, W * 3, 3
        f.timestamp = t0_ms + n * 1000 / 30
        f.domain = domain or rs.timestamp_domain.global_time
        f.frame_number = n
        f.profile = prof.as_video_stream_profile()
        sensor.on_video_frame(f)
        time.sleep(1 / 30)  # the recorder stores arrival times, which realtime playback reproduces
    time.sleep(0.2)
    sensor.stop()
    sensor.close()
    del rec


@pytest.mark.replay
def test_replay_keeps_frames_numbers_stamps_and_intrinsics(tmp_path):
    path = tmp_path / "take.db3"
    numbers = [0, 1, 2, 3, 4, 6, 7, 9, 10, 11]
    _record(path, numbers)
    cam = make_camera("replay", CameraConfig(replay_file=path, replay_realtime=True))
    cam.start()
    frames = []
    t_end = time.monotonic() + 20
    while not cam.finished and time.monotonic() < t_end:
        f = cam.read(0.3)
        if f is not None:
            frames.append(f)
    cam.stop()
    assert cam.finished
    assert [f.frame_number for f in frames] == numbers
    assert cam.dropped_frames == 2  # 5 and 8
    assert all(f.timestamp_domain == "global_time" for f in frames)
    np.testing.assert_allclose([f.stamp_ns for f in frames], [(1.7e12 + n * 1000 / 30) * 1e6 for n in numbers],
                               rtol=0, atol=2e3)
    assert [int(f.image[0, 0, 0]) for f in frames] == numbers and frames[0].image.shape == (H, W, 3)
    K = cam.intrinsics.K
    assert (cam.intrinsics.width, cam.intrinsics.height) == (W, H) and K[0, 0] == 46.0 and K[1, 2] == 17.5
    assert cam.intrinsics.distortion_model == "plumb_bob"
    np.testing.assert_allclose(cam.intrinsics.D, [0.1, -0.05, 0, 0, 0.01], atol=1e-7)
    assert cam.intrinsics.to_camera_info_dict()["camera_matrix"]["data"][0] == 46.0


@pytest.mark.replay
def test_replay_of_a_missing_file_is_a_one_line_error(tmp_path):
    cam = make_camera("replay", CameraConfig(replay_file=tmp_path / "nope.db3"))
    with pytest.raises(DeviceError, match=r"RealSense D435i: recording not found \(.*nope.db3\)"):
        cam.start()


@pytest.mark.unit
def test_no_camera_is_a_one_line_error():
    if len(rs.context().query_devices()):
        pytest.skip("a RealSense camera is connected")
    with pytest.raises(DeviceError) as e:
        make_camera("real", CameraConfig()).start()
    assert "no RealSense camera found" in str(e.value) and "USB 3" in str(e.value)


@pytest.mark.unit
def test_hardware_clock_unwraps_and_maps_to_host():
    m = TimestampMapper()
    wrap = 2**32 / 1000.0  # ms
    host0 = 1_700_000_000_000_000_000
    dev = [wrap - 20.0, wrap - 10.0, 0.5, 10.5]  # the counter wraps between 2 and 3
    delays = [3_000_000, 1_000_000, 2_000_000, 5_000_000]  # USB latency (ns); the least-delayed frame fixes the offset
    out = [m.to_host_ns(d, "hardware_clock", host0 + i * 10_000_000 + delays[i]) for i, d in enumerate(dev)]
    assert np.all(np.diff(out) > 0)
    assert out[3] - out[2] == 10_000_000 and out[2] - out[1] == 10_500_000  # across the wrap
    assert out[1] == host0 + 10_000_000 + 1_000_000  # offset from the least-delayed frame
    assert m.to_host_ns(1234.5, "global_time", 0) == 1_234_500_000
    c = FrameCounter()
    for n in (10, 11, 14, 14, 15, 0):
        c.add(n)
    assert c.dropped == 2


# ---------------------------------------------------------------- colour settings (issue 13)
_RANGES = {"enable_auto_exposure": (0, 1, 1, 1), "enable_auto_white_balance": (0, 1, 1, 1),
           "exposure": (1, 10000, 1, 166), "gain": (0, 128, 1, 64), "white_balance": (2800, 6500, 10, 4600),
           "saturation": (0, 100, 1, 64)}


def _software_colour_sensor(dev, ranges=_RANGES):
    """A software colour sensor with the D435i colour options (librealsense's own option code)."""
    sensor = dev.add_sensor("RGB Camera")
    for name, (lo, hi, step, default) in ranges.items():
        r = rs.option_range()
        r.min, r.max, r.step, r.default = lo, hi, step, default
        sensor.add_option(getattr(rs.option, name), r, True)
    return sensor


@pytest.mark.replay
def test_colour_settings_applied_and_read_back_through_librealsense():
    from gaze4hri_acq.drivers.camera_realsense import apply_color_settings
    from gaze4hri_core.device_config import CameraSettings

    sensor = _software_colour_sensor(rs.software_device())
    assert sensor.get_option(rs.option.exposure) == 166  # the factory default, as on a real camera
    got = apply_color_settings(rs, sensor, CameraSettings())
    assert got == {"enable_auto_exposure": 0.0, "enable_auto_white_balance": 0.0, "exposure": 250.0, "gain": 90.0,
                   "white_balance": 3000.0, "saturation": 68.0}
    assert sensor.get_option(rs.option.exposure) == 250 and sensor.get_option(rs.option.enable_auto_exposure) == 0
    # a camera whose range refuses the value: one line naming the option and the value
    narrow = _software_colour_sensor(rs.software_device(), {**_RANGES, "exposure": (1, 200, 1, 166)})
    with pytest.raises(DeviceError, match="cannot set exposure to 250"):
        apply_color_settings(rs, narrow, CameraSettings())


def test_colour_settings_are_validated():
    from gaze4hri_core.device_config import CameraSettings, validate
    from gaze4hri_core.errors import Gaze4HRIError

    with pytest.raises(Gaze4HRIError, match="white_balance"):
        validate(CameraConfig, {"color": {"white_balance": 1000}}, "camera parameters")
    assert CameraConfig().color == CameraSettings()


@pytest.mark.replay
def test_playback_reports_the_settings_stored_in_the_recording(tmp_path):
    from gaze4hri_acq.drivers.camera_realsense import apply_color_settings
    from gaze4hri_core.device_config import CameraSettings

    dev = rs.software_device()
    sensor = _software_colour_sensor(dev)
    intr = rs.intrinsics()
    intr.width, intr.height, intr.fx, intr.fy, intr.ppx, intr.ppy = W, H, 46.0, 46.0, 31.5, 17.5
    vs = rs.video_stream()
    vs.type, vs.index, vs.uid, vs.width, vs.height = rs.stream.color, 0, 0, W, H
    vs.fps, vs.bpp, vs.fmt = 30, 3, rs.format.rgb8
    vs.intrinsics = intr
    prof = sensor.add_video_stream(vs)
    path = tmp_path / "settings.db3"
    rec = rs.recorder(str(path), dev)
    applied = apply_color_settings(rs, sensor, CameraSettings())
    q = rs.frame_queue(16)
    sensor.open(prof)
    sensor.start(q)
    for n in range(4):
        f = rs.software_video_frame()
        img = np.full((H, W, 3), n, np.uint8)
        f.pixels, f.stride, f.bpp = img, W * 3, 3
        f.timestamp, f.domain, f.frame_number = 1.7e12 + n * 33.3, rs.timestamp_domain.global_time, n
        f.profile = prof.as_video_stream_profile()
        sensor.on_video_frame(f)
        time.sleep(1 / 30)
    time.sleep(0.2)
    sensor.stop()
    sensor.close()
    del rec
    cam = make_camera("replay", CameraConfig(replay_file=path))
    cam.start()
    try:
        got = cam.read_settings()
        assert {k: got[k] for k in applied} == applied
        # every colour option of the recorded sensor, not only the study's (issue 20, item 9);
        # frames_queue_size is the reading sensor's own host-side queue, not a recorded setting
        assert set(got) == set(_RANGES) | {"frames_queue_size"}
        assert {k: got[k] for k in _RANGES} == {k: float(sensor.get_option(getattr(rs.option, k))) for k in _RANGES}
    finally:
        cam.stop()


# the D435i RGB sensor's other options (min, max, step, default), as a software sensor carries them
_OTHER = {"backlight_compensation": (0, 1, 1, 0), "brightness": (-64, 64, 1, 0), "contrast": (0, 100, 1, 50),
          "gamma": (100, 500, 1, 300), "hue": (-180, 180, 1, 0), "sharpness": (0, 100, 1, 50),
          "power_line_frequency": (0, 3, 1, 3), "auto_exposure_priority": (0, 1, 1, 1)}


@pytest.mark.replay
def test_every_other_colour_option_is_reset_to_its_default_before_the_study_settings():
    """The study resets the colour sensor's options to their defaults before setting its
    own (GazeForHRI/Gaze4HRI data_collector.py:89-98): a value another program left
    (realsense-viewer, an earlier run) must not survive into the session."""
    from gaze4hri_acq.drivers.camera_realsense import apply_color_settings, color_option_defaults, read_color_settings
    from gaze4hri_core.device_config import CameraSettings

    sensor = _software_colour_sensor(rs.software_device(), {**_RANGES, **_OTHER})
    r = rs.option_range()
    r.min, r.max, r.step, r.default = 0, 100, 1, 42
    sensor.add_option(rs.option.asic_temperature, r, False)  # read-only: reported, never written
    left = {"brightness": 30, "contrast": 80, "gamma": 220, "hue": -10, "sharpness": 90, "backlight_compensation": 1,
            "power_line_frequency": 1, "auto_exposure_priority": 0, "frames_queue_size": 4}
    for name, v in left.items():
        sensor.set_option(getattr(rs.option, name), v)
    defaults = color_option_defaults(rs, sensor)
    assert "asic_temperature" not in defaults and set(defaults) == set(_RANGES) | set(_OTHER) | {"frames_queue_size"}
    apply_color_settings(rs, sensor, CameraSettings())
    got = read_color_settings(rs, sensor)
    study = CameraSettings().as_options()
    assert set(got) == set(defaults) | {"asic_temperature"}  # all supported options read back
    assert {k: got[k] for k in study} == study
    assert {k: got[k] for k in _OTHER} == {k: float(d) for k, (_lo, _hi, _st, d) in _OTHER.items()}
    assert got["frames_queue_size"] == 16.0 and got["asic_temperature"] == 42.0
    # without the reset (the old behaviour) the left values stay: this test needs it
    sensor.set_option(rs.option.brightness, 30)
    apply_color_settings(rs, sensor, CameraSettings(), reset=False)
    assert sensor.get_option(rs.option.brightness) == 30
