"""Digests and Slack's 429 on the real worker and Redis, against the fake Slack (issue 14
items 3 and 4): a digest of many deliveries with one cancelled mid-way, a 429 whose
Retry-After the ledger honours, a failed digest retried as a whole.

Each test has its own Celery queue and webhook path (the rate limit's key), and its
clock starts once its worker answers a ping; no fixed sleeps."""

from __future__ import annotations

import datetime as dt
import math
import time
import uuid

import pytest

from outbox import ratelimit
from releasecal import tz
from releasecal.models import MilestoneKind
from releasecal.services import milestone_cancel, milestone_create
from reminders import services
from reminders.channels import target_key
from reminders.models import Delivery, ReminderRule
from tests.support.redis_cache import redis_cache_at
from tests.support.reminder_workers import wait_for
from tests.support.reminders_helpers import channel, future_release, hour_from_now

pytestmark = [
    pytest.mark.slow,
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
]
State = Delivery.State


def _digest_rows(kinds, fake_slack, count: int):
    """``count`` freezes, one reminder each on one webhook, all due a minute ago, from one
    rule that may be combined; and the milestones."""
    hook = channel("slack_webhook", "hook", url=fake_slack.webhook_url(f"digest-{uuid.uuid4().hex[:8]}"))
    release = future_release(freeze_at=hour_from_now(20))
    freeze = MilestoneKind.objects.get(slug="code-freeze")
    milestones = [
        milestone_create(release=release, kind=freeze, title=f"Freeze {n}", at=hour_from_now(20 + n))
        for n in range(count)
    ]
    # Created after the milestones (no hook materialises it): the rows are made due now.
    rule = ReminderRule.objects.create(name="digest", offsets="3d", channel=hook, combine=True)
    now = tz.utc_now()
    Delivery.objects.bulk_create(
        Delivery(
            rule=rule,
            milestone=m,
            channel=hook,
            offset="3d",
            recipient="",
            deadline_at=m.deadline,
            deadline_zone=m.zone,
            due_at=now - dt.timedelta(minutes=1),
        )
        for m in milestones
    )
    rows = {d.milestone_id: d.pk for d in Delivery.objects.filter(channel=hook)}
    return milestones, [rows[m.pk] for m in milestones]


def _states(ids) -> dict[int, str]:
    return dict(Delivery.objects.filter(pk__in=ids).values_list("pk", "state"))


def test_a_digest_of_many_deliveries_with_one_cancelled_mid_way_goes_out_once(broker, kinds, fake_slack, workers):
    milestones, ids = _digest_rows(kinds, fake_slack, 25)
    result = services.deliveries_sweep()  # one task, queued: no worker consumes yet
    assert sorted(result.queued) == sorted(ids)
    milestone_cancel(milestone=milestones[7])  # mid-way: after the sweep, before the send
    cancelled = ids[7]
    rest = [i for i in ids if i != cancelled]
    workers(broker=broker, name="digest", concurrency=2)
    assert wait_for(lambda: set(_states(rest).values()) == {State.SENT}, timeout=90)
    assert _states([cancelled]) == {cancelled: State.CANCELLED}
    assert fake_slack.received == dict.fromkeys(rest, 1)
    (message,) = fake_slack.matching(lambda c: c.delivered)  # one message for 24 deadlines
    assert message.data["blocks"][0]["text"]["text"] == "*24 reminders*"
    assert f"releasecal delivery #{cancelled}" not in message.text
    assert len(set(Delivery.objects.filter(pk__in=rest).values_list("sent_at", flat=True))) == 1


def test_a_429_with_retry_after_waits_in_the_ledger_and_a_later_sweep_sends_once(broker, kinds, fake_slack, workers):
    _milestones, ids = _digest_rows(kinds, fake_slack, 5)
    fake_slack.fail_next(1, status=429, retry_after=3)
    workers(broker=broker, name="limited", concurrency=2)
    services.deliveries_sweep()

    def waiting() -> bool:
        rows = Delivery.objects.filter(pk__in=ids, state=State.PENDING, next_attempt_at__isnull=False)
        return rows.filter(last_error="Rate limited by Slack (429): not before 3 s later").count() == len(ids)

    assert wait_for(waiting, timeout=60)
    rows = list(Delivery.objects.filter(pk__in=ids))
    assert {(r.attempts, r.queued_at) for r in rows} == {(0, None)}  # not an attempt; for a later sweep
    (not_before,) = {r.next_attempt_at for r in rows}
    assert fake_slack.stats()["requests"] == 0
    if tz.utc_now() < not_before:
        assert services.deliveries_sweep().queued == []  # the row waits: nothing queued before Retry-After
    assert wait_for(lambda: set(_states(ids).values()) == {State.SENT}, timeout=60, tick=services.deliveries_sweep)
    assert fake_slack.received == dict.fromkeys(ids, 1)
    assert fake_slack.stats()["duplicates"] == 0
    sent = Delivery.objects.filter(pk__in=ids)
    assert all(r.sent_at >= not_before for r in sent)
    assert {r.attempts for r in sent} == {1}


