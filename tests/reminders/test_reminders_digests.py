"""Digests (issue 14 item 3) and Slack's per-channel limit (item 4), in-process against the
fake Slack: Slack's splits with literal counts, the rows of a digest moving together in
the ledger, the shared rate limit on Redis."""

from __future__ import annotations

import datetime as dt
import math
import time

import pytest

from outbox import ratelimit
from releasecal.models import MilestoneKind
from releasecal.services import milestone_cancel, milestone_create
from reminders import services
from reminders.channels import target_key
from reminders.messages import Message, render_email_digest, render_slack_digest
from reminders.models import Delivery
from tests.support.redis_cache import redis_cache_at, redis_url
from tests.support.reminders_helpers import channel, future_release, rule

State = Delivery.State
FREEZE_AT = dt.datetime(2030, 7, 24, 2, 0, tzinfo=dt.UTC)  # 19:00 PDT Tuesday 23 July 2030


@pytest.fixture
def bot(settings, fake_slack):
    settings.SLACK_API_URL = fake_slack.api_url
    settings.SLACK_BOT_TOKEN = "xoxb-good"
    return channel("slack_bot", "release-slack", channel="C0RELEASE")


def _freezes(count: int, *, description: str = "", apart: dt.timedelta = dt.timedelta(minutes=10)) -> list:
    """``count`` freezes ``apart`` in one release (the first at FREEZE_AT): their
    reminders all fall within the grace period of the last one's."""
    release = future_release(freeze_at=FREEZE_AT)
    first = release.milestones.get(kind__slug="code-freeze")
    if description:
        first.description = description
        first.save()
    kind = MilestoneKind.objects.get(slug="code-freeze")
    made = [first]
    for n in range(1, count):
        at = FREEZE_AT + n * apart
        made.append(milestone_create(release=release, kind=kind, title=f"Freeze {n}", at=at, description=description))
    return made


def _rows(channel_, milestones) -> list[Delivery]:
    return list(Delivery.objects.filter(channel=channel_, milestone__in=milestones).order_by("due_at", "pk"))


def _sweep(now) -> list:
    queued: list = []
    services.deliveries_sweep(now=now, enqueue=queued.append)
    return queued


# ------------------------------------------------------------------ Slack's splits


def test_a_digest_section_is_split_before_3000_characters():
    # Each entry: "*H0*\n" (5) + 1400 characters + "\n" + "releasecal delivery #0" (22) = 1428.
    messages = [Message(headline=f"H{n}", lines=("x" * 1400,), footer=f"releasecal delivery #{n}") for n in range(3)]
    (part,) = render_slack_digest(messages)
    lengths = [len(block["text"]["text"]) for block in part.payload["blocks"]]
    # Two entries and the blank line between them: 2 * 1428 + 2 = 2858; a third would be 4288.
    assert lengths == [13, 2858, 1428]
    assert part.payload["blocks"][0]["text"]["text"] == "*3 reminders*"
    assert part.indexes == (0, 1, 2)
    assert part.payload["text"] == "3 reminders: H0; H1; H2"


def test_a_digest_of_more_than_49_sections_is_split_into_messages_of_50_blocks():
    # 1,600 characters each: two entries never fit one section, so 60 entries are 60
    # sections: 49 (and the heading) in the first message, 11 in the second.
    messages = [Message(headline=f"H{n}", lines=("y" * 1600,), footer=f"releasecal delivery #{n}") for n in range(60)]
    parts = render_slack_digest(messages)
    assert [len(part.payload["blocks"]) for part in parts] == [50, 12]
    assert [part.indexes for part in parts] == [tuple(range(49)), tuple(range(49, 60))]
    assert parts[0].payload["blocks"][0]["text"]["text"] == "*Reminders 1 to 49 of 60 (message 1 of 2)*"
    assert parts[1].payload["blocks"][0]["text"]["text"] == "*Reminders 50 to 60 of 60 (message 2 of 2)*"
    assert all(len(block["text"]["text"]) <= 3000 for part in parts for block in part.payload["blocks"])


