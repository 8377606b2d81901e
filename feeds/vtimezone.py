"""One canonical VTIMEZONE per TZID, built from the zone's TZif data.

The same TZID always gives the same bytes (whatever events a feed holds, whatever
today is), and the definition covers every instant we can publish
(``tz.EARLIEST``..``tz.LATEST``):

- an opening observance at ``tz.EARLIEST`` (1970-01-01T00:00Z) with the offset then in
  force;
- every later transition that the zone's current rule does not describe, grouped into
  one STANDARD/DAYLIGHT observance per (offset from, offset to, name), each onset
  on its own single-value ``RDATE`` line (ical.js and vobject read only the first value
  of a multi-valued RDATE), the DTSTART onset included when there is more than one
  (ical.js ignores DTSTART in an observance with RDATEs);
- the current rule (the POSIX TZ string in the TZif footer) as one STANDARD and one
  DAYLIGHT observance with an open-ended ``RRULE:FREQ=YEARLY;BYMONTH=m;BYDAY=nDD``,
  the shape Outlook, Google and Thunderbird emit. A rule that RRULE cannot say with a
  single BYDAY (a Julian day, an onset outside 00:00-24:00 local) is written out as
  RDATE onsets up to ``tz.LATEST`` instead.

The TZif file is read where ``zoneinfo`` reads it (``zoneinfo.TZPATH`` first, then
the ``tzdata`` package through ``importlib.resources``), so the VTIMEZONE and the
instants the rest of the code computes come from the same rules.
"""

from __future__ import annotations

import datetime as dt
import importlib.resources
import re
import struct
import zoneinfo
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import icalendar

from releasecal import tz

START = tz.EARLIEST
END = tz.LATEST
# Wall times in a VTIMEZONE are naive (local to the observance); count them from here.
_NAIVE_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC).replace(tzinfo=None)
_WEEKDAYS = ("SU", "MO", "TU", "WE", "TH", "FR", "SA")  # POSIX d: 0 = Sunday


class TZifError(ValueError):
    pass


@dataclass(frozen=True)
class LocalType:
    offset: int  # seconds east of UTC
    isdst: bool
    name: str


@dataclass(frozen=True)
class TZif:
    transitions: tuple[tuple[int, int], ...]  # (UTC seconds, index into types)
    types: tuple[LocalType, ...]
    footer: str


def tzif_bytes(key: str) -> bytes:
    """The TZif data zoneinfo would load for ``key`` (same search order)."""
    if not key or key.startswith("/") or ".." in key.split("/"):
        raise TZifError(f"bad zone key {key!r}")
    for root in zoneinfo.TZPATH:
        candidate = Path(root) / key
        if candidate.is_file():
            return candidate.read_bytes()
    resource = importlib.resources.files("tzdata").joinpath("zoneinfo", *key.split("/"))
    if not resource.is_file():
        raise TZifError(f"no TZif data for {key!r}")
    return resource.read_bytes()


def parse_tzif(data: bytes) -> TZif:
    """RFC 8536: the version 2+ (64-bit) block and its footer."""
    if data[:4] != b"TZif":
        raise TZifError("not a TZif file")
    version = data[4:5]

    def counts(at: int) -> tuple[int, ...]:
        return struct.unpack(">6l", data[at + 20 : at + 44])

    isut, isstd, leap, timecnt, typecnt, charcnt = counts(0)
    if version == b"\x00":
        raise TZifError("TZif version 1 has no footer")
    v1 = timecnt * 5 + typecnt * 6 + charcnt + leap * 8 + isstd + isut
    at = 44 + v1
    if data[at : at + 4] != b"TZif":
        raise TZifError("missing version 2 header")
    isut, isstd, leap, timecnt, typecnt, charcnt = counts(at)
    at += 44
    times = struct.unpack(f">{timecnt}q", data[at : at + timecnt * 8])
    at += timecnt * 8
    indices = data[at : at + timecnt]
    at += timecnt
    raw_types = [struct.unpack(">lBB", data[at + i * 6 : at + i * 6 + 6]) for i in range(typecnt)]
    at += typecnt * 6
    chars = data[at : at + charcnt]
    at += charcnt + leap * 12 + isstd + isut
    footer = data[at:].split(b"\n")
    if len(footer) < 2:
        raise TZifError("missing footer")

    def name(index: int) -> str:
        return chars[index : chars.index(b"\x00", index)].decode("ascii")

    types = tuple(LocalType(offset, bool(isdst), name(idx)) for offset, isdst, idx in raw_types)
    return TZif(tuple(zip(times, indices, strict=True)), types, footer[1].decode("ascii"))


# ------------------------------------------------------------------ POSIX TZ rules

