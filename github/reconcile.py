"""Keeping a board in sync: the reconcile reads the whole board and compares each
exception item with releasecal's record. Run by beat every ``GITHUB_RECONCILE_SECONDS``
for every board that is not off (so the board stays correct when no webhook ever
arrives: ``projects_v2_item`` events reach only an organization's hook), and on a
webhook that one item cannot answer (``github.webhooks``), deduplicated per board.

``board_item_reconcile`` is the same for one item, read alone (one GraphQL request: the
item, its values and its board's fields): a webhook's event of an item linked to a
request (``BoardItem``). The item alone cannot say which request an unlinked item holds,
so an item that is not (or no longer) linked, gone from the board, archived or of
another project is judged by a full reconcile instead.

Ownership (docs/github.md): the exception fields are releasecal's. For each request
with no write of its own under way (a pending, sending or failed ``BoardWrite``: then
the board is behind releasecal, and the ledger catches it up):

- a field the board leaves empty, or an item not on the board yet: in read-write mode,
  one write (``reconcile:<time>``) that fills only what is missing;
- a field whose value on the board contradicts releasecal's (a person set Exception
  Status to Rejected on the board): a ``BoardConflict``, shown in the cockpit and the
  admin until someone resolves it; never overwritten either way meanwhile;
- the KEP's Status differing: left alone. Status is shared with the tracking
  lifecycle (after a grant the liaison moves it to "Tracked for …"), so a differing
  Status is neither a conflict nor overwritten here (the request's own events write it).

A conflict the board no longer shows (someone set the value back) is closed as
"agreed". A second run over an unchanged board writes nothing and records nothing new.
"""

from __future__ import annotations

import datetime as dt
import logging
from dataclasses import dataclass, field

from django.db import IntegrityError, transaction

from github import mapping
from github.board import board_item_read
from github.client import BoardClient, GitHubUnavailable
from github.models import Board, BoardConflict, BoardItem, BoardWrite
from github.services import BoardRefused, board_contact_record, board_github, board_sync
from github.sync import ACTION_UPDATE, SyncReport, board_plan
from github.writes import enqueue_write
from releasecal import tz

log = logging.getLogger(__name__)

# The fields whose differing value on the board is a person's edit to resolve.
CONFLICT_FIELDS = (
    mapping.EXCEPTION_STATUS,
    mapping.ADDITIONAL_TIME,
    mapping.LINK,
    mapping.PRS,
    mapping.REQUEST_DATE,
    mapping.DECISION_DATE,
)
# Fields a person owns: releasecal reads them and never writes them.
HUMAN_FIELDS = ("Note", "Enhancements Contact", "Exception Request Notes")
RECONCILE_EVENT = "reconcile:"


@dataclass
class ReconcileResult:
    report: SyncReport
    writes_queued: list[int] = field(default_factory=list)  # request ids
    conflicts_opened: list[int] = field(default_factory=list)  # BoardConflict ids
    conflicts_changed: list[int] = field(default_factory=list)
    conflicts_closed: list[int] = field(default_factory=list)
    full: str = ""  # an item's pull that read the whole board instead: why

    @property
    def changed(self) -> bool:
        return bool(self.writes_queued or self.conflicts_opened or self.conflicts_changed or self.conflicts_closed)

    def summary(self) -> str:
        instead = f" (the whole board: {self.full})" if self.full else ""
        return (
            f"{self.report.board}: {self.report.items_read} items in {self.report.requests} GraphQL requests"
            f"{instead}; "
            f"{len(self.writes_queued)} writes queued, {len(self.conflicts_opened)} conflicts opened, "
            f"{len(self.conflicts_changed)} changed, {len(self.conflicts_closed)} closed"
        )


def shown(value) -> str:
    """A board value as a person reads it (a whole number without ".0")."""
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def handbook_names(board: Board) -> dict[str, str]:
    """The board's field names (case folded) -> the handbook's, for the owned fields."""
    names = mapping.Names(dict(board.field_names or {}))
    return {names.field(name).casefold(): name for name in mapping.OWNED_FIELDS}


