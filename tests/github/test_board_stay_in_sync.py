"""Staying in sync (issue 25, item 4): the signed webhook queues a pull of the board;
beat's reconcile keeps the board right with no webhook; a person's edit of a field
releasecal owns is a conflict, resolved in one click, never overwritten either way."""

from __future__ import annotations

import datetime as dt
import hmac
import re

import pytest
from celery import current_app
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.test import Client

from exceptions.models import ExceptionRequest
from exceptions.services import exception_request_approve
from github.conflicts import ConflictRefused, conflict_keep_releasecal, conflict_take_board
from github.models import Board, BoardConflict, BoardItem, BoardWrite
from github.reconcile import board_item_reconcile, board_reconcile
from github.services import BoardRefused
from github.tasks import board_item_pull_task, board_reconcile_task
from github.webhooks import ITEM_PULL_TASK, PULL_TASK, item_pull_started, pull_key
from github.writes import board_write_send
from tests.support.fake_github.webhooks import Delivery

SECRET = "board-webhook-secret"
UNVERIFIED = "The GitHub webhook signature could not be verified.\n"


@pytest.fixture
def swap(enhancements):
    return enhancements.issue(2400, "Node memory swap support", labels=["lead-opted-in"], milestone="v1.31")


@pytest.fixture
def pulls(monkeypatch):
    """The pulls the webhook queues (board ids), instead of a broker."""
    queued: list[int] = []
    monkeypatch.setattr(current_app.tasks[PULL_TASK], "delay", queued.append)
    return queued


@pytest.fixture
def item_pulls(monkeypatch):
    """The item pulls the webhook queues ((board id, item node id)), instead of a broker."""
    queued: list[tuple[int, str]] = []
    monkeypatch.setattr(current_app.tasks[ITEM_PULL_TASK], "delay", lambda *args: queued.append(args))
    return queued


def run_pulls(queued: list) -> list[str]:
    """What a worker does with each item pull queued, in order."""
    done = []
    while queued:
        done.append(board_item_pull_task(*queued.pop(0)))
    return done


@pytest.fixture
def hook_settings(settings):
    settings.GITHUB_WEBHOOK_SECRET = SECRET
    return settings


def post(delivery: Delivery, secret: str | None, **headers):
    signed = {**delivery.headers(secret), **headers}
    extra = {f"HTTP_{k.upper().replace('-', '_')}": v for k, v in signed.items() if k != "Content-Type"}
    return Client().post("/github/webhook", data=delivery.body, content_type="application/json", **extra)


def on_board(board, project, swap, **values):
    """The request's item on the board holding releasecal's record, as a write leaves it."""
    item = project.add_issue(swap)
    board.mode = Board.Mode.READ_WRITE
    board.save()
    board_reconcile(board_id=board.pk)
    for write in BoardWrite.objects.filter(state="pending"):
        assert board_write_send(write_id=write.pk) == "sent"
    return item


def test_anything_unverifiable_is_one_401_and_queues_nothing(board, project, swap, github, hook_settings, pulls):
    delivery = github.payloads.projects_v2_item("edited", project.add_issue(swap), field_name="Exception Status")
    answers = [
        post(delivery, None),  # unsigned
        post(delivery, "another-secret"),  # forged
        post(delivery, SECRET, **{"X-Hub-Signature-256": "sha1=abc"}),  # malformed
        post(delivery, SECRET, **{"X-Hub-Signature-256": "sha256=" + "0" * 64}),
    ]
    hook_settings.GITHUB_WEBHOOK_SECRET = ""  # no secret set here: nothing can be verified
    answers.append(post(delivery, SECRET))
    assert [(a.status_code, a.content.decode()) for a in answers] == [(401, UNVERIFIED)] * 5
    assert pulls == []


