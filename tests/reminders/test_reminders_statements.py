"""What a ledger delivery costs the database (issue 27): a lone delivery is two
statements, each its own commit: the claim, which reads everything the message shows in
the same statement (the row, its channel, milestone, release and kind, and a request's
request and KEP), and the record (one UPDATE). A milestone's reminder and a request's
cost the same. A regression that adds a query per delivery fails here, not only in the
bench."""

from __future__ import annotations

import datetime as dt

import pytest
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from exceptions.services import RequestFields, exception_request_approve, exception_request_submit
from reminders import services
from reminders.models import Delivery, ReminderRule
from tests.support.reminders_helpers import (
    channel,
    code_freeze_of,
    future_release,
    hour_from_now,
    kep_with_owners,
    rule,
)

pytestmark = pytest.mark.django_db(transaction=True)  # real commits: no savepoints counted


def test_a_lone_delivery_is_a_claim_that_reads_and_a_record(kinds, mailoutbox):
    rule(channel("email", "team", to=["release-team@example.com"]), offsets="3d")
    row = Delivery.objects.get(milestone=code_freeze_of(future_release(freeze_at=hour_from_now(20))))
    with CaptureQueriesContext(connection) as queries:
        assert services.delivery_send(delivery_id=row.pk, now=row.due_at + dt.timedelta(seconds=5)) == "sent"
    assert_claimed_and_recorded(queries)
    assert len(mailoutbox) == 1
    assert "Code Freeze" in mailoutbox[0].subject


def assert_claimed_and_recorded(queries) -> None:
    """Two statements: the claim that reads (its UPDATE inside a WITH), and the record."""
    sql = [q["sql"] for q in queries]
    assert len(sql) == 2, [q[:160] for q in sql]
    claim, record = sql
    assert claim.startswith("WITH locked AS"), claim[:300]
    assert "UPDATE" in claim, claim[:300]
    assert "'sending'" in claim, claim[:300]
    for table in ("reminders_channel", "releasecal_milestone", "releasecal_release", "exceptions_exceptionrequest"):
        assert f'"{table}"' in claim
    assert record.startswith("UPDATE"), record[:300]
    assert "'sent'" in record, record[:300]


def test_a_requests_reminder_costs_what_a_milestones_does(kinds, mailoutbox):
    """The claim's statement joins the request's tables too (nulls for a milestone's
    reminder): a request's reminder reads its request and KEP there, not in a query of
    its own, and its message reads nothing more."""
    rule(channel("kep_owners", "owners", via="email"), applies_to=ReminderRule.AppliesTo.EXTENSIONS, offsets="1d")
    release = future_release(freeze_at=hour_from_now(-1))
    kep = kep_with_owners(release)
    freeze = code_freeze_of(release)
    requester = User.objects.create_user("req", "req@example.com", "pw")
    lead = User.objects.create_user("lead", "lead@example.com", "pw")
    lead.groups.add(Group.objects.get(name="Release Team"))
    release.team.add(lead)
    request = exception_request_submit(
        enhancement=kep, milestone=freeze, requester=requester, fields=RequestFields(days=3)
    )
    exception_request_approve(
        request=request, actor=lead, granted_until=freeze.deadline + dt.timedelta(days=3), granted_zone=release.zone
    )
    row = Delivery.objects.filter(request=request, offset="1d").order_by("recipient").first()
    mailoutbox.clear()
    with CaptureQueriesContext(connection) as queries:
        assert services.delivery_send(delivery_id=row.pk, now=row.due_at + dt.timedelta(seconds=5)) == "sent"
    assert_claimed_and_recorded(queries)
    assert '"releasecal_enhancement"' in queries[0]["sql"]
    assert len(mailoutbox) == 1
    assert f"KEP-{kep.number}" in mailoutbox[0].subject
