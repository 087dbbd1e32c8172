"""The doctor's output: one aligned table of checks (status, group, check, value, fix) and
a summary line, or JSON for scripts."""
from __future__ import annotations

import json

from .record import Check, exit_code

__all__ = ["render_table", "render_json", "summary"]

_HEAD = ("STATUS", "GROUP", "CHECK", "VALUE", "FIX")


def summary(checks: list[Check]) -> str:
    n = {s: sum(c.status == s for c in checks) for s in ("pass", "warn", "fail")}
    verdict = "ready" if not n["fail"] else "NOT ready"
    return f"{len(checks)} checks: {n['pass']} pass, {n['warn']} warn, {n['fail']} fail: {verdict}"


def render_table(checks: list[Check]) -> str:
    """The table; the fix column only for warns and fails."""
    rows = [(c.status.upper(), c.group, c.name, c.value, c.fix if c.status != "pass" else "") for c in checks]
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(_HEAD)]
    widths[3] = min(widths[3], 60)  # a long value pushes the fix column off screen: wrap instead

    def fmt(r) -> str:
        return "  ".join(str(v).ljust(w) for v, w in zip(r[:3], widths, strict=False)) + "  " + _tail(r, widths[3])

    lines = [fmt(_HEAD), *(fmt(r) for r in rows), "", summary(checks)]
    return "\n".join(ln.rstrip() for ln in lines)


def _tail(r, w: int) -> str:
    value, fix = str(r[3]), str(r[4])
    if len(value) <= w:
        return f"{value.ljust(w)}  {fix}"
    return f"{value}  {fix}"


def render_json(checks: list[Check]) -> str:
    return json.dumps({"ok": exit_code(checks) == 0, "summary": summary(checks),
                       "checks": [c.as_dict() for c in checks]}, indent=1)
