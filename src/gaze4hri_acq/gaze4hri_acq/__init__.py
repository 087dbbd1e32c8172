"""Gaze4HRI acquisition (ROS 2, rclpy): device nodes with real, simulated and replayed
backends, safe trajectories, calibration runs, the session orchestrator and the
rosbag2 (MCAP) recorder."""
