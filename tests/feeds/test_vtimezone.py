"""The canonical VTIMEZONE of every IANA zone says what zoneinfo says, 1970-2099.

The check reads the VTIMEZONE back independently of how it was built: observances are
expanded with dateutil's rrule (DTSTART, every single-value RDATE, the RRULE), each onset
is turned into UTC with its TZOFFSETFROM, and the offset at an instant is the
TZOFFSETTO of the latest onset at or before it. That offset must equal zoneinfo's at
every transition (one second either side) and twice a year, for every zone.
"""

from __future__ import annotations

import bisect
import datetime as dt
import json
import subprocess
import zoneinfo

import icalendar
import pytest
from dateutil.rrule import rrulestr

from feeds import vtimezone as vtz
from releasecal import tz
from tests.feeds.test_ical_clients import node_binary
from tests.support.paths import ROOT

UTC = dt.UTC


def _offset(value) -> int:
    return int(value.td.total_seconds()) if hasattr(value, "td") else int(value.total_seconds())


def expand(component: icalendar.Timezone) -> list[tuple[dt.datetime, int]]:
    """(UTC onset, offset after) of every observance onset up to tz.LATEST."""
    found: list[tuple[dt.datetime, int]] = []
    for observance in component.subcomponents:
        start = observance.decoded("DTSTART")
        before = _offset(observance["TZOFFSETFROM"])
        after = _offset(observance["TZOFFSETTO"])
        locals_ = [start]
        rdates = observance.get("RDATE", [])
        for prop in rdates if isinstance(rdates, list) else [rdates]:
            assert len(prop.dts) == 1, "one RDATE value per line"
            locals_.append(prop.dts[0].dt)
        if "RRULE" in observance:
            rule = observance["RRULE"].to_ical().decode()
            assert "COUNT" not in rule
            assert "UNTIL" not in rule or rule.split("UNTIL=")[1][15:16] == "Z", "UNTIL in UTC"
            limit = dt.datetime(tz.LATEST.year + 1, 1, 1)
            locals_ += list(rrulestr(rule, dtstart=start).between(start, limit, inc=True))
        for local in locals_:
            found.append(((local - dt.timedelta(seconds=before)).replace(tzinfo=UTC), after))
    return sorted(found)


def offset_at(onsets: list[tuple[dt.datetime, int]], instant: dt.datetime, whens=None) -> int | None:
    index = bisect.bisect_right(whens or [when for when, _after in onsets], instant)
    return onsets[index - 1][1] if index else None


def zoneinfo_transitions(zone: zoneinfo.ZoneInfo) -> list[dt.datetime]:
    """Instants where zoneinfo's offset changes, by hourly search refined to the second."""
    found = []
    step = dt.timedelta(hours=6)
    t = tz.EARLIEST
    prev = t.astimezone(zone).utcoffset()
    while t < tz.LATEST:
        nxt = t + step
        off = nxt.astimezone(zone).utcoffset()
        if off != prev:
            lo, hi = t, nxt
            while hi - lo > dt.timedelta(seconds=1):
                mid = lo + (hi - lo) / 2
                if mid.astimezone(zone).utcoffset() == prev:
                    lo = mid
                else:
                    hi = mid
            found.append(hi.replace(microsecond=0))
            prev = off
        t = nxt
    return found


def check_zone(key: str) -> None:
    component = vtz.vtimezone(key)
    assert str(component["TZID"]) == key
    onsets = expand(component)
    zone = zoneinfo.ZoneInfo(key)
    instants = [tz.EARLIEST]
    instants += [dt.datetime(y, m, 15, 12, tzinfo=UTC) for y in range(1970, 2100) for m in (1, 7)]
    for when, _after in onsets:
        if tz.EARLIEST <= when < tz.LATEST:
            instants += [when - dt.timedelta(seconds=1), when, when + dt.timedelta(seconds=1)]
    whens = [when for when, _after in onsets]
    for instant in instants:
        if not tz.EARLIEST <= instant < tz.LATEST:
            continue
        expected = int(instant.astimezone(zone).utcoffset().total_seconds())
        assert offset_at(onsets, instant, whens) == expected, (key, instant.isoformat())