def test_a_failed_digest_is_retried_as_a_whole(broker, kinds, fake_slack, workers):
    _milestones, ids = _digest_rows(kinds, fake_slack, 6)
    fake_slack.fail_next(1, status=500)
    env = {"OUTBOX_HTTP_TRIES": "1", "OUTBOX_RETRY_BASE_SECONDS": "2"}
    workers(broker=broker, name="retry", concurrency=2, env=env)
    services.deliveries_sweep()

    def failed_once() -> bool:
        return Delivery.objects.filter(pk__in=ids, state=State.PENDING, attempts=1).count() == len(ids)

    assert wait_for(failed_once, timeout=60)
    rows = list(Delivery.objects.filter(pk__in=ids))
    assert {(r.last_error, r.queued_at) for r in rows} == {("Server error 500", None)}
    assert len({r.next_attempt_at for r in rows}) == 1  # one next attempt for the whole digest
    assert wait_for(lambda: set(_states(ids).values()) == {State.SENT}, timeout=60, tick=services.deliveries_sweep)
    assert fake_slack.received == dict.fromkeys(ids, 1)
    delivered = fake_slack.matching(lambda c: c.delivered)
    assert len(delivered) == 1  # the retry is one message again, with all six
    assert delivered[0].data["blocks"][0]["text"]["text"] == "*6 reminders*"
    assert {r.attempts for r in Delivery.objects.filter(pk__in=ids)} == {2}


def test_a_burst_that_may_not_be_combined_gets_its_seconds_from_the_sweep_and_goes_out_once(
    broker, kinds, fake_slack, settings, workers
):
    """12 rows on 3 webhooks, rules that may not be combined, the fake Slack's limit on:
    the sweep reserves each row's second once and queues it with a countdown to it, and
    every row goes out once. How fast a channel drains, and how rarely a post that crosses
    a second boundary in transit meets a 429, depend on the machine's load: the bench
    measures them (bench/reminders_bench.py); here a 429'd row waits in the ledger and the
    next sweep sends it, so the test holds on a loaded machine too."""
    fake_slack.rate_limit = 1
    settings.OUTBOX_SLACK_CHANNEL_RATE = 1
    per_channel, channels = 4, 3
    release = future_release(freeze_at=hour_from_now(20))
    freeze = MilestoneKind.objects.get(slug="code-freeze")
    milestone = release.milestones.get(kind=freeze)
    now = tz.utc_now()
    hooks, rows = [], []
    for c in range(channels):
        hook = channel("slack_webhook", f"burst-{c}", url=fake_slack.webhook_url(f"burst-{uuid.uuid4().hex[:8]}"))
        rule = ReminderRule.objects.create(name=f"burst {c}", offsets="1m", channel=hook, combine=False)
        hooks.append(hook)
        rows += [
            Delivery(
                rule=rule,
                milestone=milestone,
                channel=hook,
                offset=f"{n}m",
                recipient="",
                deadline_at=now + dt.timedelta(minutes=n),
                deadline_zone=milestone.zone,
                due_at=now - dt.timedelta(seconds=1),
            )
            for n in range(1, per_channel + 1)
        ]
    Delivery.objects.bulk_create(rows)
    ids = list(Delivery.objects.filter(channel__in=hooks).values_list("pk", flat=True))
    prefix = f"test-burst-{uuid.uuid4().hex[:12]}"
    with redis_cache_at(broker, prefix):  # one rate-limit count for the sweep and the worker
        workers(broker=broker, name="burst", concurrency=2, env={"REDIS_URL": broker, "CACHE_KEY_PREFIX": prefix})
        swept = time.time()
        result = services.deliveries_sweep()
        assert sorted(result.queued) == sorted(ids)  # one task each (none combined)
        # The sweep reserved each row's second: the channel's next free one is after them.
        last_slot = math.floor(swept + services.SWEEP_SLOT_LEAD_SECONDS) + per_channel - 1
        assert ratelimit.reserve(target_key(hooks[0], ""), now=swept) > last_slot
        # Sweeping as beat does (each minute there): a 429'd row's later turn.
        assert wait_for(lambda: set(_states(ids).values()) == {State.SENT}, timeout=120, tick=services.deliveries_sweep)
    assert fake_slack.received == dict.fromkeys(ids, 1)
    assert fake_slack.stats()["duplicates"] == 0
    # A 429 is not an attempt: every row was sent by its first attempt.
    assert {r.attempts for r in Delivery.objects.filter(pk__in=ids)} == {1}
