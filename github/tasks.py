"""Celery tasks: thin, take ids, call one service."""

from __future__ import annotations

from celery import shared_task

from github import comments, reconcile, writes
from github.models import Board
from github.services import BoardRefused
from github.webhooks import ITEM_PULL_TASK, PULL_TASK, board_pull_enqueue, item_pull_started, pull_started


@shared_task(name=writes.SEND_TASK, ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def board_write_send_task(write_id: int) -> str:
    return writes.board_write_send(write_id=int(write_id))


@shared_task(name="github.board_sweep", ignore_result=True)
def board_writes_sweep_task() -> int:
    return len(writes.board_writes_sweep())


@shared_task(name=PULL_TASK, ignore_result=True)
def board_pull_task(board_id: int) -> str:
    """Reconcile one board (a webhook's pull, or beat's). The dedupe mark goes first, so
    an event that arrives during the read queues the next pull."""
    pull_started(int(board_id))
    try:
        return reconcile.board_reconcile(board_id=int(board_id)).summary()
    except Board.DoesNotExist:
        return f"no board {board_id}"
    except BoardRefused as exc:  # off, no credentials, GitHub down: recorded on the board
        return str(exc)


@shared_task(name=ITEM_PULL_TASK, ignore_result=True)
def board_item_pull_task(board_id: int, item_id: str) -> str:
    """Reconcile one item (a webhook's event of an item linked to a request): one small
    read, or the whole board's when the item alone cannot say (``reconcile``). The
    dedupe mark goes first, as for the board's pull."""
    item_pull_started(int(board_id), str(item_id))
    try:
        return reconcile.board_item_reconcile(board_id=int(board_id), item_id=str(item_id)).summary()
    except Board.DoesNotExist:
        return f"no board {board_id}"
    except BoardRefused as exc:
        return str(exc)


@shared_task(name="github.board_reconcile", ignore_result=True)
def board_reconcile_task() -> int:
    """Beat's reconcile: a pull of every board that is read (not off, release not released)."""
    ids = Board.objects.exclude(mode=Board.Mode.OFF).exclude(release__status="released").values_list("pk", flat=True)
    return sum(board_pull_enqueue(board_id) for board_id in ids)


@shared_task(name=comments.SEND_TASK, ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def issue_comment_send_task(comment_id: int) -> str:
    return comments.issue_comment_send(comment_id=int(comment_id))


@shared_task(name="github.issue_comments_sweep", ignore_result=True)
def issue_comments_sweep_task() -> int:
    return len(comments.issue_comments_sweep())