SAMPLE = [
    "America/Los_Angeles",  # US rule change in 2007
    "America/New_York",
    "America/Sao_Paulo",  # DST abolished in 2019
    "Europe/Istanbul",  # DST abolished in 2016
    "Europe/Berlin",
    "Europe/Dublin",  # negative DST in tzdata
    "Africa/Casablanca",  # Ramadan switches listed until 2087
    "Asia/Jerusalem",  # rule onsets on a Friday before the last Sunday
    "America/Nuuk",  # onset at -01:00 local (RDATE fallback)
    "Australia/Lord_Howe",  # half-hour DST
    "Pacific/Chatham",
    "Asia/Kolkata",
    "Pacific/Kiritimati",  # +14, skipped a day in 1994
    "Etc/GMT+12",  # AoE
]


@pytest.mark.parametrize("key", SAMPLE)
def test_vtimezone_matches_zoneinfo_at_every_transition(key):
    check_zone(key)
    # The independent transition search finds no change the VTIMEZONE lacks.
    onsets = expand(vtz.vtimezone(key))
    for instant in zoneinfo_transitions(zoneinfo.ZoneInfo(key)):
        expected = int(instant.astimezone(zoneinfo.ZoneInfo(key)).utcoffset().total_seconds())
        assert offset_at(onsets, instant) == expected, (key, instant.isoformat())


def test_every_iana_zone_is_covered_from_1970_to_2099():
    failures = []
    for key in sorted(zoneinfo.available_timezones()):
        if key in ("Factory", "localtime") or key.startswith("posix/") or key.startswith("right/"):
            continue
        try:
            check_zone(key)
        except (AssertionError, vtz.TZifError) as error:
            failures.append(f"{key}: {error}")
    assert not failures, failures[:5]


def test_rule_is_an_open_ended_rrule_with_one_byday():
    text = vtz.vtimezone("America/Los_Angeles").to_ical().decode()
    rules = [line for line in text.splitlines() if line.startswith("RRULE")]
    assert sorted(rules) == ["RRULE:FREQ=YEARLY;BYDAY=1SU;BYMONTH=11", "RRULE:FREQ=YEARLY;BYDAY=2SU;BYMONTH=3"]
    assert "DTSTART:20070311T020000" in text
    assert "DTSTART:20071104T020000" in text
    assert "RDATE:20060402T020000" in text  # the pre-2007 rule, one onset per line
    assert not any("," in line for line in text.splitlines() if line.startswith("RDATE"))


def test_a_zone_that_abolished_dst_ends_on_its_fixed_offset():
    text = vtz.vtimezone("America/Sao_Paulo").to_ical().decode()
    assert "RRULE" not in text
    assert "RDATE:20190217T000000" in text  # the last switch back to -03
    onsets = expand(vtz.vtimezone("America/Sao_Paulo"))
    assert offset_at(onsets, dt.datetime(2030, 1, 15, tzinfo=UTC)) == -3 * 3600


def test_aoe_is_one_fixed_observance():
    component = vtz.vtimezone(tz.AOE_IANA)
    (observance,) = component.subcomponents
    assert str(observance["TZNAME"]) == "AoE"
    assert _offset(observance["TZOFFSETTO"]) == _offset(observance["TZOFFSETFROM"]) == -12 * 3600
    assert observance.decoded("DTSTART") == dt.datetime(1969, 12, 31, 12, 0)


def test_same_bytes_every_time():
    assert vtz.vtimezone("Europe/Berlin").to_ical() == vtz.vtimezone("Europe/Berlin").to_ical()


def test_a_bad_tzif_file_is_refused():
    with pytest.raises(vtz.TZifError):
        vtz.parse_tzif(b"not a tzif")
    with pytest.raises(vtz.TZifError):
        vtz.tzif_bytes("../etc/passwd")


