"""Examples for releasecal.tz: known instants, known labels, known gaps and folds.

No database: these are pure functions.
"""

from __future__ import annotations

import datetime as dt
import os
import time

import pytest

from releasecal import tz
from releasecal.errors import ValidationFailed

LA = "America/Los_Angeles"
UTC = dt.UTC


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=UTC)


# ----------------------------------------------------------------------- render


def test_it_renders_the_kubernetes_deadline_exactly():
    assert tz.render(utc(2024, 7, 27, 2, 0), LA) == "19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)"


def test_it_renders_pst_in_december():
    expected = "19:00 PST Friday 13 December 2024 (03:00 UTC Saturday 14 December 2024)"
    assert tz.render(utc(2024, 12, 14, 3, 0), LA) == expected


def test_it_renders_the_same_instant_in_any_zone():
    instant = utc(2024, 7, 27, 2, 0)
    assert tz.render_in_zone(instant, "Europe/Berlin") == "04:00 CEST Saturday 27 July 2024"
    assert tz.render_in_zone(instant, "Asia/Kolkata") == "07:30 IST Saturday 27 July 2024"
    assert tz.render_in_zone(instant, "AoE") == "14:00 AoE Friday 26 July 2024"
    assert tz.render_in_zone(instant, "UTC") == "02:00 UTC Saturday 27 July 2024"


def test_it_leaves_out_the_parenthesis_when_the_zone_is_utc():
    assert tz.render(utc(2024, 7, 27, 2, 0), "UTC") == "02:00 UTC Saturday 27 July 2024"


def test_it_pads_neither_the_day_nor_depends_on_locale():
    assert tz.render_date(dt.date(2025, 2, 3)) == "Monday 3 February 2025"


# ------------------------------------------------------------------ abbreviation


@pytest.mark.parametrize(
    ("instant", "zone", "label"),
    [
        (utc(2024, 7, 1, 12), LA, "PDT"),
        (utc(2024, 12, 1, 12), LA, "PST"),
        (utc(2024, 1, 15, 12), "Europe/Berlin", "CET"),
        (utc(2024, 7, 15, 12), "Europe/Berlin", "CEST"),
        (utc(2024, 1, 15, 12), "Asia/Kolkata", "IST"),
        (utc(2024, 7, 15, 12), "Asia/Kolkata", "IST"),
        # Lord Howe: +10:30 in the southern winter, +11 (a 30-minute DST) in summer;
        # tzdata has no letters for it, so the offset is spelled out.
        (utc(2024, 7, 15, 12), "Australia/Lord_Howe", "UTC+10:30"),
        (utc(2024, 12, 15, 12), "Australia/Lord_Howe", "UTC+11:00"),
        (utc(2024, 7, 15, 12), "AoE", "AoE"),
        (utc(2024, 7, 15, 12), "Etc/GMT+12", "AoE"),
        (utc(2024, 7, 15, 12), "UTC", "UTC"),
    ],
)
def test_it_names_the_abbreviation_in_force_at_the_instant(instant, zone, label):
    assert tz.abbreviation(instant, zone) == label


def test_it_switches_label_exactly_at_the_la_spring_transition():
    # 2024-03-10 02:00 PST = 10:00 UTC is when PDT starts.
    assert tz.abbreviation(utc(2024, 3, 10, 9, 59, 59), LA) == "PST"
    assert tz.abbreviation(utc(2024, 3, 10, 10, 0, 0), LA) == "PDT"


def test_it_switches_label_exactly_at_the_berlin_autumn_transition():
    # EU rule: summer time ends at 01:00 UTC on the last Sunday of October.
    assert tz.abbreviation(utc(2024, 10, 27, 0, 59, 59), "Europe/Berlin") == "CEST"
    assert tz.abbreviation(utc(2024, 10, 27, 1, 0, 0), "Europe/Berlin") == "CET"


