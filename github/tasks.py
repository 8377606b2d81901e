"""Celery tasks: thin, take ids, call one service."""

from __future__ import annotations

from celery import shared_task

from github import writes


@shared_task(name=writes.SEND_TASK, ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def board_write_send_task(write_id: int) -> str:
    return writes.board_write_send(write_id=int(write_id))


@shared_task(name="github.board_sweep", ignore_result=True)
def board_writes_sweep_task() -> int:
    return len(writes.board_writes_sweep())
