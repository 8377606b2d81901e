"""Two simultaneous approvals of one request: exactly one decision, one clear conflict.

The test is transactional, so the Slack ledger's sends queued on commit are really published: to
a queue of this test's own, where they are counted (one post on filing, one update for
the one decision) and then deleted, never to a queue a worker of another test consumes."""

from __future__ import annotations

import os
import threading

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import connection

from exceptions.models import Decision, ExceptionRequest
from exceptions.services import exception_request_approve
from releasecal.errors import Conflict
from releasecal.models import AuditLog
from slack_integration.models import SlackWork
from tests.support.pg import require_postgres
from tests.support.reminder_workers import own_queue, purge_broker, queued_tasks

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def celery_queue(settings):
    """Set up before the request is filed (autouse fixtures come first). Slack is
    configured (never called: nothing consumes the queue), so its ledger has rows."""
    settings.SLACK_BOT_TOKEN, settings.SLACK_RELEASE_TEAM_CHANNEL = "xoxb-test", "C0RELEASE"
    with own_queue("concurrency") as queue:
        yield queue
        if settings.CELERY_BROKER_URL.startswith("redis"):
            purge_broker(settings.CELERY_BROKER_URL, queue)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("attempt", range(5))
def test_two_simultaneous_approvals_make_one_decision_and_one_conflict(celery_queue, pending_request, attempt):
    require_postgres()
    team = Group.objects.get(name="Release Team")
    deciders = []
    for name in ("lead-a", "lead-b"):
        user = User.objects.create_user(f"{name}-{attempt}")
        user.groups.add(team)
        pending_request.release.team.add(user)
        deciders.append(user)

    barrier = threading.Barrier(len(deciders))
    outcomes: list[object] = []
    lock = threading.Lock()

    def approve(user: User) -> None:
        try:
            request = ExceptionRequest.objects.get(pk=pending_request.pk)
            barrier.wait(timeout=10)
            result: object = exception_request_approve(request=request, actor=User.objects.get(pk=user.pk))
        except Exception as exc:  # noqa: BLE001 - the outcome itself is what is asserted
            result = exc
        finally:
            connection.close()
        with lock:
            outcomes.append(result)

    threads = [threading.Thread(target=approve, args=(user,)) for user in deciders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)

    decisions = [o for o in outcomes if isinstance(o, Decision)]
    conflicts = [o for o in outcomes if isinstance(o, Conflict)]
    assert len(outcomes) == 2, outcomes
    assert len(decisions) == 1, outcomes
    assert len(conflicts) == 1, outcomes
    assert conflicts[0].status_code == 409
    assert "already approved" in conflicts[0].message
    assert Decision.objects.filter(request=pending_request).count() == 1
    assert AuditLog.objects.filter(action="exception.approved", object_id=str(pending_request.pk)).count() == 1
    broker = settings.CELERY_BROKER_URL
    if broker.startswith("redis"):  # CI always; locally without Redis the broker is a folder
        published = queued_tasks(broker, celery_queue)
        work = list(SlackWork.objects.filter(request=pending_request).order_by("pk").values_list("pk", "key"))
        assert [key for _, key in work][0::2] == ["post", "dm:approved"]  # and one update between
        assert work[1][1].startswith("update:")
        assert published == [("slack.work_send", [pk]) for pk, _ in work]  # post, update, the DM
    else:
        assert os.environ.get("CI", "").lower() != "true", "CI runs this against Redis"
