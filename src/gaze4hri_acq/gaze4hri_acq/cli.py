"""``gaze4hri-acq``: session, doctor, trials, calibrate, replay, and node (what the launch files run).

Bad input ends in one line ``error: ...`` and a non-zero exit, never a traceback.
Exit codes (:data:`EXIT_CODES`): 0 every requested trial done, 1 some trial failed or
is incomplete (the summary names them and prints the ``--redo`` command), 2 bad input
or a refusal (one line), 130 interrupted by Ctrl-C (SIGINT), 143 by SIGTERM.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from gaze4hri_core.device_config import DEFAULT_MOTIVE_IP, DEFAULT_ROBOT_IP
from gaze4hri_core.errors import Gaze4HRIError
from gaze4hri_core.protocol import EXPERIMENTS

from .session_config import BACKENDS, SessionConfig, cli_options, session_config, tuning_field_names

__all__ = ["main", "SessionArgs", "run_session_args", "build_parser"]

# the session is assembled below the entry points (CLI, launch, node host): session_assembly
from .session_assembly import run_session_args, session_exit_code  # noqa: E402

#: documented exit codes of ``gaze4hri-acq`` (README, --help)
EXIT_CODES = {0: "every requested trial done",
              1: "some trial failed or incomplete (see the summary; --redo ID records it again)",
              2: "bad input or a refusal (one line on stderr)",
              130: "interrupted by Ctrl-C (SIGINT); continue with --resume",
              143: "terminated (SIGTERM); continue with --resume"}
_EXIT_HELP = "exit codes:\n" + "\n".join(f"  {k:<4d}{v}" for k, v in EXIT_CODES.items())


#: the one session configuration (gaze4hri_acq.session_config): CLI options, launch
#: arguments and orchestrator parameters; ``SessionArgs`` is its historical name here
SessionArgs = SessionConfig


def _d(name: str):
    """A session option's default: the SessionConfig field's (one source of truth)."""
    return SessionConfig.model_fields[name].default


def _positive(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {s!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {s}")
    return v


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2
        sys.stderr.write(f"error: {message} (gaze4hri-acq {self.prog.split()[-1]}): see --help\n")
        sys.exit(2)


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown after every option's help (not the empty ones: None, off, []);
    epilog examples kept as written."""

    def _get_help_string(self, action):
        d = action.default
        if d is None or d is False or (isinstance(d, (list, tuple, str)) and not d):
            return action.help
        return super()._get_help_string(action)


_SESSION_EPILOG = """\
examples:
  gaze4hri-acq session --subject S01 --backend sim --out-dir sessions               # simulated lab, 63 trials
  gaze4hri-acq session --subject S01 --backend sim --trials illum100_P5 arc_P5      # a few (gaze4hri-acq trials)
  gaze4hri-acq session --subject S01 --backend sim --interactive --experiments conflict   # rehearse the prompts
  gaze4hri-acq session --subject S01 --backend sim --resume --trials mutual_h_fast  # add a trial to a session
  gaze4hri-acq session --subject S12 --backend real --robot-ip 192.168.1.102 --motive-ip 10.0.0.2 --local-ip 10.0.0.5
  gaze4hri-acq session --subject S12 --backend real --redo arc_P5                   # record a failed trial again

keys in the live view: Enter confirms a prompt, s stops the robot (/robot/stop), Ctrl-C ends the session.

""" + _EXIT_HELP


_MAIN_EPILOG = """\
examples:
  gaze4hri-acq trials                                                  # the 63 trials of the protocol
  gaze4hri-acq doctor --backend real --robot-ip 192.168.1.102 --motive-ip 10.0.0.2   # check the lab first
  gaze4hri-acq session --subject S01 --backend sim --out-dir sessions  # simulated lab, all trials
  gaze4hri-acq session --subject S01 --backend sim --interactive --trials conflict_left_H2  # rehearse prompts
  gaze4hri-acq calibrate eye-head --subject S01 --backend sim --out /tmp/cal
  gaze4hri-acq replay sessions/S01 --trial illum100_P5 --rate 0.5

""" + _EXIT_HELP