_NAME = r"(?:<[^>]+>|[A-Za-z]{3,})"
_OFFSET = r"[+-]?\d{1,3}(?::\d{1,2}){0,2}"
_DATE = r"(?:J\d{1,3}|\d{1,3}|M\d{1,2}\.\d\.\d)"
_TIME = r"[+-]?\d{1,3}(?::\d{1,2}){0,2}"
_POSIX = re.compile(
    rf"^(?P<std>{_NAME})(?P<stdoff>{_OFFSET})"
    rf"(?:(?P<dst>{_NAME})(?P<dstoff>{_OFFSET})?"
    rf",(?P<start>{_DATE})(?:/(?P<starttime>{_TIME}))?,(?P<end>{_DATE})(?:/(?P<endtime>{_TIME}))?)?$"
)


def _seconds(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    parts = [int(p) for p in text.lstrip("+-").split(":")]
    parts += [0] * (3 - len(parts))
    return sign * (parts[0] * 3600 + parts[1] * 60 + parts[2])


@dataclass(frozen=True)
class RuleDate:
    spec: str  # "Mm.w.d", "Jn" or "n"
    time: int  # seconds after local midnight (may be negative or beyond a day)

    def local(self, year: int) -> dt.datetime:
        if self.spec.startswith("M"):
            month, week, weekday = (int(p) for p in self.spec[1:].split("."))
            first = dt.date(year, month, 1)
            # POSIX weekday 0 = Sunday; Python's weekday() 6 = Sunday.
            day = first + dt.timedelta(days=(weekday - (first.weekday() + 1) % 7) % 7 + 7 * (week - 1))
            while day.month != month:  # week 5 = the last one
                day -= dt.timedelta(days=7)
        elif self.spec.startswith("J"):  # 1..365, 29 February never counted
            n = int(self.spec[1:])
            day = dt.date(year, 1, 1) + dt.timedelta(days=n - 1)
            if n >= 60 and _leap(year):
                day += dt.timedelta(days=1)
        else:  # 0..365, 29 February counted
            day = dt.date(year, 1, 1) + dt.timedelta(days=int(self.spec))
        return dt.datetime.combine(day, dt.time()) + dt.timedelta(seconds=self.time)

    def rrule(self) -> dict | None:
        """The RRULE parts with one BYDAY, or None when RRULE cannot say it plainly."""
        if not self.spec.startswith("M") or not 0 <= self.time < 86400:
            return None
        month, week, weekday = (int(p) for p in self.spec[1:].split("."))
        return {"FREQ": "YEARLY", "BYMONTH": month, "BYDAY": f"{-1 if week == 5 else week}{_WEEKDAYS[weekday]}"}


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


@dataclass(frozen=True)
class PosixRule:
    std: LocalType
    dst: LocalType | None = None
    start: RuleDate | None = None
    end: RuleDate | None = None

    @classmethod
    def parse(cls, text: str) -> PosixRule | None:
        if not text:
            return None
        match = _POSIX.match(text)
        if not match:
            raise TZifError(f"unreadable POSIX TZ rule {text!r}")
        std_offset = -_seconds(match["stdoff"])
        std = LocalType(std_offset, False, match["std"].strip("<>"))
        if not match["dst"]:
            return cls(std)
        dst_offset = -_seconds(match["dstoff"]) if match["dstoff"] else std_offset + 3600
        return cls(
            std,
            LocalType(dst_offset, True, match["dst"].strip("<>")),
            RuleDate(match["start"], _seconds(match["starttime"] or "2")),
            RuleDate(match["end"], _seconds(match["endtime"] or "2")),
        )

    def transitions(self, year: int) -> list[tuple[int, LocalType, LocalType]]:
        """(UTC seconds, before, after) of this year's two onsets, in order."""
        if self.dst is None:
            return []
        onsets = [
            (self.start.local(year) - dt.timedelta(seconds=self.std.offset), self.std, self.dst),
            (self.end.local(year) - dt.timedelta(seconds=self.dst.offset), self.dst, self.std),
        ]
        return sorted((int((local - _NAIVE_EPOCH).total_seconds()), before, after) for local, before, after in onsets)


# ------------------------------------------------------------------------ building


@dataclass(frozen=True)
class Onset:
    utc: int
    before: LocalType
    after: LocalType

    @property
    def local(self) -> dt.datetime:
        """Wall time of the onset in the offset in force before it (RFC 5545 §3.6.5)."""
        return _NAIVE_EPOCH + dt.timedelta(seconds=self.utc + self.before.offset)


def _epoch(instant: dt.datetime) -> int:
    return int((instant - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)).total_seconds())


