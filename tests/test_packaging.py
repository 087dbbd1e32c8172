"""The ROS packages build with colcon and install their launch and config files;
gaze4hri_core, gaze4hri_sim and gaze4hri_bench never import ROS (nor the acquisition)."""
import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
COLCON = Path(sys.executable).with_name("colcon")


@pytest.mark.packaging
@pytest.mark.skipif(not COLCON.exists(), reason="colcon not installed in this environment (requirements/ros.txt)")
def test_colcon_build_installs_launch_and_config(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    out = subprocess.run(
        [str(COLCON), "--log-base", "log", "build", "--base-paths", str(REPO / "ros2_ws" / "src"),
         "--build-base", "build", "--install-base", "install"],
        cwd=ws, capture_output=True, text=True, timeout=240,
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]
    share = ws / "install" / "gaze4hri_acq" / "share" / "gaze4hri_acq"
    assert (share / "package.xml").is_file()
    for pkg in ("gaze4hri_core", "gaze4hri_sim"):
        assert (ws / "install" / pkg / "share" / "ament_index" / "resource_index" / "packages" / pkg).is_file()
    src_launch = sorted(p.name for p in (REPO / "src" / "gaze4hri_acq" / "launch").glob("*.launch.py"))
    assert sorted(p.name for p in (share / "launch").glob("*.launch.py")) == src_launch
    src_cfg = sorted(p.name for p in (REPO / "src" / "gaze4hri_acq" / "config").glob("*.yaml"))
    assert sorted(p.name for p in (share / "config").glob("*.yaml")) == src_cfg
    # the calibration is installed, and an installed package finds it (and config/)
    # through the ament index, not relative to its own files (issue 14)
    src_cal = sorted(str(p.relative_to(REPO / "calibration")) for p in (REPO / "calibration").rglob("*.yaml"))
    assert sorted(str(p.relative_to(share / "calibration")) for p in (share / "calibration").rglob("*.yaml")) == src_cal
    inst = ws / "install"
    pkgs = ("gaze4hri_acq", "gaze4hri_core", "gaze4hri_sim")
    env = {k: v for k, v in os.environ.items() if k != "GAZE4HRI_CALIBRATION"}
    env["AMENT_PREFIX_PATH"] = os.pathsep.join(str(inst / p) for p in pkgs)
    env["PYTHONPATH"] = os.pathsep.join(str(next((inst / p / "lib").glob("python3*/site-packages")))
                                        for p in pkgs)
    probe = subprocess.run([sys.executable, "-c",
                            "import gaze4hri_acq.nodes.common as c, gaze4hri_core.device_config as d; "
                            "print(d.__file__); print(d.DEFAULT_CALIBRATION); print(c.CONFIG_DIR); print(c.__file__)"],
                           cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr[-2000:]
    mod, cal, cfg, acq = probe.stdout.split()
    # the installed copies (every subpackage), not the checkout
    assert mod.startswith(str(inst)) and acq.startswith(str(inst))
    assert Path(cal) == share / "calibration" and Path(cfg) == share / "config"


ROS_MODULES = {"rclpy", "rosidl_runtime_py", "sensor_msgs", "geometry_msgs", "std_msgs", "launch", "launch_ros",
               "gaze4hri_acq"}


def _imports(tree):
    """(module name, at module level?) for every absolute import in a file."""
    top = set()
    for node in tree.body:
        for sub in ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node]:
            top.add(id(sub))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((a.name, id(node) in top) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module, id(node) in top


@pytest.mark.unit
@pytest.mark.parametrize("pkg", ["gaze4hri_core", "gaze4hri_sim", "gaze4hri_bench"])
def test_offline_packages_never_import_ros(pkg):
    """No import of ROS or of the acquisition package anywhere, not even lazily: the
    benchmark's demo runs `gaze4hri-acq session` as a command, like a user."""
    root = REPO / "src" / pkg / pkg
    offenders = []
    for f in root.rglob("*.py"):
        rel = f.relative_to(REPO)
        for name, _module_level in _imports(ast.parse(f.read_text(encoding="utf-8"))):
            if name.split(".")[0] in ROS_MODULES:
                offenders.append(f"{rel}: {name}")
    assert not offenders, offenders
