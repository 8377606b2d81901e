"""Reading the times people write: zone labels ("PDT", "EOD PST", "(AoE)", "UTC+2",
"Pacific time") and written deadlines ("18:00 PST Friday, 21st June 2024").

Which label is *right* at an instant is always asked of the time core
(``releasecal.tz.core.abbreviation``); this module only says which clock a written
label names, and reads a written deadline into an instant by the rules below.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from functools import cache

from releasecal.errors import ValidationFailed
from releasecal.tz.core import (
    AOE,
    UTC,
    AmbiguousTime,
    ImplausibleInstant,
    InvalidZone,
    NonExistentTime,
    abbreviation,
    check_plausible_date,
    end_of_day,
    format_offset,
    is_valid_zone,
    isoformat_utc,
    local_date,
    localize,
    localize_lenient,
    normalize_zone_name,
    render_clock,
    render_date,
    rules_cache_register,
    to_utc,
    to_zone,
    wall_readings,
)
from releasecal.tz.names import MONTH_WORD, WEEKDAY_WORD, WEEKDAYS, month_number, weekday_number

# ------------------------------------------------------------------ zone labels
# Reading the labels people write beside a time ("18:00 PDT", "EOD PST", "(AoE)").
# Which label is *right* at an instant is always asked of ``abbreviation``; this
# table only says which clock a written label names.

PACIFIC = "America/Los_Angeles"

_H = dt.timedelta(hours=1)

# THE table of written zone labels (there is no other): label -> (the region whose
# wall clock it names, the fixed offset it literally means, or None for a generic
# label such as PT that does not say whether summer time is in force).
ZONE_LABELS: dict[str, tuple[str, dt.timedelta | None]] = {
    "UTC": ("UTC", dt.timedelta(0)),
    "GMT": ("UTC", dt.timedelta(0)),
    "Z": ("UTC", dt.timedelta(0)),
    "AOE": (AOE, -12 * _H),
    "PT": ("America/Los_Angeles", None),
    "PACIFIC": ("America/Los_Angeles", None),
    "PST": ("America/Los_Angeles", -8 * _H),
    "PDT": ("America/Los_Angeles", -7 * _H),
    "MT": ("America/Denver", None),
    "MST": ("America/Denver", -7 * _H),
    "MDT": ("America/Denver", -6 * _H),
    "CT": ("America/Chicago", None),
    "CDT": ("America/Chicago", -5 * _H),
    "ET": ("America/New_York", None),
    "EST": ("America/New_York", -5 * _H),
    "EDT": ("America/New_York", -4 * _H),
    "CET": ("Europe/Berlin", 1 * _H),
    "CEST": ("Europe/Berlin", 2 * _H),
    "WET": ("Europe/Lisbon", dt.timedelta(0)),
    "WEST": ("Europe/Lisbon", 1 * _H),
    "EET": ("Europe/Athens", 2 * _H),
    "EEST": ("Europe/Athens", 3 * _H),
    "JST": ("Asia/Tokyo", 9 * _H),
    "KST": ("Asia/Seoul", 9 * _H),
    "SGT": ("Asia/Singapore", 8 * _H),
    "HKT": ("Asia/Hong_Kong", 8 * _H),
    "PKT": ("Asia/Karachi", 5 * _H),
    "AEST": ("Australia/Sydney", 10 * _H),
    "AEDT": ("Australia/Sydney", 11 * _H),
    "NZST": ("Pacific/Auckland", 12 * _H),
    "NZDT": ("Pacific/Auckland", 13 * _H),
    "BRT": ("America/Sao_Paulo", -3 * _H),
}
# Abbreviations in use for several zones: never guessed from a person's text (the
# reader lists every candidate). A schedule README, whose every label is checked against
# the UTC time beside it, reads the first candidate (zone_for_label).
AMBIGUOUS_LABELS: dict[str, tuple[tuple[str, str], ...]] = {
    "IST": (("India Standard Time", "Asia/Kolkata"), ("Irish Standard Time", "Europe/Dublin"),
            ("Israel Standard Time", "Asia/Jerusalem")),
    "CST": (("US Central Standard Time", "America/Chicago"), ("China Standard Time", "Asia/Shanghai"),
            ("Cuba Standard Time", "America/Havana")),
    "BST": (("British Summer Time", "Europe/London"), ("Bangladesh Standard Time", "Asia/Dhaka")),
    "AST": (("Atlantic Standard Time", "America/Halifax"), ("Arabia Standard Time", "Asia/Riyadh")),
}  # fmt: skip

# Labels that name a region without saying whether summer time is in force.
GENERIC_LABELS = frozenset(label for label, (_, offset) in ZONE_LABELS.items() if offset is None)


def seasonal_label(text: str) -> str:
    """The first label in ``text`` that names one half of a summer-time pair ("PST",
    "CEST", "BST"), or "": written in the wrong season it is a mislabel, which the
    caller can check once it knows the date."""
    for match in re.finditer(r"\b[A-Z]{3,4}\b", text):
        if _is_seasonal(match.group(0)):
            return match.group(0)
    return ""


@rules_cache_register
@cache
def _is_seasonal(label: str) -> bool:
    if label in ZONE_LABELS:
        region, offset = ZONE_LABELS[label]
        regions = [region] if offset is not None else []
    else:
        regions = [zone for _, zone in AMBIGUOUS_LABELS.get(label, ())]
    return any(len(set(label_offsets(region, 2024).values())) == 2 for region in regions if region != AOE)


def zone_for_label(label: str) -> str | None:
    """The zone whose clock a written label names (``PDT`` -> America/Los_Angeles), or
    None; a label of several zones (BST) gives its first candidate (Europe/London)."""
    upper = label.strip().upper()
    if upper in ZONE_LABELS:
        return ZONE_LABELS[upper][0]
    return AMBIGUOUS_LABELS[upper][0][1] if upper in AMBIGUOUS_LABELS else None


def label_offsets(zone: str, year: int) -> dict[str, dt.timedelta]:
    """The abbreviations ``zone`` uses in ``year`` and their UTC offsets (winter, summer)."""
    offsets = {}
    for month in (1, 7):
        instant = dt.datetime(year, month, 15, 12, tzinfo=UTC)
        offsets[abbreviation(instant, zone).upper()] = to_zone(instant, zone).utcoffset()
    return offsets


def label_out_of_season(label: str, instant: dt.datetime, zone: str) -> str | None:
    """The abbreviation really in force in ``zone`` at ``instant`` when the written
    ``label`` names the other season (``PST`` in July); None when the label fits or
    names no season (``PT``, ``Pacific``)."""
    if label.strip().upper() in GENERIC_LABELS:
        return None
    actual = abbreviation(instant, zone)
    return None if actual.upper() == label.strip().upper() else actual


def end_of_day_in_force(day: dt.date, zone: str) -> dt.datetime:
    """The last instant of ``day`` in ``zone`` that still belongs to it (one microsecond
    before ``end_of_day``): the moment whose abbreviation an "EOD <label>" must match."""
    return end_of_day(day, zone) - dt.timedelta(microseconds=1)


# ------------------------------------------------------- reading written deadlines
#
# How a deadline written by a person ("18:00 PST Friday, 21st June 2024", "EOD Friday
# CET", "end of day Monday AoE") becomes an instant. The rules, in one place:
#
# - A zone abbreviation names a region's wall clock (PST/PDT/PT: America/Los_Angeles)
#   and, for the standard/daylight ones, a fixed offset (PST = UTC-8). When the label
#   is the half of the pair not in force on that date ("18:00 PST" on 21 June), both
#   readings are named in a warning and the wall-clock reading in the region (18:00 PDT)
#   is proposed: people copy last winter's label, they rarely mean another hour.
# - On a fall-back day a standard/daylight label says which of the two occurrences is
#   meant ("01:30 EST" is the second, "01:30 EDT" the first), as a UTC offset does. A
#   generic label or a zone name ("01:30 ET", "Eastern time", "America/New_York") does
#   not: the reading has no instant and carries the API's refusal (``localize``), naming
#   both offsets. A wall time in a spring-forward gap is refused so under any label.
# - An abbreviation that names several zones (IST, CST, BST, AST) is never guessed: the
#   reading is flagged ambiguous and has no instant; every candidate is listed.
# - "End of day D" (EOD, COB, end of day, a date with no time) is D+1 00:00 in the zone
#   (``end_of_day``: the end-of-day-is-midnight rule; AoE: 12:00 UTC the next day).
# - A weekday with no date ("Friday") is the first such day *after* the reference day
#   (the day the text was sent): "until EOD Friday" written on a Friday is a week later.
# - A date without a year takes the reference's year (the next year when that would put
#   it more than 31 days before the reference).


@dataclass(frozen=True)
class WallReading:
    """A wall time and its zone label read as an instant (or not, when ambiguous)."""

    instant: dt.datetime | None
    zone: str  # the stored zone of the proposed reading; "" when ambiguous
    ambiguous: bool = False
    warnings: tuple[str, ...] = ()
    readings: tuple[dict, ...] = ()  # every candidate: {"reading", "zone", "utc"}
    problem: str = ""  # why there is no instant (a wall time in a gap or a fold)


def _in_gap_or_fold(wall: dt.datetime, zone: str, shown: str) -> WallReading | None:
    """None when ``wall`` happens exactly once in the region ``zone``; else no instant and
    the refusal ``localize`` gives the API (naming both offsets), with every reading."""
    try:
        localize(wall, zone)
        return None
    except (NonExistentTime, AmbiguousTime) as exc:
        readings = tuple(
            _reading(f"{shown} {zone} (UTC{format_offset(wall.replace(tzinfo=UTC) - instant)})", zone, instant)
            for instant in wall_readings(wall, zone)
        )
        return WallReading(None, zone, warnings=(exc.message,), readings=readings, problem=exc.message.rstrip("."))


def _occurrence_with_offset(wall: dt.datetime, zone: str, offset: dt.timedelta | None) -> dt.datetime | None:
    """The instant at which ``zone``'s clocks show ``wall`` with UTC offset ``offset``: in
    a fold, the occurrence a label such as EST or EDT names; None in a gap (the clocks
    never show ``wall``) or when ``offset`` is None or neither occurrence's."""
    for instant in wall_readings(wall, zone):
        local = to_zone(instant, zone)
        if offset is not None and local.utcoffset() == offset and local.replace(tzinfo=None) == wall:
            return instant
    return None


