"""The session orchestrator: runs the protocol trial by trial through the device
nodes (lifecycle services, control/ack topics, events), writes per-trial status to
session.yaml atomically, resumes, redoes, and survives signals and kills.

Trial states (gaze4hri_core.session.TRIAL_STATUSES): pending -> recording -> done |
failed (device fault, safety stop, head-pose check, disk full: reason recorded) |
incomplete (interrupted by SIGINT/SIGTERM, or found 'recording' after a SIGKILL on
the next start, its bag repaired).
"""
from __future__ import annotations

import errno
import math
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

import numpy as np
from gaze4hri_core.calibration import calibration_hashes, load_calibration
from gaze4hri_core.errors import Gaze4HRIError, SessionError
from gaze4hri_core.protocol import ARC_DURATION_S, Trial, select, trial_by_id
from gaze4hri_core.session import (
    Topics,
    bag_dir,
    copy_calibration,
    load_manifest,
    manifest_path,
    mark,
    new_manifest,
    save_manifest,
    session_dir,
)
from gaze4hri_core.session_lock import SessionLock, check_unlocked
from gaze4hri_core.trajectories import TrajectorySettings, line_duration_s, plan_trial

from ..nodes.robot_node import move_to_json
from ..recorder.bag import repair_bag
from ..session_config import SessionConfig
from .client import DeviceClient, Interrupted

__all__ = ["SessionConfig", "run_session", "prompt_text", "estimate_session_bytes", "recover_killed_trials", "head_yaw_deg"]

DEVICES = (("camera", "camera"), ("mocap", "motion capture"), ("robot", "robot"))


def prompt_text(t: Trial) -> str:
    """The operator's instruction for one trial (what the subject is told and the light)."""
    light = f"set the light to {t.illumination} %"
    if t.experiment == "conflict":
        side = {"left": "left (+25 deg yaw)", "center": "straight ahead (0 deg)", "right": "right (-25 deg yaw)"}[t.condition]
        return f"{light}, ask the subject to turn the head {side}, keep it still and look at {t.target}, press Enter"
    if t.experiment == "mutual":
        axis = "horizontally" if t.camera_motion.axis == "h" else "vertically"
        return f"{light}, ask the subject to look into the camera while it moves {axis} ({t.camera_motion.speed_mps} m/s), press Enter"
    if t.experiment == "viewpoint":
        return f"{light}, ask the subject to look at {t.target} while the camera moves on the arc, press Enter"
    return f"{light}, ask the subject to look at {t.target}, press Enter"


def trial_seconds_estimate(t: Trial, trial_seconds: float) -> float:
    """Recording length of a trial: fixed camera ``trial_seconds``; a moving camera as
    long as its motion (arc: its 10 s; lines: the raster at their speed, trajectories.line_duration_s)
    plus 1 s."""
    cm = t.camera_motion
    if cm.kind == "arc":
        return max(trial_seconds, ARC_DURATION_S + 1.0)
    if cm.kind == "line":
        return max(trial_seconds, line_duration_s(cm.axis or "h", cm.speed_mps or 0.05) + 1.0)
    return trial_seconds


def estimate_session_bytes(trials: list[Trial], resolution: tuple[int, int], fps: float, trial_seconds: float, margin: float = 1.2) -> int:
    """Raw frames dominate: W x H x 3 bytes per frame, plus poses and status."""
    w, h = resolution
    per_s = w * h * 3 * fps + 100 * 300 + 125 * 500 + 2000
    return int(sum(trial_seconds_estimate(t, trial_seconds) for t in trials) * per_s * margin)


def head_yaw_deg(T_world_head, forward_world, T_head_eye=None) -> float:
    """Head yaw about world z relative to the subject's forward (+left): the x axis of
    the eye frame (head band x eye-head offset, as groundtruth.head_forward_in_camera)."""
    fx = (T_world_head @ T_head_eye).R[:, 0] if T_head_eye is not None else T_world_head.R[:, 0]
    f = np.asarray(forward_world, float)
    a = math.atan2(fx[1], fx[0]) - math.atan2(f[1], f[0])
    return math.degrees((a + math.pi) % (2 * math.pi) - math.pi)


