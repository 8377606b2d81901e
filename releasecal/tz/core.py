"""The time core: zones, instants, wall times, rendering and deadline wording, under
the conventions the package states (``releasecal.tz``: instants aware, zones by name,
AoE as its own zone, wall-time input exact). Reading what people write (zone labels,
"EOD Friday PST", dates and clock times) is ``releasecal.tz.text``.
"""

from __future__ import annotations

import datetime as dt
import logging
import os
import re
import zoneinfo
from dataclasses import dataclass
from functools import lru_cache

from releasecal.errors import ValidationFailed
from releasecal.tz.names import MONTHS, WEEKDAYS

logger = logging.getLogger(__name__)

UTC = dt.UTC
AOE = "AoE"
AOE_IANA = "Etc/GMT+12"  # POSIX sign convention: Etc/GMT+12 is UTC-12.

_ALIASES = {
    "aoe": AOE,
    "anywhere on earth": AOE,
    "utc": "UTC",
    "z": "UTC",
    "gmt": "UTC",
    "etc/utc": "UTC",
}


class InvalidZone(ValidationFailed):
    pass


class NonExistentTime(ValidationFailed):
    """A wall time inside a spring-forward gap."""


class AmbiguousTime(ValidationFailed):
    """A wall time inside a fall-back fold."""


class ImplausibleInstant(ValidationFailed):
    """A time outside the years a release calendar can mean (a typo, or an attack)."""


# Every instant that enters the system lies in [EARLIEST, LATEST): far from the ends of
# ``datetime`` (years 1 and 9999), where converting to a zone overflows.
EARLIEST = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(2100, 1, 1, tzinfo=dt.UTC)


# --------------------------------------------------------------------------- zones


_HOST_ZONES = frozenset({"localtime", "Factory", "posixrules"})


@lru_cache(maxsize=512)
def _available() -> frozenset[str]:
    # tzdata's names only: ``localtime`` is the host's clock (a feed would carry
    # ``TZID=localtime`` built from it), ``Factory`` is no place, and ``posix/`` and
    # ``right/`` are copies of the tree (``right/`` counting leap seconds).
    return frozenset(
        name
        for name in zoneinfo.available_timezones()
        if name not in _HOST_ZONES and not name.startswith(("posix/", "right/"))
    )


def normalize_zone_name(name: str) -> str:
    """Return the canonical stored name of a zone, or raise InvalidZone.

    ``AoE`` (any case) and ``Etc/GMT+12`` both normalise to ``AoE``.
    """
    if not isinstance(name, str) or not name.strip():
        raise InvalidZone("A time zone is required.", extra={"zone": name})
    return _normalize_valid(name)


@lru_cache(maxsize=1024)
def _normalize_valid(name: str) -> str:
    # Memoised: lists normalise the same few zones per row. lru_cache keeps only
    # returns, so an unknown name raises (a fresh InvalidZone) every time.
    raw = name.strip()
    alias = _ALIASES.get(raw.lower())
    if alias:
        return alias
    if raw.lower() == AOE_IANA.lower():
        return AOE
    if raw in _available():
        return raw
    # Accept a case-insensitive match of an IANA key ("europe/berlin").
    lowered = _available_lowered()
    if raw.lower() in lowered:
        return lowered[raw.lower()]
    raise InvalidZone(
        f"Unknown time zone {raw!r}. Use an IANA name such as 'Europe/Berlin' or 'AoE'.",
        extra={"zone": raw},
    )


@lru_cache(maxsize=1)
def _available_lowered() -> dict[str, str]:
    return {key.lower(): key for key in _available()}


def is_valid_zone(name: str) -> bool:
    try:
        normalize_zone_name(name)
    except InvalidZone:
        return False
    return True


@lru_cache(maxsize=512)
def get_zone(name: str) -> zoneinfo.ZoneInfo:
    """The tzinfo for a zone name (``AoE`` included).

    A *stored* name this tzdata cannot load (a row written before names were checked,
    or a zone another tzdata release has and this one lacks) is read as UTC, so that the
    row's instants are still shown, correctly, in UTC: ``zone_warning`` says so beside
    them and ``manage.py check_services`` lists such rows. Input is checked before it
    gets here (``normalize_zone_name``, ``localize``), so no new row can get such a name.
    """
    shown = shown_zone(name)
    return zoneinfo.ZoneInfo(AOE_IANA if shown == AOE else shown)