def _z(instant: dt.datetime) -> str:
    """``01:00Z Saturday 22 June 2024``."""
    local = to_utc(instant)
    return f"{render_clock(local)}Z {render_date(local)}"


def _reading(text: str, zone: str, instant: dt.datetime) -> dict:
    return {"reading": text, "zone": zone, "utc": isoformat_utc(instant)}


def _offset_label(offset: dt.timedelta) -> str:
    text = format_offset(offset)
    return "UTC" + (text[:3].replace("+0", "+").replace("-0", "-") if text.endswith(":00") else text)


def read_labelled_wall_time(wall: dt.datetime, label: str, *, end_of_day_on: dt.date | None = None) -> WallReading:
    """``wall`` (naive) written with ``label`` ("PST", "AoE", "Europe/Berlin", "UTC+2").

    With ``end_of_day_on`` the wall time is ignored and the reading is the end of that
    day (next midnight) under the label. See the rules above.
    """
    raw = label.strip()
    upper = raw.upper()
    eod = end_of_day_on

    def in_zone(zone: str) -> dt.datetime:
        if eod is not None:
            return end_of_day(eod, zone)
        return localize_lenient(wall, zone)

    shown = f"end of day {render_date(eod)}" if eod is not None else f"{render_clock(wall)} {render_date(wall)}"
    if upper in AMBIGUOUS_LABELS:
        readings = tuple(
            _reading(f"{shown} {name} ({zone})", zone, in_zone(zone)) for name, zone in AMBIGUOUS_LABELS[upper]
        )
        names = ", ".join(f"{name} ({zone})" for name, zone in AMBIGUOUS_LABELS[upper])
        return WallReading(
            None,
            "",
            ambiguous=True,
            warnings=(
                f"{upper} names several zones ({names}); it is not guessed: give the deadline with a zone "
                f"name (e.g. {AMBIGUOUS_LABELS[upper][0][1]}) or a UTC offset.",
            ),
            readings=readings,
        )
    offset_match = re.fullmatch(r"(?:UTC|GMT)\s*([+\-\u2212])\s*(\d{1,2})(?::?(\d{2}))?", upper)
    if offset_match:
        sign = -1 if offset_match.group(1) != "+" else 1
        offset = sign * dt.timedelta(hours=int(offset_match.group(2)), minutes=int(offset_match.group(3) or 0))
        if abs(offset) > dt.timedelta(hours=14):
            raise ValidationFailed(f"{raw!r} is not a UTC offset (more than 14 hours).", extra={"label": raw})
        fixed = dt.timezone(offset)
        instant = (
            dt.datetime.combine(eod + dt.timedelta(days=1), dt.time(0), fixed) if eod else wall.replace(tzinfo=fixed)
        ).astimezone(UTC)
        zone = "UTC" if not offset else ""
        if offset and offset.total_seconds() % 3600 == 0:
            zone = f"Etc/GMT{'-' if offset > dt.timedelta(0) else '+'}{abs(int(offset.total_seconds() // 3600))}"
        return WallReading(instant, zone or "UTC", readings=(_reading(f"{shown} {raw}", zone, instant),))
    if upper in ZONE_LABELS:
        region, fixed_offset = ZONE_LABELS[upper]
        proposed = in_zone(region)
        in_force = to_zone(proposed - (dt.timedelta(microseconds=1) if eod else dt.timedelta(0)), region)
        actual = in_force.utcoffset()
        if eod is None and region not in {"UTC", AOE}:
            # "02:30 Eastern time" on the day DST starts, "01:30 ET" on the day it ends: refused
            # as the API refuses them. "01:30 EST" says which of the two it is: the second.
            refused = _in_gap_or_fold(wall, region, shown)
            named = _occurrence_with_offset(wall, region, fixed_offset) if refused is not None else None
            if refused is not None and named is None:
                return refused
            if named is not None:
                return WallReading(named, region, readings=(_reading(f"{shown} {upper}", region, named),))
        if fixed_offset is None or actual == fixed_offset or region in {"UTC", AOE}:
            return WallReading(proposed, region, readings=(_reading(f"{shown} {upper}", region, proposed),))
        fixed = dt.timezone(fixed_offset)
        literal = (
            dt.datetime.combine(eod + dt.timedelta(days=1), dt.time(0), fixed) if eod else wall.replace(tzinfo=fixed)
        ).astimezone(UTC)
        abbr = abbreviation(proposed - (dt.timedelta(microseconds=1) if eod else dt.timedelta(0)), region)
        clock = "end of day" if eod else render_clock(wall)
        warning = (
            f"'{clock} {upper}' on {render_date(eod or wall)}: {upper} ({_offset_label(fixed_offset)}) "
            f"is not in force in {region} on that date, {abbr} is. Two readings: {clock} {abbr} = {_z(proposed)}, or "
            f"{clock} {_offset_label(fixed_offset)} = {_z(literal)}. Proposed: the wall clock in {region} "
            f"({clock} {abbr})."
        )
        return WallReading(
            proposed,
            region,
            warnings=(warning,),
            readings=(
                _reading(f"{clock} {abbr} ({region})", region, proposed),
                _reading(f"{clock} {_offset_label(fixed_offset)}", "", literal),
            ),
        )
    zone = normalize_zone_name(raw)  # an IANA name or AoE; raises InvalidZone
    if eod is None:
        refused = _in_gap_or_fold(wall, zone, shown)  # "02:30 ... America/New_York" in the gap
        if refused is not None:
            return refused
    instant = in_zone(zone)
    return WallReading(instant, zone, readings=(_reading(f"{shown} {zone}", zone, instant),))


