#!/bin/bash
# Source ROS 2 and the workspace, then run the command (ros2 launch ... by default).
set -e
source /opt/ros/jazzy/setup.bash
source /ws/install/setup.bash
exec "$@"
