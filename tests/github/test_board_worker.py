"""System test: a request filed in the database reaches the fake board through a real
Celery worker (PostgreSQL shared with it, Redis as the broker), written once."""

from __future__ import annotations

import datetime as dt

import pytest

from exceptions.fields import RequestFields
from exceptions.services import exception_request_approve, exception_request_submit
from github.models import Board, BoardWrite
from tests.support.reminder_workers import wait_for

pytestmark = [
    pytest.mark.slow,
    pytest.mark.redis,
    pytest.mark.postgres,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(180),
]


def test_a_filed_and_approved_request_is_written_by_a_worker_once(
    broker, workers, github, project, enhancements, kep, code_freeze, requester, release_team_member, settings
):
    token = github.token("releasecal-bot", kind="fine-grained", permissions={"organization_projects": "write"})
    settings.GITHUB_API_URL, settings.GITHUB_TOKEN = github.api_url, token
    Board.objects.create(release=code_freeze.release, owner="kubernetes", number=241, mode=Board.Mode.READ_WRITE)
    item = project.add_issue(enhancements.issue(2400, "Node memory swap support"))
    worker = workers(broker=broker, name="board", env={"GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": token})

    request = exception_request_submit(
        enhancement=kep,
        milestone=code_freeze,
        requester=requester,
        fields=RequestFields(days=2, enhancement_name=kep.title, stage="beta", sig="node"),
        submitted_at=code_freeze.deadline + dt.timedelta(hours=1),
    )
    assert wait_for(lambda: item.value("Exception Status") == "In Review", timeout=60), worker.output()
    exception_request_approve(
        request=request, actor=release_team_member, at=code_freeze.deadline + dt.timedelta(days=1)
    )
    assert wait_for(lambda: item.value("Status") == "Exception Approved", timeout=60), worker.output()
    assert wait_for(lambda: BoardWrite.objects.filter(state="sent").count() == 2, timeout=30)
    exception_status = [c.after for c in github.changes("field", via="graphql") if c.name == "Exception Status"]
    assert exception_status == ["In Review", "Approved"]
