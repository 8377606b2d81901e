"""Reads of the schedule domain, with effective deadlines applied."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass

from django.db.models import Q, QuerySet

from releasecal import tz
from releasecal.models import Enhancement, Milestone, Release


@dataclass(frozen=True)
class Deadline:
    """The deadline that applies to one KEP for one milestone.

    ``source`` is ``"milestone"`` (the release's own deadline) or ``"exception"`` (a
    granted extension, whose id is ``exception_id``); ``original`` is always the
    milestone's own deadline, so an extension can name what it extends.
    """

    milestone: Milestone
    instant: dt.datetime
    zone: str
    source: str
    original: dt.datetime
    exception_id: int | None = None
    enhancement_id: int | None = None
    # False for an approval read from exceptions.yaml, which records no deadline: the
    # instant is then the milestone's own (the one known bound), shown as such.
    grant_recorded: bool = True

    @property
    def is_extension(self) -> bool:
        return self.source == "exception"

    def display(self) -> str:
        shown = tz.render(self.instant, self.zone)
        if not self.grant_recorded:
            shown += " (extension granted, deadline not recorded)"
        return shown


def release_get(*, slug: str) -> Release:
    from releasecal.errors import NotFound

    try:
        return Release.objects.get(slug=slug)
    except Release.DoesNotExist:
        raise NotFound(f"No release {slug!r}.", extra={"release": slug}) from None


def release_list_active() -> QuerySet[Release]:
    return Release.objects.filter(status__in=[Release.Status.ACTIVE, Release.Status.PLANNING]).order_by("start_date")


def release_hard_stop(release: Release) -> dt.datetime | None:
    """The last instant an extension may reach: the release's hard stop, else its first rc."""
    if release.hard_stop:
        return release.hard_stop
    rc = release.milestones.filter(kind__slug="rc", cancelled=False).order_by("at", "on_date").first()
    if rc is None:
        return None
    return rc.starts


def milestone_list(
    *, release: Release | None = None, kind: str | None = None, upcoming: bool = False, now: dt.datetime | None = None
) -> QuerySet[Milestone]:
    qs = Milestone.objects.select_related("release", "kind")
    if release is not None:
        qs = qs.filter(release=release)
    if kind:
        qs = qs.filter(kind__slug=kind)
    if upcoming:
        now = now or tz.utc_now()
        # Date-only milestones count as upcoming through the end of their day anywhere
        # on Earth (the latest that day ends); comparing the date to today's UTC date
        # minus one keeps the filter in SQL and exact enough for a listing.
        qs = qs.filter(
            Q(at__gte=now)
            | Q(ends_at__gte=now)
            | Q(on_date__gte=now.date() - dt.timedelta(days=1))
            | Q(ends_on__gte=now.date())
        )
        qs = qs.filter(cancelled=False)
    return qs.order_by("at", "on_date", "id")


def effective_deadlines(
    *, milestones: Iterable[Milestone], enhancements: Iterable[Enhancement]
) -> dict[tuple[int, int], Deadline]:
    """Effective deadline of every (enhancement, milestone) pair, in one query.

    The granted_until of an approved exception for that milestone, else the
    milestone's own deadline (also for an approval whose deadline was not recorded,
    marked ``grant_recorded=False``). Keys are ``(enhancement_id, milestone_id)``.
    """
    from exceptions.models import ExceptionRequest

    milestones = list(milestones)
    enhancements = list(enhancements)
    granted = {
        (req.enhancement_id, req.milestone_id): req
        for req in ExceptionRequest.objects.filter(
            state=ExceptionRequest.State.APPROVED,
            milestone__in=[m.pk for m in milestones],
            enhancement__in=[e.pk for e in enhancements],
        ).select_related("decision")
    }
    # Each milestone's own deadline once, not once per KEP (a SIG has hundreds).
    own = [(milestone, milestone.deadline) for milestone in milestones]
    result = {}
    for enhancement in enhancements:
        for milestone, deadline in own:
            req = granted.get((enhancement.pk, milestone.pk))
            if req is not None and req.decision.granted_until is None:
                result[(enhancement.pk, milestone.pk)] = Deadline(
                    milestone=milestone,
                    instant=deadline,
                    zone=milestone.zone,
                    source="exception",
                    original=deadline,
                    exception_id=req.pk,
                    enhancement_id=enhancement.pk,
                    grant_recorded=False,
                )
            elif req is not None:
                result[(enhancement.pk, milestone.pk)] = Deadline(
                    milestone=milestone,
                    instant=req.decision.granted_until,
                    zone=req.decision.granted_zone,
                    source="exception",
                    original=deadline,
                    exception_id=req.pk,
                    enhancement_id=enhancement.pk,
                )
            else:
                result[(enhancement.pk, milestone.pk)] = Deadline(
                    milestone=milestone,
                    instant=deadline,
                    zone=milestone.zone,
                    source="milestone",
                    original=deadline,
                    enhancement_id=enhancement.pk,
                )
    return result


def effective_deadline(*, enhancement: Enhancement, milestone: Milestone) -> Deadline:
    return effective_deadlines(milestones=[milestone], enhancements=[enhancement])[(enhancement.pk, milestone.pk)]
