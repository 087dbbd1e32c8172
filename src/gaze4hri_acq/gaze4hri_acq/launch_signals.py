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
    """Event-handler actions for a launch description: a SIGINT Shutdown that launch does
    not pass on (interactive) sends SIGINT to every process of the launch that has started,
    through launch's own SignalProcess event (logged as "sending signal 'SIGINT' to
    process[...]"; a process that has ended already is skipped by launch itself).

    Started means launch holds the process' pid and transport (launch/actions/execute_local.py:
    ``connection_made`` adds the pid, ``__execute_process`` keeps the transport), which it has
    as soon as the process exists, before its ProcessStarted event is handled. Tracking the
    processes through OnProcessStart handlers (as before) left a window in which a process ran,
    even ready, but was not yet in the list, and a SIGINT then reached nobody (issue 31, item 6)."""
    from launch.actions import EmitEvent, RegisterEventHandler
    from launch.event_handlers import OnShutdown
    from launch.events.process import SignalProcess

    def started(action) -> bool:
        details = getattr(action, "process_details", None)  # set at prepare; the pid once it runs
        return details is not None and "pid" in details and getattr(action, "_subprocess_transport", None) is not None

    def on_shutdown(event, context):
        if not event.due_to_sigint or context.noninteractive:
            return None  # launch signals its processes itself
        return [EmitEvent(event=SignalProcess(signal_number=signal.SIGINT, process_matcher=started))]

    return [RegisterEventHandler(OnShutdown(on_shutdown=on_shutdown))]
