"""Gaze4HRI shared core: frames, kinematics, calibration, protocol, ground truth and
the session layout. Imported by both the ROS acquisition half and the offline
benchmark, so that the two can never disagree. Never imports ROS."""

__version__ = "0.1.0"
