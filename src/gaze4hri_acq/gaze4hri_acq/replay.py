"""Republish a recorded session on its original topics (lab replay, Foxglove, RViz):
the bags' CDR bytes go out unchanged, paced by their log times (``rate`` 2 = twice as
fast), trial after trial in protocol order. A bag whose MCAP CRCs disagree with its
bytes (recorder.bag_files.require_intact) is not replayed: one line names it, the other
trials play. The CRCs are checked one bag ahead of the playback (a background thread
checks the next bag while one plays; each bag's verdict is awaited before its first
message), so a long session starts publishing after its first bag's check, not after
all of them; when every bag is damaged, the first one's line is the error.

/clock (rosgraph_msgs/Clock): on by default, replay is a ROS time source the way
``ros2 bag play --clock --clock-topics-all`` is (rosbag2 jazzy
ros2bag/ros2bag/verb/play.py:89-92 and 223-229: 40 Hz by default, and one clock message
before each message; rosbag2_transport/src/rosbag2_transport/player.cpp:1061-1087, the
publisher with ``rclcpp::ClockQoS()``, best effort keep-last 1): the bag's log time of
the message about to go out, and between messages the bag time the pacing has reached,
at ``CLOCK_HZ``. A node started with ``use_sim_time:=true`` then follows the bag's time
(rclpy's TimeSource subscribes to /clock best effort, depth 1). ``clock`` off: the
``clock`` argument of replay.launch.py, or the node's ROS parameter ``clock``
(``gaze4hri-acq replay ... --ros-args -p clock:=false``).

/tf and /tf_static go out as the bag holds them (the recorder's bytes, recorder/tf.py) with
tf2's broadcaster QoS (/tf_static transient local: a listener joining later still gets the
trial's static transforms). They need tf2_msgs, which rclpy from PyPI lacks:
scripts/build_tf2_msgs.sh builds it into the venv (the bootstrap runs it); without it one
line says so and the rest plays.

The tail: the last samples are still in the publishers' DDS histories when the last
``publish`` returns, and a process that destroys its node then (as replay did) takes them
with it (issue 31: 6 of 1,307 /robot/tcp_pose, 21 of 4,442 /tf lost). Before it ends, replay
waits until every subscriber has acknowledged every sample of its reliable publishers
(``Publisher.wait_for_all_acked``, what ``ros2 bag play --wait-for-all-acked`` does), bounded
by ``DRAIN_PATIENCE_S`` for a subscriber that stopped reading. A bag's publishers are all made
when it opens, before its first message (rosbag2's player prepares them the same way), so a
subscriber matches each topic before its first sample rather than at it.

The head: a subscriber in another process is matched only once DDS discovery has run (on a
loaded machine more than a second after the replay starts), and what is published before
goes to no one. The node's ROS parameter ``wait_for_subscribers`` (default false; ``--ros-args
-p wait_for_subscribers:=true``) holds each bag's first message until every topic of the bag
has a subscriber matched, as ``rosbag play --wait-for-subscribers`` did in ROS 1."""
from __future__ import annotations

import importlib
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from gaze4hri_core.errors import SessionError
from gaze4hri_core.session import Topics, bag_dir, load_manifest

from .nodes.common import QOS_LATCHED, QOS_RELIABLE
from .recorder.bag_files import require_intact
from .recorder.repair import repair_bag
from .recorder.tf import TF, TF_STATIC, tf_qos, tf_static_qos

__all__ = ["replay_session", "trial_bags", "CLOCK_TOPIC", "CLOCK_HZ"]

CLOCK_TOPIC = "/clock"
CLOCK_HZ = 40.0  # rosbag2's default for ``ros2 bag play --clock`` (ros2bag/verb/play.py:89)
#: how long the end of a replay waits for its subscribers to acknowledge the last samples. A
#: live reliable subscriber acknowledges within a few heartbeat periods (Fast DDS: 3 s at most,
#: ms on loopback); this bounds only the wait for one that stopped reading, which keeps the
#: process from ending (a note names the topics it left unacknowledged).
DRAIN_PATIENCE_S = 10.0
#: history of the replay's publishers of pose, state and diagnostic streams (samples): a keep-last
#: publisher replaces a sample its subscriber has not acknowledged yet once this many newer ones
#: are out, so the depth is how long a subscriber may fall behind without a loss. The recording
#: publishers' 100 is 0.23 s of /tf (430 messages/s at rate 1), which a loaded machine's
#: subscriber exceeded (issue 31: 7 of 6,079 /tf lost under launch); 2,000 hold ~4.5 s of /tf
#: (a few hundred kB). Images keep their 100 (6 MB each at 1920x1080).
REPLAY_DEPTH = 2000


