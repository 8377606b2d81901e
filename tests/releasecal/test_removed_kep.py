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

import icalendar
import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.test import Client
from rest_framework.test import APIClient

from exceptions.models import ExceptionRequest
from exceptions.services import (
    RequestFields,
    exception_request_approve,
    exception_request_reject,
    exception_request_submit,
)
from feeds.services import feed_token_create
from releasecal import tz
from releasecal.errors import PolicyViolation
from releasecal.models import EnhancementOwner, Tracking
from releasecal.services import enhancement_upsert, tracking_set
from slack_integration.home import kep_blocks
from tests.slack_integration.test_slack_commands import all_text, relcal
from tests.support.slack import SIGNING_SECRET

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


# ------------------------------------------------------------ every face


@pytest.fixture
def slack(settings):
    settings.SLACK_SIGNING_SECRET = SIGNING_SECRET


def test_slack_kep_says_removed_and_lists_no_deadline_as_its_own(client, slack, removed):
    body = relcal(client, "kep 1880")
    assert [block.get("text", {}).get("text") or block["elements"][0]["text"] for block in body["blocks"]] == [
        "KEP-1880: Multiple Service CIDRs",
        "SIG network\n1.31: beta, removed from milestone",
        REMOVED_TEXT,
        f"*Exception requests*\n#{removed.pk} Enhancements Freeze (1.31), 10 days: *rejected*",
    ]
    text = all_text(body)
    assert "Next deadlines" not in text
    assert "Code Freeze" not in text


def test_slack_kep_still_lists_the_deadlines_of_a_tracked_kep(client, slack, now, kep):
    text = all_text(relcal(client, "kep 2400"))
    assert "*Next deadlines*\n*Code Freeze* (1.31): 19:00 PDT Tuesday 23 July 2024" in text
    assert "no 1.31 deadline is its own" not in text


def test_the_api_gives_a_removed_kep_no_deadline_and_says_why(removed, enhancements_freeze):
    body = APIClient().get("/api/v1/deadlines/next/?kep=1880").json()
    assert (body["next"], body["deadlines"]) == (None, [])
    assert body["out_of_milestone"] == [
        {
            "kep": 1880,
            "release": "1.31",
            "status": "removed_from_milestone",
            "missed_freeze": "Enhancements Freeze",
            "message": REMOVED_TEXT,
        }
    ]
    kep = APIClient().get("/api/v1/enhancements/1880/").json()
    assert kep["tracking"] == [
        {
            "release": "1.31",
            "stage": "beta",
            "status": "removed_from_milestone",
            "pr_urls": [],
            "missed_freeze": "Enhancements Freeze",
        }
    ]


def test_the_api_deadlines_of_a_sig_leave_its_removed_kep_out(removed, release):
    other = enhancement_upsert(number=3866, title="nftables kube-proxy", owning_sig="network")
    tracking_set(release=release, enhancement=other, stage="beta", status="tracked")
    body = APIClient().get("/api/v1/deadlines/next/?sig=network&release=1.31").json()
    assert [(row["title"], row["keps"]) for row in body["deadlines"]] == [
        ("Code Freeze", [3866]),
        ("1.31.0-rc.0 released", [3866]),
        ("v1.31 released", [3866]),
    ]
    assert [row["kep"] for row in body["out_of_milestone"]] == [1880]


def test_the_kep_page_says_removed_and_shows_no_deadline_row(removed):
    html = Client().get("/kep/1880/?tz=UTC").content.decode()
    assert f'<p class="notice out-of-milestone" data-release="1.31">{REMOVED_TEXT}</p>' in html
    assert "Deadline for this KEP" not in html
    assert 'class="status status-removed_from_milestone">Removed from milestone</span>' in html


def _events(body: bytes) -> list[tuple[str, str]]:
    calendar = icalendar.Calendar.from_ical(body)
    return [(str(e["SUMMARY"]), str(e.get("STATUS", ""))) for e in calendar.walk("VEVENT")]


def test_the_kep_feed_has_no_milestone_of_the_release_it_was_removed_from(removed):
    body = Client().get("/calendar/kep/1880.ics").content
    assert _events(body) == [(REJECTED_EVENT, "CANCELLED")]
    description = str(icalendar.Calendar.from_ical(body)["X-WR-CALDESC"])
    assert description == f"Milestones and effective deadlines of KEP-1880: Multiple Service CIDRs. {REMOVED_TEXT}"


def test_a_grant_of_a_kep_removed_afterwards_leaves_the_feeds(now, kep_1880, code_freeze, release_team_member):
    request = exception_request_submit(
        enhancement=kep_1880, milestone=code_freeze, requester_name="Antonio", fields=RequestFields(days=2),
    )  # fmt: skip
    exception_request_approve(request=request, actor=release_team_member)
    granted = "[1.31] Code Freeze extended for KEP-1880 (end of Thursday 25 July 2024 PDT)"
    assert (granted, "CONFIRMED") in _events(Client().get("/calendar/kep/1880.ics").content)
    assert (granted, "CONFIRMED") in _events(Client().get("/calendar/1.31/sig/network.ics").content)
    # Later its SIG pulls it out of 1.31: the grant is no deadline of its own any more.
    tracking_set(release=code_freeze.release, enhancement=kep_1880, stage="beta", status="deferred")
    assert _events(Client().get("/calendar/kep/1880.ics").content) == []
    assert granted not in [s for s, _ in _events(Client().get("/calendar/1.31/sig/network.ics").content)]


def test_the_personal_feed_of_a_removed_keps_owner_has_none_of_that_release(removed, kep):
    owner = User.objects.create_user("aojea")
    EnhancementOwner.objects.create(enhancement=removed.enhancement, github="aojea", user=owner)
    token = feed_token_create(user=owner).token
    summaries = [s for s, _ in _events(Client().get(f"/calendar/u/{token}.ics").content)]
    assert summaries == [REJECTED_EVENT]
    # An owner of a KEP still tracked in 1.31 has 1.31's deadlines.
    EnhancementOwner.objects.create(enhancement=kep, github="aojea", user=owner)
    summaries = [s for s, _ in _events(Client().get(f"/calendar/u/{token}.ics").content)]
    assert "[1.31] Code Freeze" in summaries


def test_the_slack_home_tab_says_removed_instead_of_deadlines(removed):
    owner = User.objects.create_user("aojea")
    EnhancementOwner.objects.create(enhancement=removed.enhancement, github="aojea", user=owner)
    blocks = kep_blocks(owner, None, NOW)
    assert [b["text"]["text"] for b in blocks if b["type"] == "section"] == [
        f"*KEP-1880: Multiple Service CIDRs (SIG network)*\n_{REMOVED_TEXT}_"
    ]


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
