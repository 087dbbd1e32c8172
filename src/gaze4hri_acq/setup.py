"""gaze4hri_acq: ament_python ROS 2 package (colcon), also pip-installable so that
``gaze4hri-acq`` runs the same nodes in one process where ``ros2 launch`` is absent."""
from glob import glob

from setuptools import find_packages, setup

package_name = "gaze4hri_acq"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(include=["gaze4hri_acq", "gaze4hri_acq.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
        ("share/" + package_name + "/launch", glob("launch/*.launch.py")),
        ("share/" + package_name + "/config", glob("config/*.yaml") + glob("config/*.json") + glob("config/*.rviz")),
        # calibration/ links to the repository's calibration (one copy); installed so that an
        # installed package finds it through the ament index (gaze4hri_core.device_config)
        ("share/" + package_name + "/calibration", glob("calibration/*.yaml")),
        ("share/" + package_name + "/calibration/subjects", glob("calibration/subjects/*.yaml")),
    ],
    install_requires=["gaze4hri_core", "gaze4hri_sim", "numpy", "PyYAML"],
    zip_safe=True,
    maintainer="Gaze4HRI developers",
    maintainer_email="gaze4hri@example.org",
    description="Gaze4HRI ROS 2 acquisition nodes",
    license="Apache-2.0",
    python_requires=">=3.10",
    entry_points={
        "console_scripts": [
            "gaze4hri-acq = gaze4hri_acq.cli:main",
        ],
    },
)