def recover_killed_trials(session: Path) -> list[str]:
    """A trial left 'recording' (process killed): repair its bag, mark it incomplete."""
    m = load_manifest(session)
    fixed = []
    for tid, rec in m.trials.items():
        if rec.status == "recording":
            note = "interrupted: process killed (found 'recording' on restart)"
            b = bag_dir(session, tid)
            if b.is_dir():
                try:
                    r = repair_bag(b)
                    note += f"; bag repaired ({r.messages} messages kept)" if r.repaired else "; bag complete"
                except Gaze4HRIError as e:
                    note += f"; bag unreadable: {e.what}"
            mark(m, tid, "incomplete", note)
            fixed.append(tid)
    if fixed:
        save_manifest(session, m)
    return fixed


def _archive_bag(session: Path, tid: str, attempt: int) -> None:
    """Move a previous attempt's bag aside so the redo writes a fresh one."""
    b = bag_dir(session, tid)
    if b.exists():
        dst = Path(session) / "bags" / ".attempts" / f"{tid}.{attempt}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.exists():
            shutil.rmtree(dst)
        b.rename(dst)


class _View:
    """What the orchestrator tells the operator view (no-op by default)."""

    def trial(self, i: int, n: int, trial: Trial, prompt: str) -> None: ...
    def status(self, text: str) -> None: ...
    def result(self, trial_id: str, status: str, reason: str | None) -> None: ...
    def message(self, text: str) -> None: ...


def run_session(cfg: SessionConfig, client: DeviceClient, *, inputs: CheckedInputs, view=None,
                confirm: Callable[[str], None] | None = None, should_stop: Callable[[], str | None] = lambda: None,
                eye_head: Callable[[Path], object] | None = None) -> Path:
    """Run (or resume) one subject's session; returns the session directory.

    ``inputs``: :func:`check_inputs` of ``cfg``, run once by the caller before any node
    starts (session_assembly.run_session_args, the one place that validates).
    A new session starts with the subject's eye-head calibration (``eye_head(out_dir)``
    runs it with the backend's motion capture) when the calibration directory has no
    file for the subject or only one older than ``eye_head_max_age_hours``; the
    session's calibration snapshot then always holds the subject's file."""
    view = view or _View()
    sdir = inputs.sdir
    # one writer per session: the lock before anything in the session is written,
    # held until the run ends (a killed run's lock is released by the kernel)
    lock = SessionLock(sdir).acquire()
    try:
        if lock.notice:
            _say(view, lock.notice)
        _check_exists(cfg, sdir)  # under the lock: a run that ended between the check and the lock may have created the session
        return _run_locked(cfg, client, inputs, view, confirm, should_stop, eye_head)
    finally:
        lock.release()