def test_a_verified_delivery_is_answered_by_what_it_is(board, project, swap, github, hook_settings, pulls):
    item = project.add_issue(swap)
    ping = Delivery("ping", "", {"zen": "Keep it logically awesome.", "hook_id": 1})
    broken_body = b'{"action": "labeled", '
    broken_signature = {"X-Hub-Signature-256": "sha256=" + hmac.new(SECRET.encode(), broken_body, "sha256").hexdigest()}
    client = Client()
    answers = {
        "ping": post(ping, SECRET),
        "unknown event": post(Delivery("star", "created", {"action": "created"}), SECRET),
        "issues.opened": post(github.payloads.issues("opened", swap), SECRET),
        "broken JSON": client.post(
            "/github/webhook",
            data=broken_body,
            content_type="application/json",
            HTTP_X_GITHUB_EVENT="issues",
            **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in broken_signature.items()},
        ),
        "too big": client.post("/github/webhook", data=b"x" * (1024 * 1024 + 1), content_type="application/json"),
        "GET": client.get("/github/webhook"),
    }
    assert {name: (a.status_code, a.content.decode()) for name, a in answers.items()} == {
        "ping": (200, "pong\n"),
        "unknown event": (202, "Ignored: releasecal does not act on star.created.\n"),
        "issues.opened": (202, "Ignored: releasecal does not act on issues.opened.\n"),
        "broken JSON": (400, "The request body is not JSON.\n"),
        "too big": (413, "The request body is over 1048576 bytes.\n"),
        "GET": (405, ""),
    }
    assert pulls == []
    # An item of a project no board reads (another org's board) is ignored too.
    board.project_node_id = "PVT_another"
    board.save()
    edited = github.payloads.projects_v2_item("edited", item, field_name="Exception Status")
    answer = post(edited, SECRET)
    assert (answer.status_code, pulls) == (202, [])
    assert (
        answer.content.decode()
        == f"Ignored: item {item.node_id} of project {project.node_id} is on no board releasecal reads.\n"
    )


def test_an_item_edit_or_an_issue_event_queues_one_pull_of_its_board(
    board, project, swap, github, hook_settings, pulls
):
    item = project.add_issue(swap)
    board_reconcile(board_id=board.pk)  # the board learns its project's node id
    cache.delete(pull_key(board.pk))
    edited = github.payloads.projects_v2_item(
        "edited", item, field_name="Exception Status", extra={"changes": {"field_value": {"from": None, "to": None}}}
    )
    first, second = post(edited, SECRET), post(github.payloads.issues("labeled", swap, label="lead-opted-in"), SECRET)
    assert (first.status_code, first.content.decode()) == (202, "Accepted: the board will be read.\n")
    assert second.status_code == 202
    assert pulls == [board.pk]  # the second is covered by the pull not yet started
    cache.delete(pull_key(board.pk))  # the pull started
    post(github.payloads.issues("milestoned", swap), SECRET)
    assert pulls == [board.pk, board.pk]


def test_the_reconcile_fills_the_board_with_no_webhook_and_a_second_run_writes_nothing(
    board, project, swap, pending_request, github, settings
):
    assert settings.CELERY_BEAT_SCHEDULE["github-board-reconcile"]["task"] == "github.board_reconcile"
    item = project.add_issue(swap)
    board.mode = Board.Mode.READ_WRITE
    board.save()
    github_settings = settings
    github_settings.GITHUB_TOKEN = github.token(
        "releasecal-bot", kind="fine-grained", permissions={"organization_projects": "write"}
    )
    first = board_reconcile(board_id=board.pk)
    assert first.writes_queued == [pending_request.pk]
    (write,) = BoardWrite.objects.all()
    assert write.event.startswith("reconcile:")
    assert board_write_send(write_id=write.pk) == "sent"
    assert item.value("Exception Status") == "In Review"
    mutations = len(github.mutations())

    second = board_reconcile(board_id=board.pk)
    assert (second.changed, BoardWrite.objects.count(), len(github.mutations())) == (False, 1, mutations)


