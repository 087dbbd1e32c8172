"""The in-process bus of two processes joined into one (the one-process CLI's simulated
devices in a second process, gaze4hri_acq/split.py): every message delivered on one
side's bus is sent, as (topic, CDR bytes), over a local stream socket and delivered on
the other side's bus, in order. A message that came over the bridge is not sent back.

A publisher hands its message to the bridge's sender thread and goes on; the queue
is bounded (``QUEUE_BYTES``): a side that reads slowly makes the other side's
publishers wait once it is full (the simulated devices then hold the simulation clock,
as a slow recorder does in one process). Topics starting with NUL are the bridge's own
(ready, error): never published on a bus.
"""
from __future__ import annotations

import socket
import struct
import threading
from collections import deque
from collections.abc import Callable

__all__ = ["BusBridge", "READY", "ERROR", "send_frame"]

_HEAD = struct.Struct("<HI")  # topic length, data length
READY, ERROR = "\x00ready", "\x00error"


def _send_all(sock: socket.socket, bufs: list) -> None:
    """``sock.sendall`` of the buffers in order, by sendmsg (gathered, no joined copy);
    what a partial send leaves is sent on."""
    i = 0
    while i < len(bufs):
        n = sock.sendmsg(bufs[i:i + _IOV_MAX])
        while i < len(bufs) and n >= len(bufs[i]):
            n -= len(bufs[i])
            i += 1
        if n:
            bufs[i] = memoryview(bufs[i])[n:]


_IOV_MAX = 512  # buffers per sendmsg (Linux allows 1024)


def send_frame(sock: socket.socket, topic: str, data: bytes) -> None:
    """One message written at once, in the bridge's framing, without a bridge (the
    child's error line, before any bridge runs)."""
    t = topic.encode()
    sock.sendall(_HEAD.pack(len(t), len(data)) + t + data)


class BusBridge:
    """Joins ``bus`` to the peer at the other end of ``sock``; ``on_control(topic, data)``
    gets the bridge's own messages, ``on_close()`` the end of the stream (the peer exited)."""

    def __init__(self, bus, sock: socket.socket, name: str, on_control: Callable[[str, bytes], None] | None = None,
                 on_close: Callable[[], None] | None = None):
        self.bus, self.sock = bus, sock
        self._on_control, self._on_close = on_control, on_close
        for opt in (socket.SO_SNDBUF, socket.SO_RCVBUF):  # a few frames in flight (the kernel may cap it)
            try:
                sock.setsockopt(socket.SOL_SOCKET, opt, self.SOCKET_BYTES)
            except OSError:
                pass
        self._q: deque[tuple[bytes, bytes]] = deque()
        self._q_bytes = 0
        self._cv = threading.Condition()
        self._closed = False
        self.sent = self.received = 0
        self._thread = threading.Thread(target=self._read, name=f"bridge-{name}-in", daemon=True)
        self._sender = threading.Thread(target=self._send_loop, name=f"bridge-{name}-out", daemon=True)
        bus.remote = self.send

    #: bytes queued for the peer before publishers wait; the sockets' buffers
    QUEUE_BYTES, SOCKET_BYTES = 32 << 20, 4 << 20

    def start(self) -> BusBridge:
        self._thread.start()
        self._sender.start()
        return self

    def send(self, topic: str, data: bytes) -> None:
        """Queue one message for the peer (waits while QUEUE_BYTES are queued)."""
        t = topic.encode()
        head = _HEAD.pack(len(t), len(data)) + t
        with self._cv:
            while self._q_bytes > self.QUEUE_BYTES and not self._closed:
                self._cv.wait(0.1)
            if self._closed:
                return
            if not self._q:  # the sender may be asleep; a non-empty queue has it awake
                self._cv.notify_all()
            self._q.append((head, data))
            self._q_bytes += len(data)

    def _send_loop(self) -> None:
        """Write what is queued, everything queued at once (one system call for many
        small messages), until closed and drained."""
        while True:
            with self._cv:
                while not self._q and not self._closed:
                    self._cv.wait()
                if not self._q:  # closed and drained
                    return
                batch = list(self._q)
                self._q.clear()
            bufs = [b for item in batch for b in item]
            try:
                _send_all(self.sock, bufs)
            except OSError:  # the peer is gone: its end of the stream is reported by the reader
                with self._cv:
                    self._closed = True
                    self._q.clear()
                    self._cv.notify_all()
                return
            with self._cv:
                self._q_bytes -= sum(len(d) for _h, d in batch)
                self.sent += len(batch)
                self._cv.notify_all()  # publishers waiting for room

    def _read(self) -> None:
        f = self.sock.makefile("rb", buffering=1 << 18)
        try:
            while True:
                head = f.read(_HEAD.size)
                if len(head) < _HEAD.size:
                    break
                n_topic, n_data = _HEAD.unpack(head)
                topic = f.read(n_topic).decode()
                data = f.read(n_data)
                if len(data) < n_data:
                    break
                self.received += 1
                if topic.startswith("\x00"):
                    if self._on_control is not None:
                        self._on_control(topic, data)
                    continue
                self.bus.deliver(topic, data, remote=True)
        except (OSError, ValueError):
            pass
        finally:
            f.close()
            with self._cv:
                self._closed = True
                self._cv.notify_all()
            if self._on_close is not None:
                self._on_close()

    def close(self, wait_s: float = 5.0) -> None:
        """Send what is queued, end the stream (the peer sees its end) and wait for the
        reader to finish."""
        with self._cv:
            self._closed = True
            self._cv.notify_all()
        if self._sender.is_alive():
            self._sender.join(wait_s)
        try:
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join(wait_s)
        self.sock.close()
