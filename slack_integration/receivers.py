"""Slack hears the exception workflow: receivers of ``exceptions/signals.py``, connected
in ``SlackIntegrationConfig.ready()``. Each writes its Slack side effect as a row of the
Slack ledger in the write's transaction (``slack_integration.outbox``), sent on commit
(Slack is never called inside it) or, with the broker down, by the minute sweep."""

from __future__ import annotations

from slack_integration.models import SlackWork
from slack_integration.outbox import slack_work_record


def exception_request_submitted(sender, *, request, **kwargs) -> None:
    slack_work_record(request=request, kind=SlackWork.Kind.POST)


def exception_request_changed(sender, *, request, **kwargs) -> None:
    """Amended, withdrawn, its grant moved, its decision corrected or reopened: the channel
    messages show the request as it now is."""
    slack_work_record(request=request, kind=SlackWork.Kind.UPDATE)


def exception_request_decided(sender, *, request, decision, **kwargs) -> None:
    slack_work_record(request=request, kind=SlackWork.Kind.UPDATE)
    if request.requester_id is not None:
        # The requester hears of the decision by DM, whichever face decided.
        slack_work_record(request=request, kind=SlackWork.Kind.DM, event=decision.outcome)