def _msg_class(type_name: str):
    pkg, _, name = type_name.split("/")
    try:
        return getattr(importlib.import_module(f"{pkg}.msg"), name)
    except (ImportError, AttributeError):
        raise SessionError(f"message type {type_name} is not installed", None,
                           f"install the {pkg} message package") from None


# types the recorder writes itself that rclpy from PyPI cannot publish unless built
# (scripts/build_tf2_msgs.sh; recorder/tf.py)
_NOT_PUBLISHABLE = {"tf2_msgs/msg/TFMessage"}


def _installed(type_name: str) -> bool:
    try:
        _msg_class(type_name)
        return True
    except SessionError:
        return False


def trial_bags(session: Path, trials: list[str] | None = None) -> list[tuple[str, Path]]:
    """(trial id, bag dir) of the session's recorded trials, in protocol order."""
    session = Path(session)
    m = load_manifest(session)
    if trials:
        unknown = [t for t in trials if t not in m.trials]
        if unknown:
            import difflib

            near = difflib.get_close_matches(unknown[0], list(m.trials), n=1)
            raise SessionError(f"trial {unknown[0]} is not in this session", str(session / "session.yaml"),
                               f"did you mean {near[0]}?" if near else "pick a trial id listed in session.yaml")
    out = []
    for tid, rec in m.trials.items():
        if trials and tid not in trials:
            continue
        b = bag_dir(session, tid)
        if rec.status in ("done", "incomplete", "failed") and b.is_dir():
            out.append((tid, b))
    if not out:
        raise SessionError("no recorded trial to replay", str(session), "record the session first, or check --trial")
    return out


class _BagChecks:
    """The CRC verdicts of the bags (recorder.bag_files.require_intact), each computed once in a
    daemon thread started one bag ahead of the playback: ``verdict(i)`` waits for bag
    ``i``'s check (None when intact, else its one-line SessionError) and starts bag
    ``i + 1``'s. zlib.crc32 releases the GIL on buffers over 5 KiB (CPython
    Modules/zlibmodule.c, zlib_crc32_impl), so the check mostly runs beside the pacing of
    the bag that plays meanwhile."""

    def __init__(self, bags: list[tuple[str, Path]]):
        self._bags = bags
        self._threads: dict[int, threading.Thread] = {}
        self._result: dict[int, BaseException | None] = {}

    def _check(self, i: int) -> None:
        tid, b = self._bags[i]
        try:
            require_intact(b, tid)
            self._result[i] = None
        except BaseException as e:  # handed to the playback thread by verdict()
            self._result[i] = e

    def start(self, i: int) -> None:
        if i < len(self._bags) and i not in self._threads:
            th = self._threads[i] = threading.Thread(target=self._check, args=(i,), name=f"replay-crc-{i}", daemon=True)
            th.start()

    def verdict(self, i: int) -> SessionError | None:
        self.start(i)
        self._threads[i].join()
        self.start(i + 1)  # the next bag's check runs while this one plays
        e = self._result[i]
        if e is not None and not isinstance(e, SessionError):
            raise e  # not a damage verdict (an unreadable file): raised, as the up-front check did
        return e


class _ClockOut:
    """/clock from the bag's time: ``at(t_ns)`` publishes when the time has moved on (``last_ns``
    is reset when a loop starts over); ``tick(t_ns)`` at most every 1/CLOCK_HZ wall seconds."""

    def __init__(self, node):
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        from rosgraph_msgs.msg import Clock

        self._msg = Clock()
        # rclcpp::ClockQoS (best effort, keep last 1), as rosbag2's player publishes it
        self._pub = node.create_publisher(Clock, CLOCK_TOPIC,
                                          QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT))
        self.last_ns: int | None = None
        self._last_wall = 0.0

    def at(self, t_ns: int) -> None:
        if self.last_ns is not None and t_ns <= self.last_ns:  # never backwards within a pass
            return
        self._msg.clock.sec, self._msg.clock.nanosec = divmod(int(t_ns), 1_000_000_000)
        self._pub.publish(self._msg)
        self.last_ns = int(t_ns)
        self._last_wall = time.monotonic()

    def tick(self, t_ns: int) -> None:
        if time.monotonic() - self._last_wall >= 1.0 / CLOCK_HZ:
            self.at(t_ns)


