"""Session assembly: the one place that turns a validated SessionConfig into a
running session (the nodes, the orchestrator, the operator view, the signal
handling, the exit code), below the three entry points that call it: the CLI
(``gaze4hri-acq session``), the launch files' orchestrator process (``gaze4hri-acq
node orchestrator``, node_host.py) and the Python API (simulate.py).

Layering: cli.py, node_host.py and simulate.py import this module; it imports
none of them (before, cli.py and nodes/host.py imported each other)."""
from __future__ import annotations

import datetime as _dt
import signal
from pathlib import Path

from gaze4hri_core.errors import Gaze4HRIError, SessionError

from .session_config import SessionConfig

__all__ = ["run_session_args", "session_exit_code", "orchestrator_parameters", "run_orchestrator", "interrupt_hint"]

SessionArgs = SessionConfig

_RCLPY_PARAMETERS = {"use_sim_time", "start_type_description_service"}  # every rclpy node declares these


def run_session_args(a: SessionArgs, command: str | None = None) -> Path:
    """Build the nodes, run the orchestrator, shut down cleanly; returns the session dir.
    ``command``: the session command as typed, for the summary's ``--redo`` hint."""
    from .orchestrator.client import Interrupted
    from .orchestrator.disk import trial_seconds_estimate
    from .orchestrator.session import check_inputs, run_session
    from .runner import Stack, StackConfig
    from .sim_faults import inject_sim_faults
    from .split import SplitStack, use_split

    params = {k: v for k, v in a.node_parameters().items() if k != "orchestrator"}
    sim = {"real_time_factor": float(a.real_time_factor), "seed": int(a.seed), "subject": a.subject}
    if a.calibration_dir is not None:
        sim["calibration_dir"] = a.calibration_dir
    nodes = ("orchestrator",) if a.external_devices else None
    scfg = StackConfig(backend=a.backend, params=params, sim=sim, share_graph=a.external_devices or a.backend == "real",
                       intra_process=not a.external_devices, **({"nodes": nodes} if nodes else {}))
    # bad input fails here, before any node starts; the only check (run_session takes its result)
    inputs = check_inputs(a)
    if not (a.skip_checks or a.external_devices):  # the doctor's checks (under ros2 launch the devices are taken)
        from .doctor import startup_checks

        startup_checks(a)  # a fail: the table on stdout, one line, nothing started
    since = _dt.datetime.now(_dt.timezone.utc)  # trials the manifest marks interrupted after this: this run's
    stop = {"reason": None}

    def on_signal(signum, _frame):
        stop["reason"] = signal.Signals(signum).name

    old = {}
    in_main = _is_main_thread()
    if in_main:
        for sig in (signal.SIGINT, signal.SIGTERM):
            old[sig] = signal.signal(sig, on_signal)
    view = live = None
    try:
        live = _live_view(a)  # binds before the nodes start: a taken port asked for is one line, nothing started
        faults = {k: getattr(a, k) for k in ("mocap_dropout", "protective_stop", "table_nudge")}
        recording_s = sum(trial_seconds_estimate(t, a.trial_seconds) for t in inputs.trials)
        split = use_split(a.sim_device_process, a.backend, a.external_devices, recording_s)

        def lost(why: str) -> None:  # the devices' process died: the session ends as if interrupted
            stop["reason"] = stop["reason"] or why

        with (SplitStack(scfg, faults, on_lost=lost) if split else Stack(scfg)) as stack:
            client = stack.nodes["orchestrator"]
            client.session_id = f"{a.subject}"
            if live is not None:
                live.attach(stack.bus, client)  # the bus for the session's streams, DDS for a gaze node elsewhere
            if stack.world is not None:  # split: the child injects them into its world
                inject_sim_faults(stack, a)
            if not a.quiet:
                from .operator_view import OperatorView

                view = OperatorView(client, Path(a.out_dir), subject=a.subject,
                                    yaw_tolerance_deg=a.head_yaw_tolerance_deg, should_stop=lambda: stop["reason"],
                                    sim_rate=a.real_time_factor if a.backend == "sim" else None)
                view.start()
            confirm = None if a.auto_confirm else (view.confirm if view is not None else _confirm_enter)
            try:
                sdir = run_session(a, client, inputs=inputs, view=view, confirm=confirm,
                                   should_stop=lambda: stop["reason"], eye_head=_eye_head_run(a, view))
            except Interrupted as e:
                err = SessionError(f"session interrupted ({e.reason})", str(Path(a.out_dir) / a.subject),
                                   interrupt_hint(Path(a.out_dir) / a.subject, since))
                err.exit_code = 130 if e.reason == "SIGINT" else 143 if e.reason == "SIGTERM" else 1  # EXIT_CODES
                raise err from None
            finally:
                if view is not None:
                    view.stop()
            if view is not None:
                view.summary(sdir, command)
            return sdir
    finally:
        if live is not None:
            live.stop()
        for sig, h in old.items():
            signal.signal(sig, h)