def _run_locked(cfg: SessionConfig, client: DeviceClient, inputs: CheckedInputs, view, confirm, should_stop, eye_head) -> Path:
    """run_session under the session lock."""
    sdir, trials, exists = inputs
    root = Path(cfg.out_dir)

    # ---- pre-checks, before anything is written
    src_dir = Path(cfg.calibration_dir) if cfg.calibration_dir else (sdir / "calibration" if exists else _default_calibration())
    cal_dir, eye_head_note = src_dir, None
    calib = _check_calibration(cal_dir, cfg, need_subject=exists)  # the rig's files now; the subject's after the devices
    _check_camera_source(cfg, calib, cal_dir)
    if not exists:
        need = estimate_session_bytes(trials, cfg.resolution, cfg.fps, cfg.trial_seconds, cfg.disk_margin)
        from ..nodes.common import disk_free_bytes

        free = disk_free_bytes(root)
        if free < need:
            raise SessionError(f"not enough disk space for the session: {_gb(need)} needed, {_gb(free)} free", str(root),
                               "free space, pick another --out-dir, or use --compression zstd")
    view.status("bringing up devices")
    for node, label in DEVICES:
        client.bring_up(node, cfg.addresses.get(node, label))
    client.request("recorder", "status", timeout_s=10.0)
    _wait_streams(client)
    camera_settings = _camera_settings(client)
    if not exists:  # devices up (a missing one is reported first), then the subject's eye-head calibration
        cal_dir, eye_head_note = _subject_eye_head(cfg, src_dir, sdir, eye_head, view)
        calib = _check_calibration(cal_dir, cfg)
    # the robot's safety monitor measures the camera-to-head limit from this subject's
    # eye midpoint (not the head band's origin, about 0.12 m away; issue 20)
    client.request("robot", "eye_head", eye_in_head=[float(x) for x in calib.T_head_eye.t] if calib.T_head_eye is not None else None)

    # ---- session directory
    if exists:
        recovered = recover_killed_trials(sdir)
        for tid in recovered:
            view.message(f"{tid}: marked incomplete (the previous run was killed while recording it)")
        manifest = load_manifest(sdir)
        for tid in cfg.redo:
            if tid not in manifest.trials:
                raise SessionError(f"trial {tid} is not part of this session", str(manifest_path(sdir)), "pick a trial id listed in session.yaml")
            mark(manifest, tid, "pending", f"redo requested (was {manifest.trials[tid].status})")
        added = _add_selected_trials(manifest, cfg, trials)
        if added:
            view.message(f"adding {len(added)} trial(s) to the session: {', '.join(added)}")
        save_manifest(sdir, manifest)
    else:
        sdir.mkdir(parents=True, exist_ok=True)
        settings = cfg.settings()
        settings["eye_head"] = eye_head_note
        settings["camera_settings"] = camera_settings
        manifest = new_manifest(cfg.subject, cfg.backend, [t.trial_id for t in trials], settings)
        if cal_dir.resolve() == (sdir / "calibration").resolve():  # calibrated into the session (sim)
            manifest.calibration = {"dir": "calibration", "source": str(src_dir.resolve()), "hashes": calibration_hashes(cal_dir, cfg.subject)}
        else:
            manifest.calibration = copy_calibration(cal_dir, sdir, cfg.subject)
        save_manifest(sdir, manifest)

    selected = {t.trial_id for t in trials} if (cfg.trial_ids or cfg.experiments) else None
    if manifest.settings.get("camera_settings") != camera_settings:  # resumed with other settings: the latest are kept
        manifest.settings["camera_settings"] = camera_settings
        save_manifest(sdir, manifest)
    todo = [trial_by_id(t) for t in (cfg.redo or [p for p in manifest.pending() if selected is None or p in selected])]
    settings = TrajectorySettings()
    n = len(manifest.trials)
    order = list(manifest.trials)
    for trial in todo:
        reason = should_stop()
        if reason:
            raise Interrupted(reason)
        _check_trial_disk(cfg, sdir, trial)  # before the prompt and the robot's approach: a full disk leaves it pending
        i = order.index(trial.trial_id) + 1
        prompt = prompt_text(trial)
        view.trial(i, n, trial, prompt)
        _run_trial(cfg, client, sdir, manifest, trial, calib, settings, view, confirm, should_stop, prompt, camera_settings)
    return sdir


def _camera_settings(client: DeviceClient) -> dict:
    """The camera's colour settings as it reports them after applying them (exposure,
    gain, white balance, saturation, auto modes), for session.yaml and each trial's bag."""
    try:
        ack = client.request("camera", "settings", timeout_s=10.0)
    except Gaze4HRIError as e:
        return {"error": e.line()}
    return {k: float(v) for k, v in (ack.get("settings") or {}).items()}


def _add_selected_trials(manifest, cfg, trials: list[Trial]) -> list[str]:
    """--resume with --trials/--experiments naming trials the session was recorded
    without: add them as pending, keeping session.yaml in protocol order (issue 16)."""
    if not (cfg.trial_ids or cfg.experiments):
        return []
    from gaze4hri_core.session import TrialRecord

    added = [t.trial_id for t in trials if t.trial_id not in manifest.trials]
    if added:
        ids = sorted([*manifest.trials, *added], key=lambda tid: trial_by_id(tid).index)
        old = dict(manifest.trials)
        manifest.trials = {tid: old.get(tid) or TrialRecord() for tid in ids}
    return added


