"""End to end on a real Celery worker and Redis with the fake Slack: ``/relcal request``
-> views.open (answered synchronously) -> view_submission -> the worker posts the request
to the release team's channel and DMs the requester -> Approve from the channel -> the
worker rewrites the channel message and DMs the requester the decision, once."""

from __future__ import annotations

import json

import pytest

from exceptions.models import ExceptionRequest
from releasecal import tz
from slack_integration.models import SlackDecisionMessage, SlackIdentity, SlackRequesterNotice
from tests.slack_integration.test_slack_modal import NOW, command, good_values, opened_view, submit
from tests.support.pg import require_postgres
from tests.support.reminder_workers import Worker, own_queue, purge_broker, wait_for
from tests.support.reminders_helpers import redis_url_or_skip
from tests.support.slack import post_signed

pytestmark = [
    pytest.mark.slow,
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(240),
]


@pytest.fixture
def worker(tmp_path, fake_slack):
    require_postgres()
    broker = redis_url_or_skip("CELERY_BROKER_URL")
    with own_queue("slack-modal") as queue:
        env = {
            "SLACK_API_URL": fake_slack.api_url,
            "SLACK_BOT_TOKEN": "xoxb-test",
            "SLACK_RELEASE_TEAM_CHANNEL": "C0RELEASE",
            "OUTBOX_HTTP_TRIES": "2",
        }
        started = Worker(broker=broker, name=queue, concurrency=1, env=env, log_dir=tmp_path, queue=queue)
        try:
            yield started.wait_ready()
        finally:
            started.stop()
            purge_broker(broker, queue)


def posts_to(fake_slack, channel: str):
    return fake_slack.matching(lambda c: c.method == "chat.postMessage" and c.data.get("channel") == channel)


def test_command_modal_submit_channel_post_approve_and_dm(
    client, fake_slack, worker, monkeypatch, kep, code_freeze, requester, release_team_member
):
    monkeypatch.setattr(tz, "utc_now", lambda: NOW)  # inside the code freeze's request window
    SlackIdentity.objects.create(slack_user_id="U0REQ", team_id="T1", user=requester)
    SlackIdentity.objects.create(slack_user_id="ULEAD", team_id="T1", user=release_team_member)

    response = command(client, "request 2400")
    assert (response.status_code, response.content) == (200, b"")
    view = opened_view(fake_slack)  # called while answering: before any worker ran

    response = submit(client, view, good_values(code_freeze))
    assert (response.status_code, response.content) == (200, b"")
    request = ExceptionRequest.objects.get()
    assert request.requester == requester

    assert wait_for(lambda: SlackDecisionMessage.objects.filter(request=request).exists(), timeout=90), (
        worker.output() + fake_slack.summary()
    )
    assert wait_for(lambda: len(posts_to(fake_slack, "DU0REQ")) == 1, timeout=60), worker.output()
    (post,) = posts_to(fake_slack, "C0RELEASE")
    actions = next(b for b in post.data["blocks"] if b["type"] == "actions")
    approve = next(e for e in actions["elements"] if e["action_id"] == "exception_approve")

    press = {
        "type": "block_actions",
        "user": {"id": "ULEAD", "team_id": "T1"},  # as Slack sends it: the workspace too
        "team": {"id": "T1", "domain": "kubernetes"},
        "channel": {"id": "C0RELEASE"},
        "container": {"type": "message", "message_ts": post.reply["ts"], "channel_id": "C0RELEASE"},
        "actions": [{"action_id": approve["action_id"], "value": approve["value"], "type": "button"}],
    }
    assert post_signed(client, "/slack/interactions", {"payload": json.dumps(press)}).status_code == 200
    request.refresh_from_db()
    assert request.state == "approved"

    assert wait_for(lambda: len(posts_to(fake_slack, "DU0REQ")) == 2, timeout=90), (
        worker.output() + fake_slack.summary()
    )
    assert wait_for(worker.idle, timeout=60)
    assert wait_for(lambda: fake_slack.methods().count("chat.update") == 1, timeout=30), fake_slack.summary()
    filed, decided = posts_to(fake_slack, "DU0REQ")
    assert "Your request was filed and posted to the release team" in filed.text
    assert decided.data["text"] == f"Exception request #{request.pk}: KEP-2400 Node memory swap support (approved)"
    assert (
        ":white_check_mark: *Approved* by lead. KEP-2400 may land until end of Thursday 25 July 2024 PDT "
        "(07:00 UTC Friday 26 July 2024)."
    ) in decided.text
    # Once each: one channel post, one update, one DM per event.
    assert len(posts_to(fake_slack, "C0RELEASE")) == 1
    assert fake_slack.methods().count("views.open") == 1
    assert fake_slack.methods().count("conversations.open") == 2
    assert sorted(SlackRequesterNotice.objects.values_list("event", flat=True)) == ["approved", "submitted"]
