"""Reminder offsets: "14d", "2h", "0", and "1d@09:00" (09:00 local the day before).

Relative offsets are subtracted on the UTC timeline, so "1d before" a deadline is
exactly 24 hours before it, across a DST change too. A wall-clock offset ("@HH:MM") is
computed in the deadline's own zone: take the deadline's day as ``tz.deadline_day``
reads it (a deadline at 00:00 closes the day before: "end of Thursday"), go back N
days, and read HH:MM there. So "1d@09:00" of a 00:00 AoE deadline that closes Thursday
is 09:00 AoE Wednesday, not Thursday. Such a wall time can fall in a DST gap (it never happens that
day; we use the instant the clocks jump to, the way a person's alarm rings) or fold
(it happens twice; we use the first).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from releasecal import tz

_RELATIVE = re.compile(r"^(?:(?P<d>\d+)d)?(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?$")
_WALL = re.compile(r"^(?P<d>\d+)d@(?P<hh>\d{1,2}):(?P<mm>\d{2})$")


@dataclass(frozen=True)
class Offset:
    spec: str
    before: dt.timedelta | None = None  # relative offsets
    days_before: int = 0  # wall-clock offsets
    wall: dt.time | None = None

    def due(self, deadline: dt.datetime, zone: str) -> dt.datetime:
        if self.before is not None:
            return tz.to_utc(deadline) - self.before
        day = tz.deadline_day(deadline, zone) - dt.timedelta(days=self.days_before)
        return tz.localize_lenient(dt.datetime.combine(day, self.wall), zone)

    def phrase(self) -> str:
        """How far ahead, for the message: "in 3 days", "tomorrow", "now"."""
        if self.before is None:
            return {0: "today", 1: "tomorrow"}.get(self.days_before, f"in {self.days_before} days")
        return tz.duration_text(self.before)


def parse_offset(spec: str) -> Offset:
    text = spec.strip().lower().replace(" ", "")
    if text in {"0", "0d", "0h", "0m"}:
        return Offset(spec="0", before=dt.timedelta(0))
    match = _WALL.match(text)
    if match:
        hh, mm = int(match["hh"]), int(match["mm"])
        if hh > 23 or mm > 59:
            raise ValueError(f"{spec!r}: {hh:02d}:{mm:02d} is not a time of day.")
        return Offset(spec=f"{int(match['d'])}d@{hh:02d}:{mm:02d}", days_before=int(match["d"]), wall=dt.time(hh, mm))
    match = _RELATIVE.match(text)
    if not text or not match or not any(match.groupdict().values()):
        raise ValueError(
            f"{spec!r} is not an offset. Use e.g. 14d, 10d, 3d, 1d, 2h, 30m, 1d12h, 0, or 1d@09:00 "
            "(09:00 local time the day before)."
        )
    before = dt.timedelta(days=int(match["d"] or 0), hours=int(match["h"] or 0), minutes=int(match["m"] or 0))
    if before > dt.timedelta(days=365):
        raise ValueError(f"{spec!r}: an offset is at most a year.")
    canonical = "".join(f"{match[k]}{k}" for k in ("d", "h", "m") if match[k] and int(match[k]))
    return Offset(spec=canonical or "0", before=before)


def parse_offsets(text: str) -> list[Offset]:
    seen: dict[str, Offset] = {}
    for part in (text or "").replace(";", ",").split(","):
        if part.strip():
            offset = parse_offset(part)
            seen.setdefault(offset.spec, offset)
    return list(seen.values())