def test_kolkata_has_a_half_hour_offset_and_no_dst():
    for month in range(1, 13):
        local = tz.to_zone(utc(2024, month, 1, 0, 0), "Asia/Kolkata")
        assert local.utcoffset() == dt.timedelta(hours=5, minutes=30)


# ----------------------------------------------------------------------- parsing


def test_it_parses_a_wall_time_in_the_zone():
    assert tz.parse_wall_time("2024-07-26 19:00", LA) == utc(2024, 7, 27, 2, 0)
    assert tz.parse_wall_time("2024-07-26T19:00:00", LA) == utc(2024, 7, 27, 2, 0)
    assert tz.parse_wall_time("2024-07-26T19:00", "Asia/Kolkata") == utc(2024, 7, 26, 13, 30)
    assert tz.parse_wall_time("2024-12-15 12:00", "Australia/Lord_Howe") == utc(2024, 12, 15, 1, 0)


def test_it_rejects_a_time_in_the_spring_gap_naming_both_offsets():
    with pytest.raises(tz.NonExistentTime) as exc:
        tz.parse_wall_time("2024-03-10 02:30", LA)
    assert "-08:00" in exc.value.message
    assert "-07:00" in exc.value.message
    assert "does not exist" in exc.value.message
    assert exc.value.status_code == 400
    assert sorted(exc.value.extra["candidate_offsets"]) == ["-07:00", "-08:00"]


def test_it_rejects_a_time_in_the_autumn_fold_naming_both_offsets():
    with pytest.raises(tz.AmbiguousTime) as exc:
        tz.parse_wall_time("2024-11-03 01:30", LA)
    assert "-07:00" in exc.value.message
    assert "-08:00" in exc.value.message
    assert "ambiguous" in exc.value.message


def test_it_rejects_lord_howe_half_hour_gap_and_fold():
    with pytest.raises(tz.NonExistentTime) as gap:
        tz.parse_wall_time("2024-10-06 02:15", "Australia/Lord_Howe")
    assert "+10:30" in gap.value.message
    assert "+11:00" in gap.value.message
    with pytest.raises(tz.AmbiguousTime) as fold:
        tz.parse_wall_time("2024-04-07 01:45", "Australia/Lord_Howe")
    assert "+10:30" in fold.value.message
    assert "+11:00" in fold.value.message


def test_the_minutes_next_to_a_gap_are_accepted():
    assert tz.parse_wall_time("2024-03-10 01:59", LA) == utc(2024, 3, 10, 9, 59)
    assert tz.parse_wall_time("2024-03-10 03:00", LA) == utc(2024, 3, 10, 10, 0)


def test_localize_refuses_an_aware_datetime():
    with pytest.raises(ValueError, match="naive"):
        tz.localize(utc(2024, 1, 1), LA)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # In the gap: the explicit offset decides.
        ("2024-03-10 02:30-08:00", utc(2024, 3, 10, 10, 30)),
        ("2024-03-10T02:30-07:00", utc(2024, 3, 10, 9, 30)),
        # In the fold: each offset picks one of the two instants.
        ("2024-11-03 01:30-07:00", utc(2024, 11, 3, 8, 30)),
        ("2024-11-03 01:30-08:00", utc(2024, 11, 3, 9, 30)),
        ("2024-11-03 01:30 -0800", utc(2024, 11, 3, 9, 30)),
        ("2024-11-03 01:30-08", utc(2024, 11, 3, 9, 30)),
        ("2024-11-03T09:30Z", utc(2024, 11, 3, 9, 30)),
        ("2024-11-03T09:30:00.250000z", dt.datetime(2024, 11, 3, 9, 30, 0, 250000, tzinfo=UTC)),
    ],
)
def test_it_accepts_gap_and_fold_times_with_an_explicit_offset(text, expected):
    assert tz.parse_wall_time(text, LA) == expected


def test_it_takes_an_aware_datetime_as_it_is():
    berlin = tz.get_zone("Europe/Berlin")
    value = dt.datetime(2024, 7, 27, 4, 0, tzinfo=berlin)
    assert tz.parse_wall_time(value, LA) == utc(2024, 7, 27, 2, 0)


