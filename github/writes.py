"""Writing the board (read-write mode) through the outbox's machinery (``outbox.ledger``):
the third ledger, ``BoardWrite``, one row per event of a request.

The row is written in the change's transaction (a receiver of the exception workflow's
signals) and sent on commit; the send claims it (exactly one worker), reads the board,
plans what differs from releasecal's record (``github.sync.board_plan``), adds the item
when the KEP is not on the board (or a draft item for a second exception), and sets the
fields of the item in one GraphQL document (the secondary limit counts requests). The
send writes what differs *now*: a lost reply that had written is read back on the retry
and nothing is written twice. Failures go to ``Ledger.record_failure`` (backoff,
give-up, the 429 rule); a permanent one is shown in the admin and the cockpit.
"""

from __future__ import annotations

import datetime as dt
import logging

from celery import current_app
from django.conf import settings
from django.db import transaction

from exceptions.followup import exception_request_board_item_set
from github import client as github_client
from github import mapping
from github.board import board_read
from github.client import BoardClient, GitHubUnavailable
from github.models import Board, BoardConflict, BoardItem, BoardWrite
from github.sync import ACTION_ADD_ISSUE, ACTION_DRAFT, board_plan, draft_title, item_url
from outbox.errors import TransportError
from outbox.ledger import Ledger
from releasecal import tz

log = logging.getLogger(__name__)

LEDGER = Ledger(model=BoardWrite, name="board")
SEND_TASK = "github.board_write_send"


def board_write_record(*, request, event: str) -> BoardWrite | None:
    """The write of ``event`` of ``request`` (an ExceptionRequest), in the caller's
    transaction, sent on commit; None when the release's board is not read-write. An
    event heard twice is one row (``one_board_write_per_event``)."""
    board = Board.objects.filter(release_id=request.release_id, mode=Board.Mode.READ_WRITE).first()
    if board is None:
        return None
    write, created = BoardWrite.objects.get_or_create(board=board, request=request, event=event)
    if created:
        transaction.on_commit(lambda: _enqueue(write.pk), robust=True)
    return write


def _enqueue(write_id: int) -> None:
    current_app.tasks[SEND_TASK].delay(write_id)


def enqueue_write(write_id: int) -> None:
    """Queue the send of a write (on commit of the transaction that made it)."""
    _enqueue(write_id)


def open_conflict_fields(request_id: int) -> set[str]:
    """The handbook names of a request's fields with an open ``BoardConflict``: no write
    sets them until a person resolves the conflict (docs/github.md, ownership)."""
    return set(
        BoardConflict.objects.filter(request_id=request_id, resolved_at__isnull=True).values_list("field", flat=True)
    )


def _transport_error(exc: GitHubUnavailable) -> TransportError:
    return TransportError(
        exc.message,
        permanent=exc.permanent,
        retry_after=exc.retry_after,
        rate_limited=exc.retry_after is not None,
        status=exc.status,
    )


def _value(kind: str, board_field, after) -> dict:
    if kind == "SINGLE_SELECT":
        return {"singleSelectOptionId": board_field.options[after]}
    if kind == "NUMBER":
        return {"number": float(after)}
    if kind == "DATE":
        return {"date": str(after)}
    return {"text": str(after)}


def field_updates_document(count: int) -> str:
    """One mutation document setting ``count`` fields of one item (aliases f0, f1, ...):
    the updates of one item are one request. Generated, and validated against GitHub's
    schema by the fake and by ``tests/github``."""
    variables = ", ".join(f"$field{i}: ID!, $value{i}: ProjectV2FieldValue!" for i in range(count))
    fields = "\n".join(
        f"  f{i}: updateProjectV2ItemFieldValue(input: {{projectId: $project, itemId: $item, "
        f"fieldId: $field{i}, value: $value{i}}}) {{ projectV2Item {{ id }} }}"
        for i in range(count)
    )
    return f"mutation SetFields($project: ID!, $item: ID!, {variables}) {{\n{fields}\n}}\n"


