"""One trial through the devices: the prompt, the approach to the start pose, the
head-pose check, the recording (with the camera's motion) and its stop, and what a
failure, an interrupt or a full disk leaves in the session record."""
from __future__ import annotations

import errno
import time

from gaze4hri_core.errors import Gaze4HRIError, SessionError
from gaze4hri_core.protocol import Trial
from gaze4hri_core.session import Topics, bag_dir, mark, save_manifest
from gaze4hri_core.trajectories import plan_trial

from .client import DeviceClient, Interrupted
from .disk import disk_full_error, free_bytes, save_or_disk_full, trial_bytes
from .errors import DiskFullBeforeTrial, TrialFailed
from .head_pose import eye_world, head_check
from .motion import move, wait_motion
from .record import archive_bag
from .view import say

__all__ = ["run_trial", "camera_settings_of"]


def run_trial(cfg, client: DeviceClient, sdir, manifest, trial: Trial, calib, settings, view, confirm, should_stop,
              prompt, camera_settings: dict | None = None) -> None:
    """Run one trial and record its outcome in ``manifest`` (saved): done, failed with its
    reason (the session goes on, except for a full disk), or on an interrupt incomplete
    (recording) or pending (not yet recording), the interrupt raised on."""
    tid = trial.trial_id
    rec = manifest.trials[tid]
    if rec.attempts and bag_dir(sdir, tid).exists():
        archive_bag(sdir, tid, rec.attempts)
    check = _checker(client, should_stop)
    client.faults.clear()
    recording = False
    drops0 = _camera_drops(client)
    try:
        plan = _prepare(cfg, client, trial, calib, settings, view, confirm, prompt, check)
        # the colour options read back now, recorded with this trial (the study saves
        # rgb_camera_settings.json per trial)
        trial_camera = camera_settings_of(client)
        if "error" in trial_camera:
            trial_camera = camera_settings or trial_camera
        # the window's end goes to the recorder as soon as it is known: with the start for a
        # fixed camera, when the motion is done for a moving one (_record)
        duration = int(cfg.trial_seconds * 1e9) if plan.motion is None else None
        t0 = _start_recording(cfg, client, sdir, manifest, trial, view, duration)
        recording = True
        client.publish_event("start", trial=tid, target=trial.target, condition=trial.condition,
                             experiment=trial.experiment, illumination=trial.illumination,
                             head_yaw_deg=trial.head_yaw_deg, camera_motion=trial.to_dict()["camera_motion"])
        client.publish_event("camera_settings", trial=tid, settings=trial_camera)
        view.status("recording")
        wall0 = time.monotonic()
        end = _record(cfg, client, plan, t0, check)
        factor = (end - t0) / 1e9 / max(time.monotonic() - wall0, 1e-6)
        client.publish_event("stop", trial=tid)
        ack = client.request("recorder", "stop", timeout_s=120.0, end_ns=end)
        recording = False
        counts = ack.get("counts", {})
        dropped = int(ack.get("dropped_messages", 0)) + _camera_drops(client) - drops0
        mark(manifest, tid, "done", None, frames=int(counts.get(Topics.IMAGE, 0)), dropped_frames=dropped,
             real_time_factor=round(factor, 2))
        save_manifest(sdir, manifest)
        view.result(tid, "done", None)
    except TrialFailed as e:
        trial_failed(client, sdir, manifest, tid, str(e), recording, view)
    except Interrupted as e:
        _interrupted(client, sdir, manifest, tid, e, recording, view)
        raise
    except DiskFullBeforeTrial:
        raise  # the trial is back to what it was: not a failure of the trial
    except Gaze4HRIError as e:
        # a refusal (robot motion refused by the safety preview, recorder refused): the
        # trial fails, the session goes on; a recorder stop refused for a full disk is
        # the disk-full root cause and ends the session
        trial_failed(client, sdir, manifest, tid, e.line(), recording, view)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        trial_failed(client, sdir, manifest, tid,
                     f"disk full while recording {tid} (saving session.yaml: {e.strerror})", recording, view)


