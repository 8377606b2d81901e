"""Property tests for releasecal.tz across the DST transitions of five zones, 2000-2037.

Three properties, each checked against an oracle that does not use releasecal.tz:
(a) a round trip keeps the same instant (and the same wall time);
(b) the labels are right, and render()'s UTC part agrees with the instant;
(c) wall times in a gap or a fold are rejected naming both candidate offsets, every
    other wall time gives its unique instant.

Transitions are found by scanning the zone's utcoffset; gaps and folds are classified by
brute force over the offsets the zone uses. The legislated DST rules of the US, the EU
and Lord Howe Island give a second, tzdata-free oracle for the offsets.

Example budget (explicit max_examples, so the total is known): 5 properties,
800 + 600 + 800 + 800 + 1,500 = 4,500 examples per run.
"""

from __future__ import annotations

import datetime as dt
import zoneinfo
from dataclasses import dataclass
from functools import cache

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from releasecal import tz

UTC = dt.UTC
ZONES = ("America/Los_Angeles", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata", "AoE")
IANA = {zone: zone for zone in ZONES} | {"AoE": "Etc/GMT+12"}
FIRST = dt.datetime(2000, 1, 1, tzinfo=UTC)
LAST = dt.datetime(2038, 1, 1, tzinfo=UTC)

H = dt.timedelta(hours=1)
M = dt.timedelta(minutes=1)
# What each zone's offset must be called. An offset missing here fails the test.
LABELS = {
    "America/Los_Angeles": {-7 * H: "PDT", -8 * H: "PST"},
    "Europe/Berlin": {2 * H: "CEST", 1 * H: "CET"},
    "Asia/Kolkata": {5 * H + 30 * M: "IST"},
    "Australia/Lord_Howe": {10 * H + 30 * M: "UTC+10:30", 11 * H: "UTC+11:00"},
    "AoE": {-12 * H: "AoE"},
}
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")  # fmt: skip


# ------------------------------------------------------------------------ oracles


@dataclass(frozen=True)
class Transition:
    at: dt.datetime  # first UTC instant of the new offset
    before: dt.timedelta
    after: dt.timedelta


def _offset(zone: str, epoch: int) -> dt.timedelta:
    return dt.datetime.fromtimestamp(epoch, zoneinfo.ZoneInfo(IANA[zone])).utcoffset()


@cache
def transitions(zone: str) -> tuple[Transition, ...]:
    """Every utcoffset change of ``zone`` in [FIRST, LAST), to the second."""
    found = []
    step = 86400
    epoch, end = int(FIRST.timestamp()), int(LAST.timestamp())
    current = _offset(zone, epoch)
    while epoch < end:
        nxt = epoch + step
        offset = _offset(zone, nxt)
        if offset != current:
            lo, hi = epoch, nxt  # lo has the old offset, hi the new one
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if _offset(zone, mid) == current:
                    lo = mid
                else:
                    hi = mid
            found.append(Transition(dt.datetime.fromtimestamp(hi, UTC), current, offset))
            current = offset
        epoch = nxt
    return tuple(found)


@cache
def zone_offsets(zone: str) -> frozenset[dt.timedelta]:
    return frozenset({_offset(zone, int(FIRST.timestamp()))} | {t.after for t in transitions(zone)})


def instants_for(wall: dt.datetime, zone: str) -> list[dt.datetime]:
    """Brute force: every UTC instant whose wall time in ``zone`` is ``wall``."""
    z = zoneinfo.ZoneInfo(IANA[zone])
    found = set()
    for offset in zone_offsets(zone):
        candidate = wall.replace(tzinfo=UTC) - offset
        if candidate.astimezone(z).replace(tzinfo=None) == wall:
            found.add(candidate)
    return sorted(found)


def offsets_around(wall: dt.datetime, zone: str) -> set[dt.timedelta]:
    """For a gap: the offsets in force at the instants the wall time would have had."""
    z = zoneinfo.ZoneInfo(IANA[zone])
    return {(wall.replace(tzinfo=UTC) - offset).astimezone(z).utcoffset() for offset in zone_offsets(zone)}


def spelled(offset: dt.timedelta) -> str:
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _nth_sunday(year: int, month: int, n: int) -> dt.date:
    first = dt.date(year, month, 1)
    return first + dt.timedelta(days=(6 - first.weekday()) % 7 + 7 * (n - 1))


def _last_sunday(year: int, month: int) -> dt.date:
    last = dt.date(year + month // 12, month % 12 + 1, 1) - dt.timedelta(days=1)
    return last - dt.timedelta(days=(last.weekday() - 6) % 7)


def _at(day: dt.date, hours: float) -> dt.datetime:
    return dt.datetime.combine(day, dt.time(), tzinfo=UTC) + dt.timedelta(hours=hours)


def legislated_offset(zone: str, instant: dt.datetime) -> dt.timedelta | None:
    """The offset by the statute, not by tzdata (None where no simple rule applies)."""
    year = instant.year
    if zone == "America/Los_Angeles":
        if year >= 2007:  # Energy Policy Act 2005: 2nd Sunday March .. 1st Sunday November, 02:00 local
            start, end = _at(_nth_sunday(year, 3, 2), 10), _at(_nth_sunday(year, 11, 1), 9)
        else:  # 1st Sunday April .. last Sunday October, 02:00 local
            start, end = _at(_nth_sunday(year, 4, 1), 10), _at(_last_sunday(year, 10), 9)
        return -7 * H if start <= instant < end else -8 * H
    if zone == "Europe/Berlin":  # EU: last Sunday March .. last Sunday October, 01:00 UTC
        start, end = _at(_last_sunday(year, 3), 1), _at(_last_sunday(year, 10), 1)
        return 2 * H if start <= instant < end else 1 * H
    if zone == "Australia/Lord_Howe":
        if year < 2008:  # irregular years (the 2000 Olympics, 2006, 2007)
            return None
        # Summer time ends 1st Sunday April 02:00 +11, starts 1st Sunday October 02:00 +10:30.
        end = _at(_nth_sunday(year, 4, 1), 2 - 11)
        start = _at(_nth_sunday(year, 10, 1), 2 - 10.5)
        return 10 * H + 30 * M if end <= instant < start else 11 * H
    if zone == "Asia/Kolkata":
        return 5 * H + 30 * M
    return -12 * H  # AoE


# --------------------------------------------------------------------- strategies

_NEAR = st.one_of(st.integers(-150, 150).map(lambda m: m * 60), st.integers(-3 * 3600, 3 * 3600))


@st.composite
def zone_and_instant(draw) -> tuple[str, dt.datetime]:
    zone = draw(st.sampled_from(ZONES))
    known = transitions(zone)
    if known and draw(st.booleans()):
        transition = draw(st.sampled_from(known))
        instant = transition.at + dt.timedelta(seconds=draw(_NEAR), microseconds=draw(st.sampled_from([0, 1, 999999])))
        event("instant near a transition")
    else:
        instant = draw(
            st.datetimes(
                min_value=FIRST.replace(tzinfo=None),
                max_value=(LAST - dt.timedelta(days=1)).replace(tzinfo=None),
                timezones=st.just(UTC),
            )
        )
        event("instant anywhere")
    return zone, instant


@st.composite
def zone_and_wall(draw, near_only: bool = False, window: st.SearchStrategy[int] = _NEAR) -> tuple[str, dt.datetime]:
    """A naive wall time; near a transition (where gaps and folds are) most of the time."""
    zone = draw(st.sampled_from(ZONES))
    known = transitions(zone)
    if known and (near_only or draw(st.booleans())):
        transition = draw(st.sampled_from(known))
        # The wall time at which the clocks change, read on the old offset.
        changeover = (transition.at + transition.before).replace(tzinfo=None)
        wall = changeover + dt.timedelta(seconds=draw(window))
    else:
        wall = draw(st.datetimes(min_value=FIRST.replace(tzinfo=None), max_value=dt.datetime(2037, 12, 31, 23, 59, 59)))
    return zone, wall


# ---------------------------------------------------------- the oracles themselves


def test_the_scan_finds_two_transitions_a_year_where_there_is_dst():
    for zone in ("America/Los_Angeles", "Europe/Berlin", "Australia/Lord_Howe"):
        assert len(transitions(zone)) == 76, zone  # 2000..2037, two a year
    assert transitions("Asia/Kolkata") == ()
    assert transitions("AoE") == ()
    la_2024 = [t for t in transitions("America/Los_Angeles") if t.at.year == 2024]
    assert la_2024 == [
        Transition(dt.datetime(2024, 3, 10, 10, tzinfo=UTC), -8 * H, -7 * H),
        Transition(dt.datetime(2024, 11, 3, 9, tzinfo=UTC), -7 * H, -8 * H),
    ]
    lord_howe_2024 = [t for t in transitions("Australia/Lord_Howe") if t.at.year == 2024]
    assert [t.after - t.before for t in lord_howe_2024] == [-30 * M, 30 * M]


def test_the_statute_agrees_with_tzdata_at_every_transition():
    for zone in ZONES:
        for transition in transitions(zone):
            if transition.at.year < 2008 and zone == "Australia/Lord_Howe":
                continue
            assert legislated_offset(zone, transition.at) == transition.after, (zone, transition)
            assert legislated_offset(zone, transition.at - dt.timedelta(seconds=1)) == transition.before


def test_every_gap_and_fold_in_range_is_rejected_in_its_middle():
    """Exhaustive companion to property (c): the middle of each of the 228 gaps/folds."""
    checked = 0
    for zone in ZONES:
        for transition in transitions(zone):
            shift = transition.after - transition.before
            changeover = (transition.at + transition.before).replace(tzinfo=None)
            if shift > dt.timedelta(0):  # gap: [changeover, changeover + shift)
                wall, error = changeover + shift / 2, tz.NonExistentTime
            else:  # fold: [changeover + shift, changeover)
                wall, error = changeover + shift / 2, tz.AmbiguousTime
            with pytest.raises(error) as exc:
                tz.localize(wall, zone)
            assert spelled(transition.before) in exc.value.message
            assert spelled(transition.after) in exc.value.message
            checked += 1
    assert checked == 3 * 76


# ------------------------------------------------------------ (a) round trips


@settings(max_examples=800, deadline=None)
@given(zone_and_instant())
def test_an_instant_survives_wall_time_with_offset_and_back(case):
    zone, instant = case
    local = tz.to_zone(instant, zone)
    assert tz.parse_wall_time(local.isoformat(), zone) == instant
    # The same with a space and the offset as tz spells it in messages.
    text = f"{local.replace(tzinfo=None).isoformat(sep=' ')} {tz.format_offset(local.utcoffset())}"
    assert tz.parse_wall_time(text, zone) == instant
    assert tz.to_utc(local) == instant


@settings(max_examples=600, deadline=None)
@given(zone_and_wall())
def test_an_unambiguous_wall_time_survives_parse_and_back(case):
    zone, wall = case
    expected = instants_for(wall, zone)
    if len(expected) != 1:
        event("gap or fold: not this property's business")
        return
    event("unique wall time")
    instant = tz.parse_wall_time(wall.isoformat(sep=" "), zone)
    assert instant == expected[0]
    assert tz.localize(wall, zone) == instant
    assert tz.to_zone(instant, zone).replace(tzinfo=None) == wall


# ------------------------------------------------------------------ (b) labels


@settings(max_examples=800, deadline=None)
@given(zone_and_instant())
def test_the_label_matches_the_offset_in_force(case):
    zone, instant = case
    offset = instant.astimezone(zoneinfo.ZoneInfo(IANA[zone])).utcoffset()
    label = LABELS[zone][offset]
    assert tz.abbreviation(instant, zone) == label
    assert tz.local_time(instant, zone).abbreviation == label
    assert tz.to_zone(instant, zone).utcoffset() == offset


@settings(max_examples=800, deadline=None)
@given(zone_and_instant())
def test_render_agrees_with_the_statute_and_with_utc(case):
    zone, instant = case
    offset = legislated_offset(zone, instant)
    if offset is None:
        offset = instant.astimezone(zoneinfo.ZoneInfo(IANA[zone])).utcoffset()
        event("Lord Howe before 2008: offset from tzdata")
    label = LABELS[zone][offset]
    wall = (instant + offset).replace(tzinfo=None)  # plain arithmetic, no tz database
    u = instant.replace(tzinfo=None)

    def shown(moment: dt.datetime, name: str) -> str:
        day = f"{WEEKDAYS[moment.weekday()]} {moment.day} {MONTHS[moment.month - 1]} {moment.year}"
        return f"{moment.hour:02d}:{moment.minute:02d} {name} {day}"

    assert tz.render(instant, zone) == f"{shown(wall, label)} ({shown(u, 'UTC')})"
    assert tz.render_in_zone(instant, "UTC") == shown(u, "UTC")
    assert tz.local_time(instant, zone).datetime == f"{wall.isoformat()}{spelled(offset)}"


# ------------------------------------------------------ (c) gaps and folds


@settings(max_examples=1500, deadline=None)
@given(zone_and_wall(near_only=True, window=st.integers(-90 * 60, 90 * 60)))
def test_gap_and_fold_wall_times_are_rejected_naming_both_offsets(case):
    zone, wall = case
    found = instants_for(wall, zone)
    text = wall.isoformat(sep=" ")
    if not found:
        event("gap")
        candidates = offsets_around(wall, zone)
        assert len(candidates) == 2
        for call in (lambda: tz.localize(wall, zone), lambda: tz.parse_wall_time(text, zone)):
            with pytest.raises(tz.NonExistentTime) as exc:
                call()
            for offset in candidates:
                assert spelled(offset) in exc.value.message
    elif len(found) == 2:
        event("fold")
        candidates = {wall.replace(tzinfo=UTC) - instant for instant in found}
        for call in (lambda: tz.localize(wall, zone), lambda: tz.parse_wall_time(text, zone)):
            with pytest.raises(tz.AmbiguousTime) as exc:
                call()
            for offset in candidates:
                assert spelled(offset) in exc.value.message
    else:
        event("unique")
        assert len(found) == 1
        assert tz.localize(wall, zone) == found[0]
        assert tz.parse_wall_time(text, zone) == found[0]
        candidates = {wall.replace(tzinfo=UTC) - found[0]}
    # Whatever the case, an explicit offset decides and is accepted.
    for offset in candidates:
        assert tz.parse_wall_time(f"{text}{spelled(offset)}", zone) == wall.replace(tzinfo=UTC) - offset