@lru_cache(maxsize=512)
def _loadable(name: str) -> str | None:
    """The canonical name of ``name`` if this tzdata can load it, else None."""
    try:
        canonical = normalize_zone_name(name)
        zoneinfo.ZoneInfo(AOE_IANA if canonical == AOE else canonical)
    except (InvalidZone, zoneinfo.ZoneInfoNotFoundError, ValueError):
        if not isinstance(name, str) or not name.strip():
            raise
        logger.warning("zone %r unknown to this tzdata; shown in UTC", name)
        return None
    return canonical


def shown_zone(name: str) -> str:
    """The zone ``name``'s instants are shown in: its canonical name, or ``UTC`` when
    this tzdata cannot load it (``zone_warning``). A blank name is still an error."""
    return _loadable(name) or "UTC"


def is_known_zone(name: str) -> bool:
    """Can this tzdata load the stored zone ``name``? (Blank counts as known: no zone.)"""
    return not isinstance(name, str) or not name.strip() or _loadable(name) is not None


def zone_warning(name: str) -> str:
    """``zone Mars/Olympus_Mons unknown to this tzdata; shown in UTC`` for a stored zone
    this tzdata cannot load; empty for a known (or blank) one."""
    if is_known_zone(name):
        return ""
    return f"zone {name.strip()} unknown to this tzdata; shown in UTC"


def iana_name(name: str) -> str:
    """The IANA key for a zone name: ``AoE`` becomes ``Etc/GMT+12`` (a stored zone this
    tzdata lacks, ``UTC``: see ``shown_zone``)."""
    canonical = shown_zone(name)
    return AOE_IANA if canonical == AOE else canonical


def zone_choices() -> list[tuple[str, str]]:
    names = sorted(n for n in _available() if "/" in n and not n.startswith(("Etc/", "SystemV/")))
    return [(AOE, "AoE (Anywhere on Earth, UTC-12)"), ("UTC", "UTC")] + [(n, n) for n in names]


# ------------------------------------------------------------------------ offsets


def format_offset(offset: dt.timedelta) -> str:
    """``-07:00``, ``+10:30``, ``+00:00`` (``-07:52:58`` for a historical sub-minute offset)."""
    total = int(offset.total_seconds())
    sign = "-" if total < 0 else "+"
    total = abs(total)
    hours, rem = divmod(total, 3600)
    minutes, seconds = divmod(rem, 60)
    if seconds:
        # Never round: a rounded offset named in an error would point at another instant.
        return f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}"
    return f"{sign}{hours:02d}:{minutes:02d}"


def abbreviation(instant: dt.datetime, zone: str) -> str:
    """The zone abbreviation in force at ``instant``.

    tzdata gives letters where a zone has them (PDT, CET, IST) and numbers where it has
    none (Lord Howe's ``+1030``); numbers are rendered as ``UTC+10:30`` so they cannot
    be mistaken for a time. AoE is ``AoE``.
    """
    canonical = shown_zone(zone)
    if canonical == AOE:
        return "AoE"
    local = to_zone(instant, canonical)
    name = local.tzname() or ""
    if canonical == "UTC" or name in {"UTC", "Z"}:
        return "UTC"
    if not name or name[0] in "+-" or name.isdigit():
        return "UTC" + format_offset(local.utcoffset() or dt.timedelta(0))
    return name


# ----------------------------------------------------------------------- instants


def ensure_aware(instant: dt.datetime) -> dt.datetime:
    if instant.tzinfo is None or instant.utcoffset() is None:
        raise ValidationFailed(
            "A time without a zone or offset cannot be placed on the timeline.",
            extra={"value": instant.isoformat()},
        )
    return instant


def to_utc(instant: dt.datetime) -> dt.datetime:
    return ensure_aware(instant).astimezone(UTC)


def to_zone(instant: dt.datetime, zone: str) -> dt.datetime:
    """Convert an instant to a zone (``AoE`` included)."""
    return ensure_aware(instant).astimezone(get_zone(zone))