def _live_view(a: SessionArgs):
    """The Foxglove live view of this session (live_view.py), or None when ``live_view`` is off."""
    if a.live_view == "off":
        return None
    import sys

    from .live_view import DEFAULT_ADDRESS, start_live_view

    # its address is said even by the launch's quiet orchestrator (the operator needs it)
    log = None if a.quiet and not a.external_devices else (lambda s: print(s, file=sys.stderr, flush=True))
    return start_live_view(a.live_view, subject=a.subject, session_dir=Path(a.out_dir) / a.subject,
                           calibration_dir=a.calibration_dir,
                           default=a.live_view == DEFAULT_ADDRESS, log=log)


def interrupt_hint(session_dir: Path, since: _dt.datetime) -> str:
    """What to do after a Ctrl-C, from what the manifest says: the trial this run
    interrupted while recording (marked incomplete, recorded again by --resume), or, when
    the stop came between trials, that no trial was recording."""
    from gaze4hri_core.session import load_manifest

    try:
        m = load_manifest(session_dir)
    except (Gaze4HRIError, OSError, ValueError):
        return "continue with --resume"
    hit = []
    for tid, r in m.trials.items():
        if r.status != "incomplete" or not str(r.reason or "").startswith("interrupted") or not r.ended:
            continue
        try:
            if _dt.datetime.fromisoformat(str(r.ended)) >= since:
                hit.append(tid)
        except ValueError:
            continue
    if hit:
        return f"trial {hit[-1]} was recording and is marked incomplete; continue with --resume (it is recorded again)"
    return "no trial was recording; continue with --resume"


def _eye_head_run(a: SessionArgs, view=None):
    """The session's eye-head calibration with this backend's motion capture (out dir -> result)."""
    from gaze4hri_core.device_config import DEFAULT_CALIBRATION

    from .calibrate import eye_head_for_session

    src = Path(a.calibration_dir or DEFAULT_CALIBRATION)
    prompt = (lambda msg: True) if a.auto_confirm else (view.ask if view is not None else None)
    return lambda out: eye_head_for_session(a.backend, a.subject, src, Path(out), seed=a.seed, motive_ip=a.motive_ip,
                                            local_ip=a.local_ip, prompt=prompt)


def _is_main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _confirm_enter(prompt: str) -> None:
    try:
        input(f"\n>>> {prompt} ")
    except EOFError:
        raise Gaze4HRIError("no operator input (stdin closed)", None,
                            "run with --yes to auto-confirm prompts") from None


def session_exit_code(sdir: Path, redo: tuple[str, ...] = (), trial_ids=None, experiments=None) -> int:
    """0 when every trial this run was asked for is done, else 1 (:data:`EXIT_CODES`):
    the ``--redo`` trials, else the ``--trials``/``--experiments`` selection, else
    every trial of the session."""
    from gaze4hri_core.protocol import select
    from gaze4hri_core.session import load_manifest

    m = load_manifest(sdir)
    if not redo and (trial_ids or experiments):
        redo = tuple(t.trial_id for t in select(experiments=tuple(experiments) if experiments else None,
                                                 trial_ids=tuple(trial_ids) if trial_ids else None))
    asked = [t for t in (redo or m.trials) if t in m.trials]
    return 0 if all(m.trials[t].status == "done" for t in asked) else 1


def orchestrator_parameters(ros_args: list[str]) -> dict:
    """The orchestrator's ROS parameters (--params-file, -p) as rclpy parses them."""
    import rclpy
    from rclpy.context import Context

    ctx = Context()
    rclpy.init(context=ctx, args=["gaze4hri-acq", *ros_args])
    try:
        node = rclpy.create_node("orchestrator", context=ctx, automatically_declare_parameters_from_overrides=True)
        try:
            return {name: p.value for name, p in node._parameters.items() if name not in _RCLPY_PARAMETERS}
        finally:
            node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def run_orchestrator(ros_args: list[str]) -> int:
    """The session, configured by the orchestrator's parameters; its exit code."""
    from .session_config import from_strings

    cfg = from_strings(orchestrator_parameters(ros_args), "orchestrator parameters")
    cfg = cfg.model_copy(update={"external_devices": True, "quiet": True})
    sdir = run_session_args(cfg)
    print(f"session: {sdir}", flush=True)
    return session_exit_code(sdir, cfg.redo, cfg.trial_ids, cfg.experiments)