def _checker(client: DeviceClient, should_stop):
    """The check run while a trial waits: an interrupt request, or a device fault."""

    def check():
        r = should_stop()
        if r:
            raise Interrupted(r)
        if client.faults:
            # report the root cause of a cascade (disk full -> recorder stops the robot ->
            # robot fault): a disk-full fault if any, else the first fault
            full = [f for f in client.faults if "disk full" in str(f.get("reason", ""))]
            f = full[0] if full else client.faults[0]
            raise TrialFailed(f"{f.get('source', 'device')}: {f.get('reason')}")

    return check


def _prepare(cfg, client: DeviceClient, trial: Trial, calib, settings, view, confirm, prompt, check):
    """Before recording: the prompt (and the operator's confirmation), the robot to the
    trial's start pose, the head-pose check where the trial asks for a head yaw. Returns
    the trial's plan (planned from the subject's measured eyes)."""
    tid = trial.trial_id
    client.publish_event("prompt", trial=tid, target=trial.target, condition=trial.condition,
                         experiment=trial.experiment, illumination=trial.illumination,
                         head_yaw_deg=trial.head_yaw_deg, text=prompt)
    if confirm is not None and not cfg.auto_confirm:
        confirm(prompt)
    client.request("robot", "clear_stop")
    plan = plan_trial(trial, calib, eye_world(client, calib), settings)
    view.status("moving to the start pose")
    move(cfg, client, plan.approach, check)
    if trial.head_yaw_deg is not None:
        view.status(f"head-pose check: yaw {trial.head_yaw_deg:+.0f} +/- {cfg.head_yaw_tolerance_deg:.0f} deg")
        yaw = head_check(cfg, client, calib, trial, check)
        # a line that stays: the check itself can pass between two redraws of the table
        say(view, f"{tid}: head-pose check passed: measured yaw {yaw:+.1f} deg, target {trial.head_yaw_deg:+.0f} "
                  f"+/- {cfg.head_yaw_tolerance_deg:.0f} deg, held {cfg.head_hold_s:g} s")
    return plan


def _start_recording(cfg, client: DeviceClient, sdir, manifest, trial: Trial, view,
                     duration_ns: int | None = None) -> int:
    """Mark the trial recording and start the recorder (the window's length when it is
    known now); returns the bag's start (device time, ns). A recorder that refuses for
    want of room puts the trial back as it was and ends the session with the disk-full line."""
    tid = trial.trial_id
    rec = manifest.trials[tid]
    prev = (rec.status, rec.attempts, rec.started, rec.reason, rec.bag)
    mark(manifest, tid, "recording", bag=str(bag_dir(sdir, tid).relative_to(sdir)))
    save_manifest(sdir, manifest)
    need = trial_bytes(cfg, trial)
    try:
        ack = client.request("recorder", "start", timeout_s=30.0, trial=tid, bag_dir=str(bag_dir(sdir, tid)),
                             compression=cfg.compression, fail_after_bytes=cfg.fail_after_bytes,
                             start_ns=client.device_ns, need_bytes=need, duration_ns=duration_ns)
    except Gaze4HRIError:
        if free_bytes(sdir) >= need:
            raise
        # the recorder refused for want of room (the disk filled since the check before
        # the trial): nothing was recorded, so the trial goes back to what it was
        rec.status, rec.attempts, rec.started, rec.reason, rec.bag = prev
        abort_trial(client, False, "disk full")
        save_or_disk_full(sdir, manifest, f"before {tid}")
        view.result(tid, rec.status, "disk full")
        raise disk_full_error(sdir, trial, need) from None
    return int(ack["start_ns"])