def in_fold(instant: dt.datetime, zone: str) -> bool:
    """Does the wall clock of ``instant`` in ``zone`` occur twice (either occurrence of a
    fall-back fold)? Such a wall time with a TZID is read differently by different
    calendar clients (RFC 5545 §3.3.5 says the first; ical.js, libical and khal take
    the second), so feeds write these instants in UTC."""
    local = to_zone(instant, zone)
    return local.replace(fold=1 - local.fold).utcoffset() != local.utcoffset()


def _implausible(field: str, shown: str) -> ImplausibleInstant:
    return ImplausibleInstant(
        f"The {field} {shown} is not a plausible date: use a date between {EARLIEST.year} and {LATEST.year - 1}.",
        extra={"field": field, "value": shown},
    )


def check_plausible(instant: dt.datetime, *, field: str = "time") -> dt.datetime:
    """``instant`` in UTC when it lies between 1970 and 2100; ImplausibleInstant otherwise.

    The one range check for instants entering the system (API, admin, services, email
    headers, imports): called before anything is saved.
    """
    instant = ensure_aware(instant)
    try:
        utc = instant.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not EARLIEST <= utc < LATEST:
        raise _implausible(field, instant.isoformat())
    return utc


def check_plausible_date(day: dt.date, *, field: str = "date", shown: str = "") -> dt.date:
    """A calendar date (or the date of a wall time) between 1970 and 2099, or ImplausibleInstant."""
    if not EARLIEST.year <= day.year < LATEST.year:
        raise _implausible(field, shown or day.isoformat())
    return day


def utc_now() -> dt.datetime:
    return dt.datetime.now(UTC)


def localize(wall: dt.datetime, zone: str) -> dt.datetime:
    """Attach ``zone`` to a naive wall time, exactly, and return the instant in UTC.

    A wall time in a gap (it never happened) raises NonExistentTime; one in a fold (it
    happened twice) raises AmbiguousTime. Both messages name the two candidate offsets
    so the person can add the one they mean. A zone this tzdata cannot load raises
    InvalidZone: a wall time is input, and reading it in UTC would move it by the
    zone's offset (what is shown of a stored row goes through ``shown_zone`` instead).
    """
    if wall.tzinfo is not None:
        raise ValueError("localize() takes a naive wall time")
    if _loadable(zone) is None:
        raise InvalidZone(
            f"Unknown time zone {zone!r}: this tzdata cannot load it, so a wall time in it has no instant. "
            "Use an IANA name such as 'Europe/Berlin' or 'AoE'.",
            extra={"zone": zone},
        )
    tz = get_zone(zone)
    first = wall.replace(tzinfo=tz, fold=0)
    second = wall.replace(tzinfo=tz, fold=1)
    off_first, off_second = first.utcoffset(), second.utcoffset()
    if off_first == off_second:
        return first.astimezone(UTC)
    canonical = normalize_zone_name(zone)
    shown = wall.strftime("%Y-%m-%d %H:%M")
    # Round-tripping tells a gap from a fold: a gap's wall time does not come back.
    round_trip = first.astimezone(UTC).astimezone(tz).replace(tzinfo=None)
    candidates = sorted({format_offset(off_first), format_offset(off_second)})
    extra = {"wall_time": wall.isoformat(), "zone": canonical, "candidate_offsets": candidates}
    if round_trip != wall:
        raise NonExistentTime(
            f"{shown} does not exist in {canonical}: the clocks skip over it when daylight "
            f"saving time starts. The two offsets around the gap are {candidates[0]} and "
            f"{candidates[1]}; give the time with an explicit offset or pick a time "
            "outside the gap.",
            extra=extra,
        )
    raise AmbiguousTime(
        f"{shown} is ambiguous in {canonical}: it happens twice when daylight saving "
        f"time ends, at UTC offset {format_offset(off_first)} and again at "
        f"{format_offset(off_second)}. Give the time with an explicit offset.",
        extra=extra,
    )


_ISO_RE = re.compile(
    r"^\s*(?P<date>\d{4}-\d{2}-\d{2})[T ](?P<time>\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)"
    r"\s*(?P<offset>Z|z|[+-]\d{2}(?::?\d{2}(?::\d{2})?)?)?\s*$"
)


