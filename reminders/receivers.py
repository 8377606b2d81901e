"""The reminder ledger follows deadlines and requests: receivers of the schedule's and
the exception workflow's signals (``releasecal/signals.py``, ``exceptions/signals.py``),
connected in ``RemindersConfig.ready()``.

Each runs inside the sending service's transaction, so a moved or cancelled deadline
and its rescheduled or cancelled reminders commit (or roll back) together.
"""

from __future__ import annotations

from reminders.services import (
    deliveries_cancel_for_request,
    deliveries_create_for_correction,
    deliveries_create_for_event,
    deliveries_create_for_grant_end,
    deliveries_sync_for_kep_owners,
    deliveries_sync_for_milestone,
    deliveries_sync_for_request,
)


def milestone_changed(sender, *, milestone, previous, **kwargs) -> None:
    deliveries_sync_for_milestone(milestone=milestone, created=previous is None)
    if previous is None:
        return  # just created: no request names it yet (a README import creates ~1000)
    # A moved freeze can supersede (or stop superseding) the grants on it.
    for request in milestone.exception_requests.filter(state="approved").select_related("decision", "milestone"):
        deliveries_sync_for_request(request=request)


def enhancement_owners_changed(sender, *, enhancement, **kwargs) -> None:
    deliveries_sync_for_kep_owners(enhancement=enhancement)


def exception_request_submitted(sender, *, request, **kwargs) -> None:
    deliveries_create_for_event(request=request, event="submitted")


def exception_request_decided(sender, *, request, decision, **kwargs) -> None:
    if decision.outcome == "approved":
        deliveries_cancel_for_request(request=request, reason="Decided before the nudge went out")
        deliveries_sync_for_request(request=request)
    else:
        deliveries_cancel_for_request(request=request, reason=f"Request #{request.pk} was rejected")
    deliveries_create_for_event(request=request, event=decision.outcome)


def exception_request_withdrawn(sender, *, request, **kwargs) -> None:
    deliveries_cancel_for_request(request=request, reason=f"Request #{request.pk} was withdrawn")


def exception_grant_moved(sender, *, request, **kwargs) -> None:
    # The grant's instant moved (a tzdata change, manage.py tzdata_check --apply).
    deliveries_sync_for_request(request=request)


def exception_decision_corrected(sender, *, request, correction, **kwargs) -> None:
    # The extension's reminders follow the decision in force: due_at recomputed for a
    # moved grant, cancelled for a rejection or a reopen (sync cancels what no rule wants).
    deliveries_sync_for_request(request=request)
    deliveries_create_for_correction(request=request, correction=correction)


def exception_grant_ended(sender, *, request, grant_end, **kwargs) -> None:
    deliveries_create_for_grant_end(request=request, grant_end=grant_end)
