"""Writing the board (read-write mode) through the outbox's ledger: each event of a
request is one row, written once; the item gets the handbook's values; faults and rate
limits lose nothing and write nothing twice."""

from __future__ import annotations

import datetime as dt

import pytest
from graphql import parse, validate

from exceptions.fields import RequestFields
from exceptions.services import (
    exception_decision_correct,
    exception_request_amend,
    exception_request_approve,
    exception_request_submit,
)
from github import receivers
from github.models import Board, BoardItem, BoardWrite
from github.selectors import board_rows
from github.writes import board_write_retry, board_write_send, board_writes_sweep, field_updates_document
from tests.support.fake_github.graphql_api import schema

DECIDED = dt.datetime(2024, 7, 25, 10, 0, tzinfo=dt.UTC)


@pytest.fixture
def writing(board, github_settings, github):
    board.mode = Board.Mode.READ_WRITE
    board.save()
    github_settings.GITHUB_TOKEN = github.token(
        "releasecal-bot", kind="fine-grained", permissions={"organization_projects": "write", "issues": "read"}
    )
    return board


@pytest.fixture
def swap(enhancements):
    return enhancements.issue(2400, "Node memory swap support", labels=["lead-opted-in"], milestone="v1.31")


def file(kep, milestone, requester, days=2):
    return exception_request_submit(
        enhancement=kep,
        milestone=milestone,
        requester=requester,
        fields=RequestFields(days=days, enhancement_name=kep.title, stage="beta", sig="node"),
        submitted_at=milestone.deadline + dt.timedelta(hours=1),
    )


def send_all() -> list[str]:
    return [board_write_send(write_id=w.pk) for w in BoardWrite.objects.order_by("pk")]


def test_the_generated_field_updates_are_valid_against_githubs_schema():
    assert validate(schema(), parse(field_updates_document(3))) == []


def test_a_filed_request_sets_the_handbooks_values_in_one_document(
    writing, project, swap, kep, code_freeze, requester, github, django_capture_on_commit_callbacks
):
    item = project.add_issue(swap, {"Status": "Tracked For Code Freeze"})
    with django_capture_on_commit_callbacks(execute=False) as queued:
        request = file(kep, code_freeze, requester)
    assert [c.__qualname__ for c in queued if c.__module__ == "github.writes"] == [
        "board_write_record.<locals>.<lambda>"
    ]  # sent on commit
    (write,) = BoardWrite.objects.all()
    assert (write.event, write.state) == ("submitted", "pending")

    assert board_write_send(write_id=write.pk) == "sent"

    assert item.fields() == {
        "Title": "Node memory swap support",
        "Labels": ["lead-opted-in"],
        "Milestone": "v1.31",
        "Repository": "kubernetes/enhancements",
        "Status": "Exception Pending",
        "Exception Request Type": "Code and Test Freeze",
        "Exception Status": "In Review",
        "Additional Time": 2.0,
        "Exception Request Date": dt.date(2024, 7, 24),
    }
    (document,) = [r for r in github.graphql_requests() if r.operation == "mutation"]
    assert len(document.mutations) == 5  # the item's fields in one request
    assert BoardItem.objects.get(request=request).item_id == item.node_id
    write.refresh_from_db()
    assert (write.state, write.attempts, len(write.written)) == ("sent", 1, 5)
    assert board_write_send(write_id=write.pk) == "not claimed"  # never twice


def test_an_approval_sets_approved_and_exception_approved_once_and_a_correction_rewrites_it(
    writing, project, swap, pending_request, release_team_member, github, django_capture_on_commit_callbacks
):
    item = project.add_issue(swap)
    send_all()
    exception_request_approve(request=pending_request, actor=release_team_member, at=DECIDED)
    assert send_all() == ["not claimed", "sent"]
    assert item.value("Exception Status") == "Approved"
    assert item.value("Status") == "Exception Approved"
    assert item.value("Exception Decision Date") == dt.date(2024, 7, 25)
    assert [c.after for c in github.changes("field", via="graphql") if c.name == "Exception Status"] == [
        "In Review",
        "Approved",
    ]
    # The decision corrected (issue 24): one more write, heard twice still one row.
    with django_capture_on_commit_callbacks(execute=False) as queued:
        correction = exception_decision_correct(
            request=pending_request, actor=release_team_member, reason="Approved the wrong KEP.", outcome="rejected"
        )
        receivers.exception_decision_corrected(None, request=pending_request, correction=correction)
    assert [c.__qualname__ for c in queued if c.__module__ == "github.writes"] == [
        "board_write_record.<locals>.<lambda>"
    ]
    (write,) = BoardWrite.objects.filter(event="corrected:1")
    assert board_write_send(write_id=write.pk) == "sent"
    assert item.value("Exception Status") == "Rejected"
    assert item.value("Status") == "Removed From Milestone"


