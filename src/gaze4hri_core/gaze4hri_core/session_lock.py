"""One writer per session (issue 20, item 5): ``<session>/session.lock``, an OS
advisory lock (``flock``, exclusive) held by the recording process for as long as it
writes the session, with who holds it (pid, host, start time, command) as JSON.

The flock, not the file, is the lock: the kernel drops it when its holder exits,
however it exits (a SIGKILL included), so a lock file left behind is stale and the
next run takes it over with a one-line notice. Where the file system has no flock
(``ENOLCK``/``EOPNOTSUPP``), the JSON decides: a holder pid still running on this host
keeps the session. Readers (``gaze4hri-acq replay``, the benchmark's session reader)
take no lock: they read a session being recorded as it is.
"""
from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from .errors import SessionError

__all__ = ["LOCK_NAME", "LockHolder", "SessionLock", "SessionLocked", "check_unlocked", "read_holder"]

LOCK_NAME = "session.lock"
#: a writer that finds the flock taken retries this long: a probe (``check_unlocked``)
#: holds a shared lock for microseconds, which must not read as a live writer
_RETRY_S = 0.5


@dataclass(frozen=True)
class LockHolder:
    """Who wrote the lock file (what the refusal and the takeover notice name)."""

    pid: int | None = None
    host: str | None = None
    since: str | None = None
    command: str | None = None

    def describe(self) -> str:
        s = f"pid {self.pid if self.pid is not None else '?'} on {self.host or 'an unknown host'}"
        if self.since:
            s += f" since {self.since}"
        if self.command:
            s += f" ({self.command})"
        return s

    def alive_here(self) -> bool:
        """True when the holder's pid runs on this host (signal 0 probes it)."""
        if self.pid is None or self.host != socket.gethostname():
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True  # another user's process
        return True


class SessionLocked(SessionError):
    """Another live process records this session (exit 2, like every refusal)."""


def _parse(raw: bytes) -> LockHolder | None:
    try:
        d = json.loads(raw.decode("utf-8") or "null")
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(d, dict):
        return None
    pid = d.get("pid")
    return LockHolder(pid=int(pid) if isinstance(pid, int) else None, host=d.get("host"), since=d.get("since"),
                      command=d.get("command"))


def _read_fd(fd: int) -> LockHolder | None:
    try:
        return _parse(os.pread(fd, 65536, 0))
    except OSError:
        return None


def read_holder(session: Path | str) -> LockHolder | None:
    """The holder recorded in the session's lock file (None: no file or no content)."""
    try:
        return _parse((Path(session) / LOCK_NAME).read_bytes())
    except OSError:
        return None


def _refusal(session: Path, holder: LockHolder | None) -> SessionLocked:
    who = holder.describe() if holder else "another process (no holder recorded yet)"
    return SessionLocked(f"session is being recorded by another run: {who}", str(session),
                         "wait for that run to finish or stop it (Ctrl-C in its terminal), then continue with --resume")


def _no_flock(e: OSError) -> bool:
    return e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL)


def check_unlocked(session: Path | str) -> None:
    """Refuse (SessionLocked) when a live process holds the session's lock; creates
    nothing. A shared, non-blocking flock probes the holder's exclusive one."""
    session = Path(session)
    path = session / LOCK_NAME
    if str(path) in SessionLock._held:  # this process is the writer
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise _refusal(session, _read_fd(fd)) from None
        except OSError as e:
            if not _no_flock(e):
                raise
            h = _read_fd(fd)
            if h is not None and h.alive_here() and h.pid != os.getpid():
                raise _refusal(session, h) from None
            return
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _command() -> str | None:
    """This process's command line as typed (``python -m gaze4hri_acq.cli`` reads as gaze4hri-acq)."""
    if not sys.argv or not sys.argv[0]:
        return None
    exe = Path(sys.argv[0])
    name = exe.parent.name.replace("_", "-") if exe.name in ("cli.py", "__main__.py") else exe.name
    return " ".join([name, *sys.argv[1:]])


class SessionLock:
    """The session's writer lock: ``acquire()`` before the first write, ``release()``
    at the end (or use it as a context manager); the exit of the process releases it too.

    ``notice`` after acquire: the one-line takeover notice of a stale lock, else None."""

    _held: dict[str, SessionLock] = {}  # lock paths this process holds

    def __init__(self, session: Path | str, command: str | None = None):
        self.session = Path(session)
        self.path = self.session / LOCK_NAME
        self.command = command if command is not None else _command()
        self.notice: str | None = None
        self._fd: int | None = None
        self._made_dir = False

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> SessionLock:
        if self.held:
            return self
        if not self.session.is_dir():
            self.session.mkdir(parents=True, exist_ok=True)
            self._made_dir = True
        deadline = time.monotonic() + _RETRY_S
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                flock = True
            except BlockingIOError:
                holder = _read_fd(fd)
                os.close(fd)
                if time.monotonic() < deadline:
                    time.sleep(0.02)
                    continue
                self._cleanup_dir()
                raise _refusal(self.session, holder) from None
            except OSError as e:
                if not _no_flock(e):
                    os.close(fd)
                    raise
                flock = False
            # the file may have been unlinked by its releasing holder between our open
            # and our flock: then we hold a lock on a dead inode, so open again
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            break
        prev = _read_fd(fd)
        if not flock and prev is not None and prev.alive_here() and prev.pid != os.getpid():
            os.close(fd)
            self._cleanup_dir()
            raise _refusal(self.session, prev)
        if prev is not None:
            gone = prev.host == socket.gethostname() and not prev.alive_here()
            why = "its process is gone" if gone else "its lock was no longer held"
            self.notice = f"session lock of {prev.describe()} was stale ({why}): taken over ({self.path})"
        self._fd = fd
        self._write()
        SessionLock._held[str(self.path)] = self
        return self

    def _write(self) -> None:
        """The holder's JSON (for a refusal's message); a full disk only loses the text."""
        body = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                           "since": datetime.now().astimezone().isoformat(timespec="seconds"), "command": self.command})
        try:
            os.ftruncate(self._fd, 0)
            os.pwrite(self._fd, body.encode("utf-8") + b"\n", 0)
        except OSError:
            pass

    def release(self) -> None:
        if self._fd is None:
            return
        SessionLock._held.pop(str(self.path), None)
        with contextlib.suppress(OSError):
            if os.path.samestat(os.fstat(self._fd), os.stat(self.path)):
                os.unlink(self.path)  # while still locked: a waiter then sees a new inode
        os.close(self._fd)  # drops the flock
        self._fd = None
        self._cleanup_dir()

    def _cleanup_dir(self) -> None:
        """A new session refused or ended before its first file: leave no empty folder."""
        if self._made_dir:
            with contextlib.suppress(OSError):
                self.session.rmdir()
            self._made_dir = False

    def __enter__(self) -> SessionLock:
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()
