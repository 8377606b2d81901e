"""The outbox's rules (``outbox.ledger``), tested once for every ledger that uses them:
reminders' deliveries and schedule notices' deliveries, each through its own send and
sweep, against a fake Slack on 127.0.0.1 and the real PostgreSQL.

A third ledger (the GitHub board writes) joins by adding a case to ``LEDGERS``.
"""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.db import connection

from notices import services as notices
from notices.models import NoticeDelivery, ScheduleNotice
from outbox.ledger import Ledger
from releasecal import tz
from reminders import services as reminders
from reminders.models import Delivery
from tests.support.reminders_helpers import channel, code_freeze_of, future_release, hour_from_now, rule


@dataclass
class Case:
    """One ledger as its rules see it: rows to a Slack channel, due at ``due``."""

    ledger: Ledger
    ids: list[int]
    due: dt.datetime
    send: Callable[[int, dt.datetime], object]  # the ledger's own send of one row
    sweep: Callable[[dt.datetime], object]  # the ledger's own minute sweep

    def row(self, pk: int | None = None):
        return self.ledger.model.objects.get(pk=self.ids[0] if pk is None else pk)


def _reminders(count: int, request) -> Case:
    for number in range(count):
        rule(channel("slack_bot", channel=f"C0OUTBOX{number}"), offsets="3d")
    release = future_release(freeze_at=hour_from_now(20))
    rows = list(Delivery.objects.filter(milestone=code_freeze_of(release)).order_by("pk"))
    assert len(rows) == count
    return Case(
        ledger=reminders.LEDGER,
        ids=[row.pk for row in rows],
        due=rows[0].due_at,
        send=lambda pk, now: reminders.delivery_send(delivery_id=pk, now=now),
        sweep=lambda now: reminders.deliveries_sweep(now=now, enqueue=lambda _: None),
    )


def _notices(count: int, request) -> Case:
    release = request.getfixturevalue("release")
    notice = ScheduleNotice.objects.create(
        key="milestone:test:1", kind=ScheduleNotice.Kind.MOVED, release=release, title="1.31: Code Freeze moved",
        lines=["Code Freeze (Kubernetes v1.31) moved."],
    )  # fmt: skip
    rows = [
        NoticeDelivery.objects.create(notice=notice, recipient=f"channel:C0OUTBOX{number}") for number in range(count)
    ]
    return Case(
        ledger=notices.LEDGER,
        ids=[row.pk for row in rows],
        due=tz.utc_now(),
        send=lambda pk, now: notices.notice_send(notice_id=notice.pk, now=now),
        sweep=lambda now: notices.notices_sweep(now=now),
    )


LEDGERS = {"reminders": _reminders, "notices": _notices}


@pytest.fixture(params=sorted(LEDGERS))
def make(request, kinds, fake_slack, settings):
    settings.OUTBOX_HTTP_TRIES = 1  # the client's own retry off: the ledger's rules are under test
    return lambda count=1: LEDGERS[request.param](count, request)


def _delivered(fake_slack) -> int:
    return len(fake_slack.matching(lambda call: call.delivered))


# --------------------------------------------------------------------- the claim


def _claimer(case: Case, now: dt.datetime, start: threading.Barrier, claimed: list[list[int]]) -> None:
    """One of two senders claiming the same rows at the same instant, on its own
    database connection."""
    try:
        start.wait()
        claimed.append(case.ledger.claim(case.ids, now=now))
    finally:
        connection.close()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("batch", [1, 3], ids=["one row", "a digest of three"])