def test_a_person_changing_exception_status_is_a_conflict_never_overwritten(
    board, project, swap, pending_request, github, settings, django_capture_on_commit_callbacks
):
    settings.GITHUB_TOKEN = github.token("bot", kind="fine-grained", permissions={"organization_projects": "write"})
    item = on_board(board, project, swap)
    github.human_edit(item, "Exception Status", "Rejected")
    github.human_edit(item, "Note", "the lead's own words")

    found = board_reconcile(board_id=board.pk)
    (conflict,) = BoardConflict.objects.all()
    assert found.conflicts_opened == [conflict.pk]
    assert (conflict.item, conflict.field, conflict.board_value, conflict.releasecal_value) == (
        "kubernetes/enhancements#2400",
        "Exception Status",
        "Rejected",
        "In Review",
    )
    again = board_reconcile(board_id=board.pk)
    assert (again.changed, BoardConflict.objects.count()) == (False, 1)
    # An event's write meanwhile leaves the person's value as it is.
    BoardWrite.objects.create(board=board, request=pending_request, event="amended:9")
    assert board_write_send(write_id=BoardWrite.objects.get(event="amended:9").pk) == "sent"
    assert (item.value("Exception Status"), item.value("Note")) == ("Rejected", "the lead's own words")

    cockpit = Client()
    cockpit.force_login(get_user_model().objects.create_superuser("lead", "lead@example.org", "pw"))
    page = cockpit.get("/admin/").content.decode()
    assert "Board and releasecal disagree (1)" in page
    assert "Keep releasecal&#x27;s" in page

    with django_capture_on_commit_callbacks(execute=False):
        said = conflict_keep_releasecal(conflict_id=conflict.pk, actor=None)
    assert said == 'Exception Status of kubernetes/enhancements#2400: releasecal\'s "In Review" is being written.'
    write = BoardWrite.objects.get(event=f"conflict:{conflict.pk}")
    assert board_write_send(write_id=write.pk) == "sent"
    assert item.value("Exception Status") == "In Review"
    assert board_reconcile(board_id=board.pk).changed is False


def test_taking_the_boards_decision_decides_through_the_workflow(
    board, project, swap, pending_request, github, settings, release_team_member
):
    settings.GITHUB_TOKEN = github.token("bot", kind="fine-grained", permissions={"organization_projects": "write"})
    item = on_board(board, project, swap)
    github.human_edit(item, "Additional Time", 5)
    github.human_edit(item, "Exception Status", "Approved")
    board_reconcile(board_id=board.pk)
    days, status = BoardConflict.objects.order_by("field")
    assert (days.field, days.board_value, days.releasecal_value) == ("Additional Time", "5", "2")

    with pytest.raises(ConflictRefused) as refused:
        conflict_take_board(conflict_id=days.pk, actor=release_team_member)
    assert refused.value.message == (
        "Additional Time is not taken from the board: the days are the request's own: amend the request "
        "(its KEP page or the API) to ask for other days."
    )
    assert conflict_take_board(conflict_id=status.pk, actor=release_team_member) == (
        f"Request #{pending_request.pk} is approved as the board says."
    )
    pending_request.refresh_from_db()
    assert pending_request.state == "approved"
    assert (
        pending_request.decision.note
        == 'Taken from the board: Exception Status "Approved" on kubernetes/enhancements#2400'
    )
    with pytest.raises(ConflictRefused, match="was resolved already"):
        conflict_take_board(conflict_id=status.pk, actor=release_team_member)


def test_a_read_only_board_is_never_written_to_resolve(board, project, swap, pending_request, github):
    project.add_issue(swap, {"Exception Request Type": "Code and Test Freeze", "Exception Status": "Approved"})
    assert board_reconcile(board_id=board.pk).writes_queued == []  # read-only
    (conflict,) = BoardConflict.objects.all()
    with pytest.raises(ConflictRefused) as refused:
        conflict_keep_releasecal(conflict_id=conflict.pk, actor=None)
    assert refused.value.message == (
        "The board kubernetes/241 is Read-only: releasecal does not write it. Set it to read-write, or set "
        'Exception Status to "In Review" on the board by hand (the next reconcile closes the conflict).'
    )
    # A person sets it back on the board: the conflict closes itself.
    github.human_edit(project.item_for(swap), "Exception Status", "In Review")
    assert board_reconcile(board_id=board.pk).conflicts_closed == [conflict.pk]
    conflict.refresh_from_db()
    assert conflict.resolution == "agreed"


def test_bad_items_are_reported_and_the_reconcile_goes_on(board, project, swap, pending_request, github, enhancements):
    project.field("Exception Status").rename_option("In Review", "Under review")
    project.add_issue(swap)
    project.add_issue(
        enhancements.issue(9999, "A KEP releasecal does not know"), {"Exception Request Type": "Docs Freeze"}
    )
    project.add_draft("Second exception, KEP number forgotten", values={"Exception Request Type": "PRR Freeze"})
    result = board_reconcile(board_id=board.pk)
    assert result.report.problems == [
        "kubernetes/enhancements#9999: KEP-9999 (Docs Freeze) has no exception request in releasecal",
        'draft "Second exception, KEP number forgotten": no KEP number (a draft\'s title names it as KEP-1880)',
        'the board\'s field "Exception Status" has no option "In Review" '
        "(its options: Under review, Approved, Rejected)",
    ]
    assert BoardConflict.objects.count() == 0