def test_it_localizes_a_naive_datetime_strictly():
    assert tz.parse_wall_time(dt.datetime(2024, 7, 26, 19, 0), LA) == utc(2024, 7, 27, 2, 0)
    with pytest.raises(tz.AmbiguousTime):
        tz.parse_wall_time(dt.datetime(2024, 11, 3, 1, 30), LA)


@pytest.mark.parametrize(
    "text",
    ["tomorrow", "2024-02-30 10:00", "2024-07-26", "2024-07-26 25:00", "2024-07-26 19:00+25:00", "", "19:00 PDT"],
)
def test_it_rejects_unreadable_text_with_a_validation_error(text):
    with pytest.raises(ValidationFailed):
        tz.parse_wall_time(text, LA)


def test_it_rejects_a_non_string_value():
    with pytest.raises(ValidationFailed):
        tz.parse_wall_time(20240726, LA)


# ------------------------------------------------------------------------- zones


@pytest.mark.parametrize("name", ["Mars/Olympus_Mons", "PDT", "", "   ", "America/Los Angeles", "../etc/passwd", None])
def test_it_rejects_invalid_zone_names(name):
    with pytest.raises(tz.InvalidZone):
        tz.normalize_zone_name(name)
    assert tz.is_valid_zone(name) is False


def test_parsing_in_an_invalid_zone_is_a_validation_error():
    with pytest.raises(tz.InvalidZone) as exc:
        tz.parse_wall_time("2024-07-26 19:00", "Nowhere/Special")
    assert exc.value.status_code == 400
    assert "Nowhere/Special" in exc.value.message


@pytest.mark.parametrize(
    ("name", "canonical"),
    [
        ("AoE", "AoE"),
        ("aoe", "AoE"),
        ("Anywhere on Earth", "AoE"),
        ("Etc/GMT+12", "AoE"),
        ("etc/gmt+12", "AoE"),
        ("utc", "UTC"),
        ("Z", "UTC"),
        ("europe/berlin", "Europe/Berlin"),
        (" America/Los_Angeles ", LA),
    ],
)
def test_it_normalises_zone_names(name, canonical):
    assert tz.normalize_zone_name(name) == canonical


def test_aoe_is_utc_minus_twelve_under_its_iana_name():
    assert tz.iana_name("AoE") == "Etc/GMT+12"
    assert tz.to_zone(utc(2025, 2, 11, 12, 0), "AoE").utcoffset() == dt.timedelta(hours=-12)
    assert tz.parse_wall_time("2025-02-10 23:59", "AoE") == utc(2025, 2, 11, 11, 59)
    assert tz.zone_choices()[0][0] == "AoE"


# ------------------------------------------------------------------ day boundaries


def test_end_of_day_aoe_is_noon_utc_the_next_day():
    assert tz.end_of_day(dt.date(2025, 2, 10), "AoE") == utc(2025, 2, 11, 12, 0)


@pytest.mark.parametrize(
    ("zone", "expected"),
    [
        (LA, utc(2024, 7, 27, 7, 0)),  # 00:00 PDT
        ("Europe/Berlin", utc(2024, 7, 26, 22, 0)),  # 00:00 CEST
        ("Asia/Kolkata", utc(2024, 7, 26, 18, 30)),  # 00:00 IST
        ("Australia/Lord_Howe", utc(2024, 7, 26, 13, 30)),  # 00:00 +10:30
        ("UTC", utc(2024, 7, 27, 0, 0)),
        ("AoE", utc(2024, 7, 27, 12, 0)),
    ],
)
def test_end_of_day_is_the_next_local_midnight(zone, expected):
    assert tz.end_of_day(dt.date(2024, 7, 26), zone) == expected