ICALJS_SWEEP = ROOT / "tests" / "js" / "icaljs_zone_sweep.mjs"
# ical.js keeps whole minutes of an offset: Monrovia's -00:44:30 (until 7 January 1972) reads 30 s
# off. No feed deadline is in Monrovia in 1970-1971; the set is exact, so any other
# zone ical.js misreads fails the sweep.
ICALJS_MINUTE_OFFSETS = {"Africa/Monrovia"}


def test_icaljs_reads_every_zone_as_zoneinfo_from_1970_to_2099(tmp_path):
    """The all-zone sweep beside dateutil's (above), with ical.js (Thunderbird), which
    ignores an observance's DTSTART when it has RDATEs (issue 29, item 3): every wall
    time at each transition ±1 s and twice a year, as a feed's ``DTSTART;TZID=`` gives
    it, must read as zoneinfo's instant. Wall times in a fold are left out: feeds write
    those in UTC (tests/feeds/test_feed_folds.py)."""
    node = node_binary()
    payload, want = {}, {}
    for key in sorted(zoneinfo.available_timezones()):
        if key in ("Factory", "localtime") or key.startswith(("posix/", "right/")):
            continue
        component = vtz.vtimezone(key)
        calendar = icalendar.Calendar()
        calendar.add("prodid", "-//releasecal tests//EN")
        calendar.add("version", "2.0")
        calendar.add_component(component)
        instants = {tz.EARLIEST} | {dt.datetime(y, m, 15, 12, tzinfo=UTC) for y in range(1970, 2100) for m in (1, 7)}
        for when, _after in expand(component):
            instants |= {when - dt.timedelta(seconds=1), when, when + dt.timedelta(seconds=1)}
        instants = sorted(i for i in instants if tz.EARLIEST <= i < tz.LATEST and not tz.in_fold(i, key))
        zone = zoneinfo.ZoneInfo(key)
        walls = [i.astimezone(zone).strftime("%Y-%m-%dT%H:%M:%S") for i in instants]
        payload[key] = {"ics": calendar.to_ical().decode(), "walls": walls}
        want[key] = [i.strftime("%Y-%m-%dT%H:%M:%SZ") for i in instants]
    result = subprocess.run(
        [node, str(ICALJS_SWEEP)], input=json.dumps(payload), capture_output=True, text=True, cwd=ROOT, timeout=300
    )
    assert result.returncode == 0, result.stderr
    read = json.loads(result.stdout)
    wrong = {}
    for key, expected in want.items():
        misread = [
            (wall, got, instant)
            for wall, got, instant in zip(payload[key]["walls"], read[key], expected, strict=True)
            if got != instant
        ]
        if misread:
            wrong[key] = misread
    assert len(want) > 590
    assert set(wrong) == ICALJS_MINUTE_OFFSETS, {key: found[:3] for key, found in wrong.items()}
    assert all(wall < "1972-01-08" for wall, _, _ in wrong["Africa/Monrovia"]), wrong["Africa/Monrovia"]


def test_an_observance_with_rdates_lists_its_dtstart_among_them():
    """ical.js reads an observance with RDATEs from the RDATEs alone: the first onset
    is one of them (Los Angeles, summer 1970: PDT from 26 April)."""
    component = vtz.vtimezone("America/Los_Angeles")
    for observance in component.subcomponents:
        rdates = observance.get("RDATE", [])
        rdates = rdates if isinstance(rdates, list) else [rdates]
        if rdates:
            assert observance.decoded("DTSTART") in [prop.dts[0].dt for prop in rdates], observance.to_ical()
    daylight_1970 = next(
        o for o in component.walk("DAYLIGHT") if o.decoded("DTSTART") == dt.datetime(1970, 4, 26, 2, 0)
    )
    assert b"RDATE:19700426T020000\r\n" in daylight_1970.to_ical()