# ------------------------------------------------------------------ written dates
# The one reader of a date as people write it, for every reader of human text (a
# deadline in an email, a schedule README's times): "Friday 14th June 2024", "21st of
# June", "Mon August 23, 2021", "2024-06-21", and a range, "Monday 6th - Thursday 9th
# November 2023". What the year is when none is written is the caller's rule (the
# sending day, or the schedule's placement), so the date is returned as written.

_WD = rf"\b{WEEKDAY_WORD}\.?,?"
_MON = rf"\b{MONTH_WORD}\.?"
_DAY = r"(?<![\d:])\d{1,2}(?:st|nd|rd|th)?"
_DASH = r"\s*(?:-|\u2013|\u2014|\bto\b|\buntil\b)\s*"  # hyphen, en dash, em dash


def _group(name: str, pattern: str) -> str:
    return f"(?P<{name}>{pattern})"


_WD1, _WD2 = _group("wd1", _WD), _group("wd2", _WD)
_D1, _D2 = _group("d1", _DAY), _group("d2", _DAY)
_M1, _M2 = _group("m1", _MON), _group("m2", _MON)
_Y = _group("y", r"\d{4}") + r"?(?!\d)"
_ISO_DATE = _group("iso", r"\b\d{4}-\d{2}-\d{2}\b")
_DATE_PATTERNS = (
    # ranges first, so "Monday 6th - Thursday 9th November 2023" is one window
    re.compile(rf"(?:{_WD1}\s+)?{_D1}(?:\s+{_M1})?{_DASH}(?:{_WD2}\s+)?{_D2}\s+{_M2}\s*[,.]?\s*{_Y}", re.I),
    re.compile(rf"(?:{_WD1}\s+)?{_M1}\s+{_D1}{_DASH}(?:{_WD2}\s+)?(?:{_M2}\s+)?{_D2}\s*[,.]?\s*{_Y}", re.I),
    # single days: "Friday 14th June 2024", "21st of June", "Tuesday 14th November2023", "Mon August 23, 2021"
    re.compile(rf"(?:{_WD1}\s+)?{_D1}\s+(?:of\s+)?{_M1}\s*[,.]?\s*{_Y}", re.I),
    re.compile(rf"(?:{_WD1}\s+)?{_M1}\s+{_D1}\b\s*[,.]?\s*{_Y}", re.I),
    re.compile(rf"(?:{_WD1}\s+)?{_ISO_DATE}", re.I),
)