def build_parser() -> argparse.ArgumentParser:
    from gaze4hri_core import __version__

    p = _Parser(prog="gaze4hri-acq", description="Gaze4HRI acquisition: sessions, calibration runs, replay.",
                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=_MAIN_EPILOG)
    p.add_argument("--version", action="version", version=f"gaze4hri-acq {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser, metavar="COMMAND")
    for add in (_add_session, _add_doctor, _add_trials, _add_calibrate, _add_replay, _add_node):
        add(sub)
    return p


def _add_session(sub) -> None:
    s = sub.add_parser("session", help="record a subject's session (the 63 trials of the protocol)",
                       formatter_class=_HelpFormatter, epilog=_SESSION_EPILOG,
                       description="Record one subject's session: eye-head calibration, then the protocol's trials, "
                                   "one rosbag2 (MCAP) bag each, status in OUT_DIR/SUBJECT/session.yaml.")
    for o in cli_options():  # one option per SessionConfig field: flag, help, choices and default from the schema
        kw = {"dest": o["dest"], "default": o["default"], "help": argparse.SUPPRESS if o["hidden"] else o["help"]}
        if o["flag_only"]:
            kw["action"] = "store_true"
        else:
            kw.update({k: o[k] for k in ("choices", "nargs", "metavar") if o.get(k) is not None})
        if o["required"]:
            kw.pop("default")
            kw["required"] = True
        s.add_argument(o["flag"], **kw)


def _add_doctor(sub) -> None:
    from .doctor.cli import add_doctor

    add_doctor(sub, _HelpFormatter)


def _add_trials(sub) -> None:
    t = sub.add_parser("trials", help="list the protocol's trials (ids for --trials and --redo)",
                       formatter_class=_HelpFormatter,
                       description="The 63 trials of the protocol: id, experiment, condition, target, illumination, "
                                   "required head yaw, camera motion and recording length.",
                       epilog="examples:\n  gaze4hri-acq trials\n  gaze4hri-acq trials --experiments conflict mutual\n"
                              "  gaze4hri-acq trials --json > trials.json")
    t.add_argument("--experiments", nargs="+", choices=EXPERIMENTS, help="only these experiments (default: all)")
    t.add_argument("--trial-seconds", type=_positive, default=_d("trial_seconds"),
                   help="fixed-camera recording length used for the durations (s)")
    t.add_argument("--json", action="store_true", help="print JSON (one object per trial) instead of a table")


def _add_calibrate(sub) -> None:
    c = sub.add_parser("calibrate", help="calibration runs: registration, eye-head, targets",
                       formatter_class=_HelpFormatter,
                       epilog="examples:\n  gaze4hri-acq calibrate eye-head --subject S12 --backend real\n"
                              "  gaze4hri-acq calibrate registration --backend sim --out /tmp/cal\n\n" + _EXIT_HELP)
    c.add_argument("procedure", choices=("registration", "eye-head", "targets"), help="which calibration to run")
    c.add_argument("--backend", choices=BACKENDS, default="sim",
                   help="simulated devices or the lab's UR5 and OptiTrack")
    c.add_argument("--subject", help="subject id (needed by eye-head)")
    c.add_argument("--calibration", type=Path, dest="calibration_dir",
                   help="calibration directory to update (default: the repository's calibration/)")
    c.add_argument("--out", type=Path, help="write the result here instead of the calibration directory")
    c.add_argument("--robot-ip", default=DEFAULT_ROBOT_IP, help="UR controller address (real backend)")
    c.add_argument("--motive-ip", default=DEFAULT_MOTIVE_IP, help="Motive PC address (real backend)")
    c.add_argument("--seed", type=int, default=0, help="simulation seed (sim backend)")


def _add_replay(sub) -> None:
    r = sub.add_parser("replay", help="republish a recorded session on its topics", formatter_class=_HelpFormatter,
                       epilog="examples:\n  gaze4hri-acq replay sessions/S01\n"
                              "  gaze4hri-acq replay sessions/S01 --trial illum100_P5 --rate 0.5 --loop")
    r.add_argument("session", type=Path, help="session directory (holds session.yaml)")
    r.add_argument("--trial", action="append", dest="trials", metavar="ID",
                   help="replay only this trial (repeatable; default: all done trials)")
    r.add_argument("--rate", type=_positive, default=1.0, help="playback speed factor (1 = original timing)")
    r.add_argument("--loop", action="store_true", help="start over at the end")
    r.add_argument("--quiet", action="store_true", help="no progress output")
    r.add_argument("--wait-for-subscribers", action="store_true",
                   help="hold each trial's first message until every topic has a subscriber (a listener started "
                        "later still gets the first messages; rosbag play's flag of the same name)")


def _add_node(sub) -> None:
    from .nodes.table import NODES

    n = sub.add_parser("node", help="run device nodes in this process (what the launch files start)",
                       formatter_class=_HelpFormatter,
                       epilog="examples:\n  gaze4hri-acq node camera mocap robot recorder --backend sim")
    devices = ", ".join(name for name in NODES.names() if name != "orchestrator")
    n.add_argument("names", nargs="+", help=f"node names from the node table ({devices}; "
                                            "orchestrator alone: the session from its ROS parameters)")
    n.add_argument("--backend", choices=BACKENDS, default="sim", help="simulated devices or the lab's")
    n.add_argument("--sim-seed", type=int, default=_d("seed"), help="simulation seed (sim backend)")
    n.add_argument("--sim-subject", default="default", help="simulated subject (its eye-head offset; sim backend)")
    n.add_argument("--sim-real-time-factor", type=_positive, default=_d("real_time_factor"),
                   help="at most this many simulated seconds per wall second (sim backend)")
    n.add_argument("--sim-calibration", type=Path,
                   help="calibration the simulated world is built from (default: the package's)")


def print_trials(experiments=None, trial_seconds: float = 5.0, as_json: bool = False) -> int:
    """``gaze4hri-acq trials``: the protocol as a table (or JSON)."""
    import json

    from gaze4hri_core.protocol import select

    from .orchestrator.session import trial_seconds_estimate

    rows = []
    for t in select(experiments=tuple(experiments) if experiments else None):
        rows.append({"id": t.trial_id, "experiment": t.experiment, "condition": str(t.condition), "target": t.target,
                     "illumination_pct": t.illumination, "head_yaw_deg": t.head_yaw_deg,
                     "camera_motion": _motion(t.camera_motion),
                     "duration_s": round(trial_seconds_estimate(t, trial_seconds), 1)})
    if as_json:
        print(json.dumps(rows, indent=1))
        return 0
    cols = [("id", "ID"), ("experiment", "EXPERIMENT"), ("condition", "CONDITION"), ("target", "TARGET"),
            ("illumination_pct", "LIGHT %"), ("head_yaw_deg", "HEAD YAW"), ("camera_motion", "CAMERA MOTION"),
            ("duration_s", "SECONDS")]

    def cell(r, k):
        v = r[k]
        return "-" if v is None else (f"{v:+.0f}" if k == "head_yaw_deg" else str(v))

    w = {k: max(len(h), *(len(cell(r, k)) for r in rows)) for k, h in cols}
    print("  ".join(h.ljust(w[k]) for k, h in cols).rstrip())
    for r in rows:
        print("  ".join(cell(r, k).ljust(w[k]) for k, _ in cols).rstrip())
    total = sum(r["duration_s"] for r in rows)
    print(f"\n{len(rows)} trials, about {total / 60:.1f} min of recording (fixed-camera trials {trial_seconds:g} s)")
    return 0


def _motion(cm) -> str:
    """A trial's camera motion in a few words (the trials table)."""
    if cm.kind == "arc":
        return f"arc r={cm.radius_m} m, yaw {cm.yaw_deg[0]:+.0f}..{cm.yaw_deg[1]:+.0f} deg" if cm.yaw_deg else "arc"
    if cm.kind == "line":
        return f"line {'horizontal' if cm.axis == 'h' else 'vertical'} at {cm.speed_mps} m/s"
    return "fixed (front)" if cm.kind == "fixed" else cm.kind


def _session_args(ns: argparse.Namespace) -> SessionConfig:
    """The parsed options as the one validated SessionConfig, config/orchestrator.yaml's
    tuning underneath (a bad value: one line, exit 2)."""
    from .runner import node_parameters

    tuning = {k: v for k, v in node_parameters("orchestrator").items() if k in tuning_field_names()}
    return session_config(**tuning, **{o["dest"]: getattr(ns, o["dest"]) for o in cli_options()})


def _redo_base(argv: list[str]) -> str:
    """The session command as typed without the options that are not carried into a
    re-run (SessionConfig's ``rerun`` False: the trial selection, --resume and the test
    hooks): what ``--redo IDS`` (or ``--resume``) is appended to."""
    import shlex

    dropped = {o["flag"]: o["flag_only"] for o in cli_options() if not o["rerun"]}

    def flag(tok: str) -> bool:
        try:
            float(tok)
            return False  # a negative number is a value
        except ValueError:
            return tok.startswith("-")

    out, skipping = [], False
    for tok in argv:
        if flag(tok):
            name = tok.split("=", 1)[0]
            skipping = name in dropped and not dropped[name]
            if name in dropped:
                continue
        elif skipping:
            continue
        out.append(tok)
    return "gaze4hri-acq " + shlex.join(out)


# ------------------------------------------------------------------------ main
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--ros-args" in argv:  # launch appends ROS arguments; they go to rclpy, not argparse
        i = argv.index("--ros-args")
        argv, ros_args = argv[:i], argv[i:]
    else:
        ros_args = []
    ns = build_parser().parse_args(argv)
    try:
        if ns.command == "trials":
            return print_trials(ns.experiments, ns.trial_seconds, ns.json)
        if ns.command == "doctor":
            from .doctor.cli import doctor_main

            return doctor_main(ns)
        if ns.command == "session":
            base, cfg = _redo_base(argv), _session_args(ns)
            sdir = run_session_args(cfg, base)
            print(f"session: {sdir}")
            code = session_exit_code(sdir, cfg.redo, cfg.trial_ids, cfg.experiments)
            if code and cfg.quiet:  # the live view's summary says it otherwise
                from gaze4hri_core.commands import print_command

                from .operator_view import redo_command

                print_command(redo_command(sdir, base), "some trials failed; record them again:")
            return code
        if ns.command == "replay":
            from .replay import replay_session

            n = replay_session(ns.session, trials=ns.trials, rate=ns.rate, loop=ns.loop, quiet=ns.quiet,
                               wait_for_subscribers=ns.wait_for_subscribers or None)
            print(f"replayed {n} messages")
            return 0
        if ns.command == "calibrate":
            from .calibrate import run_calibration

            out = run_calibration(ns)
            print(f"calibration written: {out}")
            return 0
        if ns.command == "node":
            from .node_host import run_nodes

            sim = {"seed": ns.sim_seed, "subject": ns.sim_subject, "real_time_factor": ns.sim_real_time_factor}
            if ns.sim_calibration is not None:
                sim["calibration_dir"] = ns.sim_calibration
            return run_nodes(ns.names, ns.backend, ros_args, sim=sim)
    except Gaze4HRIError as e:
        sys.stderr.write(f"error: {e.line()}\n")
        if ns.command == "session" and e.exit_code in (130, 143):  # interrupted: the resume command, to copy
            from gaze4hri_core.commands import print_command

            print_command(f"{_redo_base(argv)} --resume", "continue the session:", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return 130
    except BrokenPipeError:  # output piped into head/less that quit early
        return 0
    except OSError as e:
        where = getattr(e, "filename", "") or ""
        sys.stderr.write(f"error: {e.strerror or e} ({where}): check the path and free space\n")
        return 1
    return 0


if __name__ == "__main__":
    os._exit(main()) if os.environ.get("GAZE4HRI_FAST_EXIT") else sys.exit(main())
