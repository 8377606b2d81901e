"""Channels against a fake Slack on 127.0.0.1: retries, backoff, permanent failures."""

from __future__ import annotations

import datetime as dt

import pytest

from outbox.errors import TransportError
from reminders import services
from reminders.messages import Message, render_slack
from reminders.models import Channel, Delivery
from slack_integration.client import HttpTransport
from tests.support.fake_slack import FakeSlack
from tests.support.reminders_helpers import channel, code_freeze_of, future_release, hour_from_now, rule

State = Delivery.State


@pytest.fixture(autouse=True)
def _fast_backoff(settings):
    settings.OUTBOX_HTTP_TRIES = 3
    settings.OUTBOX_HTTP_BACKOFF_BASE = 0.01
    settings.OUTBOX_HTTP_BACKOFF_MAX = 0.5
    settings.OUTBOX_MAX_ATTEMPTS = 3


def _due_row(ch: Channel) -> Delivery:
    rule(ch, offsets="3d")
    release = future_release(freeze_at=hour_from_now(20))
    return Delivery.objects.get(milestone=code_freeze_of(release), channel=ch)


@pytest.mark.django_db
def test_a_webhook_channel_posts_block_kit_once(kinds, fake_slack):
    row = _due_row(channel("slack_webhook", url=fake_slack.webhook_url()))
    assert services.delivery_send(delivery_id=row.pk, now=row.due_at) == "sent"
    assert fake_slack.received == {row.pk: 1}
    assert fake_slack.requests[0]["text"].startswith("Kubernetes v9.99: Code Freeze in 3 days — Deadline: ")
    assert "AoE" in fake_slack.requests[0]["text"]


@pytest.mark.django_db
def test_a_bot_channel_posts_to_the_api_url_from_settings(kinds, fake_slack, settings):
    settings.SLACK_API_URL = fake_slack.api_url
    settings.SLACK_BOT_TOKEN = "xoxb-good"
    row = _due_row(channel("slack_bot", channel="C0RELEASE"))
    assert services.delivery_send(delivery_id=row.pk, now=row.due_at) == "sent"
    assert fake_slack.received == {row.pk: 1}
    assert fake_slack.requests[0]["path"] == "/api/chat.postMessage"


@pytest.mark.django_db
def test_it_handles_500_by_retrying_with_backoff_up_to_the_bound(kinds, fake_slack):
    row = _due_row(channel("slack_webhook", url=fake_slack.webhook_url()))
    fake_slack.fail_next(100, status=500)
    now = row.due_at
    assert services.delivery_send(delivery_id=row.pk, now=now) == "retry"
    assert len(fake_slack.script) == 97  # three HTTP tries within the attempt
    row.refresh_from_db()
    assert row.state == State.PENDING
    assert row.attempts == 1
    assert row.last_error == "Server error 500"
    first_wait = row.next_attempt_at - now
    assert dt.timedelta(seconds=30) <= first_wait <= dt.timedelta(seconds=60)
    # Not before its next attempt time.
    assert services.delivery_send(delivery_id=row.pk, now=row.next_attempt_at - dt.timedelta(seconds=1)) == (
        "not-claimed"
    )
    now = row.next_attempt_at
    assert services.delivery_send(delivery_id=row.pk, now=now) == "retry"
    row.refresh_from_db()
    assert dt.timedelta(seconds=60) <= row.next_attempt_at - now <= dt.timedelta(seconds=120)  # doubled
    assert services.delivery_send(delivery_id=row.pk, now=row.next_attempt_at) == "failed"
    row.refresh_from_db()
    assert row.state == State.FAILED
    assert row.attempts == 3
    assert row.last_error == "Gave up after 3 attempts: Server error 500"
    assert len(fake_slack.script) == 100 - 9
    assert not Channel.objects.get(pk=row.channel_id).failing  # transient: the channel is fine