@dataclass(frozen=True)
class WrittenDay:
    """A date (or a range of dates) found in a text, as written: ``year`` is None when
    the text gives none; the numbers are as written (``dt.date`` may refuse them)."""

    written: str  # the words read, as in the text
    start: int  # where they are in the text
    end: int
    month: int
    day: int
    year: int | None
    weekday: int | None = None  # named before the day ("Monday 6th"), Monday = 0
    iso: str = ""  # written as YYYY-MM-DD: that text
    last_month: int | None = None  # a range's last day ("- Thursday 9th November")
    last_day: int | None = None
    last_weekday: int | None = None
    first_text: str = ""  # a range's two halves, as written
    last_text: str = ""
    ordinal_typos: tuple[str, ...] = ()  # "'22st' for the 22nd"

    @property
    def text(self) -> str:
        return self.written.strip(" ,")


def _ordinal(day: int) -> str:
    return "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _day_number(token: str) -> int:
    return int(re.match(r"\d+", token).group(0))


def find_written_date(text: str) -> WrittenDay | None:
    """The first date written in ``text`` (a range before a single day), or None."""
    for pattern in _DATE_PATTERNS:
        match = pattern.search(text)
        if match:
            return _written_day(match)
    return None


def _written_day(match: re.Match[str]) -> WrittenDay:
    groups = match.groupdict()
    typos = []
    for key in ("d1", "d2"):
        ordinal = re.fullmatch(r"(\d+)(st|nd|rd|th)", (groups.get(key) or "").lower())
        if ordinal and ordinal[2] != _ordinal(int(ordinal[1])):
            typos.append(f"'{groups[key]}' for the {int(ordinal[1])}{_ordinal(int(ordinal[1]))}")
    found = {"written": match.group(0), "start": match.start(), "end": match.end(), "ordinal_typos": tuple(typos)}
    weekday = weekday_number(groups.get("wd1"))
    if groups.get("iso"):
        year, month, day = (int(n) for n in groups["iso"].split("-"))
        return WrittenDay(**found, month=month, day=day, year=year, weekday=weekday, iso=groups["iso"])
    year = int(groups["y"]) if groups.get("y") else None
    if groups.get("d2"):
        last_month = month_number(groups.get("m2")) or month_number(groups.get("m1"))
        first, last = re.split(_DASH, match.group(0).strip(" ,"), maxsplit=1, flags=re.I)
        return WrittenDay(
            **found,
            month=month_number(groups.get("m1")) or last_month,
            day=_day_number(groups["d1"]),
            year=year,
            weekday=weekday,
            last_month=last_month,
            last_day=_day_number(groups["d2"]),
            last_weekday=weekday_number(groups.get("wd2")),
            first_text=first.strip(),
            last_text=last.strip(),
        )
    return WrittenDay(
        **found, month=month_number(groups["m1"]), day=_day_number(groups["d1"]), year=year, weekday=weekday
    )