class CheckedInputs(NamedTuple):
    """What :func:`check_inputs` found: the session directory, the selected trials in
    protocol order, and whether the session exists already (a resume or redo)."""

    sdir: Path
    trials: list[Trial]
    exists: bool


def check_inputs(cfg: SessionConfig) -> CheckedInputs:
    """Validate the request before any device or directory is touched (once per session:
    session_assembly.run_session_args calls it and hands the result to run_session)."""
    sdir = session_dir(Path(cfg.out_dir), cfg.subject)
    try:
        trials = _select(cfg)
        for t in cfg.redo:
            trial_by_id(t)
    except (KeyError, ValueError) as e:
        # a KeyError's str() is the repr of its message: take the message itself, whose quotes are balanced
        what = e.args[0] if e.args and isinstance(e.args[0], str) else str(e)
        raise SessionError(what, None, "see 'gaze4hri-acq session --help' for trial ids and experiments") from None
    check_unlocked(sdir)  # another run records this session: refused before any node starts
    return CheckedInputs(sdir, trials, _check_exists(cfg, sdir))


def _check_exists(cfg: SessionConfig, sdir: Path) -> bool:
    """Whether the session exists, refused when that contradicts --resume/--redo; run again
    under the session lock, the one part of the check another run can change meanwhile."""
    exists = manifest_path(sdir).is_file()
    if exists and not (cfg.resume or cfg.redo):
        raise SessionError("session exists already", str(sdir), "continue it with --resume, redo trials with --redo ID, or pick another --out-dir")
    if (cfg.resume or cfg.redo) and not exists:
        raise SessionError("no session to resume", str(sdir), "start it without --resume")
    return exists


def _eye_head_age_hours(path: Path) -> float | None:
    """Age of a subject's eye-head file from its ``date`` field (else its mtime); None if absent."""
    if not path.is_file():
        return None
    from datetime import datetime, timezone

    import yaml

    try:
        d = yaml.safe_load(path.read_text("utf-8")).get("date")
        t = datetime.fromisoformat(str(d)).timestamp() if d else path.stat().st_mtime
    except (ValueError, AttributeError, yaml.YAMLError):
        t = path.stat().st_mtime
    return max(0.0, (datetime.now(timezone.utc).timestamp() - t) / 3600.0)


def _subject_eye_head(cfg: SessionConfig, src_dir: Path, sdir: Path, eye_head, view) -> tuple[Path, dict]:
    """The calibration directory the session uses, with the subject's eye-head file in
    it: the existing file when recent enough (or with --skip-calibration), else a new
    eye-head calibration run now. The simulator never writes into the lab's
    calibration: its run goes into the session's own calibration/ snapshot."""
    f = src_dir / "subjects" / f"{cfg.subject}.yaml"
    age = _eye_head_age_hours(f)
    if cfg.skip_calibration:
        if age is None:
            raise SessionError(f"--skip-calibration: no eye-head file for subject {cfg.subject}", str(f),
                               "drop --skip-calibration: the session then starts with the subject's eye-head calibration")
        _say(view, f"eye-head calibration skipped: using {f} ({age:.1f} h old)")
        return src_dir, {"file": str(f.resolve()), "age_hours": round(age, 2), "calibrated_now": False, "skipped": True}
    if age is not None and age <= cfg.eye_head_max_age_hours:
        _say(view, f"eye-head calibration of {cfg.subject}: using {f} ({age:.1f} h old, limit {cfg.eye_head_max_age_hours:g} h)")
        return src_dir, {"file": str(f.resolve()), "age_hours": round(age, 2), "calibrated_now": False, "skipped": False}
    why = "none found" if age is None else f"{age:.0f} h old, limit {cfg.eye_head_max_age_hours:g} h"
    if eye_head is None:
        raise SessionError(f"no usable eye-head calibration for subject {cfg.subject} ({why})", str(f),
                           f"run 'gaze4hri-acq calibrate eye-head --subject {cfg.subject}' first")
    out = src_dir
    if cfg.backend == "sim":
        out = sdir / "calibration"
        out.mkdir(parents=True, exist_ok=True)
        copy_calibration(src_dir, sdir, None)
    view.status(f"eye-head calibration of {cfg.subject} ({why})")
    res = eye_head(out)
    path = out / "subjects" / f"{cfg.subject}.yaml"
    msg = getattr(res, "message", "")
    _say(view, f"eye-head calibration of {cfg.subject} ({why}): {msg} -> {path}")
    return out, {"file": str(path.resolve()), "age_hours": 0.0, "calibrated_now": True, "skipped": False, "report": msg}


