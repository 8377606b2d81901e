"""A request naming two freezes (the handbook, 2025-2026): the PRR freeze and the same
release's enhancements freeze, one completion date. The database keeps one live request
per KEP per freeze for both (``ExceptionRequestFreeze``); every face shows both freezes.

The release (tests/conftest.py): enhancements freeze 19:00 PDT Thursday 13 June 2024;
here a PRR freeze is added a week before, 19:00 PDT Thursday 6 June 2024."""

from __future__ import annotations

import datetime as dt

import icalendar
import pytest
from django.db import IntegrityError, connection, transaction
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exceptions.models import ExceptionRequestFreeze
from exceptions.selectors import kep_effective_deadline
from exceptions.services import (
    RequestFields,
    exception_request_approve,
    exception_request_submit,
    exception_request_withdraw,
)
from github.mapping import TYPE, wanted_values
from releasecal import tz
from releasecal.errors import PolicyViolation
from releasecal.services import milestone_create

PRR_FREEZE = dt.datetime(2024, 6, 7, 2, 0, tzinfo=dt.UTC)  # 19:00 PDT Thu 6 June


@pytest.fixture
def prr_freeze(release, kinds):
    return milestone_create(
        release=release, kind=kinds["prr-freeze"], title="PRR Freeze",
        at=tz.parse_wall_time("2024-06-06 19:00", "America/Los_Angeles"),
    )  # fmt: skip


def submit(kep, milestone, requester, *, also=None, days=10, at=PRR_FREEZE + dt.timedelta(hours=1)):
    return exception_request_submit(
        enhancement=kep, milestone=milestone, requester=requester, also_milestone=also, submitted_at=at,
        fields=RequestFields(days=days, enhancement_name=kep.title, stage="beta", sig="node"),
    )  # fmt: skip


def freeze_rows(request) -> list[tuple[str, bool]]:
    return sorted(ExceptionRequestFreeze.objects.filter(request=request).values_list("milestone__title", "live"))


def test_a_request_names_both_freezes_in_either_order(kep, prr_freeze, enhancements_freeze, requester):
    request = submit(kep, enhancements_freeze, requester, also=prr_freeze)
    assert (request.milestone, request.also_milestone) == (prr_freeze, enhancements_freeze)
    assert str(request) == f"Exception #{request.pk} for KEP-2400 (PRR Freeze and Enhancements Freeze)"
    assert freeze_rows(request) == [("Enhancements Freeze", True), ("PRR Freeze", True)]


def test_only_the_prr_and_enhancements_freezes_of_one_release_go_together(
    kep, prr_freeze, code_freeze, enhancements_freeze, requester
):
    with pytest.raises(PolicyViolation) as err:
        submit(kep, enhancements_freeze, requester, also=code_freeze)
    assert err.value.message == (
        "A request names two freezes only for the PRR freeze and the enhancements freeze of one release (one "
        "completion date); Enhancements Freeze (1.31) and Code Freeze (1.31) cannot be asked together: file one "
        "request per freeze."
    )


def test_a_live_combined_request_blocks_another_for_either_freeze(kep, prr_freeze, enhancements_freeze, requester):
    combined = submit(kep, prr_freeze, requester, also=enhancements_freeze)
    with pytest.raises(PolicyViolation) as err:
        submit(kep, enhancements_freeze, requester, at=enhancements_freeze.deadline + dt.timedelta(hours=1))
    assert err.value.message == (
        f"KEP-2400 already has a pending exception request (#{combined.pk}) for Enhancements Freeze; amend that "
        "one instead of filing another."
    )
    exception_request_withdraw(request=combined, actor=requester)
    assert freeze_rows(combined) == [("Enhancements Freeze", False), ("PRR Freeze", False)]
    alone = submit(kep, enhancements_freeze, requester, at=enhancements_freeze.deadline + dt.timedelta(hours=1))
    assert freeze_rows(alone) == [("Enhancements Freeze", True)]


