"""gaze4hri_core: an ament_python package (colcon) that also installs with pip."""
from setuptools import find_packages, setup

package_name = "gaze4hri_core"

setup(
    name=package_name,
    version="0.1.0",
    packages=find_packages(include=["gaze4hri_core", "gaze4hri_core.*"]),
    data_files=[
        ("share/ament_index/resource_index/packages", ["resource/" + package_name]),
        ("share/" + package_name, ["package.xml"]),
    ],
    install_requires=["numpy", "scipy", "PyYAML", "pydantic>=2"],
    zip_safe=True,
    maintainer="Gaze4HRI developers",
    maintainer_email="gaze4hri@example.org",
    description="Gaze4HRI shared core (no ROS imports)",
    license="Apache-2.0",
    python_requires=">=3.10",
)