def _say(view, text: str) -> None:
    """A session line the operator reads whether or not the live view runs, printed
    once: by the view when it shows messages itself (``shows_messages``: the operator
    view prints above its live panel), else on stdout (``--quiet``, the null view)."""
    view.message(text)
    if not getattr(view, "shows_messages", False):
        print(text, flush=True)


def _default_calibration() -> Path:
    from gaze4hri_core.device_config import DEFAULT_CALIBRATION

    return Path(DEFAULT_CALIBRATION)


def _select(cfg: SessionConfig) -> list[Trial]:
    ts = select(experiments=cfg.experiments, trial_ids=cfg.trial_ids)
    if not ts:
        raise ValueError("no trial matches the selection")
    return list(ts)


def _check_camera_source(cfg: SessionConfig, calib, cal_dir: Path) -> None:
    if cfg.camera_pose_source not in ("fk", "mocap"):
        raise SessionError(f"unknown camera pose source {cfg.camera_pose_source!r}", None, "use fk or mocap")
    if cfg.camera_pose_source == "mocap" and calib.T_cambody_camera is None:
        raise SessionError("camera pose source 'mocap' needs the camera rigid body's calibration", str(cal_dir / "camera_body.yaml"),
                           "add camera_body.yaml (camera_body -> camera_color_optical_frame) or use --camera-pose-source fk")


def _check_calibration(cal_dir: Path, cfg: SessionConfig, need_subject: bool = True):
    subj = cfg.subject if (cal_dir / "subjects" / f"{cfg.subject}.yaml").is_file() else None
    calib = load_calibration(cal_dir, subj)
    if subj is None and cfg.backend == "real" and need_subject:
        raise SessionError(f"no eye-head calibration for subject {cfg.subject}", str(cal_dir / "subjects"),
                           f"run 'gaze4hri-acq calibrate eye-head --subject {cfg.subject}' first")
    if cfg.backend == "real":
        oldest = min((cal_dir / n).stat().st_mtime for n in calib.hashes)
        age = (time.time() - oldest) / 86400
        if age > cfg.calibration_max_age_days:
            raise SessionError(f"calibration is {age:.0f} days old (limit {cfg.calibration_max_age_days:.0f})", str(cal_dir),
                               "re-run 'gaze4hri-acq calibrate registration' and 'calibrate targets'")
    return calib


def _wait_streams(client: DeviceClient, timeout_s: float = 30.0) -> None:
    """The first robot state and head-band pose: readiness, with a patience bound that a
    loaded machine does not reach (10 s did, issue 20)."""
    deadline = time.monotonic() + timeout_s
    while client.device_ns == 0 or client.head is None:
        if time.monotonic() > deadline:
            what = "robot state" if client.device_ns == 0 else "head band pose"
            raise SessionError(f"no {what} received within {timeout_s:.0f} s", None, "check that the devices stream (ros2 topic hz)")
        time.sleep(0.05)


def _eye_world(client: DeviceClient, calib) -> np.ndarray:
    if client.head is None:
        return calib.eye_nominal_world
    T = client.head[1]
    Te = _eye_head(calib)
    return T.apply(Te.t) if Te is not None else T.t - np.array([0, 0, calib.head_band_above_eye_m])


