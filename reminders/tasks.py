"""Celery tasks: thin, take ids, call one service.

No task is scheduled with a countdown or ETA: Redis redelivers an unacknowledged
message after its visibility timeout, so a long ETA would run twice. Time lives in the
ledger (``due_at``, ``next_attempt_at``); the minute sweep reads it.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from reminders import liveness, services


@shared_task(name="reminders.sweep", ignore_result=True)
def deliveries_sweep_task() -> dict:
    result = services.deliveries_sweep()
    liveness.missed_alert(result.missed)
    liveness.sweep_completed()
    return {
        "queued": len(result.queued),
        "reclaimed": result.reclaimed,
        "missed": result.missed,
        "nudged": result.nudged,
        "enqueue_failed": result.enqueue_failed,
    }


@shared_task(
    name=services.SEND_TASK,
    ignore_result=True,
    acks_late=True,
    reject_on_worker_lost=True,
    # Killed well before the ledger's lease expires, so a live worker's send is never
    # reclaimed and sent again by another one.
    soft_time_limit=settings.REMINDERS_SEND_SOFT_TIME_LIMIT,
    time_limit=settings.REMINDERS_SEND_TIME_LIMIT,
)
def delivery_send_task(delivery_id: int) -> str:
    return services.delivery_send(delivery_id=int(delivery_id))
