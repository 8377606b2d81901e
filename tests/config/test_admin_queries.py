"""Every admin page a release lead uses runs the same number of queries with three times
the data (issue 16, item 4): more requests, KEPs, releases, reminder rows, and more
milestones in the release whose page is open. bench/admin_bench.py times the same pages.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from exceptions.models import Decision, ExceptionRequest, SignOff
from releasecal.models import Enhancement, Milestone, Release, Tracking
from reminders.models import Channel, Delivery

UTC = dt.UTC
START = dt.datetime(2024, 7, 24, 2, 0, tzinfo=UTC)
REQUESTS = "/admin/exceptions/exceptionrequest/"

# Each page as a template: {request}, {release}, {milestone}, {kep} are the first rows.
PAGES = [
    "/admin/",
    REQUESTS,
    f"{REQUESTS}?state__exact=pending",
    f"{REQUESTS}?waiting=day",
    f"{REQUESTS}?waiting=closing",
    f"{REQUESTS}?release__id__exact={{release}}",
    f"{REQUESTS}?milestone__id__exact={{milestone}}",
    f"{REQUESTS}?sig=sig1",
    f"{REQUESTS}?q=KEP-{{kep}}",
    f"{REQUESTS}{{request}}/change/",
    f"{REQUESTS}{{request}}/approve/",
    f"{REQUESTS}add/",
    "/admin/releasecal/release/",
    "/admin/releasecal/release/{release}/change/",
    "/admin/releasecal/milestone/",
    "/admin/releasecal/milestone/{milestone}/change/",
    "/admin/releasecal/enhancement/",
    "/admin/releasecal/enhancement/{kep_pk}/change/",
    "/admin/releasecal/tracking/",
    "/admin/reminders/delivery/",
    "/admin/reminders/delivery/?state__exact=failed",
]


def _grow(round_: int, kinds, first: Release | None, *, requests: int = 9) -> Release:
    """One more release with its freezes and requests in every state (with decisions,
    sign-offs, tracking and reminder rows), and six more milestones in the first release."""
    release = Release.objects.create(
        slug=f"8.{round_}", name=f"Round {round_}", zone="America/Los_Angeles",
        start_date=dt.date(2024, 5, 1), status=Release.Status.ACTIVE,
    )  # fmt: skip
    freezes = [
        Milestone.objects.create(
            release=release, kind=kinds[slug], title=slug, at=START + dt.timedelta(days=days), zone=release.zone
        )
        for slug, days in (("enhancements-freeze", -40), ("code-freeze", 0), ("rc", 7))
    ]
    Milestone.objects.bulk_create(
        Milestone(release=first or release, kind=kinds["event"], title=f"Event {round_}.{i}",
                  at=START + dt.timedelta(days=i, hours=round_), zone="America/Los_Angeles")
        for i in range(6)
    )  # fmt: skip
    keps = Enhancement.objects.bulk_create(
        Enhancement(number=7000 + round_ * 100 + i, title=f"KEP {i}", owning_sig=f"sig{i % 3}") for i in range(requests)
    )
    states = [ExceptionRequest.State.PENDING, ExceptionRequest.State.APPROVED, ExceptionRequest.State.REJECTED]
    rows = ExceptionRequest.objects.bulk_create(
        ExceptionRequest(
            release=release,
            enhancement=kep,
            milestone=freezes[i % 2],
            requester_name="Author",
            days=2,
            submitted_at=freezes[i % 2].at + dt.timedelta(hours=1 + i),
            state=states[i % 3],
        )
        for i, kep in enumerate(keps)
    )
    Decision.objects.bulk_create(
        Decision(
            request=r,
            outcome=r.state,
            decided_at=r.submitted_at + dt.timedelta(hours=2),
            granted_until=r.milestone.at + dt.timedelta(days=3) if r.state == "approved" else None,
            granted_zone="America/Los_Angeles" if r.state == "approved" else "",
            freeze_at=r.milestone.at if r.state == "approved" else None,
        )
        for r in rows
        if r.state != ExceptionRequest.State.PENDING
    )
    author = User.objects.get_or_create(username="signer")[0]
    SignOff.objects.bulk_create(
        SignOff(request=r, author=author, author_label="signer", role="SIG sig1 lead", at=r.submitted_at)
        for r in rows[::2]
    )
    Tracking.objects.bulk_create(Tracking(enhancement=r.enhancement, release=release, stage="beta") for r in rows)
    channel = Channel.objects.get_or_create(name="team", kind="email", defaults={"config": {"to": ["t@example.com"]}})[
        0
    ]
    Delivery.objects.bulk_create(
        Delivery(
            channel=channel,
            milestone=r.milestone,
            request=r if i % 2 else None,
            offset=f"{i}h",
            recipient=f"email:{round_}.{i}@example.com",
            deadline_at=r.milestone.at,
            deadline_zone=r.milestone.zone,
            due_at=r.milestone.at - dt.timedelta(hours=i),
            last_error="refused" if i % 2 else "",
            state=[Delivery.State.FAILED, Delivery.State.MISSED, Delivery.State.SENT][i % 3],
        )
        for i, r in enumerate(rows)
    )
    return release


@pytest.fixture
def lead_client(kinds) -> Client:
    lead = User.objects.create_user("lead-q", "lead@example.com", "pw", is_staff=True)
    lead.groups.add(Group.objects.get(name="Release Team"))
    client = Client()
    client.force_login(lead)
    return client


@pytest.mark.parametrize("page", PAGES)
def test_the_page_runs_as_many_queries_with_three_times_the_data(page, lead_client, kinds):
    first = _grow(1, kinds, None)
    request = ExceptionRequest.objects.filter(state="pending").order_by("pk").first()
    milestone = first.milestones.filter(kind__slug="code-freeze").get()
    url = page.format(
        release=first.pk, milestone=milestone.pk, request=request.pk, kep=request.enhancement.number,
        kep_pk=request.enhancement.pk,
    )  # fmt: skip

    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            response = lead_client.get(url)
        assert response.status_code == 200, (url, response.status_code)
        return len(queries)

    count()  # warm: the first view of a change page caches content types
    once = count()
    _grow(2, kinds, first)
    _grow(3, kinds, first)
    assert first.milestones.count() == 3 + 3 * 6
    assert ExceptionRequest.objects.count() == 27
    assert count() == once, url


def test_the_plain_row_checkbox_is_the_markup_django_renders(kinds):
    from django.contrib import admin

    from releasecal.admin import PlainActionCheckbox

    release = Release.objects.create(
        slug="9.1", name='Quotes " & <tags>', zone="UTC", start_date=dt.date(2024, 5, 1), status="active"
    )
    row = Milestone.objects.create(release=release, kind=kinds["rc"], title='rc "1" <b>', at=START, zone="UTC")
    django_markup = admin.ModelAdmin(Milestone, admin.site).action_checkbox(row)
    assert PlainActionCheckbox().action_checkbox(row) == django_markup
    assert str(django_markup).startswith('<input type="checkbox" name="_selected_action" value=')


def test_the_request_add_page_searches_keps_instead_of_listing_them(lead_client, kinds):
    _grow(1, kinds, None)
    page = lead_client.get(f"{REQUESTS}add/").content.decode()
    assert 'class="admin-autocomplete"' in page
    assert "KEP 4</option>" not in page  # no option per KEP
    found = lead_client.get(
        "/admin/autocomplete/",
        {"app_label": "exceptions", "model_name": "exceptionrequest", "field_name": "enhancement", "term": "7104"},
    ).json()
    assert [row["id"] for row in found["results"]] == [str(Enhancement.objects.get(number=7104).pk)]