def parse_wall_time(value: str | dt.datetime, zone: str, *, field: str = "time") -> dt.datetime:
    """Parse a wall time in ``zone`` into a UTC instant.

    ``value`` is ISO 8601 (``2024-07-26T19:00`` or ``2024-07-26 19:00``); with an
    explicit offset (``-07:00`` or ``Z``) the offset decides and gap/fold are no issue.
    An aware datetime is taken as it is; a naive one is localized strictly. Either way
    the instant must be plausible (``check_plausible``); ``field`` names it in errors.
    """
    normalize_zone_name(zone)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None and value.utcoffset() is not None:
            return check_plausible(value, field=field)
        check_plausible_date(value.date(), field=field, shown=value.isoformat())
        return localize(value.replace(tzinfo=None), zone)
    if not isinstance(value, str):
        raise ValidationFailed("Expected a date and time as text.", extra={"value": repr(value)})
    match = _ISO_RE.match(value)
    if not match:
        raise ValidationFailed(
            f"Could not read {value!r} as a date and time; use 'YYYY-MM-DD HH:MM', "
            "optionally followed by an offset such as '-07:00' or 'Z'.",
            extra={"value": value},
        )
    try:
        naive = dt.datetime.fromisoformat(f"{match['date']}T{match['time']}")
    except ValueError as exc:
        raise ValidationFailed(f"{value!r} is not a valid date and time: {exc}.", extra={"value": value}) from exc
    check_plausible_date(naive.date(), field=field, shown=value.strip())
    offset = match["offset"]
    if offset:
        if offset in {"Z", "z"}:
            return check_plausible(naive.replace(tzinfo=UTC), field=field)
        if ":" not in offset and len(offset) == 5:
            offset = f"{offset[:3]}:{offset[3:]}"
        elif len(offset) == 3:
            offset = f"{offset}:00"
        try:
            aware = dt.datetime.fromisoformat(f"{naive.isoformat()}{offset}")
        except ValueError as exc:
            raise ValidationFailed(f"Bad UTC offset in {value!r}.", extra={"value": value}) from exc
        return check_plausible(aware, field=field)
    return localize(naive, zone)


def wall_time_input(instant: dt.datetime, zone: str) -> str:
    """The text a form pre-fills for ``instant`` in ``zone``: ``2024-07-23 19:00``.

    It reads back to the same instant through ``parse_wall_time``: seconds are shown
    when present, and a time in a fold gets its explicit offset (``-07:00``).
    """
    zone = shown_zone(zone)  # a stored zone this tzdata cannot load: its UTC reading
    local = to_zone(instant, zone)
    text = local.strftime("%Y-%m-%d %H:%M:%S" if local.second or local.microsecond else "%Y-%m-%d %H:%M")
    try:
        if localize(local.replace(tzinfo=None, microsecond=0), zone) == to_utc(instant).replace(microsecond=0):
            return text
    except (NonExistentTime, AmbiguousTime):
        pass
    return text + format_offset(local.utcoffset() or dt.timedelta(0))


def wall_clock(instant: dt.datetime, zone: str) -> dt.datetime:
    """``instant`` as the naive wall clock of ``zone`` under the running tzdata: what a
    deadline keeps beside its instant (``releasecal.services.wall_time_record``)."""
    return to_zone(instant, zone).replace(tzinfo=None)


def wall_readings(wall: dt.datetime, zone: str) -> tuple[dt.datetime, ...]:
    """Every UTC instant the naive ``wall`` in ``zone`` can mean under the running rules:
    one, two in a fold (first occurrence first), or in a gap the end of the gap
    (``localize_lenient``). A kept wall time has no fold bit: an instant stored for it is
    still right when it is any of these. A stored zone this tzdata cannot load is read as
    UTC, as it is shown (``shown_zone``)."""
    zone = shown_zone(zone)
    try:
        return (localize(wall, zone),)
    except AmbiguousTime:
        tzinfo = get_zone(zone)
        return tuple(wall.replace(tzinfo=tzinfo, fold=fold).astimezone(UTC) for fold in (0, 1))
    except NonExistentTime:
        return (localize_lenient(wall, zone),)


