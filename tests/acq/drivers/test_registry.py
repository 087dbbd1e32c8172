"""The backend parameter selects a driver lazily; bad names and configs fail in one line."""
import subprocess
import sys

import pytest
from gaze4hri_acq.drivers.registry import DRIVERS, backends_for, driver_class, make_camera, make_robot, robot_monitor
from gaze4hri_core.device_config import CameraConfig, MocapConfig, RobotConfig, validate
from gaze4hri_core.errors import Gaze4HRIError

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("device, backend", sorted(DRIVERS))
def test_every_entry_imports(device, backend):
    cls = driver_class(device, backend)
    assert cls.__name__ == DRIVERS[(device, backend)].split(":")[1]


def test_choices_per_device():
    assert backends_for("robot") == ["real", "sim"]
    assert backends_for("camera") == ["real", "replay", "sim"]
    assert backends_for("mocap") == ["real", "sim"]


def test_unknown_names_say_did_you_mean():
    with pytest.raises(Gaze4HRIError, match="unknown robot backend 'simm' .*did you mean sim\\? known: real, sim"):
        driver_class("robot", "simm")
    with pytest.raises(Gaze4HRIError, match="unknown device 'camer' .*did you mean camera\\?"):
        driver_class("camer", "sim")
    with pytest.raises(Gaze4HRIError,
                       match="unknown robot backend 'replay' \\(backend parameter\\): .*known: real, sim"):
        make_robot("replay", safety=robot_monitor(RobotConfig()))


def test_sim_needs_the_world_and_replay_needs_a_file():
    with pytest.raises(Gaze4HRIError, match="SimWorld"):
        make_robot("sim", RobotConfig(), safety=robot_monitor(RobotConfig()))
    with pytest.raises(Gaze4HRIError, match="safety monitor"):  # no driver without the owner's one monitor
        make_robot("sim", RobotConfig(), world=object(), safety=None)
    with pytest.raises(Gaze4HRIError, match="replay_file"):
        make_camera("replay", CameraConfig())


def test_configs_validate_once_with_field_names():
    with pytest.raises(Gaze4HRIError, match=r"invalid parameter 'width'.*colour width"):
        validate(CameraConfig, {"width": 5000})
    with pytest.raises(Gaze4HRIError, match="'.db3'"):
        validate(CameraConfig, {"replay_file": "take.bag"})
    with pytest.raises(Gaze4HRIError, match="up_axis"):
        validate(MocapConfig, {"up_axis": "x"})
    assert RobotConfig(model="ur5e").state_rate_hz == 500.0 and RobotConfig().state_rate_hz == 125.0


def test_sim_backend_imports_no_vendor_sdk():
    code = ("import sys;"
            "from gaze4hri_acq.drivers.registry import make_world, make_robot, make_camera, make_mocap, robot_monitor;"
            "from gaze4hri_core.device_config import RobotConfig;"
            "w = make_world(); make_robot('sim', world=w, safety=robot_monitor(RobotConfig()));"
            "make_camera('sim', world=w); make_mocap('sim', world=w);"
            "bad = [m for m in ('pyrealsense2', 'rtde_control', 'rtde_receive', 'natnet', 'rclpy')"
            " if m in sys.modules];"
            "print(bad); sys.exit(1 if bad else 0)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
