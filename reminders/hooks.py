"""The ledger follows deadlines: registered with the schedule and exception services.

Both hook lists run inside the caller's transaction, so a moved or cancelled deadline
and its rescheduled or cancelled reminders commit (or roll back) together.
"""

from __future__ import annotations

from exceptions.services import request_event_hooks
from releasecal.services import enhancement_owners_changed_hooks, milestone_changed_hooks
from reminders.services import (
    deliveries_cancel_for_request,
    deliveries_create_for_event,
    deliveries_sync_for_kep_owners,
    deliveries_sync_for_milestone,
    deliveries_sync_for_request,
)


def on_milestone_changed(milestone) -> None:
    deliveries_sync_for_milestone(milestone=milestone)
    # A moved freeze can supersede (or stop superseding) the grants on it.
    for request in milestone.exception_requests.filter(state="approved").select_related("decision", "milestone"):
        deliveries_sync_for_request(request=request)


def on_request_event(event: str, request) -> None:
    if event == "submitted":
        deliveries_create_for_event(request=request, event="submitted")
    elif event == "approved":
        deliveries_cancel_for_request(request=request, reason="Decided before the nudge went out")
        deliveries_sync_for_request(request=request)
        deliveries_create_for_event(request=request, event="approved")
    elif event == "regranted":
        # The grant's instant moved (a tzdata change, manage.py tzdata_check --apply).
        deliveries_sync_for_request(request=request)
    elif event == "rejected":
        deliveries_cancel_for_request(request=request, reason=f"Request #{request.pk} was rejected")
        deliveries_create_for_event(request=request, event="rejected")
    elif event == "withdrawn":
        deliveries_cancel_for_request(request=request, reason=f"Request #{request.pk} was withdrawn")


def on_owners_changed(enhancement) -> None:
    deliveries_sync_for_kep_owners(enhancement=enhancement)


def register() -> None:
    if on_owners_changed not in enhancement_owners_changed_hooks:
        enhancement_owners_changed_hooks.append(on_owners_changed)
    if on_milestone_changed not in milestone_changed_hooks:
        milestone_changed_hooks.append(on_milestone_changed)
    if on_request_event not in request_event_hooks:
        request_event_hooks.append(on_request_event)
