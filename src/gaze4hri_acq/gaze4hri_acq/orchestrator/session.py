"""The session orchestrator: runs the protocol trial by trial through the device
nodes (lifecycle services, control/ack topics, events), writes per-trial status to
session.yaml atomically, resumes, redoes, and survives signals and kills.

The steps have their own modules: the calibration a session uses (calibration.py), the
session record across runs (record.py), one trial through the devices (trial.py) with
its motions (motion.py) and head-pose check (head_pose.py), the disk space it needs
(disk.py), what the operator is told (view.py). Their public names used outside the
orchestrator are importable from here.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from gaze4hri_core.errors import SessionError
from gaze4hri_core.protocol import Trial, select, trial_by_id
from gaze4hri_core.session import manifest_path, session_dir
from gaze4hri_core.session_lock import SessionLock, check_unlocked
from gaze4hri_core.trajectories import TrajectorySettings

from ..session_config import SessionConfig
from . import head_pose
from .calibration import check_calibration, check_camera_source, default_calibration, subject_eye_head
from .client import DeviceClient, Interrupted
from .disk import check_session_disk, check_trial_disk, estimate_session_bytes, trial_seconds_estimate
from .head_pose import head_yaw_deg
from .record import keep_camera_settings, new_record, pace_note, recover_killed_trials, resumed_record
from .trial import camera_settings_of, run_trial
from .view import NullView, prompt_text, say

__all__ = ["SessionConfig", "run_session", "check_inputs", "CheckedInputs", "prompt_text", "estimate_session_bytes",
           "trial_seconds_estimate", "recover_killed_trials", "head_yaw_deg"]

# the names the operator view and tests import from here, as before the split
_View, _say, _eye_head, _subject_eye_head = NullView, say, head_pose.eye_head, subject_eye_head

DEVICES = (("camera", "camera"), ("mocap", "motion capture"), ("robot", "robot"))


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
    view = view or NullView()
    sdir = inputs.sdir
    # one writer per session: the lock before anything in the session is written,
    # held until the run ends (a killed run's lock is released by the kernel)
    lock = SessionLock(sdir).acquire()
    try:
        if lock.notice:
            say(view, lock.notice)
        _check_exists(cfg, sdir)  # under the lock: a run that ended between the check and the lock may have created it
        return _run_locked(cfg, client, inputs, view, confirm, should_stop, eye_head)
    finally:
        lock.release()


def _run_locked(cfg: SessionConfig, client: DeviceClient, inputs: CheckedInputs, view, confirm, should_stop,
                eye_head) -> Path:
    """run_session under the session lock."""
    sdir, trials, exists = inputs

    # ---- pre-checks, before anything is written
    src_dir = (Path(cfg.calibration_dir) if cfg.calibration_dir
               else (sdir / "calibration" if exists else default_calibration()))
    cal_dir, eye_head_note = src_dir, None
    calib = check_calibration(cal_dir, cfg, need_subject=exists)  # the rig's files now; the subject's after the devices
    check_camera_source(cfg, calib, cal_dir)
    if not exists:
        check_session_disk(cfg, Path(cfg.out_dir), trials)
    camera_settings = _bring_up(cfg, client, view)
    if not exists:  # devices up (a missing one is reported first), then the subject's eye-head calibration
        cal_dir, eye_head_note = subject_eye_head(cfg, src_dir, sdir, eye_head, view)
        calib = check_calibration(cal_dir, cfg)
    # the robot's safety monitor measures the camera-to-head limit from this subject's
    # eye midpoint (not the head band's origin, about 0.12 m away; issue 20)
    client.request("robot", "eye_head",
                   eye_in_head=[float(x) for x in calib.T_head_eye.t] if calib.T_head_eye is not None else None)

    # ---- session directory
    if exists:
        manifest = resumed_record(cfg, sdir, trials, view)
    else:
        manifest = new_record(cfg, sdir, trials, cal_dir, src_dir, eye_head_note, camera_settings)
    keep_camera_settings(sdir, manifest, camera_settings)  # resumed with other settings: the latest are kept
    _run_trials(cfg, client, sdir, manifest, trials, calib, view, confirm, should_stop, camera_settings)
    return sdir


def _bring_up(cfg: SessionConfig, client: DeviceClient, view) -> dict:
    """The devices up and streaming; returns the camera's colour settings."""
    view.status("bringing up devices")
    for node, label in DEVICES:
        client.bring_up(node, cfg.addresses.get(node, label))
    client.request("recorder", "status", timeout_s=10.0)
    _wait_streams(client)
    return camera_settings_of(client)


