"""Hear exception workflow events and queue Slack work after the transaction commits."""

from __future__ import annotations

import logging

from django.db import transaction

from exceptions.models import ExceptionRequest
from exceptions.services import request_event_hooks
from slack_integration import tasks

logger = logging.getLogger(__name__)


def on_request_event(event: str, request: ExceptionRequest) -> None:
    if event == "submitted":
        task, args = tasks.slack_post_exception_request, (request.pk,)
    elif event in {"approved", "rejected", "withdrawn", "amended", "regranted"}:
        task, args = tasks.slack_update_exception_messages, (request.pk,)
    else:
        return
    # robust=True: a broker hiccup after commit is logged, never turned into a 500 for
    # a request that is already saved.
    transaction.on_commit(lambda: task.delay(*args), robust=True)
    if event in {"approved", "rejected"} and request.requester_id is not None:
        # The requester hears of the decision by DM, whichever face decided.
        transaction.on_commit(lambda: tasks.slack_notify_requester.delay(request.pk, event), robust=True)


def register() -> None:
    if on_request_event not in request_event_hooks:
        request_event_hooks.append(on_request_event)