# ----------------------------------------------------------------- written clocks
# A clock time as people write it ("17:00", "17:00:30", "5pm", "5:30 p.m.", "10:00 AM")
# and the words for the end of a day. Whether the hour is a valid one is the caller's
# to say (a schedule's "24:00" is the end of the day; a deadline's is refused).

_CLOCK_RE = re.compile(
    r"(?<![\d:])(?P<h>\d{1,2})(?::(?P<m>\d{2})(?::\d{2})?)?(?:\s*(?P<ampm>[ap])\.?m\.?(?![a-z]))?(?![\d:])", re.I
)
END_OF_DAY_WORDS = re.compile(r"\b(?:eod|cob|end\s+of\s+(?:the\s+)?(?:business\s+)?day|midnight)\b", re.I)


@dataclass(frozen=True)
class WrittenClock:
    """A clock time found in a text, as written (``hour`` is 5 in "5pm")."""

    written: str
    start: int
    end: int
    hour: int
    minute: int
    ampm: str = ""  # "a", "p", or "" for a 24-hour clock


def find_written_clock(text: str) -> WrittenClock | None:
    """The first clock time written in ``text`` (a bare number is not one), or None."""
    for match in _CLOCK_RE.finditer(text):
        if match["m"] is not None or match["ampm"]:
            hour, minute = int(match["h"]), int(match["m"] or 0)
            return WrittenClock(match.group(0), match.start(), match.end(), hour, minute, (match["ampm"] or "").lower())
    return None


