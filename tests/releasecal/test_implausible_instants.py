"""Instants at the ends of time are refused on the way in, and an odd stored one never
takes a page down (issue 13, item 2).

A staff user filed ``submitted_at: "0001-01-01T00:00:00Z"``: the row was committed, the
response was a 500, and from then on anonymous pages and the worker failed on it
(OverflowError when converting to UTC-12). Now every instant entering the system is
checked against one plausible range (``tz.EARLIEST`` to ``tz.LATEST``) before anything
is saved, and rendering falls back to UTC for a stored value it cannot convert.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exceptions.models import Decision, ExceptionRequest
from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.models import AuditLog, Milestone
from releasecal.services import milestone_create
from reminders.messages import Message, render_email, render_slack

EXTREMES = [
    "0001-01-01T00:00:00Z",
    "0001-01-01T00:00:00+14:00",
    "9999-12-31T23:59:59-12:00",
    "9999-12-31T23:59:59Z",
    "1969-12-31T23:59:59Z",
    "2100-01-01T00:00:00Z",
    "0001-01-01 00:00",  # a wall time in the release zone
    "9999-12-31 23:59",
]


def client_for(user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


@pytest.mark.parametrize("value", EXTREMES)
def test_a_request_dated_at_the_ends_of_time_is_a_400_and_nothing_is_saved(value, staff, kep, code_freeze):
    audit_rows = AuditLog.objects.count()
    response = client_for(staff).post(
        "/api/v1/exceptions/",
        {"kep": kep.number, "milestone": code_freeze.pk, "days": 2, "submitted_at": value, "requester_name": "Ann"},
        format="json",
    )
    assert response.status_code == 400, response.content
    body = response.json()
    assert body["message"].startswith(f"The submitted_at {value[:10]}")
    assert body["message"].endswith("is not a plausible date: use a date between 1970 and 2099.")
    assert body["extra"]["field"] == "submitted_at"
    assert not ExceptionRequest.objects.exists()
    assert AuditLog.objects.count() == audit_rows


@pytest.mark.parametrize(
    ("granted_until", "zone"),
    [
        ("0001-01-01T00:00:00Z", "AoE"),
        ("0001-01-01 00:00", "Pacific/Kiritimati"),  # UTC+14
        ("9999-12-31 23:59", "AoE"),
        ("9999-12-31T23:59:59+14:00", "Pacific/Kiritimati"),
    ],
)
def test_a_grant_at_the_ends_of_time_is_a_400_and_the_request_stays_pending(
    granted_until, zone, pending_request, release_team_member
):
    response = client_for(release_team_member).post(
        f"/api/v1/exceptions/{pending_request.pk}/approve/",
        {"granted_until": granted_until, "granted_zone": zone},
        format="json",
    )
    assert response.status_code == 400, response.content
    assert "not a plausible date" in response.json()["message"]
    pending_request.refresh_from_db()
    assert pending_request.state == "pending"
    assert not Decision.objects.exists()


def test_the_range_edges_are_exact():
    assert tz.check_plausible(dt.datetime(1970, 1, 1, tzinfo=dt.UTC)) == tz.EARLIEST
    last = dt.datetime(2099, 12, 31, 23, 59, 59, tzinfo=dt.UTC)
    assert tz.check_plausible(last) == last
    with pytest.raises(tz.ImplausibleInstant):
        tz.check_plausible(tz.LATEST)
    with pytest.raises(tz.ImplausibleInstant):
        tz.check_plausible(tz.EARLIEST - dt.timedelta(microseconds=1))
    # An aware instant that overflows on the way to UTC is refused, not raised as OverflowError.
    with pytest.raises(tz.ImplausibleInstant):
        tz.check_plausible(dt.datetime(1, 1, 1, tzinfo=dt.timezone(dt.timedelta(hours=14))))


def test_a_milestone_at_the_ends_of_time_is_refused_by_the_service(release, kinds):
    with pytest.raises(ValidationFailed, match="not a plausible date"):
        milestone_create(
            release=release, kind=kinds["code-freeze"], title="Typo", at=dt.datetime(1, 1, 1, tzinfo=dt.UTC)
        )
    with pytest.raises(ValidationFailed, match="not a plausible date"):
        milestone_create(release=release, kind=kinds["ga"], title="Typo", on_date=dt.date(9999, 12, 31))
    assert not Milestone.objects.filter(title="Typo").exists()


def test_the_admin_form_refuses_a_year_one_wall_time(client, release, kinds, release_team_member):
    release_team_member.is_staff = True
    release_team_member.is_superuser = True
    release_team_member.save()
    client.force_login(release_team_member)
    milestone = release.milestones.get(kind__slug="code-freeze")
    response = client.post(
        f"/admin/releasecal/milestone/{milestone.pk}/change/",
        {
            "kind": milestone.kind.pk,
            "title": milestone.title,
            "at": "0001-01-01 00:00",
            "zone": "AoE",
            "release": release.pk,
        },
    )
    assert response.status_code == 200  # the form again, with the error
    assert "not a plausible date" in response.content.decode()
    milestone.refresh_from_db()
    assert milestone.at.year == 2024


@pytest.mark.parametrize("received_at", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59-12:00"])
def test_ingest_refuses_an_implausible_received_at_in_one_line(tmp_path, kep, code_freeze, received_at):
    email = tmp_path / "request.txt"
    email.write_text("KEP: #2400\nAdditional time needed (in calendar days): 2\n")
    with pytest.raises(CommandError, match=r"--received-at .* is not a plausible date"):
        call_command("ingest_exception", str(email), "--received-at", received_at, "--allow-missing")
    assert not ExceptionRequest.objects.exists()


@pytest.fixture
def year_one_request(pending_request, release_team_member):
    """A row written before the range check existed (or by SQL): stored, not filed."""
    ExceptionRequest.objects.filter(pk=pending_request.pk).update(submitted_at=dt.datetime(1, 1, 1, tzinfo=dt.UTC))
    return pending_request


def test_a_stored_year_one_instant_does_not_take_pages_down(client, year_one_request, kep, release):
    urls = [
        "/api/v1/exceptions/",
        f"/api/v1/exceptions/{year_one_request.pk}/",
        f"/api/v1/exceptions/{year_one_request.pk}/?tz=AoE",
        f"/releases/{release.slug}/exceptions/",
        f"/kep/{kep.number}/",
        f"/kep/{kep.number}/?tz=Pacific/Kiritimati",
        f"/calendar/kep/{kep.number}.ics",
    ]
    for url in urls:
        response = client.get(url)
        assert response.status_code == 200, (url, response.status_code)
    detail = client.get(f"/api/v1/exceptions/{year_one_request.pk}/").json()
    assert detail["submitted_at"] == "0001-01-01T00:00:00Z"
    assert detail["submitted_at_local"]["display"] == "00:00 UTC Monday 1 January 1"


def test_rendering_a_year_one_instant_in_a_negative_zone_falls_back_to_utc():
    year_one = dt.datetime(1, 1, 1, tzinfo=dt.UTC)
    assert tz.render(year_one, "AoE") == "00:00 UTC Monday 1 January 1"
    assert tz.render_with_aoe(year_one, "America/Los_Angeles").startswith("00:00 UTC Monday 1 January 1")
    assert tz.local_time(year_one, "AoE").timezone == "UTC"
    assert tz.deadline_day(year_one, "AoE") == dt.date(1, 1, 1)
    end = dt.datetime(9999, 12, 31, 23, 0, tzinfo=dt.UTC)
    assert tz.render(end, "Pacific/Kiritimati") == "23:00 UTC Friday 31 December 9999"
    message = Message(headline="Late", deadline_sentence=tz.render_with_aoe(year_one, "Europe/Berlin"))
    assert "00:00 UTC Monday 1 January 1" in render_email(message)[1]
    assert "00:00 UTC Monday 1 January 1" in render_slack(message)["blocks"][1]["text"]["text"]


@pytest.mark.parametrize(
    ("field", "value"), [("on_date", "9999-12-31"), ("on_date", "0001-01-01"), ("ends_on", "9999-12-31")]
)
def test_the_admin_form_refuses_a_date_at_the_ends_of_time(client, release, kinds, release_team_member, field, value):
    release_team_member.is_staff = True
    release_team_member.is_superuser = True
    release_team_member.save()
    client.force_login(release_team_member)
    milestone = release.milestones.get(kind__slug="ga")
    before = (milestone.on_date, milestone.ends_on)
    data = {"kind": milestone.kind.pk, "title": milestone.title, "on_date": milestone.on_date.isoformat()}
    response = client.post(
        f"/admin/releasecal/milestone/{milestone.pk}/change/",
        data | {field: value, "zone": "AoE", "release": release.pk},
    )
    assert response.status_code == 200  # the form again, with the error
    assert f"The {field} {value} is not a plausible date: use a date between 1970 and 2099." in (
        response.content.decode()
    )
    milestone.refresh_from_db()
    assert (milestone.on_date, milestone.ends_on) == before
