"""ROS 2 nodes of the acquisition: device lifecycle nodes, the node table, the launch helpers."""