def test_an_entry_longer_than_a_section_is_clipped_in_its_body_and_keeps_its_footer():
    messages = [
        Message(headline="Long", lines=("z" * 5000,), footer="releasecal delivery #1"),
        Message(headline="Short", footer="releasecal delivery #2"),
    ]
    (part,) = render_slack_digest(messages)
    long_text = part.payload["blocks"][1]["text"]["text"]
    assert len(long_text) == 3000
    assert long_text.startswith("*Long*\nzzz")
    assert long_text.endswith("z…\nreleasecal delivery #1")
    assert part.payload["blocks"][2]["text"]["text"] == "*Short*\nreleasecal delivery #2"


def test_a_lone_message_is_rendered_as_before():
    message = Message(headline="Kubernetes v9.99: Code Freeze in 3 days", footer="releasecal delivery #7")
    (part,) = render_slack_digest([message])
    assert part.payload["blocks"][0]["text"]["text"] == "*Kubernetes v9.99: Code Freeze in 3 days*"
    assert part.payload["blocks"][1] == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": "releasecal delivery #7", "verbatim": True}],
    }


def test_an_email_digest_lists_every_deadline_in_one_message():
    messages = [
        Message(headline="A: Code Freeze in 3 days", deadline_sentence="Deadline: x.", footer="releasecal delivery #1"),
        Message(headline="B: Code Freeze in 3 days", deadline_sentence="Deadline: y.", footer="releasecal delivery #2"),
    ]
    subject, body = render_email_digest(messages).payload
    assert subject == "2 reminders: A: Code Freeze in 3 days and 1 more"
    assert body == (
        "2 reminders.\n\n"
        "A: Code Freeze in 3 days.\n\nDeadline: x.\n\n-- \nreleasecal delivery #1"
        "\n\n========\n\n"
        "B: Code Freeze in 3 days.\n\nDeadline: y.\n\n-- \nreleasecal delivery #2\n"
    )


# ------------------------------------------------------------------ the ledger


@pytest.mark.django_db
def test_rows_due_together_for_one_channel_go_out_as_one_message_with_tz_words(kinds, bot, fake_slack, settings):
    settings.SITE_URL = "https://releasecal.example.org"
    rule(bot, offsets="3d")
    freezes = _freezes(2)
    rows = _rows(bot, freezes)
    now = rows[-1].due_at
    assert _sweep(now) == [[row.pk for row in sorted(rows, key=lambda r: r.pk)]]
    assert services.deliveries_send(delivery_ids=[r.pk for r in rows], now=now) == "sent"
    assert fake_slack.received == {rows[0].pk: 1, rows[1].pk: 1}
    (call,) = fake_slack.matching(lambda c: c.delivered)
    assert call.data["channel"] == "C0RELEASE"
    assert [block["text"]["text"] for block in call.data["blocks"]] == [
        "*2 reminders*",
        "*Kubernetes v9.99: Code Freeze in 3 days*\n"
        "Deadline: 19:00 PDT Tuesday 23 July 2030 (02:00 UTC Wednesday 24 July 2030) / "
        "14:00 AoE Tuesday 23 July 2030.\n"
        "<https://releasecal.example.org/releases/9.99/|Kubernetes v9.99 schedule>\n"
        f"releasecal delivery #{rows[0].pk}\n\n"
        "*Kubernetes v9.99: Freeze 1 in 3 days*\n"
        "Deadline: 19:10 PDT Tuesday 23 July 2030 (02:10 UTC Wednesday 24 July 2030) / "
        "14:10 AoE Tuesday 23 July 2030.\n"
        "<https://releasecal.example.org/releases/9.99/|Kubernetes v9.99 schedule>\n"
        f"releasecal delivery #{rows[1].pk}",
    ]
    assert {r.state for r in _rows(bot, freezes)} == {State.SENT}
    assert {r.sent_at for r in _rows(bot, freezes)} == {now}  # marked sent together