def replay_session(session: Path, trials: list[str] | None = None, rate: float = 1.0, loop: bool = False,
                   quiet: bool = False, context=None, on_trial: Callable[[str], None] | None = None,
                   max_messages: int | None = None, clock: bool | None = None,
                   wait_for_subscribers: bool | None = None) -> int:
    """Publish the session's messages with their original spacing divided by ``rate``, and
    /clock from their log times unless ``clock`` is False (None: the node's ROS parameter
    ``clock``, default true; with its own context the process' ``--ros-args`` are read, as
    launch passes them); ``wait_for_subscribers`` likewise (None: the parameter, default false).
    Returns the number of messages published (without /clock)."""
    import rclpy
    from rclpy.context import Context

    if not rate > 0:
        raise SessionError(f"rate must be positive, got {rate}", None, "use e.g. --rate 1 or --rate 0.5")
    bags = trial_bags(Path(session), trials)
    checks = _BagChecks(bags)
    checks.start(0)  # the first bag's CRCs while the node comes up
    own = context is None
    if own:
        context = Context()
        rclpy.init(context=context, args=sys.argv)  # rcl reads only what follows --ros-args (launch's parameters)
    node = rclpy.create_node("replay", context=context)
    want_clock = node.declare_parameter("clock", True).value if clock is None else clock
    out = _Playback(node, _ClockOut(node) if want_clock else None, rate, max_messages,
                    wait_for_subscribers=bool(node.declare_parameter("wait_for_subscribers", False).value
                                              if wait_for_subscribers is None else wait_for_subscribers))
    skipped: dict[int, SessionError] = {}
    try:
        while True:
            if out.clock is not None:
                out.clock.last_ns = None  # a loop starts the bag's time over
            for i, (tid, b) in enumerate(bags):
                if _skip_damaged(checks, i, skipped, len(bags)):
                    continue
                reader = _open_reader(b)
                if on_trial is not None:
                    on_trial(tid)
                if not quiet:
                    print(f"replaying {tid} ({reader.message_count} messages, {reader.duration / 1e9:.1f} s)")
                try:
                    if out.play(reader):
                        return out.drain()
                finally:
                    reader.close()
            if not loop:
                return out.drain()
    finally:
        node.destroy_node()
        if own and context.ok():
            rclpy.shutdown(context=context)


def _skip_damaged(checks: _BagChecks, i: int, skipped: dict[int, SessionError], n_bags: int) -> bool:
    """Whether bag ``i`` is damaged (awaited before its first message: a damaged bag is
    never played), said once per bag; every bag damaged: the first one's line is the error."""
    damage = checks.verdict(i)
    if damage is None:
        return False
    if i not in skipped:
        skipped[i] = damage
        print(f"replay: skipping damaged bag: {damage.line()}", file=sys.stderr)
    if len(skipped) == n_bags:
        raise skipped[0]  # nothing to play: the first damaged bag is the error
    return True


def _open_reader(b: Path):
    """rosbags' Reader on the bag, opened; an interrupted bag is repaired first (readable as far as written)."""
    from rosbags.rosbag2 import Reader

    try:
        reader = Reader(b)
        reader.open()
    except Exception:
        repair_bag(b)
        reader = Reader(b)
        reader.open()
    return reader