def test_a_kep_not_on_the_board_is_added_and_a_second_exception_is_a_draft(
    writing, project, swap, kep, code_freeze, enhancements_freeze, requester
):
    file(kep, code_freeze, requester)
    send_all()
    issue_item = project.item_for(swap)
    assert issue_item.value("Exception Request Type") == "Code and Test Freeze"
    second = file(kep, enhancements_freeze, requester, days=3)
    send_all()
    (draft,) = project.drafts()
    assert draft.content.title == f"KEP-2400: Enhancements Freeze exception (releasecal #{second.pk})"
    assert draft.value("Exception Request Type") == "Enhancements Freeze"
    assert draft.value("Status") is None  # the KEP's Status is on its issue's item
    assert issue_item.value("Exception Request Type") == "Code and Test Freeze"


def test_a_502_is_retried_by_the_ledger_and_a_lost_reply_is_not_written_twice(
    writing, project, swap, pending_request, github
):
    project.add_issue(swap)
    github.faults.fail_next(1, status=502, match="mutation", after=True)  # written, the reply lost
    (write,) = BoardWrite.objects.all()
    assert board_write_send(write_id=write.pk) == "retry"
    write.refresh_from_db()
    assert (write.state, write.attempts) == ("pending", 1)
    assert "502" in write.last_error
    BoardWrite.objects.filter(pk=write.pk).update(next_attempt_at=None)
    assert board_write_send(write_id=write.pk) == "sent"
    changes = github.changes("field", via="graphql")
    assert len(changes) == 5
    assert len({c.name for c in changes}) == 5  # each field once


def test_a_rate_limit_is_not_a_failed_attempt(writing, project, swap, pending_request, github):
    project.add_issue(swap)
    github.limits.set_remaining("graphql", 0, reset_in=90)
    (write,) = BoardWrite.objects.all()
    assert board_write_send(write_id=write.pk) == "rate-limited"
    write.refresh_from_db()
    assert (write.state, write.attempts) == ("pending", 0)
    assert write.next_attempt_at is not None


def test_a_permanent_refusal_fails_the_write_with_githubs_words(
    writing, project, swap, pending_request, github, github_settings
):
    project.add_issue(swap)
    github_settings.GITHUB_TOKEN = github.token("reader", kind="fine-grained", permissions={"issues": "read"})
    (write,) = BoardWrite.objects.all()
    assert board_write_send(write_id=write.pk) == "failed"
    write.refresh_from_db()
    assert write.state == "failed"
    assert write.last_error == "GitHub refused the query: FORBIDDEN: Resource not accessible by personal access token"
    github_settings.GITHUB_TOKEN = github.token(
        "writer", kind="fine-grained", permissions={"organization_projects": "write"}
    )
    assert board_rows()[0].failed_writes == 1  # the cockpit says so, with a link to Retry
    assert board_write_retry(write_ids=[write.pk]) == 1
    assert board_write_send(write_id=write.pk) == "sent"


def test_a_read_only_board_writes_nothing(board, project, swap, pending_request, github):
    assert not BoardWrite.objects.exists()
    assert github.mutations() == []


def test_the_sweep_queues_what_was_never_sent(writing, project, swap, pending_request, settings, monkeypatch):
    queued = []
    monkeypatch.setattr("github.writes._enqueue", queued.append)
    (write,) = BoardWrite.objects.all()
    assert board_writes_sweep(now=write.updated_at + dt.timedelta(seconds=1)) == []  # just queued on commit
    later = write.updated_at + dt.timedelta(seconds=settings.OUTBOX_REQUEUE_SECONDS + 1)
    assert board_writes_sweep(now=later) == [write.pk]
    assert queued == [write.pk]


def test_an_amendment_writes_its_new_days_once(writing, project, swap, pending_request, requester, github):
    item = project.add_issue(swap)
    send_all()
    amended = exception_request_amend(
        request=pending_request,
        fields=RequestFields(days=1, enhancement_name="Node memory swap support", stage="beta", sig="node"),
        actor=requester,
    )
    exception_request_amend(
        request=amended,
        fields=RequestFields(days=1, enhancement_name="Node memory swap support", stage="beta", sig="node"),
        actor=requester,
    )
    assert sorted(BoardWrite.objects.values_list("event", flat=True)) == ["amended:2", "amended:3", "submitted"]
    assert send_all() == ["not claimed", "sent", "sent"]
    assert item.value("Additional Time") == 1.0
    assert [c.after for c in github.changes("field", via="graphql") if c.name == "Additional Time"] == [2.0, 1.0]
