"""Effective deadline = the later of the freeze and the grant, end to end.

A freeze moved past an approved grant: the selector, the API (``effective_warning``), the
admin (a warning on save and on the request's page), the KEP's feed ("superseded by
the freeze", at the freeze's time) and the release team's Slack channel all say so. The
same when rc.0 (the hard stop) moves before a grant."""

from __future__ import annotations

import datetime as dt

import icalendar
import pytest
from django.test import Client

from exceptions.selectors import grant_conflicts, kep_effective_deadline
from exceptions.services import exception_request_approve
from releasecal import tz
from releasecal.services import milestone_save

LA = "America/Los_Angeles"


@pytest.fixture
def granted(pending_request, release_team_member):
    exception_request_approve(
        request=pending_request, actor=release_team_member,
        granted_until=tz.parse_wall_time("2024-07-26 19:00", LA), granted_zone=LA,
    )  # fmt: skip
    return pending_request


def _move(milestone, wall: str, capture) -> None:
    milestone.at = tz.parse_wall_time(wall, LA)
    with capture(execute=True):
        milestone_save(milestone=milestone)


def _feed_event(request):
    body = Client().get(f"/calendar/kep/{request.enhancement.number}.ics").content
    calendar = icalendar.Calendar.from_ical(body)
    return next(e for e in calendar.walk("VEVENT") if str(e["UID"]).startswith(f"releasecal-extension-{request.pk}@"))


def test_a_freeze_moved_past_the_grant_supersedes_it_everywhere(
    granted, code_freeze, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    before = _feed_event(granted)
    assert before.decoded("DTSTART") == tz.parse_wall_time("2024-07-26 19:00", LA)
    assert "extended for KEP-2400" in str(before["SUMMARY"])

    _move(code_freeze, "2024-07-28 19:00", django_capture_on_commit_callbacks)
    freeze = tz.parse_wall_time("2024-07-28 19:00", LA)

    deadline = kep_effective_deadline(enhancement=granted.enhancement, milestone=code_freeze)
    assert deadline.superseded
    assert not deadline.is_extension
    assert deadline.instant == freeze
    assert "superseded by the freeze" in deadline.warning

    row = Client().get(f"/api/v1/exceptions/{granted.pk}/").json()
    assert row["effective_deadline"] == "2024-07-29T02:00:00Z"
    assert "superseded by the freeze" in row["effective_warning"]

    event = _feed_event(granted)
    assert "superseded by the freeze" in str(event["SUMMARY"])
    assert event.decoded("DTSTART") == freeze  # never earlier than the freeze
    assert int(event["SEQUENCE"]) > int(before["SEQUENCE"])
    assert "Superseded by the freeze" in str(event["DESCRIPTION"])

    posts = fake_slack.matching(lambda call: call.method == "chat.postMessage")
    assert len(posts) == 1
    assert posts[0].data["channel"] == "C0RELEASE"
    assert "KEP-2400" in posts[0].text
    assert "superseded by the freeze" in posts[0].text

    # Another edit that causes no new conflict is not announced again.
    code_freeze.title = "Code Freeze (moved)"
    with django_capture_on_commit_callbacks(execute=True):
        milestone_save(milestone=code_freeze)
    assert len(fake_slack.matching(lambda call: call.method == "chat.postMessage")) == 1


def test_rc0_moved_before_the_grant_is_flagged(
    granted, release, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    rc = release.milestones.get(kind__slug="rc")
    _move(rc, "2024-07-26 10:00", django_capture_on_commit_callbacks)
    deadline = kep_effective_deadline(enhancement=granted.enhancement, milestone=granted.milestone)
    assert deadline.is_extension
    assert deadline.hard_stop == tz.parse_wall_time("2024-07-26 10:00", LA)
    assert "hard stop" in deadline.warning
    row = Client().get(f"/api/v1/exceptions/{granted.pk}/").json()
    assert "hard stop" in row["effective_warning"]
    assert row["effective_deadline"] == "2024-07-27T02:00:00Z"  # the grant still stands
    posts = fake_slack.matching(lambda call: call.method == "chat.postMessage")
    assert len(posts) == 1
    assert "past the hard stop" in posts[0].text
    assert "hard stop" in str(_feed_event(granted)["DESCRIPTION"])


def test_the_admin_warns_on_save_and_on_the_request_page(client, granted, code_freeze, release, release_team_member):
    release_team_member.is_staff = True
    release_team_member.is_superuser = True
    release_team_member.save()
    client.force_login(release_team_member)
    response = client.post(
        f"/admin/releasecal/milestone/{code_freeze.pk}/change/",
        {
            "kind": code_freeze.kind.pk,
            "title": code_freeze.title,
            "at": "2024-07-28 19:00",
            "ends_at": "2024-08-07 19:00",
            "zone": LA,
            "release": release.pk,
        },
        follow=True,
    )
    assert response.status_code == 200
    shown = [str(message) for message in response.context["messages"]]
    assert any("KEP-2400" in text and "superseded by the freeze" in text for text in shown), shown
    page = client.get(f"/admin/exceptions/exceptionrequest/{granted.pk}/change/").content.decode()
    assert 'id="effective-warning"' in page
    assert "superseded by the freeze" in page


def test_no_warning_while_the_grant_is_later(granted, code_freeze):
    assert grant_conflicts(milestone=code_freeze) == []
    deadline = kep_effective_deadline(enhancement=granted.enhancement, milestone=code_freeze)
    assert deadline.is_extension
    assert deadline.warning == ""
    assert Client().get(f"/api/v1/exceptions/{granted.pk}/").json()["effective_warning"] is None
    assert deadline.instant - code_freeze.deadline == dt.timedelta(days=3)
