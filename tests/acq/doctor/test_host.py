"""The doctor's host checks: a disk too small for the session (a real small tmpfs where
mounting is allowed, else the same check on the measured facts), the clocks, the load,
the ROS domain and the versions."""
import shutil
import subprocess

import pytest
from gaze4hri_acq.doctor.host_machine import HostFacts, disk_need, host_checks, host_facts
from gaze4hri_acq.doctor.record import exit_code
from gaze4hri_acq.orchestrator.disk import gb
from gaze4hri_acq.session_config import session_config


def _facts(free=10**12, env=None, load=0.5, rclpy="rclpy 9.1.2"):
    return HostFacts(free, "/data", load, 2, env or {}, "3.11.7", rclpy)


@pytest.mark.unit
def test_the_disk_need_is_the_sessions_estimate():
    cfg = session_config(subject="S1", backend="real", trial_ids="illum010_P1 arc_P5")
    need, n = disk_need(cfg)
    from gaze4hri_acq.orchestrator.disk import estimate_session_bytes
    from gaze4hri_core.protocol import select

    assert n == 2 and need == estimate_session_bytes(list(select(trial_ids=("illum010_P1", "arc_P5"))),
                                                     (1920, 1080), 30, 5.0, cfg.disk_margin)


@pytest.mark.unit
def test_too_little_disk_fails_and_the_rest_is_judged():
    c = {x.name: x for x in host_checks(_facts(free=2 * 10**9, env={"ROS_DOMAIN_ID": "300"}, load=5.0), 99 * 10**9,
                                        63, "1920x1080@30", "zstd", True, robot_rtt_ms=12.0, robot_drift_ms=0.1)}
    assert c["disk"].line() == ("FAIL host disk: 99.0 GB needed for 63 trials at 1920x1080@30 (compression zstd), "
                                "2.0 GB free in /data -> free disk space, pick --out-dir on a larger disk, or record "
                                "fewer trials or a smaller --resolution")
    assert c["ros domain"].status == "fail" and c["load"].status == "warn"
    assert c["clocks"].status == "fail" and "robot +-6.00 ms" in c["clocks"].value
    ok = host_checks(_facts(env={"ROS_DOMAIN_ID": "42"}), 10**9, 1, "640x360@30", "none", True, 0.4, 0.1, 4.0)
    assert exit_code(ok) == 0
    assert {x.name: x for x in host_checks(_facts(rclpy=None), 1, 1, "m", "none", False)}["versions"].status == "fail"
    assert {x.name: x for x in host_checks(_facts(), 1, 1, "m", "none", True)}["ros domain"].status == "warn"


@pytest.mark.unit
def test_a_tmpfs_too_small_for_the_session(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root); test_too_little_disk_fails covers the check")
    try:
        cfg = session_config(subject="S1", backend="sim", out_dir=mnt / "sessions", trial_ids="illum010_P1")
        need, n = disk_need(cfg)
        disk = host_checks(host_facts(cfg.out_dir), need, n, "640x360@30", "none", False)[0]
        assert disk.line() == (f"FAIL host disk: {gb(need)} needed for 1 trials at 640x360@30 (compression none), "
                               f"{gb(shutil.disk_usage(mnt).free)} free in {mnt} -> free disk space, pick --out-dir "
                               "on a larger disk, or record fewer trials or a smaller --resolution")
        assert need > 100e6 > shutil.disk_usage(mnt).free  # 640x360 RGB at 30 Hz for 5 s, margin 1.2
        resumed = host_checks(host_facts(cfg.out_dir), need, n, "640x360@30", "none", False, new_session=False)[0]
        assert resumed.status == "warn" and resumed.fix.startswith("the session stops before the first trial")
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