# ------------------------------------------------------------- written deadlines

_WEEKDAY_RE = re.compile(rf"\b(?P<wd>{WEEKDAY_WORD})\.?", re.I)
_RELATIVE_RE = re.compile(r"\b(?P<rel>today|tonight|tomorrow)\b", re.I)
_LABEL_RE = re.compile(
    r"(?<![\w/])(?:(?P<offset>(?:UTC|GMT)\s*[+\-\u2212]\s*\d{1,2}(?::?\d{2})?)|(?P<iana>[A-Z][A-Za-z_]+/[A-Za-z_]+(?:/[A-Za-z_]+)?)"
    r"|(?P<abbr>AoE|AOE|aoe|[A-Z]{1,4}))(?![\w/])"
)
_LABEL_WORDS = (
    (re.compile(r"\banywhere[\s-]+on[\s-]+earth\b", re.I), "AOE"),
    (re.compile(r"\bpacific(?:\s+(?:standard|daylight))?\s+time\b", re.I), "PT"),
    (re.compile(r"\beastern(?:\s+(?:standard|daylight))?\s+time\b", re.I), "ET"),
    (re.compile(r"\bcentral\s+european(?:\s+(?:summer|standard))?\s+time\b", re.I), "CET"),
    (re.compile(r"\bindia(?:n)?\s+standard\s+time\b", re.I), "Asia/Kolkata"),
)


