"""Camera checks: what pyrealsense2 reports about the RealSense (device info, USB type,
the study's colour options set and read back, a short stream at the session's mode with
its rate, drops and timestamp domain), gathered once (:func:`gather_camera`, live or from
a RealSense playback file), then judged by pure functions (:func:`camera_checks`)."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from gaze4hri_core.device_config import CameraSettings

from .record import Check, failed, passed, warned

__all__ = ["CameraReport", "gather_camera", "camera_checks"]

G = "camera"
#: timestamp domains stamped by the device's clock (librealsense rs2_timestamp_domain)
HARDWARE_DOMAINS = ("global_time", "hardware_clock", "sim")


@dataclass(frozen=True)
class CameraReport:
    """What the camera (or the recording) reported; ``None`` where it could not be read."""

    source: str
    error: str | None = None
    playback: bool = False
    simulated: bool = False
    serial: str | None = None
    firmware: str | None = None
    recommended_firmware: str | None = None
    usb_type: str | None = None
    settings_error: str | None = None
    settings: dict[str, float] = field(default_factory=dict)
    width: int | None = None
    height: int | None = None
    frames: int = 0
    seconds: float = 0.0  # device time spanned by the frames
    dropped: int = 0
    domains: tuple[str, ...] = ()
    fix: str | None = None  # the fix for ``error`` where the source knows it


# ------------------------------------------------------------------ gathering (I/O)
def _info(rs, dev, what) -> str | None:
    try:
        return str(dev.get_info(what)) if dev.supports(what) else None
    except RuntimeError:
        return None


def _device_info(rs, dev) -> dict:
    ci = rs.camera_info
    return {"serial": _info(rs, dev, ci.serial_number), "firmware": _info(rs, dev, ci.firmware_version),
            "recommended_firmware": _info(rs, dev, ci.recommended_firmware_version),
            "usb_type": _info(rs, dev, ci.usb_type_descriptor)}


def _stream(rs, pipe, seconds: float, finished=lambda: False) -> dict:
    """Read colour frames for ``seconds`` (or to the end of a playback): count, drops from
    frame-number gaps, the device time they span, their timestamp domains and size."""
    from ..drivers.camera_realsense import FrameCounter

    counter, stamps, domains, size = FrameCounter(), [], set(), (None, None)
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        ok, frames = pipe.try_wait_for_frames(200)
        if not ok:
            if finished():
                break
            continue
        cf = frames.get_color_frame()
        if not cf:
            continue
        counter.add(int(cf.get_frame_number()))
        stamps.append(float(cf.get_timestamp()))
        domains.add(str(cf.get_frame_timestamp_domain()).split(".")[-1])
        size = (cf.get_width(), cf.get_height())
    span = (max(stamps) - min(stamps)) / 1e3 if len(stamps) > 1 else 0.0
    return {"frames": counter.frames, "dropped": counter.dropped, "seconds": span, "domains": tuple(sorted(domains)),
            "width": size[0], "height": size[1]}


def gather_camera(width: int, height: int, fps: int, serial: str = "", settings: CameraSettings | None = None,
                  playback: Path | None = None, seconds: float = 2.0) -> CameraReport:
    """The live camera (``serial``, else the only one) or a RealSense recording (``playback``):
    device info, the colour options (set on a live camera, read back either way) and a
    ``seconds`` stream at ``width`` x ``height`` @ ``fps`` (a recording plays its own mode)."""
    try:
        import pyrealsense2 as rs
    except ImportError as e:
        return CameraReport("USB", error=f"pyrealsense2 does not import ({e})")
    source = str(playback) if playback is not None else f"USB serial {serial or 'any'}"
    cfg, info = rs.config(), {}
    if playback is not None:
        if not Path(playback).is_file():
            return CameraReport(source, error="recording not found", playback=True)
        cfg.enable_device_from_file(str(playback), repeat_playback=False)
        cfg.enable_stream(rs.stream.color)
    else:
        devices = list(rs.context().query_devices())
        found = {_info(rs, d, rs.camera_info.serial_number): d for d in devices}
        if not found or (serial and serial not in found):
            what = "no RealSense camera found" if not found else f"camera {serial} not found (found {sorted(found)})"
            return CameraReport(source, error=what)
        info = _device_info(rs, found[serial] if serial else devices[0])
        if serial:
            cfg.enable_device(serial)
        cfg.enable_stream(rs.stream.color, width, height, rs.format.rgb8, fps)
    return _run(rs, cfg, source, info, settings or CameraSettings(), playback is not None, seconds)


def _run(rs, cfg, source: str, info: dict, settings: CameraSettings, playback: bool, seconds: float) -> CameraReport:
    from gaze4hri_core.devices import DeviceError

    from ..drivers.camera_realsense import apply_color_settings, read_color_settings

    pipe = rs.pipeline()
    try:
        profile = pipe.start(cfg)
    except RuntimeError as e:
        return CameraReport(source, error=f"cannot start the colour stream ({e})", playback=playback, **info)
    values: dict = {}
    try:
        dev = profile.get_device()
        if playback:
            dev.as_playback().set_real_time(True)
            info = _device_info(rs, dev)
        sensor = dev.first_color_sensor()
        if not playback:
            try:
                apply_color_settings(rs, sensor, settings, source)
            except DeviceError as e:
                values["settings_error"] = e.what
        values["settings"] = read_color_settings(rs, sensor)
        stopped = (lambda: dev.as_playback().current_status() == rs.playback_status.stopped) if playback else None
        values.update(_stream(rs, pipe, seconds, stopped or (lambda: False)))
    except RuntimeError as e:
        values["error"] = f"the stream failed ({e})"
    finally:
        pipe.stop()
    return CameraReport(source, playback=playback, **info, **values)


# ------------------------------------------------------------------ checks (pure)
def _numbers(v: str | None) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in str(v).split("."))
    except ValueError:
        return ()


def _device(r: CameraReport, serial: str, width: int, height: int, fps: int) -> list[Check]:
    out = []
    if r.serial is not None:
        ok = not serial or serial == r.serial
        out.append(passed(G, "serial", f"serial {r.serial}") if ok else
                   failed(G, "serial", f"serial {r.serial}, not {serial}", "pass --camera-serial of this camera"))
    if r.firmware is not None:
        fw, rec = _numbers(r.firmware), _numbers(r.recommended_firmware)
        v = f"firmware {r.firmware}" + (f" (recommended {r.recommended_firmware})" if r.recommended_firmware else "")
        out.append(warned(G, "firmware", v, "update the firmware (rs-fw-update or realsense-viewer)")
                   if fw and rec and fw < rec else passed(G, "firmware", v))
    if r.usb_type is not None:
        usb3 = _numbers(r.usb_type)[:1] >= (3,)
        heavy = width * height > 1280 * 720 or fps > 30
        v = f"USB {r.usb_type}"
        if usb3:
            out.append(passed(G, "usb", v))
        elif heavy:
            out.append(failed(G, "usb", f"{v}: {width}x{height}@{fps} needs USB 3",
                              "plug the camera into a USB 3 port with a USB 3 cable (blue port, short cable)"))
        else:
            out.append(warned(G, "usb", f"{v}: works at {width}x{height}@{fps}, 1080p30 needs USB 3",
                              "use a USB 3 port and cable"))
    return out


def _settings(r: CameraReport, settings: CameraSettings) -> Check:
    if r.settings_error is not None:
        return failed(G, "colour settings", r.settings_error,
                      "close other programs using the camera (realsense-viewer) and check the firmware")
    want = settings.as_options()
    steps = {"white_balance": 10.0}
    bad = [f"{k} reads {r.settings.get(k, float('nan')):g} (the study: {v:g})" for k, v in want.items()
           if not abs(r.settings.get(k, float("nan")) - v) <= steps.get(k, 1.0)]
    how = "recorded" if r.playback else "read back"
    if bad:
        fix = ("record again with the study's settings applied" if r.playback else
               "close other programs using the camera, then run again (the values must stay set)")
        return failed(G, "colour settings", f"{len(bad)} not in effect: " + "; ".join(bad), fix)
    return passed(G, "colour settings", f"the study's {len(want)} options {how}: " +
                  ", ".join(f"{k} {v:g}" for k, v in want.items()))


def _stream_checks(r: CameraReport, width: int, height: int, fps: int) -> list[Check]:
    out = []
    mode = f"{r.width}x{r.height}"
    out.append(passed(G, "resolution", f"{mode} as the session records") if (r.width, r.height) == (width, height)
               else failed(G, "resolution", f"stream {mode}, the session records {width}x{height}",
                           "record/stream at the session's resolution, or pass --resolution "
                           f"{mode}" if r.playback else "use a mode the camera supports (rs-enumerate-devices)"))
    rate = (r.frames - 1) / r.seconds if r.seconds > 0 and r.frames > 1 else 0.0
    v = f"{r.frames} frames, {rate:.1f} fps (wanted {fps}), {r.dropped} dropped"
    if r.frames < 2 or rate < 0.9 * fps:
        out.append(failed(G, "stream", v, "use a USB 3 port, free the USB bus and the CPU, check the cable"))
    elif r.dropped:
        out.append(warned(G, "stream", v, "dropped frames: use a USB 3 port of its own and a short cable"))
    else:
        out.append(passed(G, "stream", v))
    hw = bool(r.domains) and all(d in HARDWARE_DOMAINS for d in r.domains)
    v = f"timestamps {', '.join(r.domains) or 'none'}"
    out.append(passed(G, "timestamps", v) if hw else
               warned(G, "timestamps", f"{v}: not the device clock",
                      "install librealsense's udev rules / metadata kernel patch (frame metadata)"))
    return out


def camera_checks(r: CameraReport, width: int, height: int, fps: int, settings: CameraSettings | None = None,
                  serial: str = "") -> list[Check]:
    """Every camera check from one report against the session's mode and the study's colour settings."""
    if r.error is not None:
        fix = r.fix or ("pass a RealSense recording (.db3)" if r.playback else
                        "plug the camera into a USB 3 port, check 'rs-enumerate-devices' and the udev rules")
        return [failed(G, "device", f"{r.source}: {r.error}", fix)]
    out = [passed(G, "device", r.source)]
    out += _device(r, serial, width, height, fps)
    out.append(_settings(r, settings or CameraSettings()))
    out += _stream_checks(r, width, height, fps)
    return out