def onsets(data: TZif) -> tuple[LocalType, list[Onset], PosixRule | None]:
    """The local type in force at START and every onset in [START, END)."""
    start, end = _epoch(START), _epoch(END)
    current = data.types[0] if data.types else None
    result: list[Onset] = []
    last_explicit = None
    for when, index in data.transitions:
        kind = data.types[index]
        last_explicit = when
        if when <= start:
            current = kind
            continue
        if when >= end:
            break
        result.append(Onset(when, result[-1].after if result else current, kind))
    rule = PosixRule.parse(data.footer)
    if rule is None and current is None:
        raise TZifError("no local time type")
    if rule is not None:
        if last_explicit is None:
            current = rule.std if rule.dst is None else _in_force(rule, start)
        elif last_explicit <= start and not result:
            current = _in_force(rule, start) if rule.dst is not None else rule.std
        first_year = dt.datetime.fromtimestamp(max(last_explicit or start, start), dt.UTC).year
        for year in range(first_year, END.year + 1):
            for when, _before, after in rule.transitions(year):
                if when <= max(last_explicit or start, start) or when >= end:
                    continue
                previous = result[-1].after if result else current
                result.append(Onset(when, previous, after))
    return current, result, rule


def _in_force(rule: PosixRule, instant: int) -> LocalType:
    year = dt.datetime.fromtimestamp(instant, dt.UTC).year
    kind = rule.transitions(year - 1)[-1][2]
    for when, _before, after in rule.transitions(year):
        if when <= instant:
            kind = after
    return kind


def _same(a: LocalType, b: LocalType) -> bool:
    return a.offset == b.offset and a.isdst == b.isdst and a.name == b.name


def _rule_suffix(found: list[Onset], rule: PosixRule | None) -> int:
    """Index of the first onset from which the onsets are exactly the current rule's
    (every onset it predicts, none missing, none extra), up to END."""
    if rule is None or rule.dst is None or rule.start.rrule() is None or rule.end.rrule() is None:
        return len(found)
    start, end = _epoch(START), _epoch(END)
    predicted = [
        item for year in range(START.year - 1, END.year + 1) for item in rule.transitions(year) if start < item[0] < end
    ]
    i, j = len(found) - 1, len(predicted) - 1
    while i >= 0 and j >= 0:
        when, before, after = predicted[j]
        onset = found[i]
        if onset.utc != when or not (_same(onset.before, before) and _same(onset.after, after)):
            break
        i, j = i - 1, j - 1
    return i + 1


def _observance(kind: LocalType, before: LocalType, start: dt.datetime, *, tzid: str):
    component = icalendar.TimezoneDaylight() if kind.isdst else icalendar.TimezoneStandard()
    component.add("dtstart", start)
    component.add("tzoffsetfrom", dt.timedelta(seconds=before.offset))
    component.add("tzoffsetto", dt.timedelta(seconds=kind.offset))
    component.add("tzname", "AoE" if tzid == tz.AOE_IANA else kind.name)
    return component


def build(tzid: str, data: TZif) -> icalendar.Timezone:
    current, found, rule = onsets(data)
    k = _rule_suffix(found, rule)
    vtimezone = icalendar.Timezone()
    vtimezone.add("tzid", tzid)
    opening = _NAIVE_EPOCH + dt.timedelta(seconds=_epoch(START) + current.offset)
    components = [(opening, _observance(current, current, opening, tzid=tzid))]

    groups: dict[tuple, list[Onset]] = {}
    for onset in found[:k]:
        key = (onset.before.offset, onset.after.offset, onset.after.isdst, onset.after.name)
        groups.setdefault(key, []).append(onset)
    for members in groups.values():
        first = members[0]
        component = _observance(first.after, first.before, first.local, tzid=tzid)
        if len(members) > 1:
            # ical.js (Thunderbird, 1.5 and 2.2.1) ignores DTSTART when an observance has
            # RDATEs: the first onset is listed as an RDATE too (RFC 5545 allows it).
            for onset in members:
                component.add("rdate", onset.local)  # one value per line
        components.append((first.local, component))

    seen: set[bool] = set()
    for onset in found[k:]:  # the current rule: one open-ended RRULE per direction
        if onset.after.isdst in seen:
            continue
        seen.add(onset.after.isdst)
        component = _observance(onset.after, onset.before, onset.local, tzid=tzid)
        rule_date = rule.start if onset.after.isdst else rule.end
        component.add("rrule", rule_date.rrule())
        components.append((onset.local, component))
    for _start, component in sorted(components, key=lambda item: item[0]):
        vtimezone.add_component(component)
    return vtimezone


@lru_cache(maxsize=256)
def _canonical(tzid: str, data: bytes) -> icalendar.Timezone:
    return build(tzid, parse_tzif(data))


def vtimezone(tzid: str) -> icalendar.Timezone:
    """The canonical VTIMEZONE of an IANA zone.

    Shared between calls (built once per TZif content): add it to a calendar, never
    change it.
    """
    return _canonical(tzid, tzif_bytes(tzid))
