"""The query options of a feed URL: ``?alarm=`` (every feed) and ``?since=`` (all.ics).

Each is read into a canonical value that is part of the feed's cache key, so two
spellings of the same option share one cached feed (``?alarm=2h,1d`` and
``?alarm=1d,120m`` are the same feed). A value we do not understand is a 400 with a
plain-text sentence saying what is allowed (``BadFeedOption``), never a feed that
silently ignores it.
"""

from __future__ import annotations

import datetime as dt
import re

from releasecal import tz
from releasecal.errors import DomainError, ValidationFailed

MAX_ALARMS = 3
MAX_ALARM_MINUTES = 14 * 24 * 60  # two weeks before a deadline
ALLOWED_ALARMS = (
    "alarm= takes up to 3 comma-separated times before each timed deadline, "
    "each a whole number followed by d (days), h (hours) or m (minutes), "
    "from 1m to 14d: e.g. ?alarm=1d or ?alarm=1d,2h,30m."
)
ALLOWED_SINCE = (
    "since= takes a year (?since=2020) or a date (?since=2020-06-01) between 1970 and 2099; "
    "all.ics then holds every release with a milestone on or after it."
)
SINCE_ONLY_ALL = "since= applies only to /calendar/all.ics (the other feeds hold every milestone of their releases)."
DEFAULT_YEARS = 2

_ALARM = re.compile(r"(\d{1,5})([dhm])")
_UNIT_MINUTES = {"d": 24 * 60, "h": 60, "m": 1}
_YEAR = re.compile(r"\d{4}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


class BadFeedOption(ValidationFailed):
    """A ``?alarm=`` or ``?since=`` value that is not allowed: its message is the 400's body."""


def parse_alarms(values: list[str]) -> tuple[int, ...]:
    """Minutes before the deadline, largest first, without repeats; () when not asked.

    ``values`` are the raw ``alarm`` query values (a repeated ``alarm=`` counts like a
    comma list)."""
    if not values:
        return ()
    minutes: set[int] = set()
    for value in values:
        for part in value.split(","):
            match = _ALARM.fullmatch(part.strip().lower())
            if match is None:
                raise BadFeedOption(f"Unknown alarm {part.strip()!r}. {ALLOWED_ALARMS}")
            amount = int(match[1]) * _UNIT_MINUTES[match[2]]
            if not 1 <= amount <= MAX_ALARM_MINUTES:
                raise BadFeedOption(f"Alarm {part.strip()!r} is out of range. {ALLOWED_ALARMS}")
            minutes.add(amount)
    if len(minutes) > MAX_ALARMS:
        raise BadFeedOption(f"Too many alarms ({len(minutes)}). {ALLOWED_ALARMS}")
    return tuple(sorted(minutes, reverse=True))


def alarm_text(minutes: int) -> str:
    """The canonical spelling of one alarm: ``1d``, ``2h``, ``90m``."""
    for unit in ("d", "h"):
        if minutes % _UNIT_MINUTES[unit] == 0:
            return f"{minutes // _UNIT_MINUTES[unit]}{unit}"
    return f"{minutes}m"


def default_since(today: dt.date) -> dt.date:
    """Today's date two years back (29 February → 28 February)."""
    try:
        return today.replace(year=today.year - DEFAULT_YEARS)
    except ValueError:
        return today.replace(year=today.year - DEFAULT_YEARS, day=28)


def parse_since(value: str | None, *, today: dt.date) -> dt.date:
    """The first day whose milestones put a release into all.ics: the ``since=`` year's
    1 January or date, or by default today two years back (a date, not an instant, so
    the cached feed stays valid all day)."""
    if value is None:
        return default_since(today)
    text = value.strip()
    try:
        if _YEAR.fullmatch(text):
            day = dt.date(int(text), 1, 1)
        elif _DATE.fullmatch(text):
            day = dt.date.fromisoformat(text)
        else:
            raise ValueError(text)
        return tz.check_plausible_date(day, field="since")
    except (ValueError, DomainError):
        raise BadFeedOption(f"Unknown since {text!r}. {ALLOWED_SINCE}") from None
