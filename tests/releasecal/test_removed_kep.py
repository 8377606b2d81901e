"""A KEP removed from the milestone (issue 24, item 6): every face says so and shows none
of that release's deadlines as its own; the policy lets it ask an exception only for the
freeze it missed (the Enhancements Lead handbook and sig-release's EXCEPTIONS.md).

The clock is Monday 1 July 2024 12:00 UTC in the 1.31 of tests/conftest.py: the
enhancements freeze (19:00 PDT Thursday 13 June) has passed, code freeze (19:00 PDT
Tuesday 23 July), rc.0 (30 July) and GA (13 August) are ahead. KEP-1880 asked an
enhancements freeze exception and was rejected: removed, it missed Enhancements Freeze.
"""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import IntegrityError, transaction

from exceptions.models import ExceptionRequest
from exceptions.services import (
    RequestFields,
    exception_request_reject,
    exception_request_submit,
)
from releasecal import tz
from releasecal.errors import PolicyViolation
from releasecal.models import Tracking
from releasecal.services import enhancement_upsert, tracking_set

UTC = dt.UTC
NOW = dt.datetime(2024, 7, 1, 12, 0, tzinfo=UTC)
REMOVED_TEXT = (
    "KEP-1880 was removed from the 1.31 milestone (it missed Enhancements Freeze): no 1.31 deadline is its own."
)

REJECTED_EVENT = "[1.31] Enhancements Freeze extension for KEP-1880 (rejected) (end of Sunday 23 June 2024 PDT)"


@pytest.fixture
def now(monkeypatch):
    monkeypatch.setattr(tz, "utc_now", lambda: NOW)
    return NOW


@pytest.fixture
def kep_1880(release):
    kep = enhancement_upsert(number=1880, title="Multiple Service CIDRs", owning_sig="network")
    tracking_set(release=release, enhancement=kep, stage="beta", status="tracked")
    return kep


@pytest.fixture
def removed(now, kep_1880, enhancements_freeze, requester, release_team_member) -> ExceptionRequest:
    """KEP-1880's enhancements freeze request, rejected: the KEP is removed from 1.31."""
    request = exception_request_submit(
        enhancement=kep_1880,
        milestone=enhancements_freeze,
        requester=requester,
        fields=RequestFields(days=10),
        submitted_at=dt.datetime(2024, 6, 14, 10, 0, tzinfo=UTC),
    )
    exception_request_reject(request=request, actor=release_team_member, note="weeks, not days")
    return request


def test_a_rejection_removes_the_kep_at_the_freeze_its_request_was_for(removed, enhancements_freeze):
    tracking = Tracking.objects.get(enhancement=removed.enhancement)
    assert (tracking.status, tracking.missed_freeze) == ("removed_from_milestone", enhancements_freeze)
    assert tracking.out_of_milestone_text() == REMOVED_TEXT


# ------------------------------------------------------------ the policy


def test_a_removed_kep_may_not_ask_a_later_freeze_without_the_one_it_missed(removed, code_freeze):
    with pytest.raises(PolicyViolation) as err:
        exception_request_submit(
            enhancement=removed.enhancement, milestone=code_freeze, requester_name="Antonio",
            fields=RequestFields(days=2),
        )  # fmt: skip
    assert err.value.message == (
        "KEP-1880 was removed from the 1.31 milestone at Enhancements Freeze: it may ask an exception for "
        "Enhancements Freeze, the freeze it missed, not for Code Freeze. Without that exception it is not in 1.31."
    )
    assert ExceptionRequest.objects.filter(milestone=code_freeze).count() == 0


@pytest.fixture
def in_the_window(monkeypatch):
    """Saturday 15 June 2024: the enhancements freeze closed on Friday 02:00 UTC, its
    request window is open until Monday 17 June 02:00 UTC."""
    at = dt.datetime(2024, 6, 15, 12, 0, tzinfo=UTC)
    monkeypatch.setattr(tz, "utc_now", lambda: at)
    return at