def _run_trials(cfg: SessionConfig, client: DeviceClient, sdir: Path, manifest, trials: list[Trial], calib, view,
                confirm, should_stop, camera_settings: dict) -> None:
    """The trials still to record (the redone ones, else the pending ones of the
    selection), in session order, each after a disk check that leaves it pending."""
    selected = {t.trial_id for t in trials} if (cfg.trial_ids or cfg.experiments) else None
    todo = [trial_by_id(t) for t in (cfg.redo or [p for p in manifest.pending() if selected is None or p in selected])]
    settings = TrajectorySettings()
    n = len(manifest.trials)
    order = list(manifest.trials)
    for trial in todo:
        reason = should_stop()
        if reason:
            raise Interrupted(reason)
        check_trial_disk(cfg, sdir, trial)  # before the prompt and the robot's approach: a full disk leaves it pending
        i = order.index(trial.trial_id) + 1
        prompt = prompt_text(trial)
        view.trial(i, n, trial, prompt)
        run_trial(cfg, client, sdir, manifest, trial, calib, settings, view, confirm, should_stop, prompt,
                  camera_settings)
    note = pace_note(manifest)
    if note and todo:
        say(view, note)


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
    if not exists:
        _refuse_orphan_recordings(sdir)
    if exists and not (cfg.resume or cfg.redo):
        raise SessionError("session exists already", str(sdir),
                           "continue it with --resume, redo trials with --redo ID, or pick another --out-dir")
    if (cfg.resume or cfg.redo) and not exists:
        raise SessionError("no session to resume", str(sdir), "start it without --resume")
    return exists


def _refuse_orphan_recordings(sdir: Path) -> None:
    """A folder whose bags/ holds recordings but has no session.yaml is not a new session:
    a run would write into it (issue 31). Refused before anything starts, the folder untouched."""
    bags = sdir / "bags"
    try:
        held = sorted(p.name for p in bags.iterdir())
    except OSError:  # no bags/ (or not a folder): nothing recorded here
        return
    if not held:
        return
    trials = [n for n in held if not n.startswith(".")]
    attempts = [n for n in held if n.startswith(".")]
    what = f"{len(trials)} trial recording(s) ({', '.join(trials[:3])}{', ...' if len(trials) > 3 else ''})"
    if not trials:
        what = "earlier attempts (" + ", ".join(f"bags/{n}" for n in attempts) + ")"
    elif attempts:
        what += " and earlier attempts"
    raise SessionError(f"the session folder holds {what} but no session.yaml", str(sdir),
                       "restore its session.yaml (from a backup) and continue with --resume, "
                       "or pick another --out-dir or --subject")


def _select(cfg: SessionConfig) -> list[Trial]:
    ts = select(experiments=cfg.experiments, trial_ids=cfg.trial_ids)
    if not ts:
        raise ValueError("no trial matches the selection")
    return list(ts)


def _wait_streams(client: DeviceClient, timeout_s: float = 30.0) -> None:
    """The first robot state and head-band pose: readiness, with a patience bound that a
    loaded machine does not reach (10 s did, issue 20)."""
    deadline = time.monotonic() + timeout_s
    while client.device_ns == 0 or client.head is None:
        if time.monotonic() > deadline:
            what = "robot state" if client.device_ns == 0 else "head band pose"
            raise SessionError(f"no {what} received within {timeout_s:.0f} s", None,
                               "check that the devices stream (ros2 topic hz)")
        time.sleep(0.05)
