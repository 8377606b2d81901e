"""What a ledger delivery costs the database (issue 27): a lone delivery is three
statements, each its own commit where it writes: the load (the row with everything its
message shows, in one query), the claim (a conditional UPDATE) and the record (one
UPDATE). A regression that adds a query per delivery fails here, not only in the bench."""

from __future__ import annotations

import datetime as dt

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reminders import services
from reminders.models import Delivery
from tests.support.reminders_helpers import channel, code_freeze_of, future_release, hour_from_now, rule

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