def find_zone_label(text: str) -> str:
    """The first zone label written in ``text`` ("PST", "AoE", "Europe/Berlin", "UTC+2"), or ""."""
    found: list[tuple[int, str]] = []
    for match in _LABEL_RE.finditer(text):
        if match["offset"]:
            found.append((match.start(), re.sub(r"\s+", "", match["offset"]).replace("\u2212", "-")))
        elif match["iana"] and is_valid_zone(match["iana"]):
            found.append((match.start(), match["iana"]))
        elif match["abbr"] and (match["abbr"].upper() in ZONE_LABELS or match["abbr"].upper() in AMBIGUOUS_LABELS):
            if match["abbr"].upper() == "Z":
                continue  # "Z" only after a time, handled by ISO input
            found.append((match.start(), match["abbr"].upper()))
    for regex, label in _LABEL_WORDS:
        match = regex.search(text)
        if match:
            found.append((match.start(), label))
    return min(found)[1] if found else ""


def zone_from_text(text: str) -> tuple[str, list[str]]:
    """The first zone named in a person's text ("EOD Friday CET", "UTC+2", "Pacific
    time", "Asia/Tokyo") as a stored zone name, and any warnings; "" when none is, or
    when the first is a label of several zones (IST), which is never guessed."""
    warnings: list[str] = []
    found: list[tuple[int, str]] = []
    offsets_at: set[int] = set()  # the characters of each "UTC+2" read (a set: linear in the labels)
    for match in re.finditer(r"\b[A-Z][A-Za-z_]+/[A-Za-z_]+(?:/[A-Za-z_]+)?\b", text):
        if is_valid_zone(match.group(0)):
            found.append((match.start(), normalize_zone_name(match.group(0))))
    for match in re.finditer(r"\b(?:UTC|GMT)\s*([+-\u2212])\s*(\d{1,2})(?::?(\d{2}))?\b", text):
        hours, minutes = int(match.group(2)), int(match.group(3) or 0)
        if minutes or hours > 14:
            warnings.append(f"The offset {match.group(0)!r} has no fixed-offset zone; it was not used as the zone.")
            continue
        sign = "-" if match.group(1) == "+" else "+"  # POSIX: Etc/GMT-2 is UTC+2
        found.append((match.start(), normalize_zone_name(f"Etc/GMT{sign}{hours}" if hours else "UTC")))
        offsets_at.update(range(match.start(), match.start() + 12))
    for match in re.finditer(r"\b(?:aoe|AOE|AoE)\b|\b[A-Z]{2,4}\b", text):
        token = match.group(0)
        upper = token.upper()
        if upper in AMBIGUOUS_LABELS and token.isupper():
            names = " or ".join(f"{name} ({zone})" for name, zone in AMBIGUOUS_LABELS[upper])
            warnings.append(f"{upper} can mean {names}; it was not guessed (no zone read).")
            found.append((match.start(), ""))
            continue
        if upper in ZONE_LABELS and (token.isupper() or upper == "AOE"):
            if match.start() in offsets_at:
                continue  # the UTC of "UTC+2", already read
            found.append((match.start(), ZONE_LABELS[upper][0]))
    for regex, label in _LABEL_WORDS:
        match = regex.search(text)
        if match:
            found.append((match.start(), label_zone(label)))
    if not found:
        return "", warnings
    found.sort()
    return found[0][1], warnings


def label_zone(label: str) -> str:
    """The stored zone a label stands for ("" for an ambiguous one); raises InvalidZone."""
    upper = label.upper()
    if upper in AMBIGUOUS_LABELS:
        return ""
    if upper in ZONE_LABELS:
        return ZONE_LABELS[upper][0]
    return read_labelled_wall_time(dt.datetime(2000, 1, 1), label).zone  # noqa: DTZ001 (a wall time)


@dataclass(frozen=True)
class DeadlineText:
    """What a written deadline says: the day, the instant (None when it cannot be placed)."""

    text: str
    instant: dt.datetime | None = None
    zone: str = ""
    day: dt.date | None = None
    end_of_day: bool = False
    ambiguous: bool = False
    problem: str = ""  # why there is no instant, when there is none
    warnings: tuple[str, ...] = ()
    readings: tuple[dict, ...] = ()

    def as_dict(self) -> dict:
        return {
            "text": self.text,
            "at": isoformat_utc(self.instant) if self.instant else None,
            "zone": self.zone,
            "day": self.day.isoformat() if self.day else None,
            "end_of_day": self.end_of_day,
            "ambiguous": self.ambiguous,
            "problem": self.problem,
            "warnings": list(self.warnings),
            "readings": list(self.readings),
        }


