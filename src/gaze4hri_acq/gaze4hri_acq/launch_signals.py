"""SIGINT to the ``ros2 launch`` process alone reaches the processes it started.

On a Shutdown caused by its own SIGINT, launch sends its processes nothing: it assumes
a terminal's Ctrl-C reached the whole process group and only arms the SIGTERM escalation
(``sigterm_timeout``, 5 s; launch/actions/execute_local.py, ``ExecuteLocal.__on_shutdown``:
``send_sigint=not due_to_sigint or context.noninteractive``). A service manager or a
parent script signals the launch's pid alone, so every process was SIGTERMed after 5 s
(issue 31, item 6). ``forward_sigint()`` forwards that SIGINT to every process of the
launch still running. After a terminal's Ctrl-C a process gets SIGINT twice: each of
ours takes a repeated SIGINT as the same request (node_host, session_assembly).
"""
from __future__ import annotations

import signal

__all__ = ["forward_sigint"]


def forward_sigint() -> list:
    """Event-handler actions for a launch description: the processes it starts are
    tracked from their start to their exit, and a SIGINT Shutdown that launch does not
    pass on (interactive) sends each running one SIGINT through launch's own
    SignalProcess event (logged as "sending signal 'SIGINT' to process[...]")."""
    from launch.actions import EmitEvent, RegisterEventHandler
    from launch.event_handlers import OnProcessExit, OnProcessStart, OnShutdown
    from launch.events.process import SignalProcess

    running: list = []  # the started, not yet exited ExecuteProcess actions

    def started(event, _context) -> None:
        running.append(event.action)

    def exited(event, _context) -> None:
        if event.action in running:
            running.remove(event.action)

    def on_shutdown(event, context):
        if not event.due_to_sigint or context.noninteractive or not running:
            return None  # launch signals its processes itself (or none is left)
        targets = list(running)
        return [EmitEvent(event=SignalProcess(signal_number=signal.SIGINT,
                                              process_matcher=lambda action: action in targets))]

    return [RegisterEventHandler(OnProcessStart(on_start=started)),
            RegisterEventHandler(OnProcessExit(on_exit=exited)),
            RegisterEventHandler(OnShutdown(on_shutdown=on_shutdown))]
