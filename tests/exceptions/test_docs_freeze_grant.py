"""A docs-freeze grant leaves SIG Docs one business day (Monday to Friday in the release
zone, no holidays) after the days asked for the technical review (the handbook,
2025-2026): the default grant ends with that day, and a shorter grant is warned about
where it is entered (the admin's approve form, the API's answer) and on the request.

Instants written out: a docs freeze at 19:00 PDT Friday 1 November 2024 in Los Angeles,
whose weekend has the clocks going back (Sunday 3 November, PDT to PST); one at 18:00 CET
Thursday 27 March 2025 in Berlin, whose weekend has them going forward (Sunday 30 March)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exceptions.services import (
    RequestFields,
    default_granted_until,
    exception_request_approve,
    exception_request_submit,
    grant_warnings,
    next_business_day,
)
from releasecal import tz
from releasecal.models import Release
from releasecal.services import enhancement_upsert, milestone_create, tracking_set

LA, BERLIN = "America/Los_Angeles", "Europe/Berlin"


@pytest.fixture
def lead(db) -> User:
    return User.objects.create_user("docs-lead", "docs-lead@example.com", "pw")


def docs_request(kinds, lead, *, zone: str, freeze: str, days: int, kind: str = "docs-freeze"):
    release = Release.objects.create(slug="1.32", name="v1.32", zone=zone, start_date=dt.date(2024, 9, 9))
    release.team.add(lead)
    milestone = milestone_create(
        release=release, kind=kinds[kind], title=kinds[kind].name, at=tz.parse_wall_time(freeze, zone)
    )
    kep = enhancement_upsert(number=4330, title="Compatibility versions", owning_sig="architecture")
    tracking_set(release=release, enhancement=kep, stage="beta", status="tracked")
    return exception_request_submit(
        enhancement=kep, milestone=milestone, requester_name="Siyuan Zhang", requester_mark="bracket",
        fields=RequestFields(days=days, enhancement_name=kep.title, stage="beta", sig="architecture"),
        submitted_at=milestone.deadline + dt.timedelta(hours=1),
    )  # fmt: skip


def test_the_next_business_day_skips_the_weekend():
    friday = dt.date(2024, 11, 1)
    assert [next_business_day(friday + dt.timedelta(days=n)) for n in range(4)] == [
        dt.date(2024, 11, 4), dt.date(2024, 11, 4), dt.date(2024, 11, 4), dt.date(2024, 11, 5),
    ]  # fmt: skip


def test_a_review_ending_on_saturday_leaves_monday_across_the_fall_back(kinds, lead):
    request = docs_request(kinds, lead, zone=LA, freeze="2024-11-01 19:00", days=1)
    grant = default_granted_until(request)
    assert grant == dt.datetime(2024, 11, 5, 8, 0, tzinfo=dt.UTC)
    assert tz.render_deadline(grant, LA) == "end of Monday 4 November 2024 PST (08:00 UTC Tuesday 5 November 2024)"
    assert grant_warnings(request, grant) == []


def test_a_review_ending_on_saturday_leaves_monday_across_the_spring_forward(kinds, lead):
    request = docs_request(kinds, lead, zone=BERLIN, freeze="2025-03-27 18:00", days=2)
    grant = default_granted_until(request)
    assert grant == dt.datetime(2025, 3, 31, 22, 0, tzinfo=dt.UTC)
    assert tz.render_deadline(grant, BERLIN) == ("end of Monday 31 March 2025 CEST (22:00 UTC Monday 31 March 2025)")


def test_a_review_ending_on_a_weekday_leaves_the_next_day(kinds, lead):
    request = docs_request(kinds, lead, zone=BERLIN, freeze="2025-03-24 18:00", days=1)  # Monday
    assert default_granted_until(request) == dt.datetime(2025, 3, 26, 23, 0, tzinfo=dt.UTC)  # end of Wed 26 CET


def test_a_code_freeze_grant_keeps_the_days_asked_only(kinds, lead):
    request = docs_request(kinds, lead, zone=LA, freeze="2024-11-01 19:00", days=1, kind="code-freeze")
    assert default_granted_until(request) == dt.datetime(2024, 11, 3, 7, 0, tzinfo=dt.UTC)  # end of Sat 2 PDT
    assert grant_warnings(request, dt.datetime(2024, 11, 3, 7, 0, tzinfo=dt.UTC)) == []


SHORT_GRANT_WARNING = (
    "This grant (end of Sunday 3 November 2024 PST) leaves SIG Docs no business day after the 1 day asked for "
    "the technical review: the handbook asks for one (Monday to Friday in America/Los_Angeles, no holidays), "
    "end of Monday 4 November 2024 PST (08:00 UTC Tuesday 5 November 2024) or later."
)


def test_a_grant_short_of_the_business_day_is_approved_with_a_warning_in_the_api(kinds, lead):
    request = docs_request(kinds, lead, zone=LA, freeze="2024-11-01 19:00", days=1)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=lead).key}")
    response = client.post(
        f"/api/v1/exceptions/{request.pk}/approve/", {"granted_until": "2024-11-04 00:00"}, format="json"
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["decision"]["granted_until"] == "2024-11-04T08:00:00Z"
    assert body["warnings"] == [SHORT_GRANT_WARNING]
    assert client.get(f"/api/v1/exceptions/{request.pk}/").json()["warnings"] == [SHORT_GRANT_WARNING]


def test_the_admin_approve_form_offers_the_business_day_and_warns_of_a_shorter_grant(kinds, lead):
    lead.is_staff = True
    lead.save()
    lead.groups.add(Group.objects.get(name="Release Team"))
    request = docs_request(kinds, lead, zone=LA, freeze="2024-11-01 19:00", days=1)
    client = Client()
    client.force_login(lead)
    url = f"/admin/exceptions/exceptionrequest/{request.pk}/approve/"
    page = client.get(url)
    assert page.context["items"][0]["default_help"] == (
        "The freeze day (Friday 1 November 2024) plus 1 day for the technical review, then one business day for "
        "SIG Docs (Monday 4 November 2024), to the end of that day in America/Los_Angeles. A grant that ends "
        "earlier is warned about. Pre-filled below."
    )
    assert page.context["items"][0]["form"]["granted_day"].value() == "2024-11-04"
    done = client.post(url, {"granted_day": "2024-11-03", "granted_time": "", "note": ""}, follow=True)
    assert [str(m) for m in done.context["messages"]] == [
        f"Approved {request}: granted until end of Sunday 3 November 2024 PST (08:00 UTC Monday 4 November 2024).",
        SHORT_GRANT_WARNING,
    ]


def test_the_default_grant_approves_without_a_warning(kinds, lead):
    request = docs_request(kinds, lead, zone=LA, freeze="2024-11-01 19:00", days=1)
    decision = exception_request_approve(request=request, actor=lead)
    assert decision.granted_until == dt.datetime(2024, 11, 5, 8, 0, tzinfo=dt.UTC)
    assert grant_warnings(request, decision.granted_until) == []
