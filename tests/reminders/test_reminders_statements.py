"""What a ledger delivery costs the database (issue 27): a lone delivery is three
statements, each its own commit where it writes: the load (the row with everything its
message shows, in one query), the claim (a conditional UPDATE) and the record (one
UPDATE); a request's reminder reads its request, KEP and release in one more. A
regression that adds a query per delivery fails here, not only in the bench."""

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


def test_a_lone_delivery_is_a_load_a_claim_and_a_record(kinds, mailoutbox):
    rule(channel("email", "team", to=["release-team@example.com"]), offsets="3d")
    row = Delivery.objects.get(milestone=code_freeze_of(future_release(freeze_at=hour_from_now(20))))
    with CaptureQueriesContext(connection) as queries:
        assert services.delivery_send(delivery_id=row.pk, now=row.due_at + dt.timedelta(seconds=5)) == "sent"
    statements = [q["sql"].split()[0] for q in queries]
    assert statements == ["SELECT", "UPDATE", "UPDATE"], [q["sql"][:120] for q in queries]
    assert "'sending'" in queries[1]["sql"]
    assert "'sent'" in queries[2]["sql"]
    assert len(mailoutbox) == 1
    assert "Code Freeze" in mailoutbox[0].subject


def test_a_requests_reminder_adds_one_read_for_its_request(kinds, mailoutbox):
    """The load joins the milestone's tables only: a milestone reminder does not pay for
    planning and reading the request's (the bench's ledger figure), and a request's
    reminder reads them in one query of its own, not one per table."""
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
    statements = [q["sql"].split()[0] for q in queries]
    assert statements == ["SELECT", "SELECT", "UPDATE", "UPDATE"], [q["sql"][:120] for q in queries]
    assert '"exceptions_exceptionrequest"' not in queries[0]["sql"]
    assert '"releasecal_enhancement"' in queries[1]["sql"]
    assert len(mailoutbox) == 1
    assert f"KEP-{kep.number}" in mailoutbox[0].subject
