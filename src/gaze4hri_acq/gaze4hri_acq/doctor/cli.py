"""The ``gaze4hri-acq doctor`` command: the session's backend, address, calibration and
recording options (the same SessionConfig fields, so the doctor checks what the session
would use), ``--subject`` for the subject's own checks, ``--json`` for scripts. Exit 0
when nothing fails, 1 when a check fails (2: bad input, as every command)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["add_doctor", "doctor_main", "DOCTOR_FIELDS"]

#: the session options the doctor takes (SessionConfig fields; help, choices and defaults from the schema)
DOCTOR_FIELDS = ("backend", "out_dir", "experiments", "trial_ids", "resolution", "fps", "trial_seconds", "compression",
                 "calibration_dir", "seed", "robot_ip", "robot_model", "motive_ip", "local_ip", "camera_serial",
                 "camera_pose_source")

_EPILOG = """\
examples:
  gaze4hri-acq doctor --backend sim                                    # the simulated lab
  gaze4hri-acq doctor --backend real --robot-ip 192.168.1.102 --motive-ip 10.0.0.2 --local-ip 10.0.0.5
  gaze4hri-acq doctor --backend real --subject S12 --json > doctor.json

exit codes:
  0   nothing fails (warnings allowed)
  1   some check fails (the table says what, the value measured and the fix)
  2   bad input (one line on stderr)"""


def add_doctor(sub, formatter_class=argparse.ArgumentDefaultsHelpFormatter) -> argparse.ArgumentParser:
    """The ``doctor`` subparser on ``sub`` (the gaze4hri-acq subcommands)."""
    from ..session_config import cli_options

    d = sub.add_parser("doctor", help="check the robot, camera, motion capture, calibration and host before a session",
                       formatter_class=formatter_class, epilog=_EPILOG,
                       description="One table of checks, each pass / warn / fail with the value measured and the fix. "
                                   "The session runs the same checks at start-up.")
    d.add_argument("--subject", default=None, help="also check this subject's eye-head calibration")
    for o in cli_options():
        if o["dest"] not in DOCTOR_FIELDS:
            continue
        kw = {"dest": o["dest"], "default": o["default"], "help": o["help"]}
        kw.update({k: o[k] for k in ("choices", "nargs", "metavar") if o.get(k) is not None})
        d.add_argument(o["flag"], **kw)
    d.add_argument("--json", action="store_true", help="print JSON (every check and the verdict) instead of the table")
    d.add_argument("--camera-playback", type=Path, metavar="FILE.db3",
                   help="check a RealSense recording instead of the live camera (rehearsal)")
    d.add_argument("--camera-seconds", type=float, default=2.0, help="length of the camera stream test (s)")
    return d


def _config(ns: argparse.Namespace):
    """The SessionConfig the session would validate from these options (and config/orchestrator.yaml's tuning)."""
    from ..session_config import session_config, tuning_field_names

    tuning = {}
    try:
        from ..runner import node_parameters

        tuning = {k: v for k, v in node_parameters("orchestrator").items() if k in tuning_field_names()}
    except ImportError:  # no rclpy: the model's defaults (the same values)
        pass
    values = {f: getattr(ns, f) for f in DOCTOR_FIELDS}
    return session_config("gaze4hri-acq doctor", subject=ns.subject or "default", **tuning, **values)


def doctor_main(ns: argparse.Namespace, out=None) -> int:
    """Run the checks, print the table (or JSON); 0 when nothing fails, else 1."""
    from .record import exit_code
    from .render import render_json, render_table
    from .run import DoctorTargets, run_doctor

    out = out or sys.stdout
    cfg = _config(ns)
    targets = DoctorTargets(camera_playback=ns.camera_playback, camera_s=float(ns.camera_seconds))
    checks = run_doctor(cfg, targets, subject=ns.subject is not None)
    print(render_json(checks) if ns.json else render_table(checks), file=out)
    return exit_code(checks)
