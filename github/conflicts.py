"""Resolving a conflict (``BoardConflict``) in one click, from the cockpit or the admin.

- **Keep releasecal's**: the conflict is closed and one write (``conflict:<id>``) sets
  the field to releasecal's value; read-write boards only (a read-only board is never
  written: the refusal says so).
- **Take the board's**: applied through the exception workflow's services where that is
  meaningful, as the person who clicked (who must be allowed to decide it): an Exception
  Status of Approved or Rejected on a pending request approves or rejects it; on a
  request decided the other way, the decision is corrected to it
  (``exception_decision_correct``, the reason saying it came from the board). Anything
  else is refused with the reason: In Review on a decided request (reopening a decision
  is done in releasecal, with its reason), a withdrawn request, and the days, the links
  and the dates, which are the request's own facts.
"""

from __future__ import annotations

from django.db import transaction

from exceptions.models import ExceptionRequest
from exceptions.services import exception_decision_correct, exception_request_approve, exception_request_reject
from github import mapping
from github.models import Board, BoardConflict, BoardWrite
from github.writes import enqueue_write
from releasecal import tz
from releasecal.errors import DomainError


class ConflictRefused(DomainError):
    """The resolution asked for cannot be applied (the message says why)."""


def _open(conflict_id: int) -> BoardConflict:
    conflict = (
        BoardConflict.objects.select_for_update(of=("self",))
        .select_related("board__release", "request__enhancement")
        .filter(pk=conflict_id)
        .first()
    )
    if conflict is None:
        raise ConflictRefused(f"There is no conflict #{conflict_id}.")
    if conflict.resolved_at is not None:
        raise ConflictRefused(f"The conflict on {conflict.field} of {conflict.item} was resolved already.")
    return conflict


def _close(conflict: BoardConflict, resolution: str, actor) -> None:
    conflict.resolved_at = tz.utc_now()
    conflict.resolution = resolution
    conflict.resolved_by = actor if getattr(actor, "pk", None) else None
    conflict.save(update_fields=["resolved_at", "resolution", "resolved_by"])


@transaction.atomic
def conflict_keep_releasecal(*, conflict_id: int, actor) -> str:
    """Close the conflict and write releasecal's value to the board (sent on commit)."""
    conflict = _open(conflict_id)
    board = conflict.board
    if board.mode != Board.Mode.READ_WRITE:
        mode = board.get_mode_display().split(":")[0]
        raise ConflictRefused(
            f"The board {board.owner}/{board.number} is {mode}: "
            f"releasecal does not write it. Set it to read-write, or set {conflict.field} to "
            f'"{conflict.releasecal_value}" on the board by hand (the next reconcile closes the conflict).'
        )
    _close(conflict, BoardConflict.Resolution.KEPT_RELEASECAL, actor)
    write = BoardWrite.objects.create(board=conflict.board, request=conflict.request, event=f"conflict:{conflict.pk}")
    transaction.on_commit(lambda: enqueue_write(write.pk), robust=True)
    return f'{conflict.field} of {conflict.item}: releasecal\'s "{conflict.releasecal_value}" is being written.'


def _status_option(board: Board, board_value: str) -> str | None:
    """The handbook's Exception Status option the board's value is (None: none of them)."""
    names = mapping.Names(dict(board.field_names or {}))
    for option in ("In Review", "Approved", "Rejected"):
        if names.option(mapping.EXCEPTION_STATUS, option).casefold() == board_value.casefold():
            return option
    return None


WHY_NOT = {
    mapping.ADDITIONAL_TIME: "the days are the request's own: amend the request (its KEP page or the API) "
    "to ask for other days",
    mapping.LINK: "the thread is where the request was made: releasecal keeps the one it received",
    mapping.PRS: "the PRs are the request's own: amend the request (its KEP page or the API) to change them",
    mapping.REQUEST_DATE: "the request date is when releasecal received the request",
    mapping.DECISION_DATE: "the decision date is when the decision was recorded in releasecal",
}


@transaction.atomic
def conflict_take_board(*, conflict_id: int, actor) -> str:
    """Apply the board's value in releasecal where that is meaningful (module docstring);
    raises :class:`ConflictRefused` with the reason otherwise. Permission refusals of the
    workflow (``exceptions.services``) pass through with their own words."""
    conflict = _open(conflict_id)
    if conflict.field != mapping.EXCEPTION_STATUS:
        reason = WHY_NOT.get(conflict.field, "releasecal does not take this field from the board")
        raise ConflictRefused(f"{conflict.field} is not taken from the board: {reason}.")
    request = ExceptionRequest.objects.get(pk=conflict.request_id)
    option = _status_option(conflict.board, conflict.board_value)
    said = f'The board says "{conflict.board_value}" but request #{request.pk} is {request.state} in releasecal'
    decided = (ExceptionRequest.State.APPROVED, ExceptionRequest.State.REJECTED)
    if option not in ("Approved", "Rejected"):
        why = (
            "a decision is reopened in releasecal (Reopen, with the reason), not from the board"
            if request.state in decided
            else "only Approved or Rejected is taken from the board"
        )
        raise ConflictRefused(f"{said}: {why}. Keep releasecal's, or change the request in releasecal.")
    if request.state not in (ExceptionRequest.State.PENDING, *decided):
        raise ConflictRefused(
            f"{said}: a {request.state} request is not decided from the board. Keep releasecal's, or change the "
            "request in releasecal."
        )
    note = f'Taken from the board: Exception Status "{conflict.board_value}" on {conflict.item}'
    _close(conflict, BoardConflict.Resolution.TOOK_BOARD, actor)
    if request.state in decided:
        exception_decision_correct(request=request, actor=actor, reason=note, outcome=option.lower())
        return f"Request #{request.pk}'s decision is corrected to {option.lower()}, as the board says."
    if option == "Approved":
        exception_request_approve(request=request, actor=actor, note=note)
    else:
        exception_request_reject(request=request, actor=actor, note=note)
    return f"Request #{request.pk} is {option.lower()} as the board says."
