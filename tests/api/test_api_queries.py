"""List endpoints cost the same number of queries for 5 rows as for 500."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from exceptions.models import Decision, ExceptionRequest, ExceptionRequestRevision, SignOff
from releasecal.models import Enhancement, EnhancementOwner, Milestone, Release, Tracking


def make_rows(release: Release, milestone: Milestone, user, start: int, count: int) -> None:
    """``count`` KEPs, each tracked with an owner and a request; every other one approved."""
    keps = Enhancement.objects.bulk_create(
        Enhancement(number=start + i, title=f"KEP {start + i}", owning_sig="node", participating_sigs=["node"])
        for i in range(count)
    )
    EnhancementOwner.objects.bulk_create(EnhancementOwner(enhancement=k, github=f"gh{k.number}") for k in keps)
    Tracking.objects.bulk_create(Tracking(release=release, enhancement=k, stage="beta") for k in keps)
    at = milestone.deadline + dt.timedelta(hours=1)
    requests = ExceptionRequest.objects.bulk_create(
        ExceptionRequest(
            release=release,
            enhancement=k,
            milestone=milestone,
            requester=user,
            days=2,
            submitted_at=at,
            state="approved" if i % 2 else "pending",
        )
        for i, k in enumerate(keps)
    )
    ExceptionRequestRevision.objects.bulk_create(
        ExceptionRequestRevision(request=r, number=n, created_at=at, days=2, created_by=user)
        for r in requests
        for n in (1, 2)
    )
    SignOff.objects.bulk_create(SignOff(request=r, author_label="sig lead", at=at) for r in requests)
    Decision.objects.bulk_create(
        Decision(
            request=r,
            outcome="approved",
            decided_by=user,
            decided_at=at,
            granted_until=at + dt.timedelta(days=2),
            granted_zone="America/Los_Angeles",
            freeze_at=milestone.deadline,
        )
        for r in requests
        if r.state == "approved"
    )
    for i in range(count):
        Milestone.objects.create(
            release=release, kind=milestone.kind, title=f"Extra {start + i}", at=at, zone="Europe/Berlin"
        )


def count_queries(url: str, params: dict) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as queries:
        response = APIClient().get(url, params)
    assert response.status_code == 200, response.content
    body = response.json()
    rows = body["count"] if "count" in body else len(body.get("milestones", body.get("deadlines", [])))
    return len(queries), rows


@pytest.mark.parametrize(
    ("url", "params"),
    [
        ("/api/v1/exceptions/", {"limit": 1000, "tz": "Europe/Berlin"}),
        ("/api/v1/exceptions/", {"limit": 1000, "state": "approved", "sig": "node", "ordering": "-days"}),
        ("/api/v1/enhancements/", {"limit": 1000, "release": "1.31", "sig": "node"}),
        ("/api/v1/milestones/", {"limit": 1000, "release": "1.31", "tz": "Asia/Tokyo"}),
        ("/api/v1/releases/1.31/milestones/", {"limit": 1000}),
        ("/api/v1/releases/1.31/", {}),
        ("/api/v1/releases/", {"limit": 1000}),
        ("/api/v1/deadlines/next/", {"sig": "node", "release": "1.31", "limit": 100}),
    ],
)
def test_list_query_count_does_not_grow_with_rows(url, params, release, code_freeze, requester, monkeypatch):
    make_rows(release, code_freeze, requester, start=10_000, count=5)
    few, few_rows = count_queries(url, params)
    make_rows(release, code_freeze, requester, start=20_000, count=495)
    many, many_rows = count_queries(url, params)
    assert many_rows > few_rows or url.endswith(("/releases/", "/deadlines/next/"))
    assert many == few, f"{few} queries for {few_rows} rows, {many} for {many_rows}"


def test_the_exception_list_reads_each_table_once(release, code_freeze, requester):
    """The 300-row page of issue 27: the rows, then one query for each thing they share
    (the release, the milestone with its kind, the requester) or hold (the newest
    revision, the sign-offs), and the hard stops; none per row."""
    make_rows(release, code_freeze, requester, start=10_000, count=40)
    with CaptureQueriesContext(connection) as queries:
        response = APIClient().get("/api/v1/exceptions/", {"limit": 300})
    assert response.status_code == 200
    assert response.json()["count"] == 40
    tables = [q["sql"].split(" FROM ")[1].split()[0].strip('"') for q in queries]
    assert tables == [
        "exceptions_exceptionrequest",  # the count
        "exceptions_exceptionrequest",  # the page, with its KEPs and decisions
        "releasecal_release",
        "releasecal_milestone",
        "auth_user",
        "exceptions_exceptionrequestrevision",
        "exceptions_signoff",
        "releasecal_release",  # the hard stops: set by hand, or the first rc
        "releasecal_milestone",
    ]


def test_without_tz_the_viewer_fields_are_not_built(pending_request):
    from exceptions.api import ExceptionOutputSerializer

    class SchemaView:
        swagger_fake_view = True

    def names(context):
        return set(ExceptionOutputSerializer(context=context).fields)

    assert "submitted_at_viewer" not in names({"viewer_zone": None})
    assert "submitted_at_local" in names({"viewer_zone": None})
    assert "submitted_at_viewer" in names({"viewer_zone": "Europe/Berlin"})
    assert "submitted_at_viewer" in names({})  # no request: everything declared
    assert "submitted_at_viewer" in names({"viewer_zone": None, "view": SchemaView()})  # the schema
    rows = APIClient().get("/api/v1/exceptions/").json()["results"]
    berlin = APIClient().get("/api/v1/exceptions/", {"tz": "Europe/Berlin"}).json()["results"]
    assert rows
    assert not [key for key in rows[0] if key.endswith("_viewer")]
    assert berlin[0]["submitted_at_viewer"]["timezone"] == "Europe/Berlin"


def test_next_deadlines_cost_the_same_for_one_release_or_many(release, kinds, kep):
    """deadlines/next/ reads every release's milestones in one query, and the KEPs out of
    a milestone once (issue 27): the count does not grow with the releases."""
    from releasecal import tz as zones
    from releasecal.services import milestone_create

    def add_release(n: int) -> None:
        other = Release.objects.create(
            slug=f"9.{n}", name=f"v9.{n}", zone="UTC", start_date=dt.date(2030, 1, 1), status=Release.Status.ACTIVE
        )
        at = zones.utc_now() + dt.timedelta(days=n)
        milestone_create(release=other, kind=kinds["code-freeze"], title="Code Freeze", at=at)
        Tracking.objects.create(release=other, enhancement=kep, stage="beta")

    add_release(1)
    counts = {}
    for params in ({}, {"kep": kep.number}):
        counts[("one", str(params))] = count_queries("/api/v1/deadlines/next/", params)[0]
    for n in range(2, 6):
        add_release(n)
    for params in ({}, {"kep": kep.number}):
        many, rows = count_queries("/api/v1/deadlines/next/", params)
        assert rows >= 5
        assert many == counts[("one", str(params))], params


def test_next_deadlines_of_a_kep_take_the_hard_stops_from_the_milestones_read(release, kinds, kep):
    """deadlines/next/?kep= reads the KEP's tracking rows (the KEP itself, its open
    releases and whether it is out of their milestone, in one query), the milestones and
    the grants:
    the hard stops come from the milestones already read (the first rc that is not
    cancelled, or the release's own), not from two more queries."""
    from exceptions.selectors import hard_stops, hard_stops_among
    from releasecal import selectors as schedule
    from releasecal.services import milestone_create

    Tracking.objects.get_or_create(release=release, enhancement=kep, defaults={"stage": "beta"})
    soon = hard_stops([release.pk])[release.pk] - dt.timedelta(days=20)  # before the fixture's rc
    early = milestone_create(release=release, kind=kinds["rc"], title="rc.0 (moved)", at=soon)
    milestone_create(release=release, kind=kinds["rc"], title="rc.0", at=soon + dt.timedelta(days=2))
    milestone_create(release=release, kind=kinds["rc"], title="rc.1", at=soon + dt.timedelta(days=9))
    Milestone.objects.filter(pk=early.pk).update(cancelled=True)
    read = list(schedule.milestone_list().filter(release=release, cancelled=False))
    assert hard_stops_among(read) == hard_stops([release.pk])
    assert hard_stops_among(read)[release.pk] == soon + dt.timedelta(days=2)
    Release.objects.filter(pk=release.pk).update(hard_stop=soon + dt.timedelta(days=5))
    read = list(schedule.milestone_list().filter(release=release, cancelled=False))
    assert hard_stops_among(read) == hard_stops([release.pk]) == {release.pk: soon + dt.timedelta(days=5)}
    assert count_queries("/api/v1/deadlines/next/", {"kep": kep.number})[0] == 3


def test_next_deadlines_of_a_kep_without_open_tracking_read_the_kep_itself(release, kinds, kep):
    """A KEP no open release tracks has no tracking row to carry it: it is read on its
    own (an empty answer, not a 404), and an unknown KEP is still a 404."""
    Tracking.objects.filter(enhancement=kep).delete()
    response = APIClient().get("/api/v1/deadlines/next/", {"kep": kep.number})
    assert response.status_code == 200
    assert (response.json()["deadlines"], response.json()["out_of_milestone"]) == ([], [])
    assert APIClient().get("/api/v1/deadlines/next/", {"kep": 999_999}).status_code == 404
