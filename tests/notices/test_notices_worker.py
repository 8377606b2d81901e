"""System test: a schedule change is told through a real Celery worker on Redis, once,
however often its task arrives (the fake Slack counts what arrives)."""

from __future__ import annotations

import pytest

from notices.models import NoticeDelivery, ScheduleNotice
from notices.tasks import notice_send_task
from releasecal import tz
from releasecal.models import EnhancementOwner
from releasecal.services import milestone_save
from tests.support.fake_slack import FakeSlack
from tests.support.reminder_workers import Worker, wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
]


def test_a_moved_freeze_is_sent_by_the_worker_on_commit_and_once_when_its_task_comes_again(
    settings, broker, celery_queue, kep, code_freeze, tmp_path
):
    EnhancementOwner.objects.create(enhancement=kep, github="dmme", slack_id="U0OWNER")
    with FakeSlack() as fake:
        env = {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": fake.api_url, "SLACK_RELEASE_TEAM_CHANNEL": "C0REL"}
        settings.SLACK_BOT_TOKEN, settings.SLACK_API_URL = env["SLACK_BOT_TOKEN"], env["SLACK_API_URL"]
        settings.SLACK_RELEASE_TEAM_CHANNEL = env["SLACK_RELEASE_TEAM_CHANNEL"]
        worker = Worker(broker=broker, name="notices", concurrency=2, env=env, log_dir=tmp_path, queue=celery_queue)
        try:
            worker.wait_ready()
            code_freeze.at = tz.parse_wall_time("2024-07-25 19:00", "America/Los_Angeles")
            milestone_save(milestone=code_freeze)  # commits: the task is queued on commit
            notice = ScheduleNotice.objects.get()
            rows = NoticeDelivery.objects.filter(notice=notice)
            assert wait_for(lambda: set(rows.values_list("state", flat=True)) == {"sent"}, timeout=120), (
                list(rows.values_list("recipient", "state", "last_error")),
                worker.output(),
            )
            notice_send_task.delay(notice.pk)  # the task redelivered, twice
            notice_send_task.delay(notice.pk)
            assert wait_for(worker.idle, timeout=60)
        finally:
            worker.stop()
        posts = fake.matching(lambda call: call.method == "chat.postMessage" and call.delivered)
    assert sorted(call.data["channel"] for call in posts) == ["C0REL", "U0OWNER"]
    assert {call.data["text"] for call in posts} == {"1.31: Code Freeze moved"}
    assert sorted(rows.values_list("recipient", flat=True)) == [
        "channel:C0REL",
        "email:kep2400@example.com",
        "slack:U0OWNER",
    ]