def read_deadline_text(text: str, *, reference: dt.datetime | None = None, default_zone: str = "") -> DeadlineText:
    """A written deadline as an instant, by the rules above.

    ``reference`` is when the text was written (for "Friday", "tomorrow" and a date
    without a year); ``default_zone`` is used when the text names no zone.
    """
    text = (text or "").strip()[:300]
    warnings: list[str] = []
    label = find_zone_label(text)
    zone_for_days = ""
    if label:
        try:
            zone_for_days = label_zone(label) or "UTC"
        except InvalidZone:
            label = ""
    if not label and default_zone:
        zone_for_days = normalize_zone_name(default_zone)
    ref_day = local_date(reference, zone_for_days or "UTC") if reference else None

    day: dt.date | None = None
    written = find_written_date(text)
    if written is not None:
        # A range ("until 6 - 9 November") is read as its last day.
        month, day_number = written.last_month or written.month, written.last_day or written.day
        year = written.year
        if year is None:
            if ref_day is None:
                return DeadlineText(text, problem="the date has no year and the sending date is unknown")
            year = ref_day.year
        try:
            day = dt.date(year, month, day_number)
        except ValueError:
            return DeadlineText(text, problem=f"{written.text!r} is not a date")
        if written.year is None and ref_day is not None and day < ref_day - dt.timedelta(days=31):
            try:
                day = day.replace(year=year + 1)
            except ValueError:  # 29 February, read into a year that has none
                return DeadlineText(text, problem=f"{written.text!r} is not a date in {year + 1}")
    weekday = _WEEKDAY_RE.search(text)
    relative = _RELATIVE_RE.search(text)
    if day is not None and weekday is not None:
        named = weekday_number(weekday["wd"])
        if named != day.weekday():
            warnings.append(f"{text!r}: {render_date(day)} is a {WEEKDAYS[day.weekday()]}, not a {WEEKDAYS[named]}.")
    elif day is None and relative is not None and ref_day is not None:
        day = ref_day + dt.timedelta(days=1 if relative["rel"].lower() == "tomorrow" else 0)
    elif day is None and weekday is not None:
        if ref_day is None:
            return DeadlineText(text, problem="a weekday without a date, and the sending date is unknown")
        named = weekday_number(weekday["wd"])
        day = ref_day + dt.timedelta(days=(named - ref_day.weekday() - 1) % 7 + 1)
    if day is None:
        return DeadlineText(text, problem="no date or weekday")
    try:
        check_plausible_date(day, field="date")
    except ImplausibleInstant as exc:
        return DeadlineText(text, problem=exc.message.rstrip("."))

    clock = find_written_clock(text)
    eod = bool(END_OF_DAY_WORDS.search(text)) or clock is None
    wall = dt.datetime.combine(day, dt.time(0))
    if not eod and clock is not None:
        hour, minute = clock.hour, clock.minute
        if clock.ampm:
            if hour > 12:
                return DeadlineText(text, day=day, problem=f"{clock.written!r} is not a time")
            hour = hour % 12 + (12 if clock.ampm == "p" else 0)
        if hour > 23 or minute > 59:
            return DeadlineText(text, day=day, problem=f"{clock.written!r} is not a time")
        wall = wall.replace(hour=hour, minute=minute)
    if not label:
        if not default_zone:
            return DeadlineText(text, day=day, end_of_day=eod, problem="no time zone is named")
        label = default_zone
        warnings.append(f"{text!r} names no zone; read in {normalize_zone_name(default_zone)}.")
    reading = read_labelled_wall_time(wall, label, end_of_day_on=day if eod else None)
    return DeadlineText(
        text,
        instant=reading.instant,
        zone=reading.zone,
        day=day,
        end_of_day=eod,
        ambiguous=reading.ambiguous,
        problem="the zone is ambiguous" if reading.ambiguous else reading.problem,
        warnings=tuple(warnings) + reading.warnings,
        readings=reading.readings,
    )