def instant_for_wall(wall: dt.datetime, zone: str, current: dt.datetime) -> tuple[dt.datetime, str]:
    """The instant a kept wall time in ``zone`` means under the running rules, and a note
    when those rules skip or repeat it. ``current`` (the stored instant) stays when it is
    one of the wall time's readings: the second occurrence of a wall time in a fold."""
    readings = wall_readings(wall, zone)
    if current in readings:
        return current, ""
    if len(readings) == 2:
        return readings[0], "the new rules repeat this wall time: it is now the first one"
    if wall_clock(readings[0], zone) != wall:
        return readings[0], "the new rules skip this wall time: it is now the end of the gap"
    return readings[0], ""


def render_wall(wall: dt.datetime, zone: str) -> str:
    """A kept wall time in words, with no claim about its offset (which is what may have
    changed): ``19:00 Friday 26 June 2026 America/Los_Angeles``."""
    return _warned(f"{render_clock(wall)} {render_date(wall)} {shown_zone(zone)}", zone)


# Caches of other modules whose values depend on the zone rules (``rules_cache_register``).
_RULE_CACHES: list = []


def rules_cache_register(cached_function):
    """Register an ``lru_cache``d function whose results depend on the zone rules, so
    that ``zone_rules_reload`` empties it too. Returns the function (usable as a decorator)."""
    _RULE_CACHES.append(cached_function)
    return cached_function


def zone_rules_reload() -> None:
    """Forget every zone and zone rule read so far, so the next call reads the tzdata
    now on disk (and under ``zoneinfo.TZPATH`` as it now is): this module's caches, the
    registered ones and ``zoneinfo``'s own (``ZoneInfo.clear_cache``). A process that
    runs for long (web, worker) only sees a tzdata upgrade after a restart or this call."""
    for cached in (_available, _normalize_valid, _available_lowered, get_zone, _loadable, start_of_day):
        cached.cache_clear()
    for cached in _RULE_CACHES:
        cached.cache_clear()
    zoneinfo.ZoneInfo.clear_cache()


def zone_rules_source() -> str:
    """Where ``zoneinfo`` reads the zone rules, with the tzdata version when known:
    ``/usr/share/zoneinfo (tzdata 2025b)`` or ``the tzdata Python package (2026a)``.

    ``zoneinfo`` looks in each ``zoneinfo.TZPATH`` directory first and falls back to the
    ``tzdata`` package only for a zone no directory has (UTC is in every tzdata)."""
    for directory in zoneinfo.TZPATH:
        if os.path.isfile(os.path.join(directory, "UTC")):
            version = ""
            try:
                with open(os.path.join(directory, "tzdata.zi"), encoding="ascii") as source:
                    first = source.readline().split()
                if first[:2] == ["#", "version"] and len(first) == 3:
                    version = first[2]
            except (OSError, UnicodeDecodeError):
                pass
            return f"{directory} (tzdata {version})" if version else directory
    try:
        import tzdata
    except ImportError:
        return "no tzdata found"
    return f"the tzdata Python package ({tzdata.IANA_VERSION})"


def localize_lenient(wall: dt.datetime, zone: str) -> dt.datetime:
    """A wall time in ``zone`` as a UTC instant, never refusing: a time in a gap maps
    to the first instant after the gap, one in a fold to its first occurrence; a stored
    zone this tzdata cannot load is read as UTC, as it is shown (``shown_zone``)."""
    zone = shown_zone(zone)
    try:
        return localize(wall, zone)
    except AmbiguousTime:
        return wall.replace(tzinfo=get_zone(zone), fold=0).astimezone(UTC)
    except NonExistentTime:
        # PEP 495: in a gap, fold=1 reads the wall time with the offset after the
        # transition, which lands before the gap; the transition itself is the instant
        # the clocks jump to, reached by walking forward minute by minute (gaps are
        # at most a few hours).
        instant = wall.replace(tzinfo=get_zone(zone), fold=1).astimezone(UTC)
        instant = instant.replace(second=0, microsecond=0)
        while to_zone(instant, zone).replace(tzinfo=None) < wall:
            probe = instant + dt.timedelta(minutes=1)
            if to_zone(probe, zone).replace(tzinfo=None) >= wall:
                return probe
            instant = probe
        return instant


