"""Thin Celery tasks: take ids, load, call one service, retry transient errors.

The side effects of a write go through the Slack ledger (``slack_integration.outbox``):
``slack.work_send`` and the minute ``slack.sweep``. The four older tasks below stay for
messages queued before the ledger existed (and the Home tab, which no write makes)."""

from __future__ import annotations

from celery import shared_task

from outbox.errors import TransportError
from slack_integration import outbox, services

# Bounded retry with short backoff: 5 s, 10 s, 20 s, 40 s, 60 s. A request never
# posted still shows in the admin and the API; nothing waits on a long countdown.
MAX_RETRIES = 5


def _backoff(retries: int) -> int:
    return min(5 * 2**retries, 60)


@shared_task(name=outbox.SEND_TASK, ignore_result=True, acks_late=True, reject_on_worker_lost=True)
def slack_work_send_task(work_id: int) -> str:
    return outbox.slack_work_send(work_id=int(work_id))


@shared_task(name="slack.sweep", ignore_result=True)
def slack_work_sweep_task() -> int:
    return len(outbox.slack_work_sweep())


@shared_task(bind=True, max_retries=MAX_RETRIES, acks_late=True)
def slack_post_exception_request(self, request_id: int) -> None:
    try:
        services.slack_post_exception_request(request_id=request_id)
    except TransportError as exc:
        if exc.permanent:
            raise
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc


@shared_task(bind=True, max_retries=MAX_RETRIES, acks_late=True)
def slack_update_exception_messages(self, request_id: int) -> None:
    try:
        services.slack_update_exception_messages(request_id=request_id)
    except TransportError as exc:
        if exc.permanent:
            raise
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc


@shared_task(bind=True, max_retries=MAX_RETRIES, acks_late=True)
def slack_publish_home(self, slack_user_id: str, team_id: str = "") -> None:
    try:
        services.slack_publish_home(slack_user_id=slack_user_id, team_id=team_id)
    except TransportError as exc:
        if exc.permanent:
            raise
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc


@shared_task(bind=True, max_retries=MAX_RETRIES, acks_late=True)
def slack_notify_requester(self, request_id: int, event: str) -> None:
    try:
        services.slack_notify_requester(request_id=request_id, event=event)
    except TransportError as exc:
        if exc.permanent:
            raise
        raise self.retry(exc=exc, countdown=_backoff(self.request.retries)) from exc