class _Playback:
    """The node's publishers (one per topic, made at its first message) and the pacing:
    each message at its log time's offset from the bag's first, divided by ``rate``."""

    def __init__(self, node, clock: _ClockOut | None, rate: float, max_messages: int | None,
                 wait_for_subscribers: bool = False):
        self._node, self.clock, self._rate, self._max = node, clock, rate, max_messages
        self._wait_subs = wait_for_subscribers
        self._pubs: dict[str, object] = {}  # topic -> publisher, False: its type cannot be published here
        self.n = 0

    def play(self, reader) -> bool:
        """Publish one bag's messages; True when ``max_messages`` is reached."""
        t_first = None
        pubs = [self._publisher(conn) for conn in reader.connections]  # all before the bag's first message
        if self._wait_subs:
            self._until_subscribed([p for p in pubs if p is not False])
        wall0 = time.monotonic()
        for conn, t, raw in reader.messages():
            p = self._publisher(conn)
            if p is False:
                continue
            if t_first is None:
                t_first = t
            self._wait(wall0 + (t - t_first) / 1e9 / self._rate, t_first, wall0)
            if self.clock is not None:
                self.clock.at(t)
            p.publish(bytes(raw))
            self.n += 1
            if self._max is not None and self.n >= self._max:
                return True
        return False

    @staticmethod
    def _until_subscribed(pubs: list) -> None:
        """Until each publisher has a subscription matched (Ctrl-C ends the wait)."""
        said = False
        while (alone := [p.topic_name for p in pubs if p.get_subscription_count() == 0]):
            if not said:
                print(f"replay: waiting for a subscriber on {len(alone)} topic(s) ({alone[0]}, ...)", file=sys.stderr)
                said = True
            time.sleep(0.01)

    def drain(self) -> int:
        """Wait until the subscribers have acknowledged every sample published (at most
        ``DRAIN_PATIENCE_S`` in all); returns the number of messages published."""
        from rclpy.duration import Duration

        deadline = time.monotonic() + DRAIN_PATIENCE_S
        late = [topic for topic, p in self._pubs.items()
                if p is not False and not p.wait_for_all_acked(Duration(seconds=max(deadline - time.monotonic(), 0.0)))]
        if late:
            print(f"note: replay ended with samples not acknowledged within {DRAIN_PATIENCE_S:g} s by a subscriber "
                  f"of {', '.join(sorted(late))} (a subscriber that stopped reading)", file=sys.stderr)
        return self.n

    def _wait(self, due: float, t_first: int, wall0: float) -> None:
        """Sleep until ``due`` (wall time), /clock ticking the bag time reached meanwhile."""
        while (dt := due - time.monotonic()) > 0:
            if self.clock is None:
                time.sleep(dt)
                break
            self.clock.tick(t_first + int((time.monotonic() - wall0) * self._rate * 1e9))  # the bag time reached
            time.sleep(min(dt, 1.0 / CLOCK_HZ))

    def _publisher(self, conn):
        """The topic's publisher, made with the QoS its publishers use (tf2's for /tf and
        /tf_static); False for a type not installed here (said once for /tf and /tf_static)."""
        p = self._pubs.get(conn.topic)
        if p is not None:
            return p
        if conn.msgtype in _NOT_PUBLISHABLE and not _installed(conn.msgtype):
            if not any(v is False for v in self._pubs.values()):  # one line for /tf and /tf_static
                print(f"note: {conn.msgtype} is not installed here, so /tf and /tf_static are not "
                      "republished (they stay in the bag): run scripts/bootstrap.sh (builds tf2_msgs) "
                      "or 'sudo apt-get install ros-<distro>-tf2-msgs'", file=sys.stderr)
            self._pubs[conn.topic] = False
            return False
        p = self._pubs[conn.topic] = self._node.create_publisher(_msg_class(conn.msgtype), conn.topic,
                                                                 publisher_qos(conn.topic))
        return p


def publisher_qos(topic: str):
    """The QoS of replay's publisher of ``topic``: its recording publishers' (tf2's for /tf and
    /tf_static, latched camera_info), with a history of at least ``REPLAY_DEPTH`` for the
    streams other than images and the latched ones (depth is the writer's own: no effect on
    matching). Latched camera_info keeps 100 (one message a second or so; the 1 of its recording
    publisher lost one under load when the next came before the subscriber had acknowledged it;
    a late joiner asking for transient local gets at most its own depth of them)."""
    import copy

    if topic == TF_STATIC:
        return tf_static_qos()  # once per trial: what a late joiner needs is the latest one
    qos = copy.copy(QOS_LATCHED if topic.endswith("camera_info") else tf_qos() if topic == TF else QOS_RELIABLE)
    qos.depth = (max(qos.depth, QOS_RELIABLE.depth) if topic.endswith("camera_info")
                 else qos.depth if topic == Topics.IMAGE else max(qos.depth, REPLAY_DEPTH))
    return qos