def test_end_of_day_on_a_short_day_is_still_the_next_midnight():
    # 2024-03-10 is 23 hours long in LA; its end is 2024-03-11 00:00 PDT.
    assert tz.end_of_day(dt.date(2024, 3, 10), LA) == utc(2024, 3, 11, 7, 0)
    assert tz.end_of_day(dt.date(2024, 3, 10), LA) - tz.start_of_day(dt.date(2024, 3, 10), LA) == dt.timedelta(hours=23)


def test_start_of_day_where_midnight_is_skipped_is_the_transition():
    # Santiago 2022-09-11: 00:00 -04 jumps to 01:00 -03, so the day begins at 04:00 UTC.
    start = tz.start_of_day(dt.date(2022, 9, 11), "America/Santiago")
    assert start == utc(2022, 9, 11, 4, 0)
    assert tz.to_zone(start, "America/Santiago").replace(tzinfo=None) == dt.datetime(2022, 9, 11, 1, 0)
    assert tz.to_zone(start - dt.timedelta(seconds=1), "America/Santiago").date() == dt.date(2022, 9, 10)
    # Beirut 2024-03-31: 00:00 +02 jumps to 01:00 +03.
    assert tz.start_of_day(dt.date(2024, 3, 31), "Asia/Beirut") == utc(2024, 3, 30, 22, 0)
    # ...and the day before it ends there too.
    assert tz.end_of_day(dt.date(2022, 9, 10), "America/Santiago") == utc(2022, 9, 11, 4, 0)


def test_start_of_day_where_midnight_happens_twice_is_the_first_one():
    # Havana 2024-11-03: 01:00 CDT falls back to 00:00 CST, so midnight happens twice.
    assert tz.start_of_day(dt.date(2024, 11, 3), "America/Havana") == utc(2024, 11, 3, 4, 0)