def test_the_database_refuses_a_second_live_row_for_a_kep_and_freeze(
    kep, prr_freeze, enhancements_freeze, code_freeze, requester
):
    combined = submit(kep, prr_freeze, requester, also=enhancements_freeze)
    exception_request_withdraw(request=combined, actor=requester)
    submit(kep, enhancements_freeze, requester, days=1, at=enhancements_freeze.deadline)
    third = submit(kep, code_freeze, requester, days=1, at=code_freeze.deadline)
    exception_request_withdraw(request=third, actor=requester)
    assert connection.vendor == "postgresql"
    # Written around the services: the withdrawn combined request going live again, and
    # another request's row naming the enhancements freeze.
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("UPDATE exceptions_exceptionrequestfreeze SET live = true WHERE request_id = %s", [combined.pk])
    with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO exceptions_exceptionrequestfreeze (request_id, enhancement_id, milestone_id, live) "
            "VALUES (%s, %s, %s, true)",
            [third.pk, kep.pk, enhancements_freeze.pk],
        )


def test_the_grant_is_the_deadline_of_both_freezes(
    kep, prr_freeze, enhancements_freeze, requester, release_team_member
):
    combined = submit(kep, prr_freeze, requester, also=enhancements_freeze)
    decision = exception_request_approve(request=combined, actor=release_team_member)
    assert decision.granted_until == dt.datetime(2024, 6, 17, 7, 0, tzinfo=dt.UTC)  # end of Sun 16 June PDT
    for freeze in (prr_freeze, enhancements_freeze):
        found = kep_effective_deadline(enhancement=kep, milestone=freeze)
        assert (found.instant, found.exception_id) == (decision.granted_until, combined.pk)
    assert wanted_values(combined, on_draft=False)[TYPE] == "PRR Freeze"

    body = Client().get("/calendar/kep/2400.ics").content
    event = next(
        e for e in icalendar.Calendar.from_ical(body).walk("VEVENT")
        if str(e["UID"]) == f"releasecal-extension-{combined.pk}@releasecal.local"
    )  # fmt: skip
    assert str(event["SUMMARY"]).startswith("[1.31] PRR Freeze and Enhancements Freeze extended for KEP-2400")
    description = str(event["DESCRIPTION"])
    assert "Original PRR Freeze: 19:00 PDT Thursday 6 June 2024" in description
    assert "Original Enhancements Freeze: 19:00 PDT Thursday 13 June 2024" in description


def test_the_api_files_a_combined_request_and_refuses_a_wrong_pair(
    kep, prr_freeze, enhancements_freeze, code_freeze, requester, monkeypatch
):
    monkeypatch.setattr(tz, "utc_now", lambda: PRR_FREEZE + dt.timedelta(hours=2))
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=requester).key}")
    wrong = client.post(
        "/api/v1/exceptions/",
        {"kep": 2400, "milestone": prr_freeze.pk, "also_milestone": code_freeze.pk, "days": 3},
        format="json",
    )
    assert wrong.status_code == 400
    assert wrong.json()["extra"] == {"milestone": prr_freeze.pk, "also_milestone": code_freeze.pk}
    made = client.post(
        "/api/v1/exceptions/",
        {"kep": 2400, "milestone": prr_freeze.pk, "also_milestone": enhancements_freeze.pk, "days": 3},
        format="json",
    )
    assert made.status_code == 201, made.json()
    also = made.json()["also_milestone"]
    assert (also["id"], also["kind"], also["title"], also["deadline"]) == (
        enhancements_freeze.pk, "enhancements-freeze", "Enhancements Freeze", "2024-06-14T02:00:00Z",
    )  # fmt: skip
    listed = client.get("/api/v1/exceptions/").json()["results"]
    assert [row["also_milestone"]["title"] for row in listed] == ["Enhancements Freeze"]


BEFORE = [("exceptions", "0012_liaison_links_grant_end")]
AFTER = [("exceptions", "0013_combined_freeze_requests")]


@pytest.mark.django_db(transaction=True)
def test_the_migration_writes_one_live_row_per_live_request(kep, enhancements_freeze, code_freeze, requester):
    from django.db.migrations.executor import MigrationExecutor

    live = submit(kep, enhancements_freeze, requester, days=1, at=enhancements_freeze.deadline)
    gone = submit(kep, code_freeze, requester, days=1, at=code_freeze.deadline)
    exception_request_withdraw(request=gone, actor=requester)
    try:
        executor = MigrationExecutor(connection)
        executor.migrate(BEFORE)
        executor = MigrationExecutor(connection)
        executor.migrate(AFTER)
        Freeze = executor.loader.project_state(AFTER).apps.get_model("exceptions", "ExceptionRequestFreeze")
        assert sorted(Freeze.objects.values_list("request_id", "milestone_id", "live")) == [
            (live.pk, enhancements_freeze.pk, True), (gone.pk, code_freeze.pk, False),
        ]  # fmt: skip
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
