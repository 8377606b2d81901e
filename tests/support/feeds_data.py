"""Builders shared by the feed tests (plain functions, built through the services)."""

from __future__ import annotations

import datetime as dt

from django.contrib.auth.models import User

from exceptions.services import (
    RequestFields,
    exception_request_approve,
    exception_request_submit,
)
from releasecal import tz
from releasecal.models import Enhancement, MilestoneKind, Release
from releasecal.services import enhancement_upsert, milestone_create, tracking_set


def aoe_release(kinds: dict[str, MilestoneKind], slug: str = "1.35") -> Release:
    """An AoE release like Kubernetes 1.35: freeze at end of day AoE, dates across
    the European and US DST changes."""
    release = Release.objects.create(
        slug=slug, name=f"Kubernetes v{slug}", zone="AoE",
        start_date=dt.date(2025, 9, 15), ga_date=dt.date(2025, 12, 17), status=Release.Status.ACTIVE,
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["code-freeze"], title="Code Freeze",
        at=tz.end_of_day(dt.date(2025, 11, 6), "AoE"), ends_at=tz.end_of_day(dt.date(2025, 12, 2), "AoE"),
    )  # fmt: skip
    milestone_create(
        release=release, kind=kinds["rc"], title="rc.0", at=tz.parse_wall_time("2025-12-09 10:00", "AoE"),
    )  # fmt: skip
    milestone_create(release=release, kind=kinds["ga"], title="v1.35 released", on_date=dt.date(2025, 12, 17))
    return release


def keps(count: int, *, release: Release, sig: str = "node", start: int = 5000) -> list[Enhancement]:
    result = []
    for i in range(count):
        kep = enhancement_upsert(number=start + i, title=f"Feature {start + i}", owning_sig=sig)
        tracking_set(release=release, enhancement=kep, stage="alpha", status="tracked")
        result.append(kep)
    return result


def approved_extensions(*, keps: list[Enhancement], milestone, requester: User, decider: User, days: int = 2):
    decisions = []
    for kep in keps:
        request = exception_request_submit(
            enhancement=kep, milestone=milestone, requester=requester,
            fields=RequestFields(days=days, enhancement_name=kep.title, stage="alpha", sig=kep.owning_sig),
            submitted_at=min(milestone.deadline + dt.timedelta(hours=1), tz.utc_now()),
        )  # fmt: skip
        decisions.append(exception_request_approve(request=request, actor=decider))
    return decisions
