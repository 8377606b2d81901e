"""The worker survives a broker loss: a real worker on a redis-server of the test's own,
Redis killed with SIGKILL and restarted on the same port; the same worker process
reconnects and sends a ledger row queued afterwards (CELERY_BROKER_CONNECTION_RETRY and
CELERY_BROKER_CONNECTION_MAX_RETRIES=None in config/settings/base.py)."""

from __future__ import annotations

import contextlib

import pytest
from celery import Celery

from slack_integration.models import SlackWork
from tests.support.pg import require_postgres
from tests.support.reminder_workers import ThrowawayRedis, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _answers(worker) -> bool:
    with contextlib.suppress(Exception):  # Redis not back yet
        return worker.ping()
    return False


def test_the_worker_reconnects_after_redis_is_killed_and_restarted(tmp_path, fake_slack, pending_request, workers):
    require_postgres()
    own = ThrowawayRedis(tmp_path).start()
    try:
        env = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": fake_slack.api_url}
        env["SLACK_RELEASE_TEAM_CHANNEL"] = "C0RELEASE"
        worker = workers(broker=own.url, name="reconnects", concurrency=1, env=env)
        own.proc.kill()  # SIGKILL: every connection drops at once
        own.proc.wait(timeout=10)
        own.start()  # the same port (the worker's broker URL)
        assert wait_for(lambda: _answers(worker), timeout=60), worker.output()
        assert worker.proc.poll() is None, worker.output()

        work = SlackWork.objects.get(request=pending_request, key="post")
        producer = Celery("producer", set_as_current=False)
        with producer.connection_for_write(own.url) as conn:
            producer.send_task("slack.work_send", args=[work.pk], connection=conn, queue=worker.queue)
        sent = SlackWork.objects.filter(pk=work.pk, state="sent")
        assert wait_for(sent.exists, timeout=60), worker.output()
        assert fake_slack.methods() == ["chat.postMessage", "chat.getPermalink"]  # the post, then its link
        assert worker.proc.poll() is None, worker.output()
    finally:
        own.stop()
