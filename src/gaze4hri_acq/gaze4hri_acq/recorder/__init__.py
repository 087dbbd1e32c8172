"""The trial recorder: one rosbag2 (MCAP) bag per trial, with /tf and /tf_static."""