def test_beat_queues_a_pull_of_every_board_read(board, release, pulls):
    cache.delete(pull_key(board.pk))
    assert board_reconcile_task() == 1
    assert pulls == [board.pk]
    board.mode = Board.Mode.OFF
    board.save()
    cache.delete(pull_key(board.pk))
    assert board_reconcile_task() == 0


def test_githubs_secondary_limit_is_said_with_its_own_status(board, project, swap, pending_request, github, settings):
    settings.GITHUB_TOKEN = github.token("bot", kind="fine-grained", permissions={"organization_projects": "write"})
    project.add_issue(swap)
    board.mode = Board.Mode.READ_WRITE
    board.save()
    board_reconcile(board_id=board.pk)
    (write,) = BoardWrite.objects.all()
    secondary = "You have exceeded a secondary rate limit and have been temporarily blocked from content creation."
    github.faults.fail_next(1, status=403, match="graphql", body={"message": secondary}, headers={"retry-after": "30"})
    assert board_write_send(write_id=write.pk) == "rate-limited"
    write.refresh_from_db()
    assert write.last_error == "Rate limited by GitHub (403): not before 30 s later"


def _edited(github, item):
    return github.payloads.projects_v2_item("edited", item, field_name="Exception Status")


def _query_names(requests) -> list[str]:
    """Each GraphQL request's operation ("query BoardItem")."""
    return [re.search(r"^(query|mutation) \w+", r.json["query"], re.M).group(0) for r in requests]


def test_an_edit_of_a_linked_item_costs_one_small_read_of_that_item(
    board, project, swap, pending_request, github, settings, enhancements, hook_settings, pulls, item_pulls
):
    settings.GITHUB_TOKEN = github.token("bot", kind="fine-grained", permissions={"organization_projects": "write"})
    for number in range(3000, 3120):  # a board of two pages, of which one item changes
        project.add_issue(enhancements.issue(number, f"KEP {number}"), {"Status": "Tracked For Code Freeze"})
    item = on_board(board, project, swap)
    assert BoardItem.objects.get().item_id == item.node_id
    cache.delete(pull_key(board.pk))
    before = len(github.graphql_requests())

    github.human_edit(item, "Exception Status", "Rejected")
    answer = post(_edited(github, item), SECRET)
    assert (answer.status_code, answer.content.decode()) == (202, "Accepted: the board will be read.\n")
    assert (pulls, item_pulls) == ([], [(board.pk, item.node_id)])
    (done,) = run_pulls(item_pulls)
    (read,) = github.graphql_requests()[before:]
    assert _query_names([read]) == ["query BoardItem"]
    assert read.json["variables"] == {"id": item.node_id}
    assert read.response["data"]["node"]["id"] == item.node_id  # the item, not the board's 121
    assert done.startswith("kubernetes/241: 1 items in 1 GraphQL requests; 0 writes queued, 1 conflicts opened")
    (conflict,) = BoardConflict.objects.all()
    assert (conflict.field, conflict.board_value, conflict.releasecal_value) == (
        "Exception Status",
        "Rejected",
        "In Review",
    )
    board.refresh_from_db()
    assert board.last_report["items_read"] == 121  # an item's pull leaves the board's report as it was


