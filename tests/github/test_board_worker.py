"""System tests: a request filed in the database reaches the fake board through a real
Celery worker (PostgreSQL shared with it, Redis as the broker), written once; a person's
edit on the board comes back through the webhook and the worker's pull of the item."""

from __future__ import annotations

import datetime as dt

import pytest
from django.test import Client

from exceptions.fields import RequestFields
from exceptions.services import exception_request_approve, exception_request_submit
from github.models import Board, BoardConflict, BoardItem, BoardWrite
from github.services import board_sync
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


def test_a_webhook_event_is_pulled_by_a_worker_and_the_conflict_follows_the_board(
    broker, workers, github, project, enhancements, kep, code_freeze, requester, settings
):
    """The webhook path end to end: a person's edit on the board, its signed delivery to
    ``POST /github/webhook``, the item's pull on a real worker (one small read), the
    conflict recorded; set back on the board, the next event closes it."""
    token = github.token("releasecal-bot", kind="fine-grained", permissions={"organization_projects": "write"})
    settings.GITHUB_API_URL, settings.GITHUB_TOKEN = github.api_url, token
    settings.GITHUB_WEBHOOK_SECRET = "worker-webhook-secret"
    board = Board.objects.create(
        release=code_freeze.release, owner="kubernetes", number=241, mode=Board.Mode.READ_WRITE
    )
    item = project.add_issue(enhancements.issue(2400, "Node memory swap support"))
    worker = workers(broker=broker, name="hooks", env={"GITHUB_API_URL": github.api_url, "GITHUB_TOKEN": token})
    request = exception_request_submit(
        enhancement=kep,
        milestone=code_freeze,
        requester=requester,
        fields=RequestFields(days=2, enhancement_name=kep.title, stage="beta", sig="node"),
        submitted_at=code_freeze.deadline + dt.timedelta(hours=1),
    )
    assert wait_for(lambda: BoardWrite.objects.filter(state="sent").exists(), timeout=60), worker.output()
    board_sync(board=board, dry_run=True)  # a read of the board: it learns its project's node id
    assert BoardItem.objects.get(request=request).item_id == item.node_id

    def deliver() -> None:
        delivery = github.payloads.projects_v2_item("edited", item, field_name="Exception Status")
        signed = delivery.headers(settings.GITHUB_WEBHOOK_SECRET)
        extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in signed.items() if k != "Content-Type"}
        answer = Client().post("/github/webhook", data=delivery.body, content_type="application/json", **extra)
        assert answer.status_code == 202, answer.content

    reads = len(github.graphql_requests())
    github.human_edit(item, "Exception Status", "Rejected")
    deliver()
    open_conflict = BoardConflict.objects.filter(request=request, resolved_at__isnull=True)
    assert wait_for(open_conflict.exists, timeout=60), worker.output()
    conflict = open_conflict.get()
    assert (conflict.field, conflict.board_value, conflict.releasecal_value) == (
        "Exception Status",
        "Rejected",
        "In Review",
    )
    github.human_edit(item, "Exception Status", "In Review")
    deliver()
    agreed = BoardConflict.objects.filter(pk=conflict.pk, resolution="agreed")
    assert wait_for(agreed.exists, timeout=60), worker.output()
    assert [r.json["query"].split("query ")[1].split("(")[0] for r in github.graphql_requests()[reads:]] == [
        "BoardItem",
        "BoardItem",
    ]
    request.refresh_from_db()
    assert request.state == "pending"  # the board's value never changed releasecal's record