@pytest.mark.django_db
def test_a_429_puts_the_row_back_with_its_retry_after_for_a_later_sweep_without_sleeping(kinds, fake_slack):
    row = _due_row(channel("slack_webhook", url=fake_slack.webhook_url()))
    fake_slack.fail_next(1, status=429, retry_after=120)
    started = dt.datetime.now(dt.UTC)
    assert services.delivery_send(delivery_id=row.pk, now=row.due_at) == "rate-limited"
    assert dt.datetime.now(dt.UTC) - started < dt.timedelta(seconds=60)  # nobody slept through it
    assert len(fake_slack.script) == 0  # one try: the 429 is not retried in place
    row.refresh_from_db()
    assert row.state == State.PENDING
    assert row.next_attempt_at == row.due_at + dt.timedelta(seconds=120)
    assert row.queued_at is None  # the next sweep after it queues it
    assert row.attempts == 0  # a 429 is not a failed attempt
    assert row.last_error == "Rate limited by Slack (429): not before 120 s later"
    queued = []
    services.deliveries_sweep(now=row.next_attempt_at - dt.timedelta(seconds=1), enqueue=queued.append)
    assert queued == []
    services.deliveries_sweep(now=row.next_attempt_at, enqueue=queued.append)
    assert queued == [row.pk]
    assert services.delivery_send(delivery_id=row.pk, now=row.next_attempt_at) == "sent"
    assert fake_slack.received == {row.pk: 1}


def test_other_callers_of_the_client_still_wait_a_short_retry_after_in_place(fake_slack):
    fake_slack.fail_next(1, status=429, retry_after=0.3)
    started = dt.datetime.now(dt.UTC)
    HttpTransport().post(fake_slack.webhook_url(), json={"text": "x"})
    assert dt.datetime.now(dt.UTC) - started >= dt.timedelta(seconds=0.3)
    assert fake_slack.stats()["requests"] == 1
    fake_slack.fail_next(1, status=429, retry_after=0.3)
    with pytest.raises(TransportError) as caught:
        HttpTransport(wait_on_rate_limit=False).post(fake_slack.webhook_url(), json={"text": "x"})
    assert caught.value.rate_limited
    assert caught.value.retry_after == 0.3


@pytest.mark.django_db
def test_it_handles_404_as_permanent_and_marks_the_channel_failing(kinds, fake_slack):
    row = _due_row(channel("slack_webhook", url=f"http://127.0.0.1:{fake_slack.port}/nowhere"))
    assert services.delivery_send(delivery_id=row.pk, now=row.due_at) == "failed"
    row.refresh_from_db()
    assert row.state == State.FAILED
    assert row.attempts == 1
    assert row.last_error == "HTTP 404: no_service"
    ch = Channel.objects.get(pk=row.channel_id)
    assert ch.failing
    assert ch.last_error == "HTTP 404: no_service"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("token", "slack_channel", "error"),
    [("xoxb-invalid", "C1", "invalid_token"), ("xoxb-ok", "missing", "channel_not_found")],
)
def test_slack_api_errors_that_retrying_cannot_fix_mark_the_channel_failing(
    kinds, fake_slack, settings, token, slack_channel, error
):
    settings.SLACK_API_URL = fake_slack.api_url
    row = _due_row(channel("slack_bot", channel=slack_channel, token=token))
    assert services.delivery_send(delivery_id=row.pk, now=row.due_at) == "failed"
    row.refresh_from_db()
    assert row.last_error == f"Slack: {error}"
    assert Channel.objects.get(pk=row.channel_id).failing
    assert fake_slack.received == {}


@pytest.mark.django_db
def test_a_failing_channel_fails_its_deliveries_until_cleared(kinds, fake_slack):
    ch = channel("slack_webhook", url=fake_slack.webhook_url())
    row = _due_row(ch)
    services.channel_mark_failing(channel=ch, error="HTTP 404: no_service")
    assert services.delivery_send(delivery_id=row.pk, now=row.due_at) == "failed"
    assert fake_slack.received == {}
    services.channel_clear_failing(channel=ch)
    row.refresh_from_db()
    assert services.delivery_retry(delivery=row, now=row.due_at)
    assert services.delivery_send(delivery_id=row.pk, now=row.due_at) == "sent"
    assert fake_slack.received == {row.pk: 1}


def test_a_timeout_is_transient(settings):
    settings.OUTBOX_HTTP_TRIES = 1
    settings.OUTBOX_HTTP_TIMEOUT = 0.2
    fake = FakeSlack(delay=1.0).start()
    try:
        with pytest.raises(TransportError) as caught:
            HttpTransport().post(fake.webhook_url(), json={"text": "x"})
    finally:
        fake.stop()
    assert not caught.value.permanent
    assert caught.value.message.startswith("Timed out")


def test_slack_text_is_escaped_for_mrkdwn():
    payload = render_slack(Message(headline="a <b> & c", deadline_sentence="Deadline: x", link="https://e/x"))
    assert payload["blocks"][0]["text"]["text"] == "*a &lt;b&gt; &amp; c*"
    assert "<https://e/x|" in payload["blocks"][1]["text"]["text"]
