"""One doctor check: its group (robot, camera, mocap, calibration, host), its name, pass /
warn / fail, the value measured and the fix. Checks are data, so the table, the JSON and
the session's start-up refusal all read the same records."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Literal

__all__ = ["Check", "Status", "passed", "warned", "failed", "exit_code", "failures", "GROUPS"]

Status = Literal["pass", "warn", "fail"]
#: the device groups, in the order the table lists them
GROUPS = ("robot", "camera", "mocap", "calibration", "host")


@dataclass(frozen=True)
class Check:
    """A check's outcome: ``value`` is what was measured (with its unit), ``fix`` what to do
    about a warn or a fail (empty on a pass)."""

    group: str
    name: str
    status: Status
    value: str
    fix: str = ""

    def line(self) -> str:
        """One line: ``FAIL robot safety: protective stop -> release it on the pendant``."""
        tail = f" -> {self.fix}" if self.fix and self.status != "pass" else ""
        return f"{self.status.upper()} {self.group} {self.name}: {self.value}{tail}"

    def as_dict(self) -> dict:
        return asdict(self)


def passed(group: str, name: str, value: str) -> Check:
    return Check(group, name, "pass", value)


def warned(group: str, name: str, value: str, fix: str) -> Check:
    return Check(group, name, "warn", value, fix)


def failed(group: str, name: str, value: str, fix: str) -> Check:
    return Check(group, name, "fail", value, fix)


def failures(checks: list[Check]) -> list[Check]:
    return [c for c in checks if c.status == "fail"]


def exit_code(checks: list[Check]) -> int:
    """0 when nothing fails (warnings allowed), else 1."""
    return 1 if failures(checks) else 0
