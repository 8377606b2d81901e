"""Reads that need the exception workflow: effective deadlines, the next deadlines, the
requests themselves and the milestone a request extends.

The rule of the product: a KEP's effective deadline for a milestone is the later of the
milestone's own deadline and the granted_until of its approved exception for that
milestone. Feeds, the API, pages, Slack and reminders all read it from here.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import QuerySet

from exceptions.models import ExceptionRequest
from releasecal import selectors as schedule
from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.models import Enhancement, Milestone, Release

MAX_ID = 2**63 - 1  # a bigint primary key; a larger id is no id, not a database error


@dataclass
class Deadline:
    """The deadline that applies to one or more KEPs for one milestone.

    ``source`` is ``"milestone"`` (the release's own deadline) or ``"exception"`` (a
    granted extension, whose id is ``exception_id``); ``original`` is always the
    milestone's own deadline, so an extension can name what it extends. ``keps`` lists
    the KEP numbers it applies to (empty: the whole release).
    """

    milestone: Milestone
    instant: dt.datetime
    zone: str
    source: str
    original: dt.datetime
    exception_id: int | None = None
    keps: list[int] = field(default_factory=list)
    # False for an approval read from exceptions.yaml, which records no deadline: the
    # instant is then the milestone's own (the one known bound), shown as such.
    grant_recorded: bool = True

    @property
    def is_extension(self) -> bool:
        return self.source == "exception"

    def display(self) -> str:
        if not self.is_extension and self.milestone.is_all_day:
            # "Monday 30 November 2026 (all day; ends 00:00 AoE Tuesday 1 December 2026 (...))"
            return f"{self.milestone.display()} (all day; ends {tz.render(self.instant, self.zone)})"
        shown = tz.render(self.instant, self.zone)
        if not self.grant_recorded:
            shown += " (extension granted, deadline not recorded)"
        return shown


def _own(milestone: Milestone, deadline: dt.datetime, keps: list[int]) -> Deadline:
    return Deadline(
        milestone=milestone, instant=deadline, zone=milestone.zone, source="milestone", original=deadline, keps=keps
    )


def effective_deadlines(
    *, milestones: Iterable[Milestone], enhancements: Iterable[Enhancement]
) -> dict[tuple[int, int], Deadline]:
    """Effective deadline of every (enhancement, milestone) pair, in one query.

    The granted_until of an approved exception for that milestone, else the
    milestone's own deadline (also for an approval whose deadline was not recorded,
    marked ``grant_recorded=False``). Keys are ``(enhancement_id, milestone_id)``.
    """
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
                    keps=[enhancement.number],
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
                    keps=[enhancement.number],
                )
            else:
                result[(enhancement.pk, milestone.pk)] = _own(milestone, deadline, [enhancement.number])
    return result


def effective_deadline(*, enhancement: Enhancement, milestone: Milestone) -> Deadline:
    return effective_deadlines(milestones=[milestone], enhancements=[enhancement])[(enhancement.pk, milestone.pk)]


def deadlines_next(
    *,
    releases: list[Release],
    enhancements: list[Enhancement] | None,
    now: dt.datetime,
    limit: int,
) -> list[Deadline]:
    """The upcoming deadlines, soonest first, with granted extensions applied.

    Without KEPs: the releases' own deadlines. With KEPs: each KEP's effective deadline
    per milestone; KEPs sharing one instant for a milestone share one row.
    """
    milestones = [m for release in releases for m in schedule.milestone_list(release=release).filter(cancelled=False)]
    rows: dict[tuple[int, dt.datetime, int | None], Deadline] = {}
    if enhancements is None:
        for milestone in milestones:
            deadline = milestone.deadline
            rows[(milestone.pk, deadline, None)] = _own(milestone, deadline, [])
    else:
        effective = effective_deadlines(milestones=milestones, enhancements=enhancements)
        for deadline in sorted(effective.values(), key=lambda d: d.keps[0]):
            key = (deadline.milestone.pk, deadline.instant, deadline.exception_id)
            row = rows.get(key)
            if row is None:
                rows[key] = deadline
            else:
                row.keps.extend(deadline.keps)
    upcoming = [row for row in rows.values() if row.instant >= now]
    upcoming.sort(key=lambda row: (row.instant, row.milestone.pk))
    return upcoming[:limit]


def exception_request_list(*, enhancement: Enhancement | None = None) -> QuerySet[ExceptionRequest]:
    """Requests with what every face shows of them loaded (release, milestone, KEP, decision)."""
    qs = ExceptionRequest.objects.select_related("release", "milestone", "milestone__kind", "enhancement", "decision")
    if enhancement is not None:
        qs = qs.filter(enhancement=enhancement)
    return qs


def exception_milestone_get(
    *, milestone_id: int | None = None, release_slug: str | None = None, kind: str | None = None
) -> Milestone:
    """The milestone a request extends, named by its id or by its release and kind.

    One reading for every face that files a request (the API, ingest_exception): an id
    must exist and belong to ``release_slug`` when one is given; a release and a kind
    must name exactly one milestone that is not cancelled. Anything else is a
    ``ValidationFailed`` saying what to give instead.
    """
    milestones = Milestone.objects.select_related("release", "kind")
    if milestone_id:
        milestone = milestones.filter(pk=milestone_id).first() if 0 < milestone_id <= MAX_ID else None
        if milestone is None:
            raise ValidationFailed(f"No milestone with id {milestone_id}.", extra={"milestone": milestone_id})
        if release_slug and milestone.release.slug != release_slug:
            raise ValidationFailed(
                f"Milestone #{milestone.pk} belongs to release {milestone.release.slug}, not {release_slug}.",
                extra={"milestone": milestone.pk, "release": release_slug},
            )
        return milestone
    if not (release_slug and kind):
        raise ValidationFailed("Give the milestone id, or the release and the milestone kind.")
    release = schedule.release_get(slug=release_slug)
    candidates = list(milestones.filter(release=release, kind__slug=kind, cancelled=False))
    if not candidates:
        raise ValidationFailed(
            f"Release {release.slug} has no {kind!r} milestone.", extra={"release": release.slug, "kind": kind}
        )
    if len(candidates) > 1:
        listed = "; ".join(f"{m.title} (#{m.pk})" for m in candidates)
        raise ValidationFailed(
            f"Release {release.slug} has {len(candidates)} {kind!r} milestones ({listed}); give the milestone id.",
            extra={"milestones": [m.pk for m in candidates]},
        )
    return candidates[0]
