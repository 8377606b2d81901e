"""Reads of the reminder ledger."""

from __future__ import annotations

from django.db.models import Count, QuerySet

from reminders.models import Delivery


def delivery_list(*, state: str | None = None, milestone_id: int | None = None) -> QuerySet[Delivery]:
    qs = Delivery.objects.select_related("channel", "milestone", "milestone__release", "request", "rule")
    if state:
        qs = qs.filter(state=state)
    if milestone_id:
        qs = qs.filter(milestone_id=milestone_id)
    return qs


def delivery_state_counts() -> dict[str, int]:
    return dict(Delivery.objects.values_list("state").annotate(n=Count("id")).values_list("state", "n"))
