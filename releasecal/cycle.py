"""A new release cycle from the last one, every date shifted by whole weeks (the admin's
cycle set-up, ``releasecal/admin_setup.py``).

Each timed deadline keeps its wall time in its own zone (19:00 PDT stays 19:00 in Los
Angeles, whether or not daylight saving time is in force on the new day), so the UTC
instant moves by the shift plus any change of offset. A wall time the new day skips
(a spring-forward gap) or repeats (a fall-back fold) is reported by ``tz.localize``'s
own messages, never guessed: the copy is refused while any milestone lands in one, and
the person picks another shift or moves that milestone afterwards. Date-only
milestones move by the shift. Titles naming the old release ("v1.37.0 released") name
the new one. The team (leads and team) and the exception policy (windows, warning days,
hard stop, the announcement of approvals and its lists) are copied when asked; a new
cycle otherwise starts with an empty team and the defaults.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

from django.db import transaction

from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.models import Milestone, Release
from releasecal.services import audit_record, milestone_create, release_save


@dataclass
class ShiftedMilestone:
    source: Milestone
    title: str
    at: dt.datetime | None = None
    ends_at: dt.datetime | None = None
    on_date: dt.date | None = None
    ends_on: dt.date | None = None
    problem: str = ""

    def shown(self) -> str:
        if self.problem:
            return ""
        if self.at is not None:
            return tz.render_deadline(self.at, self.source.zone)
        return tz.render_date(self.on_date)


@dataclass
class CyclePlan:
    source: Release
    slug: str
    name: str
    weeks: int
    copy_team: bool
    copy_policy: bool
    milestones: list[ShiftedMilestone] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    start_date: dt.date | None = None
    ga_date: dt.date | None = None
    hard_stop: dt.datetime | None = None


def _shift_wall(instant: dt.datetime, wall: dt.datetime | None, zone: str, days: int, what: str) -> dt.datetime:
    """The instant of the same wall time ``days`` later in ``zone``; a gap or a fold raises
    ValidationFailed naming ``what``."""
    kept = wall or tz.wall_clock(instant, zone)
    try:
        return tz.localize(kept + dt.timedelta(days=days), zone)
    except (tz.NonExistentTime, tz.AmbiguousTime) as exc:
        raise ValidationFailed(f"{what}: {exc.message}", extra=exc.extra) from None


def _retitle(title: str, old: str, new: str) -> str:
    # "v1.37.0-rc.0 released" -> "v1.38.0-rc.0 released"; "1.370" is left alone.
    return re.sub(rf"(?<![\d.]){re.escape(old)}(?![\d])", new, title)


def cycle_plan(
    *, source: Release, slug: str, name: str, weeks: int, copy_team: bool = True, copy_policy: bool = True
) -> CyclePlan:
    """What ``cycle_create`` would make: every milestone's new date, and the problems."""
    slug = slug.strip()
    plan = CyclePlan(
        source=source,
        slug=slug,
        name=name.strip() or f"Kubernetes v{slug}",
        weeks=weeks,
        copy_team=copy_team,
        copy_policy=copy_policy,
    )
    if not slug:
        plan.problems.append("Give the new release a slug (e.g. 1.38).")
    elif Release.objects.filter(slug=slug).exists():
        plan.problems.append(f"A release {slug} exists already: give another slug.")
    if not 1 <= weeks <= 104:
        plan.problems.append("Shift by 1 to 104 weeks.")
        return plan
    days = weeks * 7
    plan.start_date = source.start_date + dt.timedelta(days=days)
    plan.ga_date = source.ga_date + dt.timedelta(days=days) if source.ga_date else None
    if copy_policy and source.hard_stop:
        try:
            plan.hard_stop = _shift_wall(source.hard_stop, source.hard_stop_wall, source.zone, days, "Hard stop")
        except ValidationFailed as exc:
            plan.problems.append(exc.message)
    for milestone in source.milestones.select_related("kind").order_by("closes_at", "id"):
        shifted = ShiftedMilestone(source=milestone, title=_retitle(milestone.title, source.slug, slug))
        try:
            if milestone.at is not None:
                shifted.at = _shift_wall(milestone.at, milestone.at_wall, milestone.zone, days, milestone.title)
                if milestone.ends_at is not None:
                    shifted.ends_at = _shift_wall(
                        milestone.ends_at, milestone.ends_at_wall, milestone.zone, days, f"{milestone.title} (end)"
                    )
            else:
                shifted.on_date = milestone.on_date + dt.timedelta(days=days)
                if milestone.ends_on is not None:
                    shifted.ends_on = milestone.ends_on + dt.timedelta(days=days)
        except ValidationFailed as exc:
            shifted.problem = exc.message
            plan.problems.append(exc.message)
        plan.milestones.append(shifted)
    return plan


@transaction.atomic
def cycle_create(*, plan: CyclePlan, actor=None) -> Release:
    """Make the planned release and its milestones; refused while the plan has problems."""
    if plan.problems:
        raise ValidationFailed(
            "The new cycle was not created: " + " ".join(plan.problems), extra={"problems": plan.problems}
        )
    source = plan.source
    release = Release(
        slug=plan.slug,
        name=plan.name,
        zone=source.zone,
        start_date=plan.start_date,
        ga_date=plan.ga_date,
        status=Release.Status.PLANNING,
    )
    if plan.copy_policy:
        release.request_window_hours = dict(source.request_window_hours or {})
        release.exception_warn_days = source.exception_warn_days
        release.hard_stop = plan.hard_stop
        release.announce_approvals = source.announce_approvals
        release.announce_dev_list = source.announce_dev_list
        release.announce_sig_list = source.announce_sig_list
    release_save(release=release)
    if plan.copy_team:
        release.leads.set(source.leads.all())
        release.team.set(source.team.all())
    for shifted in plan.milestones:
        m = shifted.source
        created = milestone_create(
            release=release,
            kind=m.kind,
            kind_label=m.kind_label,
            title=shifted.title,
            at=shifted.at,
            on_date=shifted.on_date,
            ends_at=shifted.ends_at,
            ends_on=shifted.ends_on,
            zone=m.zone,
            description=m.description,
            actor=actor,
        )
        if m.week is not None:
            Milestone.objects.filter(pk=created.pk).update(week=m.week)
    audit_record(
        action="release.copy",
        obj=release,
        actor=actor,
        after={
            "from": source.slug,
            "weeks": plan.weeks,
            "team_copied": plan.copy_team,
            "policy_copied": plan.copy_policy,
            "milestones": len(plan.milestones),
        },
    )
    return release