@lru_cache(maxsize=4096)  # pure; Milestone.deadline of an all-day milestone calls it per row
def start_of_day(day: dt.date, zone: str) -> dt.datetime:
    """The first instant of ``day`` in ``zone`` (where midnight is skipped, e.g.
    America/Santiago, the day starts at the transition)."""
    return localize_lenient(dt.datetime.combine(day, dt.time(0, 0)), zone)


def end_of_day(day: dt.date, zone: str) -> dt.datetime:
    """ "End of day D in Z": the instant D+1 00:00 in Z, in UTC.

    End of day 2025-02-10 AoE is 2025-02-11 00:00 AoE = 2025-02-11 12:00 UTC.
    """
    return start_of_day(day + dt.timedelta(days=1), zone)


def local_date(instant: dt.datetime, zone: str) -> dt.date:
    return to_zone(instant, zone).date()


def deadline_day(instant: dt.datetime, zone: str) -> dt.date:
    """The calendar day in ``zone`` on which a deadline closes.

    A deadline at exactly 00:00 is "end of day" of the day before: end of Thursday
    19 June AoE is 2025-06-20 00:00 AoE, and its day is Thursday 19 June.
    """
    try:
        return local_date(ensure_aware(instant) - dt.timedelta(microseconds=1), zone)
    except OverflowError:
        return to_utc(instant).date()


# ---------------------------------------------------------------------- rendering


def render_clock(local: dt.datetime) -> str:
    """``19:00``: the wall clock of a local time, without a zone."""
    return local.strftime("%H:%M")


def _seen_in(instant: dt.datetime, zone: str) -> tuple[dt.datetime, str, str]:
    """(local time, abbreviation, zone) of ``instant`` in ``zone``.

    A stored instant at the very ends of ``datetime`` (year 1 seen at UTC-12) cannot be
    converted; it is shown in UTC instead of raising, so one odd row never takes a page
    down. New instants cannot get there (``check_plausible``).
    """
    canonical = shown_zone(zone)
    try:
        return to_zone(instant, canonical), abbreviation(instant, canonical), canonical
    except OverflowError:
        return to_utc(instant), "UTC", "UTC"


def _warned(text: str, zone: str) -> str:
    """``text`` with ``zone_warning`` after it, for a stored zone this tzdata lacks."""
    warning = zone_warning(zone)
    return f"{text} ({warning})" if warning else text


def render_in_zone(instant: dt.datetime, zone: str) -> str:
    """``19:00 PDT Friday 26 July 2024``."""
    local, label, _ = _seen_in(instant, zone)
    return _warned(f"{render_clock(local)} {label} {render_date(local)}", zone)


def render(instant: dt.datetime, zone: str) -> str:
    """``19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)``.

    When the zone is UTC the parenthesis would repeat itself and is left out.
    """
    local, label, shown_zone = _seen_in(instant, zone)
    native = f"{render_clock(local)} {label} {render_date(local)}"
    if shown_zone == "UTC":
        return _warned(native, zone)
    return f"{native} ({render_in_zone(instant, 'UTC')})"


def render_date(day: dt.date | dt.datetime) -> str:
    """``Friday 26 July 2024`` for a date-only milestone (or the day of a local time)."""
    # No zero padding on the day, English names independent of the process locale.
    return f"{WEEKDAYS[day.weekday()]} {day.day} {MONTHS[day.month - 1]} {day.year}"


def render_day_of_change(day: dt.date) -> str:
    """``26 June 2024``: the day something was changed, beside a deadline's own words
    ("Moved from 19:00 PDT Wednesday 10 July 2024 on 26 June 2024")."""
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def render_with_aoe(instant: dt.datetime, zone: str) -> str:
    """Native, UTC and AoE, the three a deadline message shows (deadline wording)."""
    parts = [render_deadline(instant, zone)]
    if shown_zone(zone) != AOE:
        parts.append(render_deadline_in_zone(instant, AOE))
    return " / ".join(parts)