@pytest.mark.django_db
def test_a_row_cancelled_after_the_sweep_drops_out_of_its_digest(kinds, bot, fake_slack):
    rule(bot, offsets="3d")
    freezes = _freezes(4)
    rows = _rows(bot, freezes)
    now = rows[-1].due_at
    (digest,) = _sweep(now)
    assert len(digest) == 4
    milestone_cancel(milestone=freezes[2])  # between the sweep and the send
    assert services.deliveries_send(delivery_ids=digest, now=now) == "sent"
    cancelled = Delivery.objects.get(milestone=freezes[2], channel=bot)
    assert cancelled.state == State.CANCELLED
    assert fake_slack.received == {r.pk: 1 for r in rows if r.pk != cancelled.pk}
    assert fake_slack.stats()["requests"] == 1
    assert fake_slack.matching(lambda c: c.delivered)[0].data["blocks"][0]["text"]["text"] == "*3 reminders*"


@pytest.mark.django_db
def test_a_failed_digest_retries_as_a_whole(kinds, bot, fake_slack, settings):
    settings.OUTBOX_HTTP_TRIES = 1
    rule(bot, offsets="3d")
    rows = _rows(bot, _freezes(3))
    ids = [r.pk for r in rows]
    now = rows[-1].due_at
    fake_slack.fail_next(1, status=500)
    assert services.deliveries_send(delivery_ids=ids, now=now) == "retry"
    after = list(Delivery.objects.filter(pk__in=ids))
    assert {(r.state, r.attempts, r.last_error, r.queued_at) for r in after} == {
        (State.PENDING, 1, "Server error 500", None)
    }
    (retry_at,) = {r.next_attempt_at for r in after}  # one next attempt for the digest
    assert _sweep(retry_at - dt.timedelta(seconds=1)) == []
    assert _sweep(retry_at) == [sorted(ids)]
    assert services.deliveries_send(delivery_ids=sorted(ids), now=retry_at) == "sent"
    assert fake_slack.received == dict.fromkeys(ids, 1)
    assert fake_slack.stats()["requests"] == 1


@pytest.mark.django_db
def test_a_rule_that_may_not_be_combined_sends_each_row_alone(kinds, bot):
    rule(bot, offsets="3d").__class__.objects.update(combine=False)
    rows = _rows(bot, _freezes(3))
    assert _sweep(rows[-1].due_at) == sorted(r.pk for r in rows)  # three tasks, one id each


@pytest.mark.django_db
def test_one_email_address_gets_one_digest_across_channels(kinds, mailoutbox):
    rule(channel("email", "team", to=["team@example.com"]), offsets="3d")
    rule(channel("email", "team-too", to=["team@example.com", "other@example.com"]), offsets="3d")
    freezes = _freezes(2)
    now = Delivery.objects.order_by("-due_at").first().due_at
    groups = sorted(_sweep(now), key=len)
    assert [len(g) for g in groups] == [2, 4]  # other@ its own digest; team@ through both channels
    for group in groups:
        assert services.deliveries_send(delivery_ids=group, now=now) == "sent"
    assert sorted((m.to[0], m.subject) for m in mailoutbox) == [
        ("other@example.com", "2 reminders: Kubernetes v9.99: Code Freeze in 3 days and 1 more"),
        ("team@example.com", "4 reminders: Kubernetes v9.99: Code Freeze in 3 days and 3 more"),
    ]
    assert Delivery.objects.filter(milestone__in=freezes, state=State.SENT).count() == 6


@pytest.mark.django_db
def test_digests_off_sends_each_row_alone(kinds, bot, settings):
    settings.REMINDERS_DIGESTS = False
    rule(bot, offsets="3d")
    rows = _rows(bot, _freezes(2))
    assert _sweep(rows[-1].due_at) == sorted(r.pk for r in rows)


# ------------------------------------------------------------------ Slack's limit


@pytest.fixture
def shared_cache():
    """Django's cache on the real Redis under a prefix of this test's own."""
    with redis_cache_at(redis_url()) as cache:
        yield cache


