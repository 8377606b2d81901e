"""Celery tasks: thin, take ids, call one service.

No task is scheduled with a long countdown or ETA: Redis redelivers an unacknowledged
message after its visibility timeout, so a long ETA would run twice. Time lives in the
ledger (``due_at``, ``next_attempt_at``); the minute sweep reads it. The one countdown
is a send queued for its Slack channel's reserved second (reserved by the sweep, or by a
send queued without one; ``outbox.ratelimit``: at most
``OUTBOX_SLACK_MAX_WAIT_SECONDS``, far below the visibility timeout).
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
    soft_time_limit=settings.OUTBOX_SEND_SOFT_TIME_LIMIT,
    time_limit=settings.OUTBOX_SEND_TIME_LIMIT,
)
def delivery_send_task(delivery_id: int | list[int], slot: float | None = None) -> str:
    """One delivery (its id) or a digest (its ids); ``slot``: the second reserved for it
    on its Slack channel (a send queued again to wait for its turn)."""
    ids = [int(i) for i in delivery_id] if isinstance(delivery_id, list) else [int(delivery_id)]
    return services.deliveries_send(delivery_ids=ids, slot=float(slot) if slot is not None else None)