def test_a_burst_of_events_for_one_item_is_two_reads_and_ends_as_the_board_does(
    board, project, swap, pending_request, github, settings, hook_settings, pulls, item_pulls
):
    settings.GITHUB_TOKEN = github.token("bot", kind="fine-grained", permissions={"organization_projects": "write"})
    item = on_board(board, project, swap)
    cache.delete(pull_key(board.pk))
    before = len(github.graphql_requests())
    for value in ["Rejected", "Approved", "Rejected", "In Review", "Approved"] * 4:
        github.human_edit(item, "Exception Status", value)
        assert post(_edited(github, item), SECRET).status_code == 202
    assert item_pulls == [(board.pk, item.node_id)]  # one pull for the burst, not started yet

    # The worker starts it (the mark goes first); an event comes before its read.
    board_id, item_id = item_pulls.pop()
    item_pull_started(board_id, item_id)
    github.human_edit(item, "Exception Status", "Rejected")
    post(_edited(github, item), SECRET)
    assert item_pulls == [(board.pk, item.node_id)]  # queued again: the read under way may be before it
    first = board_item_reconcile(board_id=board_id, item_id=item_id)
    (second,) = run_pulls(item_pulls)
    assert len(first.conflicts_opened) == 1
    assert second.endswith("0 writes queued, 0 conflicts opened, 0 changed, 0 closed")
    assert _query_names(github.graphql_requests()[before:]) == ["query BoardItem"] * 2
    (conflict,) = BoardConflict.objects.all()
    assert (conflict.board_value, conflict.resolved_at) == ("Rejected", None)

    # Then Approved, then set back to releasecal's: the conflict follows, then closes.
    github.human_edit(item, "Exception Status", "Approved")
    post(_edited(github, item), SECRET)
    run_pulls(item_pulls)
    conflict.refresh_from_db()
    assert conflict.board_value == "Approved"
    github.human_edit(item, "Exception Status", "In Review")
    post(_edited(github, item), SECRET)
    run_pulls(item_pulls)
    conflict.refresh_from_db()
    assert (conflict.resolution, BoardConflict.objects.count(), BoardWrite.objects.count()) == ("agreed", 1, 1)
    assert pulls == []  # never the whole board


def test_what_one_item_cannot_answer_reads_the_whole_board(
    board, project, swap, pending_request, github, settings, enhancements, hook_settings, pulls, item_pulls
):
    settings.GITHUB_TOKEN = github.token("bot", kind="fine-grained", permissions={"organization_projects": "write"})
    item = on_board(board, project, swap)
    stranger = project.add_issue(enhancements.issue(4444, "Not an exception yet"))
    item.archived = True  # a person archived it
    archived = github.payloads.projects_v2_item("archived", item)
    item.archived = False
    answers = {}
    for name, delivery in {
        "an item no request is linked to": _edited(github, stranger),
        "deleted": github.payloads.projects_v2_item("deleted", stranger),
        "archived": archived,
        "restored": github.payloads.projects_v2_item("restored", item),
        "reordered": github.payloads.projects_v2_item("reordered", item, moved_from=stranger),
    }.items():
        cache.delete(pull_key(board.pk))
        pulls.clear()
        answer = post(delivery, SECRET)
        answers[name] = (answer.status_code, answer.content.decode(), list(pulls), list(item_pulls))
    assert answers == {
        "an item no request is linked to": (202, "Accepted: the board will be read.\n", [board.pk], []),
        "deleted": (202, "Accepted: the board will be read.\n", [board.pk], []),
        "archived": (202, "Accepted: the board will be read.\n", [board.pk], []),
        "restored": (202, "Accepted: the board will be read.\n", [board.pk], []),
        "reordered": (202, "Ignored: releasecal does not act on projects_v2_item.reordered.\n", [], []),
    }
    # A pull of the board queued and not started covers an item's event too.
    cache.delete(pull_key(board.pk))
    pulls.clear()
    post(_edited(github, stranger), SECRET)
    post(_edited(github, item), SECRET)
    assert (pulls, item_pulls) == ([board.pk], [])

    # The linked item is deleted from the board before its pull runs: the pull reads the board.
    cache.delete(pull_key(board.pk))
    post(_edited(github, item), SECRET)
    project.items.remove(item)
    before = len(github.graphql_requests())
    result = board_item_reconcile(board_id=board.pk, item_id=item.node_id)
    assert result.full == f"item {item.node_id} is no longer on the board"
    assert _query_names(github.graphql_requests()[before:]) == [
        "query BoardItem",
        "query BoardFields",
        "query BoardItems",
    ]
    assert f"its linked item {item.node_id} is no longer on the board" in " ".join(result.report.problems)