def _write(github: BoardClient, write: BoardWrite) -> list[dict]:
    board = write.board
    snapshot = board_read(github, owner=board.owner, number=board.number)
    report = board_plan(board, snapshot)
    plan = next((p for p in report.plans if p.request_id == write.request_id), None)
    if plan is None:
        return []
    item_id = plan.item_id
    kind = plan.item_kind
    url = plan.item_url
    if plan.action == ACTION_ADD_ISSUE:
        data = github.graphql("issue_id", {"owner": board.owner, "name": "enhancements", "number": plan.kep})
        issue = (data.get("repository") or {}).get("issue")
        if not issue:
            raise GitHubUnavailable(f"GitHub has no issue {board.owner}/enhancements#{plan.kep}", permanent=True)
        added = github.graphql("add_item", {"project": snapshot.project_id, "content": issue["id"]})
        item = added["addProjectV2ItemById"]["item"]
        item_id, kind, url = item["id"], BoardItem.Kind.ISSUE, item_url(board, item.get("fullDatabaseId") or "")
    elif plan.action == ACTION_DRAFT:
        request = write.request
        added = github.graphql("add_draft", {"project": snapshot.project_id, "title": draft_title(request), "body": ""})
        item = added["addProjectV2DraftIssue"]["projectItem"]
        item_id, kind, url = item["id"], BoardItem.Kind.DRAFT, item_url(board, item.get("fullDatabaseId") or "")
    # A field with an open conflict is left as the person set it; a reconcile's write
    # fills only what the board leaves empty (it never replaces a value on the board).
    held = open_conflict_fields(write.request_id)
    names = mapping.Names(dict(board.field_names or {}))
    held_names = {names.field(name).casefold() for name in held}
    fill_only = write.event.startswith("reconcile:")
    plan.changes = [
        change
        for change in plan.changes
        if change.field.casefold() not in held_names and not (fill_only and change.before not in (None, ""))
    ]
    if not plan.linked:
        BoardItem.objects.update_or_create(
            request_id=write.request_id,
            defaults={"board": board, "item_id": item_id, "kind": kind, "linked_at": tz.utc_now()},
        )
    if url:
        exception_request_board_item_set(request_id=write.request_id, url=url)
    if not plan.changes:
        return []
    variables: dict = {"project": snapshot.project_id, "item": item_id}
    for i, change in enumerate(plan.changes):
        board_field = snapshot.fields[change.field]
        variables[f"field{i}"] = board_field.id
        variables[f"value{i}"] = _value(board_field.data_type, board_field, change.after)
    github.request_document(field_updates_document(len(plan.changes)), variables)
    return [{"field": c.field, "before": c.before, "after": c.after} for c in plan.changes]


def board_write_send(*, write_id: int, client: BoardClient | None = None, now: dt.datetime | None = None) -> str:
    """Claim, write and record one board write; what happened ("sent", "retry",
    "failed", "rate-limited", "not claimed")."""
    now = now or tz.utc_now()
    if LEDGER.claim([write_id], now=now) != [write_id]:
        return "not claimed"
    write = BoardWrite.objects.select_related("board__release").get(pk=write_id)
    try:
        # Not retried inside the send (a retried mutation whose reply was lost would
        # write twice): the ledger retries the whole send, which reads the board first.
        github = client or github_client.board_client(retries=0)
        if github is None:
            raise GitHubUnavailable("No GitHub credentials are set (docs/github.md)", permanent=True)
        written = _write(github, write)
    except GitHubUnavailable as exc:
        return LEDGER.record_failure([write], _transport_error(exc), now=now, service="GitHub")
    LEDGER.held([write_id], now=now).update(written=written)
    LEDGER.record_sent([write_id], now=now)
    return "sent"


def board_writes_sweep(*, now: dt.datetime | None = None) -> list[int]:
    """Beat's minute sweep: writes whose worker was lost go back to pending, and every
    write that may go now (never queued, broker down, a retry's time come) is queued."""
    now = now or tz.utc_now()
    LEDGER.reclaim_expired(now=now)
    quiet = now - dt.timedelta(seconds=settings.OUTBOX_REQUEUE_SECONDS)  # not one just queued on commit
    due = list(
        BoardWrite.objects.filter(LEDGER.claimable(now), updated_at__lt=quiet).values_list("pk", flat=True)[:500]
    )
    for write_id in due:
        try:
            _enqueue(write_id)
        except Exception:  # the broker is down: the next sweep tries again
            log.warning("could not queue board write %s", write_id, exc_info=True)
            break
    return due


def board_write_retry(*, write_ids: list[int]) -> int:
    """The admin's Retry: failed writes back to pending with their attempts anew, queued
    on commit (a write that is not failed is left alone)."""
    now = tz.utc_now()
    with transaction.atomic():
        ids = list(
            BoardWrite.objects.filter(pk__in=write_ids, state=BoardWrite.State.FAILED).values_list("pk", flat=True)
        )
        BoardWrite.objects.filter(pk__in=ids).update(
            state=BoardWrite.State.PENDING, attempts=0, next_attempt_at=None, last_error="", updated_at=now
        )
        for write_id in ids:
            transaction.on_commit(lambda write_id=write_id: _enqueue(write_id), robust=True)
    return len(ids)
