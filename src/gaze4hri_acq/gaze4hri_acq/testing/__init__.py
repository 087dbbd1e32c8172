"""Stand-ins shared by the acquisition tests and benchmarks/: Motive's NatNet server (natnet_emulator), the UR
controller emulator's process (ur_testbed) and the real robot node against it (ur_node_bed), and readiness
waits (wait). Test scaffolding, not part of a session."""
