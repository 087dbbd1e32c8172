"""Issue 31, item 6: SIGINT to the ``ros2 launch`` process alone (a service manager, a
parent script) stops a launched session as cleanly as a terminal's Ctrl-C to the whole
process group: launch passed nothing on and escalated to SIGTERM after 5 s, so the
trial was left to the SIGTERM path (gaze4hri_acq.launch_signals)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

pytest.importorskip("rclpy")
from .test_launch import (  # noqa: E402, F401 - ws: the workspace fixture
    _DRIVER,
    COMMON,
    _launch_library,
    _skip_unless_scripts_start,
    ws,
)

pytestmark = pytest.mark.launch

_CHILD = textwrap.dedent("""
    import signal, sys, time
    got = []
    signal.signal(signal.SIGINT, lambda *_: got.append(1))
    print("child up", flush=True)
    while not got:
        time.sleep(0.01)
    time.sleep(0.1)
    print(f"child got SIGINT x {len(got)}", flush=True)
    sys.exit(130)
""")

_TWO_CHILDREN = textwrap.dedent("""
    import os, sys
    sys.path[:0] = [p for p in os.environ.get("G4_LAUNCH_PATH", "").split(os.pathsep) if p]
    from launch import LaunchDescription, LaunchService
    from launch.actions import ExecuteProcess
    from gaze4hri_acq.launch_signals import forward_sigint
    child = [sys.executable, sys.argv[1]]
    ld = LaunchDescription([ExecuteProcess(cmd=child, output="screen"), ExecuteProcess(cmd=child, output="screen"),
                            *forward_sigint()])
    ls = LaunchService()
    ls.include_launch_description(ld)
    sys.exit(ls.run())
""")


# long tier until its flake is understood: on fresh clones the pid case outlived its 30 s wait (the default suite
# alone, and the Jazzy tier under load); likely launch deferring a process's shutdown to an OnProcessStart that
# already passed (launch/actions/execute_local.py _shutdown_process), not confirmed (issue 31, item 6)
@pytest.mark.long
@pytest.mark.flaky(reruns=1)
@pytest.mark.parametrize("to", ["launch pid", "process group"])
def test_forward_sigint_reaches_every_process_of_the_launch(to, tmp_path):
    """The real launch library with two SIGINT-handling processes and forward_sigint():
    SIGINT to the launch's pid alone reaches both at once (launch itself sends them
    nothing and escalates to SIGTERM after 5 s); a terminal's Ctrl-C to the whole group
    still ends them at once (SIGINT may come twice: our processes take it as one request)."""
    env = {**os.environ, "G4_LAUNCH_PATH": os.pathsep.join(_launch_library()), "PYTHONUNBUFFERED": "1"}
    child = tmp_path / "child.py"  # a file: launch's exit lines quote the command, not the code
    child.write_text(_CHILD, encoding="utf-8")
    p = subprocess.Popen([sys.executable, "-c", _TWO_CHILDREN, str(child)], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
    lines: list[str] = []
    up = threading.Event()

    def read():
        for ln in p.stdout:
            lines.append(ln)
            if sum("child up" in x for x in lines) == 2:
                up.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert up.wait(60), "".join(lines)[-3000:]
        t0 = time.monotonic()
        if to == "launch pid":
            os.kill(p.pid, signal.SIGINT)
        else:
            os.killpg(p.pid, signal.SIGINT)
        p.wait(timeout=30)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        reader.join(timeout=5)
    out = "".join(lines)
    assert "escalating" not in out and took < 5.0, (took, out[-3000:])
    got = [ln.split()[-1] for ln in lines if "child got SIGINT" in ln]
    # the group's SIGINT and the forwarded one; the second may come after a process has ended
    assert got == ["1", "1"] if to == "launch pid" else sorted(got) in (["1", "1"], ["1", "2"], ["2", "2"]), out[-3000:]


def _wait_recording(p: subprocess.Popen, sdir, tid: str, timeout_s: float = 240) -> None:
    from gaze4hri_core.session import bag_dir, load_manifest

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and p.poll() is None:
        try:
            f = bag_dir(sdir, tid) / f"{tid}_0.mcap"
            if load_manifest(sdir).trials[tid].status == "recording" and f.exists() and f.stat().st_size > 100_000:
                return
        except Exception:  # noqa: BLE001 - not written yet
            pass
        time.sleep(0.1)
    raise AssertionError(f"trial {tid} never recorded: " + (p.communicate()[0][-3000:] if p.poll() is not None else ""))


@pytest.mark.long  # a colcon build and a launched session (minutes on 2 cores); the forwarding itself is tested above
def test_sigint_to_the_launch_process_alone_stops_a_trial_cleanly(ws, tmp_path):  # noqa: F811
    """SIGINT to the launch's pid only, mid-trial: every process ends by itself (no SIGTERM
    escalation), the trial is marked incomplete (SIGINT) and its bag is closed and readable."""
    _skip_unless_scripts_start(ws.install)
    from gaze4hri_core.session import bag_dir, load_manifest
    from rosbags.rosbag2 import Reader

    args = {**COMMON, "trial_seconds": "6.0"}
    p = subprocess.Popen([sys.executable, "-c", _DRIVER, "session.launch.py", "subject:=S79", "backend:=sim",
                          f"out_dir:={tmp_path}", "trial_ids:=illum100_P1 illum100_P2",
                          *(f"{k}:={v}" for k, v in args.items())],
                         env=ws.env, cwd=ws.install.parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)  # its own group: nothing but the launch process hears the signal
    sdir, tid = tmp_path / "S79", "illum100_P1"
    try:
        _wait_recording(p, sdir, tid)
        t0 = time.monotonic()
        os.kill(p.pid, signal.SIGINT)  # the launch process alone, as `kill -INT <pid>` or systemd
        out, _ = p.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert "escalating to 'SIGTERM'" not in out and "escalating to 'SIGKILL'" not in out, out[-4000:]
    assert "sending signal 'SIGINT'" in out, out[-4000:]
    # as the terminal's Ctrl-C (test_launch.py): ~1 s idle, 4-5 s with the 2 cores loaded by other runs
    assert took < 8.0, (took, out[-3000:])
    assert p.returncode != 0  # the orchestrator's 130 fails the launch, as after a terminal's Ctrl-C
    rec = load_manifest(sdir).trials[tid]
    assert rec.status == "incomplete" and "SIGINT" in (rec.reason or ""), (rec, out[-3000:])
    assert (bag_dir(sdir, tid) / "metadata.yaml").is_file(), out[-3000:]
    with Reader(bag_dir(sdir, tid)) as r:
        assert r.message_count > 0
    print(f"SIGINT to the launch pid: stopped in {took:.2f} s")
