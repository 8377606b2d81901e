"""The exception workflow's events: sent inside the service's transaction, so a receiver
writes in the same commit as the decision and a failing receiver undoes it."""

from __future__ import annotations

import pytest
from django.db import connection

from exceptions import signals
from exceptions.models import Decision, ExceptionRequest
from exceptions.services import (
    RequestFields,
    exception_request_amend,
    exception_request_approve,
    exception_request_reject,
    exception_request_submit,
    exception_request_withdraw,
)
from releasecal.models import AuditLog
from reminders.models import Delivery, ReminderRule
from tests.support.reminders_helpers import channel, rule


class Boom(RuntimeError):
    pass


@pytest.fixture
def listen():
    """Connect a receiver to a workflow signal for one test; every call is recorded."""
    heard = []
    connected = []

    def connect(signal, action=None):
        def receiver(sender, **kwargs):
            heard.append((signal, kwargs))
            if action is not None:
                action(**kwargs)

        signal.connect(receiver, dispatch_uid="tests.listen", weak=False)
        connected.append(signal)

    yield connect, heard
    for signal in connected:
        signal.disconnect(dispatch_uid="tests.listen")


@pytest.mark.django_db(transaction=True)
def test_the_decision_is_sent_inside_its_transaction(listen, pending_request, release_team_member):
    """Autocommit outside the service: the receiver runs inside its atomic block, with
    the decision already written in it."""
    connect, heard = listen
    seen = []
    connect(
        signals.exception_request_decided,
        lambda request, decision, **kw: seen.append(
            (connection.in_atomic_block, Decision.objects.filter(pk=decision.pk, request=request).exists())
        ),
    )
    assert not connection.in_atomic_block
    decision = exception_request_approve(request=pending_request, actor=release_team_member)
    assert seen == [(True, True)]
    assert [(s, kw["request"].pk, kw["decision"].outcome) for s, kw in heard] == [
        (signals.exception_request_decided, pending_request.pk, "approved")
    ]
    assert heard[0][1]["decision"] == decision


def test_a_failing_receiver_rolls_the_approval_back(listen, pending_request, release_team_member):
    connect, _ = listen

    def fail(**kwargs):
        raise Boom("a receiver failed")

    connect(signals.exception_request_decided, fail)
    audits = AuditLog.objects.count()
    with pytest.raises(Boom):
        exception_request_approve(request=pending_request, actor=release_team_member)
    assert ExceptionRequest.objects.get(pk=pending_request.pk).state == "pending"
    assert not Decision.objects.filter(request=pending_request).exists()
    assert AuditLog.objects.count() == audits
    assert pending_request.enhancement.tracking.get().status == "exception_pending"


def test_a_failing_ledger_rolls_the_approval_back(pending_request, release_team_member, monkeypatch, kinds):
    """The reminder ledger's own receiver failing: no decision without its reminders."""
    from reminders import receivers

    rule(channel("email", "team", to=["team@example.com"]), applies_to=ReminderRule.AppliesTo.REQUEST_DECIDED)

    def broken(**kwargs):
        raise Boom("the ledger could not be written")

    monkeypatch.setattr(receivers, "deliveries_create_for_event", broken)
    with pytest.raises(Boom):
        exception_request_approve(request=pending_request, actor=release_team_member)
    assert ExceptionRequest.objects.get(pk=pending_request.pk).state == "pending"
    assert not Delivery.objects.filter(request=pending_request).exists()


def test_a_failing_receiver_rolls_the_filing_back(listen, kep, code_freeze, requester):
    connect, _ = listen

    def fail(**kwargs):
        raise Boom("a receiver failed")

    connect(signals.exception_request_submitted, fail)
    with pytest.raises(Boom):
        exception_request_submit(
            enhancement=kep, milestone=code_freeze, requester=requester, fields=RequestFields(days=2),
            submitted_at=code_freeze.deadline,
        )  # fmt: skip
    assert not ExceptionRequest.objects.filter(enhancement=kep).exists()


@pytest.mark.parametrize("how", ["amend", "withdraw", "reject"])
def test_each_change_sends_its_own_event_once(listen, pending_request, release_team_member, requester, how):
    connect, heard = listen
    for signal in (
        signals.exception_request_amended,
        signals.exception_request_withdrawn,
        signals.exception_request_decided,
        signals.exception_request_submitted,
    ):
        connect(signal)
    if how == "amend":
        exception_request_amend(request=pending_request, fields=RequestFields(days=3), actor=requester)
        expected = signals.exception_request_amended
    elif how == "withdraw":
        exception_request_withdraw(request=pending_request, actor=requester)
        expected = signals.exception_request_withdrawn
    else:
        exception_request_reject(request=pending_request, actor=release_team_member)
        expected = signals.exception_request_decided
    assert [signal for signal, _ in heard] == [expected]


def test_slack_hears_a_decision_only_after_the_commit(
    pending_request, release_team_member, fake_slack, eager_celery, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        exception_request_approve(request=pending_request, actor=release_team_member)
        assert fake_slack.calls == []  # nothing left the process inside the transaction
    assert len(callbacks) >= 2  # the channel messages' update and the requester's DM
