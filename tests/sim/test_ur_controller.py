"""The UR controller emulator's named tables (controller series, robot model) answer an
unknown name with the registry's one line, in the constructor and on the command line."""
from __future__ import annotations

import pytest
from gaze4hri_core.registry import UnknownName
from gaze4hri_sim.ur_controller import SERIES, URController, main

pytestmark = pytest.mark.unit


def test_series_table_sets_version_and_rate():
    assert list(SERIES) == ["cb3", "e"]
    e = URController("127.0.0.1", series="e", model="ur5e")  # no port is bound before start()
    assert (e.version, e.rate_hz) == ((5, 11, 1, 108318), 500.0)
    assert e.dashboard("PolyscopeVersion") == "URSoftware 5.11.1.108318 (Jul 14 2021)"
    assert e.dashboard("get robot model") == "UR5"


def test_unknown_series_is_the_registry_line():
    with pytest.raises(UnknownName) as e:
        URController("127.0.0.1", series="e5")
    assert str(e.value) == "unknown UR controller series 'e5' (--series): did you mean e? known: cb3, e"


@pytest.mark.parametrize("args,line", [
    (["--series", "cb2"], "error: unknown UR controller series 'cb2' (--series): did you mean cb3? known: cb3, e"),
    (["--model", "ur3"], "error: unknown robot model 'ur3' (--model): did you mean ur5 or ur5e? known: ur5, ur5e"),
])
def test_command_line_refuses_an_unknown_name_in_one_line(args, line, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--host", "127.0.0.1", *args, "--lifetime", "0"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == line


_RTDE_SCRIPT = ("def rtde_control():\n  # int register offset\n  reg_offset_int = 0\n  signal_ready()\n"
                "  rtde_cmd()\nend\n")


def test_a_stop_command_left_in_the_register_does_not_end_the_next_control_script():
    """movePath: stopScript (255), its clear and the re-uploaded script travel on two sockets;
    the script may start before the clear arrives. The new script waits for the clear."""
    from gaze4hri_sim.ur_codes import RUNTIME_PLAYING

    c = URController("127.0.0.1")
    c.in_int[0] = 255  # stopScript's command, its clear not yet applied
    c.load_program(_RTDE_SCRIPT)
    c.tick(0.008)
    assert c.runtime == RUNTIME_PLAYING and c.program["kind"] == "rtde"
    c.in_int[0] = 0  # the clear
    c.tick(0.008)
    assert c.out_int[0] == 1  # ready for ur_rtde's next command
    c.in_int[0] = 255  # a stop sent to this script is obeyed
    c.tick(0.008)
    assert c.runtime != RUNTIME_PLAYING


def test_a_clear_and_the_next_command_between_two_cycles_run_the_command():
    """Under load the stale stop's clear and movePath's command (45) can both land between two
    controller cycles: the cycle sees only 45, which must run (the clear ended the stale stop)."""
    from gaze4hri_sim.ur_codes import RUNTIME_PLAYING
    from gaze4hri_sim.ur_servers import _Client

    c = URController("127.0.0.1")
    client = _Client(None)
    client.inputs[1] = (["input_int_register_0"], ["INT32"])
    c.in_int[0] = 255  # stopScript's command, its clear not yet applied when the script starts
    c.load_program(_RTDE_SCRIPT)
    c.tick(0.008)
    c._apply_input(client, bytes([1]) + (0).to_bytes(4, "big", signed=True))  # the clear
    c._apply_input(client, bytes([1]) + (47).to_bytes(4, "big", signed=True))  # is_steady, before a cycle
    c.tick(0.008)
    assert c.runtime == RUNTIME_PLAYING and c.out_int[0] == 2  # done with the command
