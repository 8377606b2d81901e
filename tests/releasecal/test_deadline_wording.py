"""Deadlines worded the way people say them (issue 16, item 1).

A deadline at the first instant of a local day is "the end of" the day before:
Kubernetes writes "Thursday 10 December 2026 (AoE)" for the instant Friday 00:00 AoE.
Every expected string here was worked out by hand from the zone's rules.
"""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework.test import APIClient

from exceptions.services import exception_request_approve
from releasecal import tz

UTC = dt.UTC


@pytest.mark.parametrize(
    ("instant", "zone", "expected"),
    [
        # AoE: end of Thursday 10 December 2026 anywhere on Earth = Friday 12:00 UTC.
        (
            dt.datetime(2026, 12, 11, 12, 0, tzinfo=UTC),
            "AoE",
            "end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)",
        ),
        # Not a day's first instant: the clock time, as before.
        (
            dt.datetime(2024, 7, 27, 2, 0, tzinfo=UTC),
            "America/Los_Angeles",
            "19:00 PDT Friday 26 July 2024 (02:00 UTC Saturday 27 July 2024)",
        ),
        # 00:00 on the day daylight saving time starts (the jump is at 02:00): PST.
        (
            dt.datetime(2024, 3, 10, 8, 0, tzinfo=UTC),
            "America/Los_Angeles",
            "end of Saturday 9 March 2024 PST (08:00 UTC Sunday 10 March 2024)",
        ),
        # 00:00 on the day it ends (the fold is at 02:00): still PDT.
        (
            dt.datetime(2024, 11, 3, 7, 0, tzinfo=UTC),
            "America/Los_Angeles",
            "end of Saturday 2 November 2024 PDT (07:00 UTC Sunday 3 November 2024)",
        ),
        # UTC+5:45 (Kathmandu): the zone has no letters, so its offset is the label.
        (
            dt.datetime(2025, 1, 15, 18, 15, tzinfo=UTC),
            "Asia/Kathmandu",
            "end of Wednesday 15 January 2025 UTC+05:45 (18:15 UTC Wednesday 15 January 2025)",
        ),
        # Santiago skips midnight when daylight saving time starts (00:00 -> 01:00 on
        # Sunday 8 September 2024): the day's first instant is 01:00 -03.
        (
            dt.datetime(2024, 9, 8, 4, 0, tzinfo=UTC),
            "America/Santiago",
            "end of Saturday 7 September 2024 UTC-03:00 (04:00 UTC Sunday 8 September 2024)",
        ),
        # A minute later it is a clock time again.
        (
            dt.datetime(2024, 9, 8, 4, 1, tzinfo=UTC),
            "America/Santiago",
            "01:01 UTC-03:00 Sunday 8 September 2024 (04:01 UTC Sunday 8 September 2024)",
        ),
        # UTC itself: no parenthesis.
        (dt.datetime(2026, 12, 11, 0, 0, tzinfo=UTC), "UTC", "end of Thursday 10 December 2026 UTC"),
    ],
)
def test_a_deadline_at_the_start_of_a_day_is_the_end_of_the_day_before(instant, zone, expected):
    assert tz.render_deadline(instant, zone) == expected


def test_the_deadline_day_is_the_day_the_words_name():
    assert tz.deadline_day(dt.datetime(2024, 9, 8, 4, 0, tzinfo=UTC), "America/Santiago") == dt.date(2024, 9, 7)
    assert tz.deadline_day(dt.datetime(2026, 12, 11, 12, 0, tzinfo=UTC), "AoE") == dt.date(2026, 12, 10)


def test_the_readers_zone_says_end_of_only_when_it_is_midnight_there_too():
    aoe_deadline = dt.datetime(2026, 12, 11, 12, 0, tzinfo=UTC)
    assert tz.render_deadline_in_zone(aoe_deadline, "Europe/Berlin") == "13:00 CET Friday 11 December 2026"
    assert tz.render_deadline_in_zone(aoe_deadline, "Etc/GMT+12") == "end of Thursday 10 December 2026 AoE"
    utc_midnight = dt.datetime(2026, 12, 11, 0, 0, tzinfo=UTC)
    assert tz.render_deadline_in_zone(utc_midnight, "Europe/London") == "end of Thursday 10 December 2026 GMT"


def test_instants_that_are_not_deadlines_keep_their_clock_time():
    midnight = dt.datetime(2026, 12, 11, 12, 0, tzinfo=UTC)
    assert tz.render(midnight, "AoE") == "00:00 AoE Friday 11 December 2026 (12:00 UTC Friday 11 December 2026)"
    assert tz.local_time(midnight, "AoE").as_dict() == {
        "datetime": "2026-12-11T00:00:00-12:00",
        "timezone": "AoE",
        "abbreviation": "AoE",
        "display": "00:00 AoE Friday 11 December 2026 (12:00 UTC Friday 11 December 2026)",
    }
    assert tz.local_time(midnight, "AoE", deadline=True).as_dict() == {
        "datetime": "2026-12-11T00:00:00-12:00",
        "timezone": "AoE",
        "abbreviation": "AoE",
        "display": "end of Thursday 10 December 2026 AoE (12:00 UTC Friday 11 December 2026)",
        "deadline_day": "2026-12-10",
    }


def test_the_api_words_deadlines_and_gives_their_day_but_not_other_instants(pending_request, release_team_member):
    exception_request_approve(request=pending_request, actor=release_team_member)  # until end of Thu 25 July PDT
    body = APIClient().get(f"/api/v1/exceptions/{pending_request.pk}/", {"tz": "Europe/Berlin"}).json()
    assert body["effective_deadline"] == "2024-07-26T07:00:00Z"
    assert body["effective_deadline_local"]["display"] == (
        "end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024)"
    )
    assert body["effective_deadline_local"]["deadline_day"] == "2024-07-25"
    # In Berlin it is 09:00 on Friday: a clock time, and Friday is the day there.
    assert body["effective_deadline_viewer"]["display"] == (
        "09:00 CEST Friday 26 July 2024 (07:00 UTC Friday 26 July 2024)"
    )
    assert body["effective_deadline_viewer"]["deadline_day"] == "2024-07-26"
    # A submission time is not a deadline.
    assert "deadline_day" not in body["submitted_at_local"]
    assert body["submitted_at_local"]["display"] == "20:00 PDT Tuesday 23 July 2024 (03:00 UTC Wednesday 24 July 2024)"
