"""The Slack ledger (slack_integration.outbox) and the broker's publish timeouts: a write
made while the broker is frozen or down answers within about 2 s, its Slack side effects
wait as ledger rows, and a sweep once the broker is back sends each exactly once."""

from __future__ import annotations

import datetime as dt

import pytest

from exceptions.services import exception_request_approve
from releasecal import tz
from slack_integration import outbox
from slack_integration.models import SlackIdentity, SlackWork
from tests.support.slack import redis_unreachable


def _later(seconds: float = 3600):
    return tz.utc_now() + dt.timedelta(seconds=seconds)


def _sweep_and_send(now) -> list[str]:
    """A sweep once the broker is back, its sends run here (as a worker would)."""
    sent: list[str] = []
    outbox.slack_work_sweep(now=now, enqueue=lambda pk: sent.append(outbox.slack_work_send(work_id=pk, now=now)))
    return sent


@pytest.mark.django_db
def test_a_decision_made_while_the_broker_is_down_updates_the_post_and_dms_once_later(
    settings, fake_slack, pending_request, release_team_member, requester, django_capture_on_commit_callbacks
):
    SlackIdentity.objects.create(slack_user_id="U0REQ", team_id="T1", user=requester)
    for kind in ("post",):
        SlackWork.objects.filter(request=pending_request, key=kind).update(state="sent")  # posted earlier
    pending_request.slack_messages.create(channel="C0RELEASE", ts="1721780000.000001")
    with redis_unreachable(settings), django_capture_on_commit_callbacks(execute=True):
        exception_request_approve(request=pending_request, actor=release_team_member)
    rows = SlackWork.objects.filter(request=pending_request).exclude(key="post")
    assert sorted((row.kind, row.event, row.state) for row in rows) == [
        ("dm", "approved", "pending"),
        ("update", "", "pending"),
    ]
    assert fake_slack.methods() == []

    assert _sweep_and_send(_later()) == ["sent", "sent"]
    assert _sweep_and_send(_later(7200)) == []
    assert sorted(fake_slack.methods()) == ["chat.postMessage", "chat.update", "conversations.open"]
    dm = fake_slack.matching(lambda call: call.method == "chat.postMessage")[0]
    assert "approved" in dm.data["text"].lower()


@pytest.mark.django_db
def test_a_row_is_sent_by_one_send_however_many_deliveries(fake_slack, pending_request):
    work = SlackWork.objects.get(request=pending_request, key="post")
    now = _later()
    assert outbox.slack_work_send(work_id=work.pk, now=now) == "sent"
    assert outbox.slack_work_send(work_id=work.pk, now=now) == "not claimed"
    assert outbox.slack_work_send(work_id=work.pk, now=_later(7200)) == "not claimed"
    assert fake_slack.methods() == ["chat.postMessage"]


@pytest.mark.django_db
def test_slack_unconfigured_writes_no_rows(settings, pending_request):
    settings.SLACK_BOT_TOKEN = ""
    assert SlackWork.objects.count() == 0
