"""The Slack ledger (slack_integration.outbox) and the broker's publish timeouts: a write
made while the broker is frozen or down answers within about 2 s, its Slack side effects
wait as ledger rows, and a sweep once the broker is back sends each exactly once."""

from __future__ import annotations

import datetime as dt
import os
import signal
import threading
import time

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from exceptions.models import ExceptionRequest
from exceptions.services import exception_request_approve
from releasecal import tz
from releasecal.services import enhancement_upsert, tracking_set
from slack_integration import outbox
from slack_integration.models import SlackIdentity, SlackWork
from tests.support.reminder_workers import ThrowawayRedis
from tests.support.slack import broker_at, redis_unreachable


def _later(seconds: float = 3600):
    return tz.utc_now() + dt.timedelta(seconds=seconds)


def _sweep_and_send(now) -> list[str]:
    """A sweep once the broker is back, its sends run here (as a worker would)."""
    sent: list[str] = []
    outbox.slack_work_sweep(now=now, enqueue=lambda pk: sent.append(outbox.slack_work_send(work_id=pk, now=now)))
    return sent


@pytest.mark.django_db
def test_a_write_with_the_broker_frozen_answers_within_2_s_and_its_post_follows_once(
    tmp_path, fake_slack, kep, enhancements_freeze, requester, monkeypatch, django_capture_on_commit_callbacks
):
    own = ThrowawayRedis(tmp_path).start()
    resume = threading.Timer(10, lambda: os.kill(own.proc.pid, signal.SIGCONT))
    try:
        with broker_at(own.url):
            outbox._enqueue(0)  # a warm pooled connection, as in a web process that has published before
            now = enhancements_freeze.deadline + dt.timedelta(days=1)
            monkeypatch.setattr(tz, "utc_now", lambda: now)
            client = APIClient()
            client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=requester).key}")

            def file(number: int) -> tuple[object, float]:
                body = {"kep": number, "milestone": enhancements_freeze.pk, "days": 2, "stage": "beta"}
                started = time.monotonic()
                with django_capture_on_commit_callbacks(execute=True):
                    response = client.post("/api/v1/exceptions/", body, format="json")
                return response, time.monotonic() - started

            baseline, usual = file(kep.number)  # the same write with the broker up, side by side
            assert baseline.status_code == 201, baseline.content
            other = enhancement_upsert(number=2401, title="Another KEP", owning_sig="node", participating_sigs=[])
            tracking_set(release=enhancements_freeze.release, enhancement=other, stage="beta", status="tracked")
            os.kill(own.proc.pid, signal.SIGSTOP)  # frozen: the TCP connection stays open, nothing answers
            resume.start()  # (the code before the timeouts hung here for good: resumed after 10 s)
            response, elapsed = file(other.number)
            os.kill(own.proc.pid, signal.SIGCONT)
    finally:
        resume.cancel()
        own.stop()
    assert response.status_code == 201, response.content
    waited = elapsed - usual
    assert waited < 2.0, f"the write waited {waited:.1f} s more on the frozen broker ({elapsed:.1f} s, {usual:.1f} s)"
    request = ExceptionRequest.objects.get(pk=response.json()["id"])
    assert list(SlackWork.objects.filter(request=request).values_list("key", "state")) == [("post", "pending")]
    SlackWork.objects.exclude(request=request).delete()  # the baseline's (published, left unsent)
    assert fake_slack.methods() == []

    monkeypatch.undo()
    assert _sweep_and_send(_later()) == ["sent"]
    assert _sweep_and_send(_later(7200)) == []  # exactly once
    assert fake_slack.methods() == ["chat.postMessage", "chat.getPermalink"]  # the post, then its link (the board)
    assert SlackWork.objects.get(request=request).state == "sent"


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
    assert fake_slack.methods() == ["chat.postMessage", "chat.getPermalink"]  # the post, then its link (the board)


@pytest.mark.django_db
def test_slack_unconfigured_writes_no_rows(settings, pending_request):
    settings.SLACK_BOT_TOKEN = ""
    assert SlackWork.objects.count() == 0