def render_waited(delta: dt.timedelta) -> str:
    """How long something has waited: ``2 days 4 h``, ``3 h 10 min``, ``12 min``."""
    minutes = max(0, int(delta.total_seconds()) // 60)
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    if days:
        return f"{days} day{'s' if days != 1 else ''} {hours} h"
    if hours:
        return f"{hours} h {minutes} min"
    return f"{minutes} min"


# ------------------------------------------------------------- deadline wording
# People say "Thursday 10 December 2026 (AoE)" for the end of Thursday anywhere on
# Earth, the instant Friday 00:00 AoE. A deadline at the first instant of a local day
# (00:00, or the transition where midnight is skipped, as in America/Santiago) is
# written as the end of the day before: the day ``deadline_day`` names. Other instants,
# and every instant that is not a deadline (a submission, a window start), keep their
# clock time.


def is_day_start(instant: dt.datetime, zone: str) -> bool:
    """Is ``instant`` the first instant of its local day in ``zone``? (Never for a stored
    value outside the plausible range: those are shown plainly.)"""
    if not EARLIEST <= to_utc(instant) < LATEST:
        return False
    try:
        return to_utc(instant) == start_of_day(local_date(instant, zone), shown_zone(zone))
    except OverflowError:
        return False


def render_deadline_in_zone(instant: dt.datetime, zone: str) -> str:
    """``end of Thursday 10 December 2026 AoE`` at a day's first instant, else
    ``render_in_zone``'s ``19:00 PDT Friday 26 July 2024``."""
    if not is_day_start(instant, zone):
        return render_in_zone(instant, zone)
    _, label, _ = _seen_in(instant, zone)
    return _warned(f"end of {render_date(deadline_day(instant, zone))} {label}", zone)


def render_deadline(instant: dt.datetime, zone: str) -> str:
    """A deadline as people say it, with UTC beside it:
    ``end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)``, or
    ``19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)``.

    The UTC part says the instant with its clock time (the same instant, in words that
    cannot be misread), unless the zone is UTC itself."""
    _, _, shown_zone = _seen_in(instant, zone)
    native = render_deadline_in_zone(instant, shown_zone)
    if shown_zone == "UTC":
        return _warned(native, zone)
    return f"{native} ({render_in_zone(instant, 'UTC')})"


@dataclass(frozen=True)
class DeadlineInput:
    """A deadline as a form shows it for editing, in ``render_deadline``'s words: the day
    it closes on and the clock time, empty when it closes at the end of that day."""

    day: str  # ISO date: 2026-12-13
    time: str  # "" (the end of the day), "18:00", or "01:30-07:00" inside a fold


def deadline_input(instant: dt.datetime, zone: str) -> DeadlineInput:
    """What a form pre-fills for the deadline ``instant`` in ``zone``, read as
    ``render_deadline`` reads it: 2026-12-14 00:00 AoE is day 2026-12-13 with no time
    (the end of Sunday 13 December 2026 AoE), never "2026-12-14 00:00". It reads back to
    the same instant through ``parse_deadline_input``."""
    if is_day_start(instant, zone):
        return DeadlineInput(day=deadline_day(instant, zone).isoformat(), time="")
    day, _, clock = wall_time_input(instant, zone).partition(" ")
    return DeadlineInput(day=day, time=clock)


_DAY_INPUT_RE = re.compile(r"^\s*(\d{4})-(\d{2})-(\d{2})\s*$")
_TIME_INPUT_RE = re.compile(r"^\s*(\d{1,2}):(\d{2})(:\d{2})?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?\s*$")
END_OF_DAY_TIMES = frozenset({"", "24:00", "end of day", "eod"})


def parse_deadline_input(day: str, time: str, zone: str, *, field: str = "deadline") -> dt.datetime:
    """The instant a deadline entered as ``deadline_input`` shows it means, in UTC.

    ``day`` is ``YYYY-MM-DD``; ``time`` empty (or ``24:00``) is the end of that day in
    ``zone`` (``end_of_day``: D+1 00:00 there), else a wall time ``HH:MM`` taken strictly
    (a gap or fold is refused with both offsets named, unless it carries an offset). A
    time at the first instant of a day (``00:00``) is refused: ``render_deadline`` words
    it as the end of the day before, so the two would name different days."""
    normalize_zone_name(zone)
    match = _DAY_INPUT_RE.match(day or "")
    if not match:
        raise ValidationFailed(
            f"Give the {field} day as YYYY-MM-DD (e.g. 2026-12-13), not {(day or '')[:40]!r}.",
            extra={"field": field, "value": (day or "")[:40]},
        )
    try:
        date = dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError as exc:
        raise ValidationFailed(
            f"{day.strip()!r} is not a date: {exc}.", extra={"field": field, "value": day.strip()}
        ) from None
    check_plausible_date(date, field=field, shown=day.strip())
    clock = (time or "").strip()
    if clock.lower() in END_OF_DAY_TIMES:
        return end_of_day(date, zone)
    match = _TIME_INPUT_RE.match(clock)
    if not match:
        raise ValidationFailed(
            f"Give the {field} time as HH:MM (e.g. 18:00), or leave it empty for the end of the day; "
            f"not {clock[:40]!r}.",
            extra={"field": field, "value": clock[:40]},
        )
    hours, minutes, seconds, offset = match.groups()
    instant = parse_wall_time(
        f"{date.isoformat()} {int(hours):02d}:{minutes}{seconds or ''}{offset or ''}", zone, field=field
    )
    if is_day_start(instant, zone):
        shown_zone = normalize_zone_name(zone)
        raise ValidationFailed(
            f"{clock} on {render_date(local_date(instant, shown_zone))} starts that day: it is the "
            f"{render_deadline_in_zone(instant, shown_zone)}. Give that day, "
            f"{deadline_day(instant, shown_zone).isoformat()}, with no time.",
            extra={"field": field, "day": date.isoformat(), "time": clock},
        )
    return instant


@dataclass(frozen=True)
class LocalTime:
    """An instant as seen in one zone: what the API calls ``x_local``."""

    datetime: str
    timezone: str
    abbreviation: str
    display: str
    deadline_day: str | None = None  # ISO date a deadline closes on; only for deadlines

    def as_dict(self) -> dict[str, str]:
        shown = {
            "datetime": self.datetime,
            "timezone": self.timezone,
            "abbreviation": self.abbreviation,
            "display": self.display,
        }
        if self.deadline_day is not None:
            shown["deadline_day"] = self.deadline_day
        return shown


def local_time(instant: dt.datetime, zone: str, *, deadline: bool = False) -> LocalTime:
    """``instant`` seen in ``zone``; a ``deadline`` is worded as people say it
    (``render_deadline``) and carries the day it closes on."""
    local, label, shown_zone = _seen_in(instant, zone)
    return LocalTime(
        datetime=local.isoformat(),
        timezone=shown_zone,
        abbreviation=label,
        display=render_deadline(instant, zone) if deadline else render(instant, zone),
        deadline_day=deadline_day(instant, shown_zone).isoformat() if deadline else None,
    )


def isoformat_utc(instant: dt.datetime) -> str:
    """``2024-07-27T02:00:00Z``."""
    # isoformat, not strftime: strftime does not zero-pad years before 1000.
    return to_utc(instant).replace(microsecond=0, tzinfo=None).isoformat() + "Z"


# -------------------------------------------------------------- durations in words


def duration_text(delta: dt.timedelta, *, ticking: bool = False) -> str:
    """How far ahead something is, in words: ``in 3 days 4 hours``; ``now`` at or past it.

    Plain (a reminder's offset): only the parts that are not zero ("in 3 days", "in 2
    hours 30 minutes"). ``ticking`` (a page's countdown, which the browser keeps
    updating): hours always beside days, minutes only below a day ("in 3 days 0 hours").
    """
    seconds = int(delta.total_seconds())
    if seconds <= 0:
        return "now"
    days, rem = divmod(seconds, 86400)
    hours, rem = divmod(rem, 3600)
    minutes = rem // 60
    shown = [
        (days, "day", bool(days)),
        (hours, "hour", bool(hours or (ticking and days))),
        (minutes, "minute", not days if ticking else bool(minutes)),
    ]
    return "in " + " ".join(f"{n} {unit}{'s' if n != 1 else ''}" for n, unit, show in shown if show)
