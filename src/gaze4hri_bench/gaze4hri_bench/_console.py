"""A quiet console for the benchmark's commands: third-party log noise is silenced at
its source before the libraries that emit it are imported, so progress bars and our
own one-line messages are all a user sees.

What is silenced, and how (each at the earliest point the library allows):

- protobuf >= 5 removed ``MessageFactory.GetPrototype`` (replaced by
  ``message_factory.GetMessageClass``); MediaPipe 0.10.21's C++ bindings still call it
  and print ``AttributeError: 'MessageFactory' object has no attribute
  'GetPrototype'``. :func:`protobuf_compat` restores the method as the documented
  replacement, so the call succeeds and nothing is printed.
- glog / TensorFlow / Ultralytics read environment variables at import
  (``GLOG_minloglevel``, ``TF_CPP_MIN_LOG_LEVEL``, ``YOLO_VERBOSE``); Python loggers
  (absl, ultralytics) get level WARNING/ERROR.
- MediaPipe 0.10.21 logs through absl C++ logging and TFLite's minimal logger, which
  read no environment variable and export no symbol to configure them (``W0000 ...
  inference_feedback_manager.cc``, ``INFO: Created TensorFlow Lite XNNPACK delegate``).
  :class:`NativeStderrFilter` routes file descriptor 2 through a pipe and drops only
  those INFO/WARNING line shapes; anything else (native errors, fatal messages) is
  passed through. Python's own ``sys.stderr`` keeps writing to the terminal directly,
  so progress bars are never interleaved with native output.

``GAZE4HRI_NATIVE_LOGS=1`` turns the filter off (everything reaches the terminal).
"""
from __future__ import annotations

import logging
import os
import re
import sys
import threading

__all__ = ["QUIET_ENV", "NOISE_PATTERNS", "setup", "protobuf_compat", "quiet_python_loggers", "NativeStderrFilter",
           "is_noise"]

#: environment read by the native libraries at import time
QUIET_ENV = {
    "GLOG_minloglevel": "2",  # glog builds of MediaPipe: errors only
    "TF_CPP_MIN_LOG_LEVEL": "3",  # TensorFlow / TFLite builds with TF logging
    "YOLO_VERBOSE": "False",  # Ultralytics: no settings banner, errors only
    "YOLO_OFFLINE": "1",  # Ultralytics: never reach the network
}

#: native INFO/WARNING lines that carry nothing a user can act on
NOISE_PATTERNS = (
    # absl/glog INFO and WARNING lines (W0000 00:00:... x.cc:114] ...)
    re.compile(r"^[IW]\d{4} [\d:.]+\s+\d+ [\w./-]+:\d+\] "),
    re.compile(r"^WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"),
    re.compile(r"^INFO: Created TensorFlow Lite .*delegate"),  # TFLite minimal logger
    re.compile(r"^INFO: Initialized TensorFlow Lite runtime"),
    # if protobuf_compat could not run
    re.compile(r"^AttributeError: 'MessageFactory' object has no attribute 'GetPrototype'"),
)

_QUIET_LOGGERS = {"absl": logging.ERROR, "ultralytics": logging.ERROR, "matplotlib": logging.WARNING,
                  "PIL": logging.WARNING}


def is_noise(line: str) -> bool:
    """True for a native log line the console drops (see :data:`NOISE_PATTERNS`)."""
    return any(p.search(line) for p in NOISE_PATTERNS)


def protobuf_compat() -> bool:
    """Give protobuf >= 5's MessageFactory/SymbolDatabase back ``GetPrototype`` as the
    documented ``message_factory.GetMessageClass``; True if a method was added."""
    try:
        from google.protobuf import message_factory, symbol_database
    except ImportError:
        return False
    added = False
    if hasattr(message_factory, "GetMessageClass"):
        for cls in (message_factory.MessageFactory, symbol_database.SymbolDatabase):
            if not hasattr(cls, "GetPrototype"):
                cls.GetPrototype = lambda self, descriptor: message_factory.GetMessageClass(descriptor)
                added = True
    return added


def quiet_python_loggers() -> None:
    for name, level in _QUIET_LOGGERS.items():
        lg = logging.getLogger(name)
        if lg.level < level:
            lg.setLevel(level)


class NativeStderrFilter:
    """File descriptor 2 through a pipe whose reader drops :func:`is_noise` lines.

    Python's ``sys.stderr`` is pointed at a duplicate of the original descriptor, so
    Python output (progress bars, messages, tracebacks) is written directly and in
    order; only output of native code (and of child processes that inherit fd 2) goes
    through the filter. :meth:`close` restores fd 2 and ``sys.stderr``.
    """

    def __init__(self) -> None:
        self.dropped = 0
        self._saved: int | None = None
        self._thread: threading.Thread | None = None
        self._old_stderr = None

    def install(self) -> NativeStderrFilter:
        if self._saved is not None:
            return self
        sys.stderr.flush()
        self._saved = os.dup(2)
        r, w = os.pipe()
        os.dup2(w, 2)
        os.close(w)
        self._old_stderr = sys.stderr
        sys.stderr = os.fdopen(os.dup(self._saved), "w", buffering=1,
                               encoding=getattr(sys.stderr, "encoding", None) or "utf-8",
                               errors="backslashreplace")
        self._thread = threading.Thread(target=self._pump, args=(r,), name="native-stderr-filter", daemon=True)
        self._thread.start()
        return self

    def _pump(self, r: int) -> None:
        buf = b""
        try:
            while True:
                chunk = os.read(r, 65536)
                if not chunk:
                    break
                buf += chunk
                *lines, buf = buf.split(b"\n")
                for ln in lines:
                    self._emit(ln + b"\n")
            if buf:
                self._emit(buf)
        finally:
            os.close(r)

    def _emit(self, raw: bytes) -> None:
        if is_noise(raw.decode("utf-8", "replace")):
            self.dropped += 1
            return
        if self._saved is not None:
            try:
                os.write(self._saved, raw)
            except OSError:
                pass

    def close(self) -> None:
        if self._saved is None:
            return
        try:
            sys.stderr.flush()
        except (OSError, ValueError):
            pass
        os.dup2(self._saved, 2)  # the pipe's last write end closes: the reader sees EOF
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        mine, sys.stderr = sys.stderr, self._old_stderr
        try:
            mine.close()
        except OSError:
            pass
        os.close(self._saved)
        self._saved = None

    def __enter__(self) -> NativeStderrFilter:
        return self.install()

    def __exit__(self, *exc) -> None:
        self.close()


_FILTER: NativeStderrFilter | None = None


def setup(native_filter: bool = True) -> NativeStderrFilter | None:
    """Quiet the console for this process: environment for native libraries (only where
    the user set nothing), Python loggers, the protobuf compatibility method and, when
    ``native_filter`` and GAZE4HRI_NATIVE_LOGS is unset, the fd-2 filter. Call before
    the libraries are imported; calling again is a no-op."""
    global _FILTER
    for k, v in QUIET_ENV.items():
        os.environ.setdefault(k, v)
    quiet_python_loggers()
    protobuf_compat()
    if native_filter and _FILTER is None and os.environ.get("GAZE4HRI_NATIVE_LOGS", "") in ("", "0"):
        try:
            _FILTER = NativeStderrFilter().install()
        except OSError:
            _FILTER = None
        else:
            import atexit

            atexit.register(_FILTER.close)  # forward what native code wrote last
    return _FILTER