def test_the_rate_limit_gives_each_second_to_one_message_per_channel(settings, shared_cache):
    settings.OUTBOX_SLACK_CHANNEL_RATE = 1
    settings.OUTBOX_SLACK_MAX_WAIT_SECONDS = 3
    now = math.floor(time.time()) + 0.5
    assert ratelimit.reserve("chan:C1", now=now) == now - 0.5
    assert ratelimit.reserve("chan:C1", now=now) == now + 0.5  # the next second
    assert ratelimit.reserve("chan:C2", now=now) == now - 0.5  # another channel: its own count
    assert ratelimit.reserve("chan:C1", now=now) == now + 1.5
    assert ratelimit.reserve("chan:C1", now=now) == now + 2.5
    assert ratelimit.reserve("chan:C1", now=now) is None  # nothing free within 3 s: the ledger waits
    settings.OUTBOX_SLACK_CHANNEL_RATE = 2
    assert ratelimit.reserve("chan:C3", now=now) == ratelimit.reserve("chan:C3", now=now) == now - 0.5


def test_a_429_holds_the_channel_for_its_retry_after(settings, shared_cache):
    settings.OUTBOX_SLACK_CHANNEL_RATE = 1
    now = math.floor(time.time()) + 0.5
    ratelimit.hold("chan:C9", 2, now=now)
    assert ratelimit.reserve("chan:C9", now=now) == now + 2.5


def test_a_posts_turn_keeps_its_reserved_second_and_takes_a_free_one_when_woken_late(settings, shared_cache):
    """``ratelimit.turn``, used by reminders and schedule notices alike."""
    settings.OUTBOX_SLACK_CHANNEL_RATE = 1
    settings.OUTBOX_SLACK_MAX_WAIT_SECONDS = 3
    now = math.floor(time.time()) + 0.5
    assert ratelimit.turn("chan:T1", now=now) == now - 0.5  # nothing reserved: the current second
    assert ratelimit.turn("chan:T1", slot=now + 1.5, now=now) == now + 1.5  # woken early: wait on for it
    assert ratelimit.turn("chan:T1", slot=now - 0.5, now=now) == now - 0.5  # in its second: go
    # Woken two seconds late: the current second is free, so it goes now...
    assert ratelimit.turn("chan:T1", slot=now - 2.5, now=now + 1) == now + 0.5
    # ...and when that second is taken too, it reserves the next free one.
    assert ratelimit.turn("chan:T1", slot=now - 2.5, now=now + 1) == now + 1.5
    ratelimit.hold("chan:T1", 5, now=now + 1)
    assert ratelimit.turn("chan:T1", slot=now - 2.5, now=now + 1) is None  # nothing free soon: the sweep


@pytest.mark.django_db
def test_a_send_waits_for_its_channels_second_without_claiming(kinds, bot, fake_slack, settings, shared_cache):
    settings.OUTBOX_SLACK_CHANNEL_RATE = 1
    rule(bot, offsets="3d").__class__.objects.update(combine=False)
    first, second = _rows(bot, _freezes(2))
    requeued = []
    now = second.due_at
    assert services.delivery_send(delivery_id=first.pk, now=now) == "sent"
    # The first send's second, and (as a loaded machine may cross into the next second
    # before the send below) the next two, are taken.
    ratelimit.hold(target_key(bot, ""), 3)
    result = services.deliveries_send(
        delivery_ids=[second.pk], now=now, requeue=lambda ids, slot, wait: requeued.append((ids, slot, wait))
    )
    assert result == "deferred"
    ((ids, slot, wait),) = requeued
    assert ids == [second.pk]
    assert slot == math.floor(slot)  # a second of its own: the next free one
    assert 0 < wait <= 4
    second.refresh_from_db()
    assert (second.state, second.attempts) == (State.PENDING, 0)  # nothing claimed meanwhile
    while time.time() < slot:  # what the countdown does
        time.sleep(0.05)
    assert services.deliveries_send(delivery_ids=ids, now=now, slot=slot) == "sent"
    assert fake_slack.received == {first.pk: 1, second.pk: 1}


