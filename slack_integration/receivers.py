"""Slack hears the exception workflow: receivers of ``exceptions/signals.py``, connected
in ``SlackIntegrationConfig.ready()``. Each queues its Slack work after the transaction
commits (Slack is never called inside it)."""

from __future__ import annotations

from django.db import transaction

from slack_integration import tasks


def _on_commit(task, *args) -> None:
    # robust=True: a broker hiccup after commit is logged, never turned into a 500 for a
    # request that is already saved.
    transaction.on_commit(lambda: task.delay(*args), robust=True)


def exception_request_submitted(sender, *, request, **kwargs) -> None:
    _on_commit(tasks.slack_post_exception_request, request.pk)


def exception_request_changed(sender, *, request, **kwargs) -> None:
    """Amended, withdrawn, its grant moved, its decision corrected or reopened: the channel
    messages show the request as it now is."""
    _on_commit(tasks.slack_update_exception_messages, request.pk)


def exception_request_decided(sender, *, request, decision, **kwargs) -> None:
    _on_commit(tasks.slack_update_exception_messages, request.pk)
    if request.requester_id is not None:
        # The requester hears of the decision by DM, whichever face decided.
        _on_commit(tasks.slack_notify_requester, request.pk, decision.outcome)