def board_reconcile(
    *, board_id: int, client: BoardClient | None = None, now: dt.datetime | None = None
) -> ReconcileResult:
    """Read the board and bring releasecal and the board together (module docstring).
    One reconcile of a board at a time (the board's row is locked for it). Raises
    ``github.services.BoardRefused`` when the board is off or cannot be read."""
    now = now or tz.utc_now()
    failed: BoardRefused | None = None
    with transaction.atomic():
        board = Board.objects.select_for_update().select_related("release").get(pk=board_id)
        try:
            report = board_sync(board=board, client=client)
        except BoardRefused as exc:
            if not isinstance(exc.__cause__, GitHubUnavailable):
                raise
            failed = exc
        else:
            result = ReconcileResult(report=report)
            _apply(board, report, result, now=now)
    if failed is not None:  # recorded after the transaction, which the refusal would roll back
        board_contact_record(Board.objects.get(pk=board_id), error=str(failed.__cause__))
        raise failed
    if result.changed:
        log.info("github reconcile %s", result.summary())
    return result


def board_item_reconcile(
    *, board_id: int, item_id: str, client: BoardClient | None = None, now: dt.datetime | None = None
) -> ReconcileResult:
    """Read one item of the board (one GraphQL request) and bring its request and the
    board together as the full reconcile does, for that request only. An item the read
    cannot judge alone (module docstring) is judged by :func:`board_reconcile` instead,
    in the same call (``result.full`` says why). Raises ``BoardRefused`` as it does."""
    now = now or tz.utc_now()
    failed: GitHubUnavailable | None = None
    with transaction.atomic():
        board = Board.objects.select_for_update().select_related("release").get(pk=board_id)
        if board.mode == Board.Mode.OFF:
            raise BoardRefused(f"The board of {board.release.slug} is off: set its mode in the admin")
        linked = BoardItem.objects.filter(board=board, item_id=item_id).values_list("request_id", flat=True).first()
        if not board.project_node_id:
            return _instead(board_id, client, now, "the board's project is not known yet")
        if linked is None:
            return _instead(board_id, client, now, f"item {item_id} holds no request releasecal linked")
        github = board_github(client)
        try:
            snapshot = board_item_read(github, item_id=item_id)
        except GitHubUnavailable as exc:
            failed = exc
        else:
            board_contact_record(board)
            why = ""
            if snapshot is None:
                why = f"item {item_id} is no longer on the board"
            elif snapshot.project_id != board.project_node_id:
                why = f"item {item_id} is on another project ({snapshot.project_id})"
            elif snapshot.items[0].archived:
                why = f"item {item_id} is archived"
            if why:
                return _instead(board_id, github, now, why)
            result = _item_apply(board, snapshot, linked, now=now)
    if failed is not None:  # recorded after the transaction, which the refusal would roll back
        log.warning("github board %s: item %s: %s", board, item_id, failed)
        board_contact_record(Board.objects.get(pk=board_id), error=str(failed))
        raise BoardRefused(f"The item {item_id} of {board.owner}/{board.number} could not be read: {failed}")
    if result.changed:
        log.info("github reconcile %s", result.summary())
    return result


def _item_apply(board: Board, snapshot, request_id: int, *, now: dt.datetime) -> ReconcileResult:
    """The full reconcile's steps over a snapshot of one item, for its linked request."""
    item = snapshot.items[0]
    planned = board_plan(board, snapshot)
    report = SyncReport(
        release=planned.release,
        board=planned.board,
        title=snapshot.title,
        mode=planned.mode,
        items_read=1,
        exception_items=planned.exception_items,
        requests=snapshot.requests,
        plans=[plan for plan in planned.plans if plan.request_id == request_id and plan.item_id == item.id],
        # Of this item only: with one item read, every other request's item is "missing".
        problems=[p for p in planned.problems if p.startswith((item.label, "the board"))],
    )
    result = ReconcileResult(report=report)
    _apply(board, report, result, now=now, scope={request_id})
    return result


