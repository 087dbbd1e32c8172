"""gaze4hri_sim: the simulated lab (ROS-free), an ament_python package (colcon) that
also installs with pip. The acquisition's `sim` backend and the benchmark's tests use it."""
from setuptools import find_packages, setup

package_name = "gaze4hri_sim"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(include=["gaze4hri_sim", "gaze4hri_sim.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    install_requires=["gaze4hri_core", "numpy", "opencv-python-headless", "scikit-image"],
    zip_safe=True,
    maintainer="Gaze4HRI developers",
    maintainer_email="gaze4hri@example.org",
    description=("Gaze4HRI simulated lab: clock, subject, UR arm, face renderer and simulated device drivers "
                 "(no ROS imports)"),
    license="Apache-2.0",
    python_requires=">=3.10",
)
