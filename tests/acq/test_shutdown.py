"""Issue 13 fault: after an error line, rclpy printed "The following exception was
never retrieved: cannot use Destroyable ..." at interpreter exit. The runner now keeps
spinning past a callback's exception, stops spinning before destroying nodes, and
retrieves every finished callback's exception at close: the error stays the last line."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("rclpy")
pytestmark = pytest.mark.node

SCRIPT = textwrap.dedent('''
    import os, sys, time
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "OFF")
    from std_msgs.msg import String
    from gaze4hri_acq.runner import Stack, StackConfig
    st = Stack(StackConfig(backend="real", nodes=("recorder",))).start()
    rec = st.nodes["recorder"]
    pub = rec.create_publisher(String, "/teardown_probe", 10)
    ticks = []
    def cb():
        ticks.append(1)
        pub.publish(String(data="x"))
    rec.create_timer(0.01, cb)
    time.sleep(0.2)
    rec.destroy_publisher(pub)  # the teardown race made certain: the timer uses a destroyed publisher
    n = len(ticks)
    time.sleep(0.3)
    alive = len(ticks) > n + 3   # the executor kept spinning past the callback's exception
    st.close()
    print("error: the operator's line", file=sys.stderr)
    sys.exit(0 if alive else 3)
''')


def test_error_line_is_the_last_thing_printed():
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = [x for x in p.stderr.splitlines() if x.strip()]
    assert lines[-1] == "error: the operator's line", p.stderr
    assert "never retrieved" not in p.stderr and "Destroyable" not in p.stderr