@pytest.mark.django_db
def test_the_second_message_of_a_split_digest_waits_for_its_own_second(kinds, bot, fake_slack, settings, shared_cache):
    settings.OUTBOX_SLACK_CHANNEL_RATE = 1
    rule(bot, offsets="3d")
    freezes = _freezes(
        50, description="d" * 1500, apart=dt.timedelta(seconds=30)
    )  # 50 sections: 49 in the first message
    rows = _rows(bot, freezes)
    now = rows[-1].due_at
    (digest,) = _sweep(now)
    requeued = []
    started = time.time()
    result = services.deliveries_send(delivery_ids=digest, now=now, requeue=lambda *a: requeued.append(a))
    calls = fake_slack.matching(lambda c: c.delivered)
    assert Delivery.objects.filter(pk__in=digest, state=State.SENT).count() == (49 if result == "deferred" else 50)
    if result == "deferred":  # the usual case: the first message went out within its second
        ((left, _slot, _wait),) = requeued
        (last,) = Delivery.objects.filter(pk__in=digest).exclude(state=State.SENT)
        assert left == [last.pk]
        assert (last.state, last.attempts) == (State.PENDING, 0)
        assert len(calls) == 1
    else:  # a loaded machine took over a second to send the first: the next second was free
        assert result == "sent"
        assert len(calls) == 2
        # The first message took the second the send started in (or a later one); the
        # second message reserved a later second and posted in it. (When they reach Slack
        # is the machine's: the first may arrive late, in the second message's second.)
        assert calls[1].at >= math.floor(started) + 1
    stats = fake_slack.stats()
    assert (stats["distinct"], stats["duplicates"]) == (len(digest) - len(requeued), 0)


@pytest.mark.django_db
def test_a_send_woken_after_its_second_takes_the_current_one_or_reserves_again(
    kinds, bot, fake_slack, settings, shared_cache
):
    settings.OUTBOX_SLACK_CHANNEL_RATE = 1
    rule(bot, offsets="3d").__class__.objects.update(combine=False)
    first, second = _rows(bot, _freezes(2))
    now = second.due_at
    missed_second = math.floor(time.time()) - 5.0  # a busy worker ran it five seconds late
    key = target_key(bot, "")
    # Another send holds the current second; held for the next few too, so that the send
    # below still finds its second taken when a loaded machine crosses into the next one.
    ratelimit.hold(key, 5)
    requeued = []
    result = services.deliveries_send(
        delivery_ids=[first.pk], now=now, slot=missed_second, requeue=lambda *a: requeued.append(a)
    )
    assert result == "deferred"
    ((_ids, slot, _wait),) = requeued
    assert slot > missed_second + 5  # a second still to come
    # A late send whose current second is free goes at once.
    while math.floor(time.time()) <= slot:
        time.sleep(0.05)
    assert services.deliveries_send(delivery_ids=[second.pk], now=now, slot=missed_second) == "sent"
    assert fake_slack.received == {second.pk: 1}


@pytest.mark.django_db
def test_a_poisoned_row_is_dropped_from_its_digest_and_fails_alone(kinds, mailoutbox, caplog):
    rule(channel("email", "team", to=["team@example.com"]), offsets="3d")
    freezes = _freezes(3)
    # A title with CR/LF stored before imports refused them: Django refuses the subject.
    type(freezes[0]).objects.filter(pk=freezes[0].pk).update(title="Code Freeze\r\nBcc: x@example.com")
    now = Delivery.objects.order_by("-due_at").first().due_at
    [group] = _sweep(now)
    services.deliveries_send(delivery_ids=group, now=now)
    assert [(m.to, m.subject) for m in mailoutbox] == [
        (["team@example.com"], "2 reminders: Kubernetes v9.99: Freeze 1 in 3 days and 1 more")
    ]
    poisoned = Delivery.objects.get(milestone=freezes[0])
    assert (poisoned.state, poisoned.attempts) == (State.FAILED, 1)
    assert poisoned.last_error.startswith("Unsendable: Header values can't contain newlines")
    assert Delivery.objects.filter(milestone__in=freezes[1:], state=State.SENT).count() == 2
    assert f"delivery {poisoned.pk} dropped from its digest, unsendable" in caplog.text
    assert services.deliveries_send(delivery_ids=group, now=now + dt.timedelta(hours=1)) == "not-claimed"
    assert len(mailoutbox) == 1
