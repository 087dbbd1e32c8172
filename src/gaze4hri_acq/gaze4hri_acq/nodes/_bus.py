"""Intra-process delivery for the one-process runner (rclpy has no intra-process
transport): a publisher hands serialized CDR bytes straight to subscribers in the
same process, and uses DDS only when a subscriber elsewhere is matched. This is
rclcpp's intra-process idea at the bytes level: the recorder writes exactly the
bytes that would have crossed DDS, with no deserialize/serialize round trip.
"""
from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Callable

from ._cdr import serialize

__all__ = ["IntraProcessBus", "FastPublisher"]


class IntraProcessBus:
    """Topic -> local callbacks receiving (topic, cdr_bytes). One per runner, not global.

    ``dds_topics``: topics that other processes publish too (the orchestrator's control
    and events, when the device nodes run under ros2 launch): subscriptions to them go
    over DDS only, so each message arrives once whichever process sent it (nothing
    subscribes to them on the bus, and a local publisher reaches them over DDS)."""

    def __init__(self, dds_topics: frozenset[str] | set[str] | tuple = ()) -> None:
        self.dds_topics = frozenset(dds_topics)
        self._subs: dict[str, list[Callable[[str, bytes], None]]] = defaultdict(list)
        self._lock = threading.Lock()
        # the other process' bus (nodes/_bridge.py): every message delivered here goes there too
        self.remote: Callable[[str, bytes], None] | None = None

    def subscribe(self, topic: str, callback: Callable[[str, bytes], None]) -> None:
        with self._lock:
            self._subs[topic].append(callback)

    def unsubscribe_all(self, callback_owner) -> None:
        with self._lock:
            for topic in list(self._subs):
                self._subs[topic] = [c for c in self._subs[topic] if getattr(c, "__self__", None) is not callback_owner]

    def deliver(self, topic: str, data: bytes, remote: bool = False) -> int:
        """Hand ``data`` to this bus' subscribers of ``topic`` and, unless it came from
        there (``remote``), to the bridged bus of the other process; returns the local count."""
        subs = self._subs.get(topic)
        for cb in list(subs or ()):
            cb(topic, data)
        if self.remote is not None and not remote:
            self.remote(topic, data)
        return len(subs) if subs else 0


class FastPublisher:
    """A publisher that accepts a message or its CDR bytes, feeds the local bus, and
    publishes over DDS only when some other process listens. A message is serialized
    once, by ``_cdr.serialize`` (rclpy's bytes cut to the CDR actually written), and the
    same bytes go to the bus and to DDS, so a recorder anywhere stores what rosbags reads."""

    #: a ``stream``'s publisher with a bus asks the middleware this often (wall s) whether
    #: another process subscribes (a viewer that joins gets samples within that time);
    #: commands, acknowledgements and events ask at every message: none may be lost
    LISTENERS_EVERY_S = 0.25

    def __init__(self, node, msg_type, topic: str, qos, bus: IntraProcessBus | None = None, stream: bool = False):
        self.topic = topic
        self.pub = node.create_publisher(msg_type, topic, qos)
        self.bus = bus
        self._cache = stream and bus is not None
        self._asked, self._listeners = float("-inf"), False

    def _dds_listeners(self) -> bool:
        if not self._cache:
            return self.pub.get_subscription_count() > 0
        now = time.monotonic()
        if now - self._asked >= self.LISTENERS_EVERY_S:
            self._asked, self._listeners = now, self.pub.get_subscription_count() > 0
        return self._listeners

    def publish(self, msg_or_bytes) -> None:
        data = msg_or_bytes if isinstance(msg_or_bytes, (bytes, bytearray)) else None
        if self.bus is not None:
            if data is None:
                data = serialize(msg_or_bytes)
            self.bus.deliver(self.topic, data)
        if self._dds_listeners():
            self.pub.publish(data if data is not None else serialize(msg_or_bytes))
