"""The operator's keys: one key at a time from a terminal (cbreak mode), one line at a
time from a pipe (tests and scripts drive the prompts through one)."""
from __future__ import annotations

import os
import threading
from collections.abc import Callable

__all__ = ["KeyReader"]


class KeyReader(threading.Thread):
    """Operator keys from ``stream``: on a terminal one key at a time (cbreak mode, no
    echo; Ctrl-C still signals), otherwise one line at a time (an empty line is Enter,
    else its first character), so tests and scripts drive it through a pipe.
    ``on_key("\\n" | "s" | ...)``; ``on_eof()`` when the stream ends."""

    def __init__(self, stream, on_key: Callable[[str], None], on_eof: Callable[[], None]):
        super().__init__(name="operator-keys", daemon=True)
        self.stream, self.on_key, self.on_eof = stream, on_key, on_eof
        self._halt = threading.Event()
        self._saved = None

    def run(self) -> None:
        try:
            if self._tty():
                self._run_tty()
            else:
                self._run_lines()
        except (OSError, ValueError):
            if not self._halt.is_set():
                self.on_eof()

    def _tty(self) -> bool:
        try:
            return os.isatty(self.stream.fileno())
        except (AttributeError, OSError, ValueError):
            return False

    def _run_tty(self) -> None:
        import select
        import termios
        import tty

        fd = self.stream.fileno()
        self._saved = termios.tcgetattr(fd)
        tty.setcbreak(fd)
        try:
            while not self._halt.is_set():
                r, _, _ = select.select([fd], [], [], 0.1)
                if not r:
                    continue
                ch = os.read(fd, 1).decode(errors="ignore")
                if not ch:
                    self.on_eof()
                    return
                self.on_key("\n" if ch in "\r\n" else ch.lower())
        finally:
            self.restore()

    def _run_lines(self) -> None:
        while not self._halt.is_set():
            line = self.stream.readline()
            if not line:
                self.on_eof()
                return
            s = line.strip()
            self.on_key("\n" if not s else s[0].lower())

    def restore(self) -> None:
        if self._saved is not None:
            import termios

            try:
                termios.tcsetattr(self.stream.fileno(), termios.TCSADRAIN, self._saved)
            except (OSError, ValueError):
                pass
            self._saved = None

    def stop(self) -> None:
        self._halt.set()
        if self._tty():
            self.join(timeout=1.0)
        self.restore()

