"""The UR controller emulator's fixed numbers: its ports, the RTDE enumerations it
reports and the controller series it emulates (gaze4hri_sim.ur_controller)."""
from __future__ import annotations

from gaze4hri_core.registry import Registry

__all__ = ["RTDE_PORT", "DASHBOARD_PORT", "SCRIPT_PORTS", "ROBOT_MODE", "SAFETY_NORMAL", "SAFETY_PROTECTIVE_STOP",
           "RUNTIME_STOPPED", "RUNTIME_PLAYING", "RUNTIME_PAUSED", "PSTOP_BIT", "SERIES",
           "SAFETY_ROBOT_EMERGENCY_STOP", "ESTOP_BITS"]

RTDE_PORT, DASHBOARD_PORT, SCRIPT_PORTS = 30004, 29999, (30001, 30002, 30003)
# RTDE enumerations (RTDE Guide, "robot_mode", "safety_mode", "runtime_state"; ur_rtde
# rtde_control_interface.h: SafetyStatus bits, RuntimeState)
ROBOT_MODE = {"POWER_OFF": 3, "POWER_ON": 4, "IDLE": 5, "RUNNING": 7}
SAFETY_NORMAL, SAFETY_PROTECTIVE_STOP, SAFETY_ROBOT_EMERGENCY_STOP = 1, 3, 7
RUNTIME_STOPPED, RUNTIME_PLAYING, RUNTIME_PAUSED = 1, 2, 4
PSTOP_BIT = 1 << 2
ESTOP_BITS = (1 << 6) | (1 << 7)  # IS_ROBOT_EMERGENCY_STOPPED, IS_EMERGENCY_STOPPED (ur_rtde SafetyStatus)
#: controller series -> (controller version, RTDE rate in Hz, PolyScope version line)
SERIES: Registry[tuple[tuple[int, int, int, int], float, str]] = Registry("UR controller series", where="--series")
SERIES.add("cb3", ((3, 15, 7, 106331), 125.0, "URSoftware 3.15.7.106331 (Apr 12 2021)"))
SERIES.add("e", ((5, 11, 1, 108318), 500.0, "URSoftware 5.11.1.108318 (Jul 14 2021)"))