def _eye_head(calib):
    """The subject's eye-head offset, else the calibration's default subject's."""
    if calib.T_head_eye is not None:
        return calib.T_head_eye
    p = Path(calib.directory) / "subjects" / "default.yaml"
    if p.is_file():
        from gaze4hri_core.calibration import load_eye_head

        return load_eye_head(p)
    return None


class _TrialFailed(Exception):
    pass


def _run_trial(cfg, client: DeviceClient, sdir, manifest, trial: Trial, calib, settings, view, confirm, should_stop, prompt,
               camera_settings: dict | None = None) -> None:
    tid = trial.trial_id
    rec = manifest.trials[tid]
    if rec.attempts and bag_dir(sdir, tid).exists():
        _archive_bag(sdir, tid, rec.attempts)

    def check():
        r = should_stop()
        if r:
            raise Interrupted(r)
        if client.faults:
            # report the root cause of a cascade (disk full -> recorder stops the robot ->
            # robot fault): a disk-full fault if any, else the first fault
            full = [f for f in client.faults if "disk full" in str(f.get("reason", ""))]
            f = full[0] if full else client.faults[0]
            raise _TrialFailed(f"{f.get('source', 'device')}: {f.get('reason')}")

    client.faults.clear()
    recording = False
    drops0 = _camera_drops(client)
    try:
        client.publish_event("prompt", trial=tid, target=trial.target, condition=trial.condition, experiment=trial.experiment,
                             illumination=trial.illumination, head_yaw_deg=trial.head_yaw_deg, text=prompt)
        if confirm is not None and not cfg.auto_confirm:
            confirm(prompt)
        client.request("robot", "clear_stop")
        plan = plan_trial(trial, calib, _eye_world(client, calib), settings)
        view.status("moving to the start pose")
        _move(cfg, client, plan.approach, check)
        if trial.head_yaw_deg is not None:
            view.status(f"head-pose check: yaw {trial.head_yaw_deg:+.0f} +/- {cfg.head_yaw_tolerance_deg:.0f} deg")
            yaw = _head_check(cfg, client, calib, trial, check)
            # a line that stays: the check itself can pass between two redraws of the table
            _say(view, f"{tid}: head-pose check passed: measured yaw {yaw:+.1f} deg, target {trial.head_yaw_deg:+.0f} "
                       f"+/- {cfg.head_yaw_tolerance_deg:.0f} deg, held {cfg.head_hold_s:g} s")
        # the colour options read back now, recorded with this trial (the study saves rgb_camera_settings.json per trial)
        trial_camera = _camera_settings(client)
        if "error" in trial_camera:
            trial_camera = camera_settings or trial_camera
        prev = (rec.status, rec.attempts, rec.started, rec.reason, rec.bag)
        mark(manifest, tid, "recording", bag=str(bag_dir(sdir, tid).relative_to(sdir)))
        save_manifest(sdir, manifest)
        need = _trial_bytes(cfg, trial)
        try:
            ack = client.request("recorder", "start", timeout_s=30.0, trial=tid, bag_dir=str(bag_dir(sdir, tid)), compression=cfg.compression,
                                 fail_after_bytes=cfg.fail_after_bytes, start_ns=client.device_ns, need_bytes=need)
        except Gaze4HRIError:
            if _free_bytes(sdir) >= need:
                raise
            # the recorder refused for want of room (the disk filled since the check before
            # the trial): nothing was recorded, so the trial goes back to what it was
            rec.status, rec.attempts, rec.started, rec.reason, rec.bag = prev
            _abort_trial(client, False, "disk full")
            _save_or_disk_full(sdir, manifest, f"before {tid}")
            view.result(tid, rec.status, "disk full")
            raise _disk_full_error(sdir, trial, need) from None
        recording = True
        t0 = int(ack["start_ns"])
        client.publish_event("start", trial=tid, target=trial.target, condition=trial.condition, experiment=trial.experiment,
                             illumination=trial.illumination, head_yaw_deg=trial.head_yaw_deg, camera_motion=trial.to_dict()["camera_motion"])
        client.publish_event("camera_settings", trial=tid, settings=trial_camera)
        view.status("recording")
        if plan.motion is not None:
            _move(cfg, client, plan.motion, check, wait=False)
        end = t0 + int(cfg.trial_seconds * 1e9)
        if not client.wait_device_time(end, timeout_wall_s=cfg.trial_seconds * 20 + 30, check=check):
            raise _TrialFailed("device time stopped advancing (no robot state)")
        if plan.motion is not None:
            _wait_motion(cfg, client, plan.motion.name, check)
            end = max(end, client.motion_done[plan.motion.name])
        if not client.wait_device_time(end, timeout_wall_s=120.0, check=check, streams=("camera", "mocap", "robot")):
            lag = {k: (end - v) / 1e9 for k, v in client.stream_ns.items() if v < end}
            raise _TrialFailed(f"stream(s) stopped before the trial's end: {', '.join(f'{k} {v:.1f} s behind' for k, v in lag.items())}")
        client.publish_event("stop", trial=tid)
        ack = client.request("recorder", "stop", timeout_s=120.0, end_ns=end)
        recording = False
        counts = ack.get("counts", {})
        frames = int(counts.get(Topics.IMAGE, 0))
        dropped = int(ack.get("dropped_messages", 0)) + _camera_drops(client) - drops0
        mark(manifest, tid, "done", None, frames=frames, dropped_frames=dropped)
        save_manifest(sdir, manifest)
        view.result(tid, "done", None)
    except _TrialFailed as e:
        _trial_failed(client, sdir, manifest, tid, str(e), recording, view)
    except Interrupted as e:
        # the manifest first: under ros2 launch the device processes got the same Ctrl-C
        # and close themselves (robot stopped, bag closed with its metadata), so the
        # requests below may go unanswered; each is bounded to keep the exit within 5 s
        mark(manifest, tid, "incomplete" if recording else "pending", f"interrupted: {e.reason}" if recording else None)
        _save_or_disk_full(sdir, manifest, e.reason)
        _abort_trial(client, recording, e.reason, robot_timeout_s=1.5, recorder_timeout_s=2.5)
        view.result(tid, "incomplete" if recording else "pending", e.reason)
        raise
    except _DiskFullBeforeTrial:
        raise  # the trial is back to what it was: not a failure of the trial
    except Gaze4HRIError as e:
        # a refusal (robot motion refused by the safety preview, recorder refused): the
        # trial fails, the session goes on; a recorder stop refused for a full disk is
        # the disk-full root cause and ends the session
        _trial_failed(client, sdir, manifest, tid, e.line(), recording, view)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        _trial_failed(client, sdir, manifest, tid, f"disk full while recording {tid} (saving session.yaml: {e.strerror})", recording, view)


