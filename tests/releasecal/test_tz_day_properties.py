"""Properties of end-of-day and lenient wall times over every IANA zone, 1980-2037.

- ``deadline_day(end_of_day(d)) == d``: the day a deadline closes on is the day whose
  end it is, for every day that exists in the zone (Samoa skipped 30 December 2011:
  that day has no end of its own).
- ``localize_lenient(wall)``: a wall time in a fold is its first occurrence, one in a
  gap is the instant the clocks jump at, any other its only instant. The oracle walks
  the zone minute by minute with zoneinfo alone (nothing from releasecal.tz): the answer
  is the first instant whose local time is at or past the wall time. Wall times are
  drawn around the next offset change of a zone that has seasons, so gaps and folds
  come up often (hypothesis's statistics: 5-10% of draws each).

Budget: 300 + 300 examples (explicit, so CI's cost is fixed).
"""

from __future__ import annotations

import datetime as dt
import zoneinfo

from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

from releasecal import tz

UTC = dt.UTC
# Every zone the service accepts (tzdata's names: no localtime, Factory, posix/, right/).
ZONES = sorted(name for name in zoneinfo.available_timezones() if tz.is_valid_zone(name))
START = dt.datetime(1980, 1, 1, tzinfo=UTC)
END = dt.datetime(2037, 12, 1, tzinfo=UTC)
MINUTE = dt.timedelta(minutes=1)


def _has_seasons(zone: str) -> bool:
    info = zoneinfo.ZoneInfo(zone)
    return any(
        dt.datetime(year, 1, 1, tzinfo=UTC).astimezone(info).utcoffset()
        != dt.datetime(year, 7, 1, tzinfo=UTC).astimezone(info).utcoffset()
        for year in (1990, 2005, 2024)
    )


# Zones that changed their clocks in 1990, 2005 or 2024 (about a quarter of them).
SEASONAL = [zone for zone in ZONES if _has_seasons(zone)]


def local(instant: dt.datetime, zone: str) -> dt.datetime:
    return instant.astimezone(zoneinfo.ZoneInfo(zone)).replace(tzinfo=None)


def next_change(instant: dt.datetime, zone: str) -> dt.datetime | None:
    """The first instant after ``instant`` (within 400 days) where the zone's offset
    changes, to the second, or None."""
    info = zoneinfo.ZoneInfo(zone)
    offset = instant.astimezone(info).utcoffset()
    step = dt.timedelta(hours=6)
    probe = instant
    for _ in range(400 * 4):
        later = probe + step
        if later.astimezone(info).utcoffset() != offset:
            low, high = probe, later  # offset at low is the old one, at high the new one
            while high - low > dt.timedelta(seconds=1):
                middle = low + (high - low) / 2
                middle = middle.replace(microsecond=0)
                if middle.astimezone(info).utcoffset() == offset:
                    low = middle if middle > low else low + dt.timedelta(seconds=1)
                else:
                    high = middle
            return high
        probe = later
    return None


def first_instant_at_or_past(wall: dt.datetime, zone: str) -> dt.datetime:
    """The oracle: from well before (no offset exceeds 15 h), minute by minute to the
    first instant whose local time is at or past the wall time.

    No leaps: local time runs backwards in a fold, so a leap of an hour can land past a
    fold's first occurrence while the local time there still reads earlier (Adelaide,
    +10:30 -> +09:30: 1980-03-02 02:30 happens at 16:00 UTC, but 15:30 and 16:30 UTC
    both read 02:00)."""
    instant = wall.replace(tzinfo=UTC) - dt.timedelta(hours=16)
    while local(instant, zone) < wall:
        instant += MINUTE
    return instant


def occurrences(wall: dt.datetime, zone: str) -> int:
    """How many offsets the zone uses within a day read the wall time back exactly."""
    info = zoneinfo.ZoneInfo(zone)
    base = wall.replace(tzinfo=UTC)
    offsets = {(base + dt.timedelta(hours=h)).astimezone(info).utcoffset() for h in range(-30, 31, 3)}
    return sum(local(base - offset, zone) == wall for offset in offsets)


@st.composite
def walls(draw):
    zone = draw(st.sampled_from(SEASONAL))
    seconds = draw(st.integers(0, int((END - START).total_seconds())))
    around = START + dt.timedelta(seconds=seconds)
    change = next_change(around, zone)
    if change is not None and change.second == 0:
        around = change  # near a transition: a gap or a fold, or just beside one
    shift = dt.timedelta(minutes=draw(st.integers(-75, 75)))
    wall = local(around, zone) + shift
    return zone, wall.replace(second=0, microsecond=0)


@settings(max_examples=300, deadline=None)
@given(zone=st.sampled_from(ZONES), day=st.dates(dt.date(1980, 1, 1), dt.date(2037, 12, 31)))
def test_the_deadline_day_of_a_day_s_end_is_that_day(zone, day):
    start, end = tz.start_of_day(day, zone), tz.end_of_day(day, zone)
    # A day that did not happen in the zone starts where the next one does.
    assume(local(start, zone).date() == day)
    assert end > start
    assert tz.deadline_day(end, zone) == day
    assert tz.deadline_day(end + dt.timedelta(microseconds=1), zone) == local(end, zone).date()


@settings(max_examples=300, deadline=None)
@given(walls())
def test_a_lenient_wall_time_is_its_first_occurrence_or_the_jump(drawn):
    zone, wall = drawn
    expected = first_instant_at_or_past(wall, zone)
    if local(expected, zone) == wall:
        event("fold" if occurrences(wall, zone) > 1 else "plain")
    else:
        event("gap")
    assert tz.localize_lenient(wall, zone) == expected


def test_the_oracle_finds_a_fold_s_first_occurrence_in_a_half_hour_zone():
    # Adelaide fell back from +10:30 to +09:30 at 1980-03-02 03:00: 02:30 happened at
    # 16:00 UTC and again at 17:00 UTC (a seed drew this one and failed the property).
    wall = dt.datetime(1980, 3, 2, 2, 30)
    assert first_instant_at_or_past(wall, "Australia/South") == dt.datetime(1980, 3, 1, 16, 0, tzinfo=UTC)
    assert tz.localize_lenient(wall, "Australia/South") == dt.datetime(1980, 3, 1, 16, 0, tzinfo=UTC)
