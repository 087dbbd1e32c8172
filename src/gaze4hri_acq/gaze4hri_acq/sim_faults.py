"""The simulated session's fault hooks (test options of ``gaze4hri-acq session``): timed
from the start of a named trial, they act on the simulated world of the process that
holds it (this one, or the devices' process of split.py)."""
from __future__ import annotations

__all__ = ["inject_sim_faults"]


def inject_sim_faults(stack, a) -> None:
    """Test hooks: a mocap dropout, a protective stop or a table nudge in a named trial
    (sim only; ``a``: the session's settings, or the split child's copy of these three)."""
    if not (a.mocap_dropout or a.protective_stop or a.table_nudge):
        return
    import json

    from gaze4hri_core.session import Topics
    from rclpy.serialization import deserialize_message
    from std_msgs.msg import String

    world = stack.world
    current = {"trial": None}

    def on_event(_t, data):
        # faults are timed from the start of the trial's own robot motion (or of the
        # recording for fixed-camera trials), so they land mid-motion whatever the load
        e = json.loads(deserialize_message(data, String).data)
        if e.get("event") == "start":
            current["trial"] = e.get("trial")
            from gaze4hri_core.protocol import trial_by_id

            if trial_by_id(e["trial"]).camera_motion.kind != "fixed":
                return
        elif not (e.get("event") == "motion_start" and e.get("name") != "approach"):
            return
        now = world.clock.now_ns()
        tid = current["trial"]
        if a.mocap_dropout and tid == a.mocap_dropout[0]:
            world.inject_dropout("head_band", float(a.mocap_dropout[2]), now + int(float(a.mocap_dropout[1]) * 1e9))
        if a.protective_stop and tid == a.protective_stop[0]:
            world.arm.inject_protective_stop(now + int(float(a.protective_stop[1]) * 1e9))
        # the table is bumped; the subject keeps looking at the moving target
        if a.table_nudge and tid == a.table_nudge[0]:
            world.nudge_table(*(float(x) for x in a.table_nudge[2:]), at_ns=now + int(float(a.table_nudge[1]) * 1e9))
            world.set_trial(world.current_trial)

    stack.bus.subscribe(Topics.EVENTS, on_event)