def test_two_claimers_at_once_take_each_row_once(make, batch):
    assert connection.vendor == "postgresql"
    case = make(batch)
    for round_number in range(5):
        case.ledger.model.objects.filter(pk__in=case.ids).update(state="pending", claimed_at=None)
        now = case.due + dt.timedelta(seconds=round_number)
        start = threading.Barrier(2)
        claimed: list[list[int]] = []

        threads = [threading.Thread(target=_claimer, args=(case, now, start, claimed)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        taken = sorted(pk for ids in claimed for pk in ids)
        assert taken == sorted(case.ids), claimed  # every row once, none twice
        assert case.ledger.model.objects.filter(pk__in=case.ids, state="sending").count() == batch


@pytest.mark.django_db
def test_a_sent_row_is_never_sent_again(make, fake_slack):
    case = make()
    case.send(case.ids[0], case.due)
    for later in (case.due, case.due + dt.timedelta(days=1)):
        case.send(case.ids[0], later)
        case.sweep(later)
    assert case.row().state == "sent"
    assert _delivered(fake_slack) == 1


# --------------------------------------------------------------------- the lease


@pytest.mark.django_db
def test_a_row_whose_sender_was_lost_is_claimed_again_after_the_lease(make, settings, fake_slack):
    case = make()
    assert case.ledger.claim(case.ids, now=case.due) == case.ids  # then the worker died
    lease = dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS)
    assert case.ledger.claim(case.ids, now=case.due + lease) == []  # still held
    case.send(case.ids[0], case.due + lease)
    assert _delivered(fake_slack) == 0
    case.send(case.ids[0], case.due + lease + dt.timedelta(seconds=1))
    row = case.row()
    assert (row.state, row.attempts, _delivered(fake_slack)) == ("sent", 2, 1)


@pytest.mark.django_db
def test_the_sweep_gives_up_a_row_whose_sender_was_lost_as_often_as_it_may_be_tried(make, settings, fake_slack):
    settings.OUTBOX_MAX_ATTEMPTS = 1
    case = make()
    assert case.ledger.claim(case.ids, now=case.due) == case.ids
    after_lease = case.due + dt.timedelta(seconds=settings.OUTBOX_LEASE_SECONDS + 1)
    assert case.ledger.claim(case.ids, now=after_lease) == []  # no attempt left
    case.sweep(after_lease)
    row = case.row()
    assert (row.state, row.last_error) == ("failed", "Gave up: the sending worker was lost 1 times")
    case.send(case.ids[0], after_lease + dt.timedelta(days=1))
    assert _delivered(fake_slack) == 0


# ------------------------------------------------------ the backoff and give-up


@pytest.mark.django_db
def test_a_failed_attempt_backs_off_exponentially_and_the_row_gives_up_after_the_bound(make, settings, fake_slack):
    settings.OUTBOX_MAX_ATTEMPTS = 4
    settings.OUTBOX_RETRY_BASE_SECONDS = 60
    settings.OUTBOX_RETRY_MAX_SECONDS = 100
    case = make()
    fake_slack.fail_next(100, status=503)
    now = case.due
    # Equal jitter: attempt n waits between half and all of min(cap, base * 2**(n-1)).
    for attempt, ceiling in ((1, 60), (2, 100), (3, 100)):
        case.send(case.ids[0], now)
        row = case.row()
        assert (row.state, row.attempts, row.last_error) == ("pending", attempt, "Server error 503")
        wait = (row.next_attempt_at - now).total_seconds()
        assert ceiling / 2 <= wait <= ceiling, (attempt, wait)
        case.send(case.ids[0], row.next_attempt_at - dt.timedelta(seconds=1))  # not before its time
        assert case.row().attempts == attempt
        now = row.next_attempt_at
    case.send(case.ids[0], now)
    row = case.row()
    assert (row.state, row.attempts, row.next_attempt_at) == ("failed", 4, None)
    assert row.last_error == "Gave up after 4 attempts: Server error 503"
    case.send(case.ids[0], now + dt.timedelta(days=1))
    case.sweep(now + dt.timedelta(days=1))
    assert len(fake_slack.script) == 100 - 4  # one request per attempt, none after giving up
    assert _delivered(fake_slack) == 0


@pytest.mark.django_db
def test_a_permanent_error_fails_the_row_at_once(make, fake_slack):
    case = make()
    fake_slack.fail_next(1, status=200, error="channel_not_found")
    case.send(case.ids[0], case.due)
    row = case.row()
    assert (row.state, row.attempts, row.last_error) == ("failed", 1, "Slack: channel_not_found")


# ------------------------------------------------------------------ the 429 rule


@pytest.mark.django_db
def test_six_429s_never_fail_a_row_and_it_goes_once_after_them(make, settings, fake_slack):
    settings.OUTBOX_MAX_ATTEMPTS = 3  # fewer than the 429s: none of them counts
    case = make()
    fake_slack.fail_next(6, status=429, retry_after=120)
    now = case.due
    for _ in range(6):
        case.send(case.ids[0], now)
        row = case.row()
        assert (row.state, row.attempts) == ("pending", 0)
        assert row.last_error == "Rate limited by Slack (429): not before 120 s later"
        assert row.next_attempt_at == now + dt.timedelta(seconds=120)  # waits for Retry-After
        case.send(case.ids[0], now + dt.timedelta(seconds=119))  # and not before
        now = row.next_attempt_at
    assert fake_slack.script == []
    case.send(case.ids[0], now)
    row = case.row()
    assert (row.state, row.attempts, row.last_error) == ("sent", 1, "")
    assert _delivered(fake_slack) == 1