def test_a_kep_removed_at_the_freeze_party_may_ask_that_freezes_exception(
    in_the_window, kep_1880, release, enhancements_freeze, code_freeze
):
    tracking_set(release=release, enhancement=kep_1880, stage="beta", status="removed_from_milestone")
    assert Tracking.objects.get(enhancement=kep_1880).missed_freeze == enhancements_freeze
    with pytest.raises(PolicyViolation, match="not for Code Freeze"):
        exception_request_submit(
            enhancement=kep_1880, milestone=code_freeze, requester_name="Antonio", fields=RequestFields(days=2)
        )
    request = exception_request_submit(
        enhancement=kep_1880, milestone=enhancements_freeze, requester_name="Antonio", fields=RequestFields(days=2)
    )
    tracking = Tracking.objects.get(enhancement=kep_1880)
    assert (request.tracking_status_before, tracking.status, tracking.missed_freeze) == (
        "removed_from_milestone", "exception_pending", None,
    )  # fmt: skip


def test_a_kep_removed_before_any_freeze_closed_missed_the_first(monkeypatch, kep_1880, release, enhancements_freeze):
    monkeypatch.setattr(tz, "utc_now", lambda: dt.datetime(2024, 5, 20, tzinfo=UTC))
    tracking_set(release=release, enhancement=kep_1880, stage="beta", status="removed_from_milestone")
    assert Tracking.objects.get(enhancement=kep_1880).missed_freeze == enhancements_freeze


def test_the_missed_freeze_goes_when_the_kep_is_back_and_the_database_holds_it(removed, release):
    tracking = tracking_set(release=release, enhancement=removed.enhancement, stage="beta", status="tracked")
    tracking.refresh_from_db()
    assert tracking.missed_freeze is None
    with pytest.raises(IntegrityError), transaction.atomic():
        Tracking.objects.filter(pk=tracking.pk).update(missed_freeze=removed.milestone)


# ------------------------------------------------------------ migration releasecal 0012


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_each_removed_kep_the_latest_freeze_closed_when_it_was_last_written():
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    before, after = [("releasecal", "0011_owner_github_any_case")], [("releasecal", "0012_tracking_missed_freeze")]
    executor = MigrationExecutor(connection)
    try:
        executor.migrate(before)
        apps = executor.loader.project_state(before).apps
        Release, Kind, Milestone, Enhancement, Tracking_ = (
            apps.get_model("releasecal", name)
            for name in ("Release", "MilestoneKind", "Milestone", "Enhancement", "Tracking")
        )
        release = Release.objects.create(slug="1.31", name="1.31", zone="AoE", start_date=dt.date(2024, 5, 1))
        freeze, _ = Kind.objects.get_or_create(
            slug="enhancements-freeze", defaults={"name": "Enhancements Freeze", "allows_exceptions": True}
        )
        code, _ = Kind.objects.get_or_create(
            slug="code-freeze", defaults={"name": "Code Freeze", "allows_exceptions": True}
        )
        ef = Milestone.objects.create(
            release=release, kind=freeze, title="EF", zone="AoE", on_date=dt.date(2024, 6, 13)
        )
        cf = Milestone.objects.create(
            release=release, kind=code, title="CF", zone="AoE", at=dt.datetime(2024, 7, 24, 12, tzinfo=UTC)
        )
        rows = {}
        for number, status, written in (
            (1, "removed_from_milestone", dt.datetime(2024, 7, 30, tzinfo=UTC)),  # after both closed: CF
            (2, "removed_from_milestone", dt.datetime(2024, 6, 1, tzinfo=UTC)),  # before any freeze: the first
            (3, "tracked", dt.datetime(2024, 8, 1, tzinfo=UTC)),
        ):
            kep = Enhancement.objects.create(number=number, title=f"KEP {number}", owning_sig="node")
            rows[number] = Tracking_.objects.create(release=release, enhancement=kep, stage="beta", status=status).pk
            Tracking_.objects.filter(pk=rows[number]).update(updated_at=written)
        executor = MigrationExecutor(connection)
        executor.migrate(after)
        apps = executor.loader.project_state(after).apps
        missed = dict(apps.get_model("releasecal", "Tracking").objects.values_list("pk", "missed_freeze_id"))
        assert [missed[rows[n]] for n in (1, 2, 3)] == [cf.pk, ef.pk, None]
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