def test_an_item_github_refuses_to_read_is_recorded_on_the_board(
    board, project, swap, pending_request, github, settings
):
    settings.GITHUB_TOKEN = github.token("bot", kind="fine-grained", permissions={"organization_projects": "write"})
    item = on_board(board, project, swap)
    refusal = {"type": "FORBIDDEN", "path": ["node"], "message": "Resource not accessible by integration"}
    github.faults.fail_next(1, status=200, match="graphql", body={"data": {"node": None}, "errors": [refusal]})
    said = "GitHub refused the query: FORBIDDEN: Resource not accessible by integration"
    with pytest.raises(BoardRefused) as refused:
        board_item_reconcile(board_id=board.pk, item_id=item.node_id)
    assert refused.value.message == f"The item {item.node_id} of kubernetes/241 could not be read: {said}"
    board.refresh_from_db()
    assert (board.reachable, board.last_error) == (False, said)


def test_taking_the_boards_status_corrects_a_decided_request_or_says_why_not(
    board, project, swap, pending_request, github, settings, release_team_member, code_freeze
):
    settings.GITHUB_TOKEN = github.token("bot", kind="fine-grained", permissions={"organization_projects": "write"})
    item = on_board(board, project, swap)
    exception_request_approve(
        request=pending_request, actor=release_team_member, at=code_freeze.deadline + dt.timedelta(days=1)
    )
    for write in BoardWrite.objects.filter(state="pending"):
        assert board_write_send(write_id=write.pk) == "sent"
    assert item.value("Exception Status") == "Approved"

    github.human_edit(item, "Exception Status", "Rejected")
    board_reconcile(board_id=board.pk)
    (conflict,) = BoardConflict.objects.filter(resolved_at__isnull=True)
    assert conflict_take_board(conflict_id=conflict.pk, actor=release_team_member) == (
        f"Request #{pending_request.pk}'s decision is corrected to rejected, as the board says."
    )
    pending_request.refresh_from_db()
    assert pending_request.state == "rejected"
    (correction,) = pending_request.decision_corrections.all()
    assert correction.reason == 'Taken from the board: Exception Status "Rejected" on kubernetes/enhancements#2400'
    (write,) = BoardWrite.objects.filter(state="pending")  # the correction's, the field no longer held
    assert (write.event, board_write_send(write_id=write.pk)) == ("corrected:1", "sent")
    assert (item.value("Exception Status"), item.value("Status")) == ("Rejected", "Removed From Milestone")
    assert board_reconcile(board_id=board.pk).changed is False

    # In Review on a decided request: a reopen is releasecal's, with its reason.
    github.human_edit(item, "Exception Status", "In Review")
    board_reconcile(board_id=board.pk)
    (conflict,) = BoardConflict.objects.filter(resolved_at__isnull=True)
    with pytest.raises(ConflictRefused) as refused:
        conflict_take_board(conflict_id=conflict.pk, actor=release_team_member)
    assert refused.value.message == (
        f'The board says "In Review" but request #{pending_request.pk} is rejected in releasecal: a decision is '
        "reopened in releasecal (Reopen, with the reason), not from the board. Keep releasecal's, or change the "
        "request in releasecal."
    )
    # A withdrawn request is decided from nowhere.
    github.human_edit(item, "Exception Status", "Approved")
    board_reconcile(board_id=board.pk)
    conflict.refresh_from_db()
    ExceptionRequest.objects.filter(pk=pending_request.pk).update(state="withdrawn")
    with pytest.raises(ConflictRefused) as refused:
        conflict_take_board(conflict_id=conflict.pk, actor=release_team_member)
    assert refused.value.message == (
        f'The board says "Approved" but request #{pending_request.pk} is withdrawn in releasecal: a withdrawn '
        "request is not decided from the board. Keep releasecal's, or change the request in releasecal."
    )
    conflict.refresh_from_db()
    assert conflict.resolved_at is None  # a refusal changes nothing


def test_a_full_reconcile_github_refuses_is_recorded_on_the_board(board, project, github, settings):
    settings.GITHUB_TOKEN = github.token("bot", kind="fine-grained", permissions={"organization_projects": "write"})
    github.faults.fail_next(5, status=502, match="graphql")
    with pytest.raises(BoardRefused):
        board_reconcile(board_id=board.pk)
    board.refresh_from_db()
    assert board.reachable is False
    assert "502" in board.last_error
