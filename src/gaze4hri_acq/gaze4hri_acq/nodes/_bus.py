"""Intra-process delivery for the one-process runner (rclpy has no intra-process
transport): a publisher hands serialized CDR bytes straight to subscribers in the
same process, and uses DDS only when a subscriber elsewhere is matched. This is
rclcpp's intra-process idea at the bytes level: the recorder writes exactly the
bytes that would have crossed DDS, with no deserialize/serialize round trip.
"""
from __future__ import annotations

import threading
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

    def subscribe(self, topic: str, callback: Callable[[str, bytes], None]) -> None:
        with self._lock:
            self._subs[topic].append(callback)

    def unsubscribe_all(self, callback_owner) -> None:
        with self._lock:
            for topic in list(self._subs):
                self._subs[topic] = [c for c in self._subs[topic] if getattr(c, "__self__", None) is not callback_owner]

    def deliver(self, topic: str, data: bytes) -> int:
        subs = self._subs.get(topic)
        if not subs:
            return 0
        for cb in list(subs):
            cb(topic, data)
        return len(subs)


class FastPublisher:
    """A publisher that accepts a message or its CDR bytes, feeds the local bus, and
    publishes over DDS only when some other process listens. A message is serialized
    once, by ``_cdr.serialize`` (rclpy's bytes cut to the CDR actually written), and the
    same bytes go to the bus and to DDS, so a recorder anywhere stores what rosbags reads."""

    def __init__(self, node, msg_type, topic: str, qos, bus: IntraProcessBus | None = None):
        self.topic = topic
        self.pub = node.create_publisher(msg_type, topic, qos)
        self.bus = bus

    def publish(self, msg_or_bytes) -> None:
        data = msg_or_bytes if isinstance(msg_or_bytes, (bytes, bytearray)) else None
        if self.bus is not None:
            if data is None:
                data = serialize(msg_or_bytes)
            self.bus.deliver(self.topic, data)
        if self.pub.get_subscription_count() > 0:
            self.pub.publish(data if data is not None else serialize(msg_or_bytes))