def _instead(board_id: int, client: BoardClient | None, now: dt.datetime, why: str) -> ReconcileResult:
    """An item's pull that the whole board answers (in the caller's transaction: the
    board's row is locked already)."""
    log.info("github board %s: an item's pull reads the whole board: %s", board_id, why)
    result = board_reconcile(board_id=board_id, client=client, now=now)
    result.full = why
    return result


def _apply(
    board: Board, report: SyncReport, result: ReconcileResult, *, now: dt.datetime, scope: set[int] | None = None
) -> None:
    """``scope``: the requests the report judges (an item's pull: that item's request);
    None, every request of the board."""
    busy = set(
        BoardWrite.objects.filter(board=board).exclude(state=BoardWrite.State.SENT).values_list("request_id", flat=True)
    )
    handbook = handbook_names(board)
    found: set[tuple[int, str]] = set()
    open_conflicts = {
        (c.request_id, c.field): c
        for c in BoardConflict.objects.filter(board=board, resolved_at__isnull=True)
        if scope is None or c.request_id in scope
    }
    for plan in report.plans:
        if plan.request_id in busy or (scope is not None and plan.request_id not in scope):
            continue
        missing = plan.action != ACTION_UPDATE
        for change in plan.changes:
            name = handbook.get(change.field.casefold(), change.field)
            if change.before is None or shown(change.before) == "":
                if (plan.request_id, name) not in open_conflicts:
                    missing = True
                continue
            if name not in CONFLICT_FIELDS or not plan.item_id:
                continue
            found.add((plan.request_id, name))
            _conflict(board, plan, name, change, open_conflicts, result, now=now)
        if missing and board.mode == Board.Mode.READ_WRITE:
            write = BoardWrite.objects.create(
                board=board, request_id=plan.request_id, event=f"{RECONCILE_EVENT}{now.isoformat()}"
            )
            transaction.on_commit(lambda pk=write.pk: enqueue_write(pk), robust=True)
            result.writes_queued.append(plan.request_id)
    for (request_id, name), conflict in open_conflicts.items():
        if (request_id, name) in found or request_id in busy:
            continue
        conflict.resolved_at, conflict.resolution = now, BoardConflict.Resolution.AGREED
        conflict.save(update_fields=["resolved_at", "resolution"])
        result.conflicts_closed.append(conflict.pk)


def _conflict(board, plan, name, change, open_conflicts, result: ReconcileResult, *, now) -> None:
    board_value, ours = shown(change.before)[:1000], shown(change.after)[:1000]
    existing = open_conflicts.get((plan.request_id, name))
    if existing is not None:
        if (existing.board_value, existing.releasecal_value) != (board_value, ours):
            existing.board_value, existing.releasecal_value = board_value, ours
            existing.item_id, existing.item = plan.item_id, plan.item[:300]
            existing.save(update_fields=["board_value", "releasecal_value", "item_id", "item"])
            result.conflicts_changed.append(existing.pk)
        return
    try:
        with transaction.atomic():
            conflict = BoardConflict.objects.create(
                board=board,
                request_id=plan.request_id,
                item_id=plan.item_id,
                item=plan.item[:300],
                field=name,
                board_value=board_value,
                releasecal_value=ours,
                seen_at=now,
            )
    except IntegrityError:  # recorded meanwhile (one open conflict per field)
        return
    open_conflicts[(plan.request_id, name)] = conflict
    log.warning(
        "github board %s: %s of %s is %r on the board, %r in releasecal (request #%s): a conflict to resolve",
        board,
        name,
        plan.item,
        board_value,
        ours,
        plan.request_id,
    )
    result.conflicts_opened.append(conflict.pk)