@pytest.fixture
def machine_zone_kolkata():
    """The process's local zone set to +05:30 for one test (Django sets TZ to UTC)."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Kolkata"
    time.tzset()
    yield
    if before is None:
        del os.environ["TZ"]
    else:
        os.environ["TZ"] = before
    time.tzset()


@pytest.mark.parametrize(
    ("wall", "expected"),
    [
        (dt.datetime(2025, 11, 2, 1, 30), "2025-11-02T05:30:00+00:00"),  # fold: first occurrence (EDT)
        (dt.datetime(2025, 3, 9, 2, 30), "2025-03-09T07:00:00+00:00"),  # gap: the jump
        (dt.datetime(2025, 7, 1, 9, 15), "2025-07-01T13:15:00+00:00"),  # plain
    ],
)
def test_a_lenient_wall_time_is_in_utc_whatever_the_machine_s_zone(machine_zone_kolkata, wall, expected):
    instant = tz.localize_lenient(wall, "America/New_York")
    assert instant.isoformat() == expected
    assert instant.tzname() == "UTC"


@pytest.mark.parametrize(
    "wall",
    [
        dt.datetime(2025, 3, 9, 2, 30, 0, 500000),
        dt.datetime(2025, 3, 9, 2, 0, 0, 1),
        dt.datetime(2025, 3, 9, 2, 59, 59, 999999),
    ],
)
def test_a_wall_time_with_seconds_in_a_gap_is_the_jump_to_the_microsecond(wall):
    # New York 2025-03-09: 02:00 EST jumps to 03:00 EDT (07:00 UTC).
    assert tz.localize_lenient(wall, "America/New_York").isoformat() == "2025-03-09T07:00:00+00:00"


def test_a_fold_wall_time_read_back_from_its_second_occurrence_is_still_the_first():
    # 06:30 UTC is the second 01:30 in New York on 2025-11-02 (EST): read back as a naive
    # wall time it carries fold=1. The lenient reading is the first occurrence regardless.
    wall = tz.to_zone(utc(2025, 11, 2, 6, 30), "America/New_York").replace(tzinfo=None)
    assert (wall, wall.fold) == (dt.datetime(2025, 11, 2, 1, 30), 1)
    assert tz.localize_lenient(wall, "America/New_York") == utc(2025, 11, 2, 5, 30)


def test_a_wall_time_with_microseconds_outside_gaps_keeps_them():
    assert tz.localize_lenient(dt.datetime(2025, 3, 9, 3, 0, 0, 1), "America/New_York") == utc(2025, 3, 9, 7, 0, 0, 1)
    fold = tz.localize_lenient(dt.datetime(2025, 11, 2, 1, 59, 59, 999999), "America/New_York")
    assert fold == utc(2025, 11, 2, 5, 59, 59, 999999)


def test_local_date_is_the_date_in_the_zone():
    assert tz.local_date(utc(2024, 7, 27, 2, 0), LA) == dt.date(2024, 7, 26)
    assert tz.local_date(utc(2024, 7, 27, 2, 0), "Asia/Kolkata") == dt.date(2024, 7, 27)


# --------------------------------------------------------------- API and instants


def test_local_time_has_the_api_shape():
    value = tz.local_time(utc(2024, 7, 27, 2, 0), LA).as_dict()
    assert value == {
        "datetime": "2024-07-26T19:00:00-07:00",
        "timezone": LA,
        "abbreviation": "PDT",
        "display": "19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)",
    }


def test_local_time_in_aoe_keeps_the_aoe_name():
    value = tz.local_time(utc(2025, 2, 11, 12, 0), "Etc/GMT+12").as_dict()
    assert value["timezone"] == "AoE"
    assert value["abbreviation"] == "AoE"
    assert value["datetime"] == "2025-02-11T00:00:00-12:00"


def test_isoformat_utc_ends_with_z():
    berlin = tz.get_zone("Europe/Berlin")
    assert tz.isoformat_utc(dt.datetime(2024, 7, 27, 4, 0, 0, 999, tzinfo=berlin)) == "2024-07-27T02:00:00Z"
    assert tz.isoformat_utc(utc(999, 1, 2, 3, 4, 5)) == "0999-01-02T03:04:05Z"


def test_format_offset_spells_out_sign_hours_and_minutes():
    assert tz.format_offset(dt.timedelta(hours=-7)) == "-07:00"
    assert tz.format_offset(dt.timedelta(hours=10, minutes=30)) == "+10:30"
    assert tz.format_offset(dt.timedelta(0)) == "+00:00"
    assert tz.format_offset(-dt.timedelta(hours=7, minutes=52, seconds=58)) == "-07:52:58"


@pytest.mark.parametrize(
    "call",
    [
        lambda naive: tz.to_utc(naive),
        lambda naive: tz.to_zone(naive, LA),
        lambda naive: tz.abbreviation(naive, LA),
        lambda naive: tz.render(naive, LA),
        lambda naive: tz.local_time(naive, LA),
        lambda naive: tz.isoformat_utc(naive),
        lambda naive: tz.local_date(naive, LA),
    ],
)
def test_it_refuses_a_naive_datetime_where_an_instant_is_expected(call):
    with pytest.raises(ValidationFailed, match="without a zone or offset"):
        call(dt.datetime(2024, 7, 26, 19, 0))


def test_utc_now_is_aware():
    assert tz.utc_now().utcoffset() == dt.timedelta(0)


# ------------------------------------------------------------------ zone labels


@pytest.mark.parametrize(
    ("label", "zone"),
    [("PDT", "America/Los_Angeles"), ("pst", "America/Los_Angeles"), ("Pacific", "America/Los_Angeles"),
     ("UTC", "UTC"), ("AoE", "AoE"), ("BST", "Europe/London"), ("CEST", "Europe/Berlin"), ("HKT", "Asia/Hong_Kong"),
     ("XYZT", None)],
)  # fmt: skip
def test_a_written_label_names_the_zone_of_its_clock(label, zone):
    assert tz.zone_for_label(label) == zone


@pytest.mark.parametrize(
    ("label", "when", "actual"),
    [
        ("PST", dt.datetime(2018, 6, 6, 6, 59, tzinfo=dt.UTC), "PDT"),  # "EOD PST" in June
        ("PDT", dt.datetime(2023, 11, 15, 1, tzinfo=dt.UTC), "PST"),  # PDT after the clocks went back
        ("PST", dt.datetime(2018, 1, 23, 7, 59, tzinfo=dt.UTC), None),
        ("PT", dt.datetime(2018, 6, 6, 6, 59, tzinfo=dt.UTC), None),  # no season named
    ],
)
def test_a_label_out_of_season_is_told_apart_from_one_that_fits(label, when, actual):
    assert tz.label_out_of_season(label, when, "America/Los_Angeles") == actual


def test_the_end_of_a_day_is_still_that_day_in_its_own_season():
    # 10 March 2024: Los Angeles springs forward; the day ends at 00:00 PDT on the 11th.
    last = tz.end_of_day_in_force(dt.date(2024, 3, 10), "America/Los_Angeles")
    assert last == dt.datetime(2024, 3, 11, 6, 59, 59, 999999, tzinfo=dt.UTC)
    assert tz.abbreviation(last, "America/Los_Angeles") == "PDT"
    assert tz.deadline_day(tz.end_of_day(dt.date(2024, 3, 10), "America/Los_Angeles"), "America/Los_Angeles") == (
        dt.date(2024, 3, 10)
    )


def test_label_offsets_give_both_seasons_of_a_zone():
    assert tz.label_offsets("America/Los_Angeles", 2024) == {
        "PST": dt.timedelta(hours=-8),
        "PDT": dt.timedelta(hours=-7),
    }


@pytest.mark.parametrize("label", sorted(label for label in tz.ZONE_LABELS if 2 <= len(label) <= 4))
def test_every_reader_of_a_written_label_takes_it_from_the_one_table(label):
    zone = tz.ZONE_LABELS[label][0]
    assert tz.zone_for_label(label) == zone  # schedule READMEs
    assert tz.label_zone(label) == zone  # deadlines written in requests
    assert tz.zone_from_text(f"until EOD Friday {label}") == (zone, [])  # the request template's answer


@pytest.mark.parametrize("label", sorted(tz.AMBIGUOUS_LABELS))
def test_a_label_of_several_zones_is_never_guessed_from_a_request_but_a_readme_takes_its_first(label):
    zone, warnings = tz.zone_from_text(f"EOD Friday {label}")
    assert zone == ""
    assert "not guessed" in warnings[0]
    assert tz.label_zone(label) == ""
    assert tz.zone_for_label(label) == tz.AMBIGUOUS_LABELS[label][0][1]


@pytest.mark.parametrize(
    ("text", "label"),
    [("EOD Friday PST", "PST"), ("18:00 CEST", "CEST"), ("02:00 BST", "BST"), ("noon AEDT", "AEDT"),
     ("EOD Friday PT", ""), ("09:00 JST", ""), ("12:00 UTC", ""), ("EOD AoE", ""), ("no zone at all", "")],
)  # fmt: skip
def test_a_seasonal_label_is_one_half_of_a_summer_time_pair(text, label):
    assert tz.seasonal_label(text) == label


@pytest.mark.parametrize(
    ("delta", "plain", "ticking"),
    [
        (dt.timedelta(0), "now", "now"),
        (dt.timedelta(seconds=-5), "now", "now"),
        (dt.timedelta(days=3), "in 3 days", "in 3 days 0 hours"),
        (dt.timedelta(days=1, hours=1), "in 1 day 1 hour", "in 1 day 1 hour"),
        (dt.timedelta(days=1, hours=12, minutes=5), "in 1 day 12 hours 5 minutes", "in 1 day 12 hours"),
        (dt.timedelta(hours=2, minutes=30), "in 2 hours 30 minutes", "in 2 hours 30 minutes"),
        (dt.timedelta(hours=2), "in 2 hours", "in 2 hours 0 minutes"),
        (dt.timedelta(minutes=1), "in 1 minute", "in 1 minute"),
    ],
)
def test_one_duration_text_for_reminder_offsets_and_page_countdowns(delta, plain, ticking):
    assert tz.duration_text(delta) == plain
    assert tz.duration_text(delta, ticking=True) == ticking


# ---------------------------------------- a written label on a fall-back or spring-forward day

NY_FOLD = "2026-11-01 01:30 is ambiguous in America/New_York: it happens twice when daylight saving time ends, at UTC offset -04:00 and again at -05:00. Give the time with an explicit offset."  # noqa: E501
NY_GAP = "2027-03-14 02:30 does not exist in America/New_York: the clocks skip over it when daylight saving time starts. The two offsets around the gap are -04:00 and -05:00; give the time with an explicit offset or pick a time outside the gap."  # noqa: E501
WRITTEN_REF = dt.datetime(2026, 10, 20, tzinfo=dt.UTC)


@pytest.mark.parametrize(
    ("text", "instant"),
    [
        # EST names standard time: the second 01:30 (read as the first, EDT, before).
        ("01:30 EST Sunday 1 November 2026", utc(2026, 11, 1, 6, 30)),
        ("01:30 EDT Sunday 1 November 2026", utc(2026, 11, 1, 5, 30)),
        ("01:30 PST Sunday 1 November 2026", utc(2026, 11, 1, 9, 30)),
        ("01:30 PDT Sunday 1 November 2026", utc(2026, 11, 1, 8, 30)),
        ("02:30 CET Sunday 25 October 2026", utc(2026, 10, 25, 1, 30)),
        ("02:30 CEST Sunday 25 October 2026", utc(2026, 10, 25, 0, 30)),
        ("01:30 UTC-5 Sunday 1 November 2026", utc(2026, 11, 1, 6, 30)),
        ("01:30 UTC-4 Sunday 1 November 2026", utc(2026, 11, 1, 5, 30)),
    ],
)
def test_a_label_or_offset_written_in_a_fold_says_which_occurrence(text, instant):
    reading = tz.read_deadline_text(text, reference=WRITTEN_REF)
    assert (reading.instant, reading.problem, reading.warnings) == (instant, "", ())


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        ("01:30 ET Sunday 1 November 2026", NY_FOLD),
        ("01:30 Sunday 1 November 2026 Eastern time", NY_FOLD),
        ("01:30 Sunday 1 November 2026 America/New_York", NY_FOLD),
        # A label in a gap names a wall time the clocks never show (read as 07:00Z before).
        ("02:30 EST Sunday 14 March 2027", NY_GAP),
        ("02:30 EDT Sunday 14 March 2027", NY_GAP),
        ("02:30 ET Sunday 14 March 2027", NY_GAP),
    ],
)
def test_a_written_time_in_a_fold_without_its_offset_or_in_a_gap_is_refused_as_the_api_does(text, refusal):
    reading = tz.read_deadline_text(text, reference=WRITTEN_REF)
    assert reading.instant is None
    assert reading.problem == refusal.rstrip(".")
    assert reading.warnings == (refusal,)
    wall = dt.datetime.fromisoformat(refusal[:16])
    with pytest.raises((tz.AmbiguousTime, tz.NonExistentTime)) as exc:
        tz.parse_wall_time(wall.isoformat(), "America/New_York")
    assert exc.value.message == refusal


@pytest.mark.parametrize("name", ["localtime", "Factory", "posixrules", "posix/Europe/Berlin", "right/UTC"])
def test_host_dependent_and_copied_zone_names_are_not_zones(name):
    """Issue 29, item 15: ``localtime`` made a feed emit ``TZID=localtime`` from the host's clock."""
    assert not tz.is_valid_zone(name)
    with pytest.raises(tz.InvalidZone, match=f"Unknown time zone '{name}'"):
        tz.normalize_zone_name(name)
    assert name not in {value for value, _label in tz.zone_choices()}
    assert tz.is_valid_zone("Europe/Berlin")