def _gb(n: int) -> str:
    """Bytes for the operator: GB, or MB below 1 GB (a small disk read "0.0 GB free")."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.1f} MB"


def _trial_bytes(cfg, trial: Trial) -> int:
    """The free space one trial needs (the recorder refuses to start with less)."""
    return estimate_session_bytes([trial], cfg.resolution, cfg.fps, cfg.trial_seconds, cfg.disk_margin)


def _free_bytes(sdir: Path) -> int:
    from ..nodes.common import disk_free_bytes

    return disk_free_bytes(Path(sdir) / "bags")


class _DiskFullBeforeTrial(SessionError):
    """Too little room to start a trial: the session ends, the trial stays pending."""


def _disk_full_error(sdir: Path, trial: Trial, need: int) -> SessionError:
    return _DiskFullBeforeTrial(f"disk full before trial {trial.trial_id}: {_gb(_free_bytes(sdir))} free, about {_gb(need)} needed; "
                        "it and the trials after it are still pending", str(sdir),
                        "free disk space (or move the session folder to a larger disk and pass that --out-dir), then run the session again with --resume")


def _check_trial_disk(cfg, sdir: Path, trial: Trial) -> None:
    """Between trials: too little room for the next one ends the session with one line
    and its fix, the trial still pending (issue 20, item 6: every remaining trial was
    marked failed by the recorder's refusal, with no error line)."""
    need = _trial_bytes(cfg, trial)
    if _free_bytes(sdir) < need:
        raise _disk_full_error(sdir, trial, need)


def _trial_failed(client: DeviceClient, sdir: Path, manifest, tid: str, reason: str, recording: bool, view) -> None:
    """Mark a trial failed with its reason; a full disk (the reason, or any fault the
    devices reported) ends the session with the operator's fix, other failures let it go on."""
    full = [str(f.get("reason")) for f in client.faults if "disk full" in str(f.get("reason", ""))]
    if "disk full" not in reason and full:
        reason = f"recorder: {full[0]}"
    _abort_trial(client, recording, reason)
    mark(manifest, tid, "failed", reason)
    if "disk full" in reason:
        fix = "free disk space, then run the session again with --resume"
        try:
            save_manifest(sdir, manifest)
        except OSError:  # even the ballast did not leave room (docs/acquisition.md, disk reserve)
            fix += " (session.yaml could not be updated: the trial shows 'recording' and --resume repairs it)"
        view.result(tid, "failed", reason)
        raise SessionError(reason, str(sdir), fix) from None
    _save_or_disk_full(sdir, manifest, reason)
    view.result(tid, "failed", reason)


def _save_or_disk_full(sdir: Path, manifest, context: str) -> None:
    """save_manifest; ENOSPC becomes the one-line disk-full error with its fix."""
    try:
        save_manifest(sdir, manifest)
    except OSError as e:
        if e.errno != errno.ENOSPC:
            raise
        raise SessionError(f"disk full: session.yaml could not be saved ({context})", str(sdir),
                           "free disk space, then run the session again with --resume (it repairs the trial)") from None


def _abort_trial(client: DeviceClient, recording: bool, reason: str, robot_timeout_s: float = 5.0, recorder_timeout_s: float = 120.0) -> None:
    try:
        client.request("robot", "stop", reason=reason, timeout_s=robot_timeout_s)
    except Gaze4HRIError:
        pass  # the robot node is gone; the driver's own watchdog and the controller stop it
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


def _move(cfg, client: DeviceClient, move, check, wait: bool = True) -> None:
    client.motion_done.pop(move.name, None)
    ack = client.request("robot", "move", move=move_to_json(move), timeout_s=15.0)
    if wait:
        _wait_motion(cfg, client, move.name, check, float(ack.get("duration_s", 10.0)))


def _wait_motion(cfg, client: DeviceClient, name: str, check, duration_s: float | None = None) -> None:
    deadline = time.monotonic() + cfg.motion_timeout_s
    while name not in client.motion_done:
        check()
        if time.monotonic() > deadline:
            raise _TrialFailed(f"robot motion '{name}' did not finish within {cfg.motion_timeout_s:.0f} s")
        time.sleep(0.01)


def _head_check(cfg, client: DeviceClient, calib, trial: Trial, check) -> float:
    """Yaw within tolerance for ``head_hold_s`` of device time before recording starts;
    returns the last measured yaw (deg)."""
    deadline = time.monotonic() + cfg.head_check_timeout_s
    ok_since = None
    yaw = float("nan")
    while True:
        check()
        if client.head is not None:
            t, T = client.head
            yaw = head_yaw_deg(T, calib.subject_forward_world, _eye_head(calib))
            if abs(yaw - trial.head_yaw_deg) <= cfg.head_yaw_tolerance_deg:
                ok_since = t if ok_since is None else ok_since
                if t - ok_since >= cfg.head_hold_s * 1e9:
                    return yaw
            else:
                ok_since = None
        if time.monotonic() > deadline:
            raise _TrialFailed(f"head-pose check: yaw {yaw:+.1f} deg, need {trial.head_yaw_deg:+.0f} +/- {cfg.head_yaw_tolerance_deg:.0f} deg")
        time.sleep(0.01)
