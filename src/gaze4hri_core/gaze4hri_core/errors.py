"""One exception type for bad user input, rendered by every CLI as a single line
``error: <what> (<where>): <how to fix>`` with a non-zero exit, never a traceback."""
from __future__ import annotations

__all__ = ["Gaze4HRIError", "CalibrationError", "SessionError"]


class Gaze4HRIError(Exception):
    """A user-facing error: what went wrong, where, and how to fix it."""

    exit_code = 2

    def __init__(self, what: str, where: str | None = None, fix: str | None = None):
        self.what, self.where, self.fix = what, where, fix
        super().__init__(self.line())

    def line(self) -> str:
        s = self.what
        if self.where:
            s += f" ({self.where})"
        if self.fix:
            s += f": {self.fix}"
        return s.replace("\n", " ")


class CalibrationError(Gaze4HRIError):
    """A calibration file is missing, unreadable or invalid."""


class SessionError(Gaze4HRIError):
    """A session directory, manifest or bag is missing or invalid."""
