"""Every Slack side effect of a write through the outbox's machinery (``outbox.ledger``):
the Slack ledger, ``SlackWork``, one row per effect (the channel post, an update of the
posted messages, the requester's DM).

The row is written in the write's transaction (a receiver of the exception workflow's
signals, or the Slack form) and sent on commit; while the broker is down the publish
fails after its timeouts (``CELERY_BROKER_TRANSPORT_OPTIONS``), the write answers
anyway, and the minute sweep queues the row once the broker is back. The send claims the
row (exactly one worker however often the task is delivered) and calls the Slack service,
which is itself idempotent (a posted request is not posted twice, a DM has its
``SlackRequesterNotice``). Failures go to ``Ledger.record_failure`` (backoff, give-up,
the 429 rule); a failed row is shown in the admin.
"""

from __future__ import annotations

import datetime as dt
import logging
import uuid

from celery import current_app
from django.conf import settings
from django.db import transaction

from outbox.errors import TransportError
from outbox.ledger import Ledger
from releasecal import tz
from slack_integration import services
from slack_integration.models import SlackWork

log = logging.getLogger(__name__)

LEDGER = Ledger(model=SlackWork, name="slack")
SEND_TASK = "slack.work_send"


def _configured(kind: str) -> bool:
    if not settings.SLACK_BOT_TOKEN:
        return False
    return kind != SlackWork.Kind.POST or bool(settings.SLACK_RELEASE_TEAM_CHANNEL)


def slack_work_record(*, request, kind: str, event: str = "") -> SlackWork | None:
    """The Slack side effect ``kind`` of ``request`` (an ExceptionRequest), in the
    caller's transaction, sent on commit; None when Slack is not configured. A post or
    a DM heard twice is one row; an update is a new row unless one is still pending."""
    if not _configured(kind):
        return None
    if kind == SlackWork.Kind.UPDATE:
        pending = SlackWork.objects.filter(request=request, kind=kind, state=SlackWork.State.PENDING).first()
        if pending is not None:
            return pending
        key = f"update:{uuid.uuid4().hex[:16]}"
    else:
        key = f"dm:{event}" if kind == SlackWork.Kind.DM else kind
    work, created = SlackWork.objects.get_or_create(request=request, key=key, defaults={"kind": kind, "event": event})
    if created:
        transaction.on_commit(lambda: _enqueue(work.pk), robust=True)
    return work


def _enqueue(work_id: int) -> None:
    current_app.tasks[SEND_TASK].delay(work_id)


def _do(work: SlackWork) -> None:
    if work.kind == SlackWork.Kind.POST:
        services.slack_post_exception_request(request_id=work.request_id)
    elif work.kind == SlackWork.Kind.UPDATE:
        services.slack_update_exception_messages(request_id=work.request_id)
    else:
        services.slack_notify_requester(request_id=work.request_id, event=work.event)


def slack_work_send(*, work_id: int, now: dt.datetime | None = None) -> str:
    """Claim, send and record one row; what happened ("sent", "retry", "failed",
    "rate-limited", "not claimed")."""
    now = now or tz.utc_now()
    if LEDGER.claim([work_id], now=now) != [work_id]:
        return "not claimed"
    work = SlackWork.objects.get(pk=work_id)
    try:
        _do(work)
    except TransportError as exc:
        return LEDGER.record_failure([work], exc, now=now, service="Slack")
    LEDGER.record_sent([work_id], now=now)
    return "sent"


def slack_work_sweep(*, now: dt.datetime | None = None, enqueue=_enqueue) -> list[int]:
    """Beat's minute sweep: rows whose worker was lost go back to pending, and every row
    that may go now (never queued, broker down, a retry's time come) is queued."""
    now = now or tz.utc_now()
    LEDGER.reclaim_expired(now=now)
    quiet = now - dt.timedelta(seconds=settings.OUTBOX_REQUEUE_SECONDS)  # not one just queued on commit
    due = list(
        SlackWork.objects.filter(LEDGER.claimable(now), updated_at__lt=quiet)
        .order_by("pk")
        .values_list("pk", flat=True)[:500]
    )
    for work_id in due:
        try:
            enqueue(work_id)
        except Exception:  # the broker is down: the next sweep tries again
            log.warning("could not queue Slack work %s", work_id, exc_info=True)
            break
    return due
