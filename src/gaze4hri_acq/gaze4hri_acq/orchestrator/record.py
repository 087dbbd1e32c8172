"""The session record (session.yaml and the bags beside it) across runs: a new session's
record, a resumed one's (killed trials repaired and marked, redos and added trials
pending), and a redone trial's earlier bag moved to bags/.attempts/.

Trial states (gaze4hri_core.session.TRIAL_STATUSES): pending -> recording -> done |
failed (device fault, safety stop, head-pose check, disk full: reason recorded) |
incomplete (interrupted by SIGINT/SIGTERM, or found 'recording' after a SIGKILL on
the next start, its bag repaired).
"""
from __future__ import annotations

import shutil
import statistics
from pathlib import Path

from gaze4hri_core.calibration import calibration_hashes
from gaze4hri_core.errors import Gaze4HRIError, SessionError
from gaze4hri_core.protocol import Trial, trial_by_id
from gaze4hri_core.session import (
    bag_dir,
    copy_calibration,
    load_manifest,
    manifest_path,
    mark,
    new_manifest,
    save_manifest,
)

from ..recorder.repair import repair_bag
from ..session_config import SessionConfig

__all__ = ["recover_killed_trials", "archive_bag", "add_selected_trials", "resumed_record", "new_record",
           "keep_camera_settings", "pace_note", "KEPT_UP"]

#: a simulated session kept up with its requested factor when it reached this share of it
KEPT_UP = 0.9


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


def archive_bag(session: Path, tid: str, attempt: int) -> None:
    """Move a previous attempt's bag aside so the redo writes a fresh one."""
    b = bag_dir(session, tid)
    if b.exists():
        dst = Path(session) / "bags" / ".attempts" / f"{tid}.{attempt}"
        dst.parent.mkdir(parents=True, exist_ok=True)
        if dst.exists():
            shutil.rmtree(dst)
        b.rename(dst)


def add_selected_trials(manifest, cfg, trials: list[Trial]) -> list[str]:
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


def resumed_record(cfg: SessionConfig, sdir: Path, trials: list[Trial], view):
    """An existing session's record for this run: killed trials repaired and marked
    incomplete, the redone trials pending again, newly selected trials added."""
    recovered = recover_killed_trials(sdir)
    for tid in recovered:
        view.message(f"{tid}: marked incomplete (the previous run was killed while recording it)")
    manifest = load_manifest(sdir)
    for tid in cfg.redo:
        if tid not in manifest.trials:
            raise SessionError(f"trial {tid} is not part of this session", str(manifest_path(sdir)),
                               "pick a trial id listed in session.yaml")
        mark(manifest, tid, "pending", f"redo requested (was {manifest.trials[tid].status})")
    added = add_selected_trials(manifest, cfg, trials)
    if added:
        view.message(f"adding {len(added)} trial(s) to the session: {', '.join(added)}")
    save_manifest(sdir, manifest)
    return manifest


def new_record(cfg: SessionConfig, sdir: Path, trials: list[Trial], cal_dir: Path, src_dir: Path,
               eye_head_note: dict | None, camera_settings: dict):
    """A new session's directory and record: its settings, and the calibration it uses
    (copied in, or already there when the subject was calibrated into the session)."""
    sdir.mkdir(parents=True, exist_ok=True)
    settings = cfg.settings()
    settings["eye_head"] = eye_head_note
    settings["camera_settings"] = camera_settings
    manifest = new_manifest(cfg.subject, cfg.backend, [t.trial_id for t in trials], settings)
    if cal_dir.resolve() == (sdir / "calibration").resolve():  # calibrated into the session (sim)
        manifest.calibration = {"dir": "calibration", "source": str(src_dir.resolve()),
                                "hashes": calibration_hashes(cal_dir, cfg.subject)}
    else:
        manifest.calibration = copy_calibration(cal_dir, sdir, cfg.subject)
    save_manifest(sdir, manifest)
    return manifest


def keep_camera_settings(sdir: Path, manifest, camera_settings: dict) -> None:
    """A session resumed with other camera settings keeps the latest ones."""
    if manifest.settings.get("camera_settings") != camera_settings:
        manifest.settings["camera_settings"] = camera_settings
        save_manifest(sdir, manifest)


def pace_note(manifest) -> str | None:
    """One line on how fast a simulated session's clock ran against the factor it asked
    for (settings.real_time_factor), from each done trial's measured factor; None for
    real devices or before any trial is done."""
    asked = manifest.settings.get("real_time_factor")
    got = sorted(r.real_time_factor for r in manifest.trials.values()
                 if r.status == "done" and r.real_time_factor is not None)
    if not asked or not got:
        return None
    median = statistics.median(got)
    spread = f", {got[0]:g}-{got[-1]:g}x" if len(got) > 1 else ""
    head = (f"simulated time ran at {median:.2f}x real time (median of {len(got)} trial{'s' * (len(got) != 1)}"
            f"{spread}; requested {asked:g}x)")
    if median >= KEPT_UP * asked:
        return head + ": kept up"
    return (head + ": this machine cannot run the simulation at the requested pace (lower --real-time-factor, "
            "real_time_factor:= under ros2 launch, or the resolution, or close other work)")
