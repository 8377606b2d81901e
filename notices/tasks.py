"""Celery tasks: thin, take ids, call one service. No countdowns: a row that must wait
says so in the ledger (``next_attempt_at``) and the minute sweep queues it again."""

from __future__ import annotations

from celery import shared_task

from notices import services


@shared_task(name=services.SEND_TASK, ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def notice_send_task(notice_id: int, slots: dict[str, float] | None = None) -> dict:
    return services.notice_send(notice_id=int(notice_id), slots=slots)


@shared_task(name="notices.sweep", ignore_result=True)
def notices_sweep_task() -> int:
    return len(services.notices_sweep())
