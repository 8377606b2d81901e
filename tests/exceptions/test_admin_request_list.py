"""The exception request list in the admin (issue 16, item 3): waited-for time, window
close, sign-offs and effective deadline per row, the two "needs attention" filters, and a
query count that does not grow with the rows."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from exceptions.models import ExceptionRequest
from exceptions.services import RequestFields, exception_request_approve, exception_request_submit
from releasecal.services import enhancement_upsert, tracking_set

LIST = "/admin/exceptions/exceptionrequest/"


@pytest.fixture
def su_client(db) -> Client:
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    return client


def _file(release, milestone, number: int, *, after: dt.timedelta) -> ExceptionRequest:
    kep = enhancement_upsert(number=number, title=f"KEP {number}", owning_sig="node")
    tracking_set(release=release, enhancement=kep, stage="beta")
    return exception_request_submit(
        enhancement=kep, milestone=milestone, requester_name=f"Author {number}",
        fields=RequestFields(days=2, stage="beta", sig="node"), submitted_at=milestone.deadline + after,
    )  # fmt: skip


def test_the_list_shows_window_signoffs_waited_and_effective_deadline(
    su_client, release, code_freeze, release_team_member
):
    waiting = _file(release, code_freeze, 7001, after=dt.timedelta(hours=1))
    approved = _file(release, code_freeze, 7002, after=dt.timedelta(hours=2))
    exception_request_approve(request=approved, actor=release_team_member)
    body = su_client.get(LIST).content.decode()
    # The code freeze was 19:00 PDT Tuesday 23 July 2024; requests until 3 days later.
    assert "19:00 PDT Friday 26 July 2024" in body
    assert "end of Thursday 25 July 2024 PDT (07:00 UTC Friday 26 July 2024) (extension)" in body
    assert waiting.state == "pending"
    assert " days " in body  # waited since July 2024


def test_the_list_runs_a_fixed_number_of_queries(su_client, release, code_freeze, release_team_member):
    def count() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert su_client.get(LIST).status_code == 200
        return len(queries)

    exception_request_approve(
        request=_file(release, code_freeze, 7100, after=dt.timedelta(hours=1)), actor=release_team_member
    )
    few = count()
    for number in range(7101, 7125):
        request = _file(release, code_freeze, number, after=dt.timedelta(hours=1))
        if number % 2:
            exception_request_approve(request=request, actor=release_team_member)
    assert count() == few


def test_the_filters_find_long_waits_and_closing_windows(su_client, release, code_freeze, monkeypatch):
    from releasecal import tz

    old = _file(release, code_freeze, 7201, after=dt.timedelta(hours=1))
    # Pretend it is one hour before the code freeze's request window closes.
    closing_time = code_freeze.deadline + dt.timedelta(days=3) - dt.timedelta(hours=1)
    monkeypatch.setattr(tz, "utc_now", lambda: closing_time)
    fresh = _file(release, code_freeze, 7202, after=dt.timedelta(days=3) - dt.timedelta(hours=2))
    long_waits = su_client.get(LIST, {"waiting": "day"}).context["cl"].result_list
    assert [r.pk for r in long_waits] == [old.pk]
    closing = su_client.get(LIST, {"waiting": "closing"}).context["cl"].result_list
    assert {r.pk for r in closing} == {old.pk, fresh.pk}
    monkeypatch.setattr(tz, "utc_now", lambda: closing_time + dt.timedelta(days=2))
    assert not su_client.get(LIST, {"waiting": "closing"}).context["cl"].result_list