def _record(cfg, client: DeviceClient, plan, t0: int, check) -> int:
    """The recording: ``trial_seconds`` of device time from ``t0``, and the camera's
    motion to its end; then until every stream has reached that end. Returns the end
    (device time, ns) the recorder is stopped at."""
    run = move(cfg, client, plan.motion, check, wait=False) if plan.motion is not None else None
    end = t0 + int(cfg.trial_seconds * 1e9)
    if not client.wait_device_time(end, timeout_wall_s=cfg.trial_seconds * 20 + 30, check=check):
        raise TrialFailed("device time stopped advancing (no robot state)")
    if run is not None:
        wait_motion(cfg, client, run, check)
        end = max(end, client.motion_done[run.name])
        client.request("recorder", "end", end_ns=end)
    if not client.wait_device_time(end, timeout_wall_s=120.0, check=check, streams=("camera", "mocap", "robot")):
        lag = {k: (end - v) / 1e9 for k, v in client.stream_ns.items() if v < end}
        behind = ", ".join(f"{k} {v:.1f} s behind" for k, v in lag.items())
        raise TrialFailed(f"stream(s) stopped before the trial's end: {behind}")
    return end


def _interrupted(client: DeviceClient, sdir, manifest, tid: str, e: Interrupted, recording: bool, view) -> None:
    """An interrupt (Ctrl-C, SIGTERM) during the trial: incomplete when recording, else pending."""
    # the manifest first: under ros2 launch the device processes got the same Ctrl-C
    # and close themselves (robot stopped, bag closed with its metadata), so the
    # requests below may go unanswered; each is bounded to keep the exit within 5 s
    mark(manifest, tid, "incomplete" if recording else "pending", f"interrupted: {e.reason}" if recording else None)
    save_or_disk_full(sdir, manifest, e.reason)
    abort_trial(client, recording, e.reason, robot_timeout_s=1.5, recorder_timeout_s=2.5)
    view.result(tid, "incomplete" if recording else "pending", e.reason)


def trial_failed(client: DeviceClient, sdir, manifest, tid: str, reason: str, recording: bool, view) -> None:
    """Mark a trial failed with its reason; a full disk (the reason, or any fault the
    devices reported) ends the session with the operator's fix, other failures let it go on."""
    full = [str(f.get("reason")) for f in client.faults if "disk full" in str(f.get("reason", ""))]
    if "disk full" not in reason and full:
        reason = f"recorder: {full[0]}"
    abort_trial(client, recording, reason)
    mark(manifest, tid, "failed", reason)
    if "disk full" in reason:
        fix = "free disk space, then run the session again with --resume"
        try:
            save_manifest(sdir, manifest)
        except OSError:  # even the ballast did not leave room (docs/acquisition.md, disk reserve)
            fix += " (session.yaml could not be updated: the trial shows 'recording' and --resume repairs it)"
        view.result(tid, "failed", reason)
        raise SessionError(reason, str(sdir), fix) from None
    save_or_disk_full(sdir, manifest, reason)
    view.result(tid, "failed", reason)


def abort_trial(client: DeviceClient, recording: bool, reason: str, robot_timeout_s: float = 5.0,
                recorder_timeout_s: float = 120.0) -> None:
    """Stop the robot and, when recording, the recorder; a device that does not answer is left to its own stop."""
    try:
        client.request("robot", "stop", reason=reason, timeout_s=robot_timeout_s)
    except (Gaze4HRIError, Interrupted):
        pass  # the robot node (or its process) is gone; the driver's own watchdog and the controller stop it
    if recording:
        client.publish_event("stop", reason=reason)
        try:
            client.request("recorder", "stop", timeout_s=recorder_timeout_s)
        except Gaze4HRIError:
            pass  # the fault is already the trial's reason; the bag is repaired by the recorder


def _camera_drops(client: DeviceClient) -> int:
    """Frames the camera lost (frame-number gaps), from its diagnostics."""
    try:
        return int(client.diag.get("gaze4hri/camera", {}).get("dropped_frames", 0))
    except ValueError:
        return 0


def camera_settings_of(client: DeviceClient) -> dict:
    """The camera's colour settings as it reports them after applying them (exposure,
    gain, white balance, saturation, auto modes), for session.yaml and each trial's bag."""
    try:
        ack = client.request("camera", "settings", timeout_s=10.0)
    except Gaze4HRIError as e:
        return {"error": e.line()}
    return {k: float(v) for k, v in (ack.get("settings") or {}).items()}
