"""Which future deadlines a tzdata upgrade moved, and (with --apply) move them.

Every deadline keeps the wall time it was set to and its zone beside its UTC instant
(``Milestone.at_wall``/``ends_at_wall``, ``Decision.granted_wall``,
``Release.hard_stop_wall``). When new zone rules change a zone's offsets (a country
drops daylight saving time), the instant stored under the old rules no longer shows the
wall time people set. This command
recomputes, under the tzdata this process runs with, the instant of every future
deadline from its wall time and zone, and the instant a future date-only milestone
closes (the end of its day in its zone: ``Milestone.closes_at``/``passes_at``), and
reports those that differ.

A deadline whose stored zone this tzdata cannot load (a zone a newer tzdata had, or a
row written before zones were checked) is not recomputed: its instant stays as stored
(pages show it in UTC with a warning) and it is named, since reading its wall time in
UTC would move it by the zone's offset.

Exit status (for cron): 0 when no future instant moved (or every moved one was saved
with --apply), 1 when some moved and --apply was not given (nothing was changed), 2 when
--apply could not save some of them, or some could not be checked (each is named).
Past deadlines are never touched.
"""

from __future__ import annotations

import copy
import datetime as dt
from dataclasses import dataclass

from django.core.exceptions import ObjectDoesNotExist
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.db.models import Q

from exceptions.models import Decision
from exceptions.services import decision_grant_retime
from releasecal import signals, tz
from releasecal.errors import ValidationFailed
from releasecal.models import Milestone, Release
from releasecal.services import audit_record, milestone_save, release_save

ACTOR_LABEL = "tzdata upgrade (manage.py tzdata_check --apply)"


@dataclass(frozen=True)
class Moved:
    """One future instant that the running zone rules put elsewhere."""

    what: str  # "milestone 12 [1.31] Enhancements Freeze, at"
    model: type
    pk: int
    field: str
    wall: dt.datetime
    zone: str
    old: dt.datetime
    new: dt.datetime
    note: str = ""

    def describe(self) -> str:
        text = (
            f"{self.what}: set to {tz.render_wall(self.wall, self.zone)}; was {tz.render_in_zone(self.old, 'UTC')}, "
            f"now {tz.render_deadline(self.new, self.zone)}"
        )
        return f"{text} ({self.note})" if self.note else text


def find_moved(now: dt.datetime) -> tuple[list[Moved], int, int, list[str]]:
    """(moved instants, future instants checked, future instants with no wall time,
    the future instants not checked because this tzdata cannot load their zone)."""
    moved: list[Moved] = []
    checked = unrecorded = 0
    unknown: list[str] = []

    def known(what: str, zone: str) -> bool:
        if tz.is_known_zone(zone):
            return True
        unknown.append(f"{what}: zone {zone!r} is unknown to this tzdata; left as stored, not checked")
        return False

    milestones = (
        Milestone.objects.filter(Q(at__gt=now) | Q(ends_at__gt=now)).select_related("release").order_by("at", "pk")
    )
    for milestone in milestones:
        for field in ("at", "ends_at"):
            instant, wall = getattr(milestone, field), getattr(milestone, f"{field}_wall")
            if instant is None or instant <= now:
                continue
            checked += 1
            what = f"milestone {milestone.pk} {milestone}, {field}"
            if wall is None:
                unrecorded += 1
                continue
            if not known(what, milestone.zone):
                continue
            new, note = tz.instant_for_wall(wall, milestone.zone, instant)
            if new != instant:
                moved.append(Moved(what, Milestone, milestone.pk, field, wall, milestone.zone, instant, new, note))
    # A date-only milestone closes at the end of its day in its zone: the stored instants
    # (closes_at, passes_at, the sort key of every list) follow the zone rules too.
    dated = Milestone.objects.filter(at__isnull=True, passes_at__gt=now).select_related("release", "kind")
    for milestone in dated.order_by("closes_at", "pk"):
        checked += 2 if milestone.ends_on else 1
        if not known(f"milestone {milestone.pk} {milestone}, closes_at", milestone.zone):
            continue
        for field, old, new, day in closing_moved(milestone, now):
            what = f"milestone {milestone.pk} {milestone}, {field} (end of {day.isoformat()})"
            midnight = dt.datetime.combine(day + dt.timedelta(days=1), dt.time())
            moved.append(Moved(what, Milestone, milestone.pk, field, midnight, milestone.zone, old, new))
    grants = (
        Decision.objects.filter(outcome=Decision.Outcome.APPROVED, granted_until__gt=now)
        .select_related("request__enhancement", "request__release", "request__milestone")
        .order_by("granted_until", "pk")
    )
    for decision in grants:
        checked += 1
        if decision.granted_wall is None:
            unrecorded += 1
            continue
        request = decision.request
        what = (
            f"grant of exception request {request.pk} (KEP-{request.enhancement.number}, "
            f"[{request.release.slug}] {request.milestone.title}), granted_until"
        )
        if not known(what, decision.granted_zone):
            continue
        new, note = tz.instant_for_wall(decision.granted_wall, decision.granted_zone, decision.granted_until)
        if new != decision.granted_until:
            moved.append(
                Moved(
                    what,
                    Decision,
                    decision.pk,
                    "granted_until",
                    decision.granted_wall,
                    decision.granted_zone,
                    decision.granted_until,
                    new,
                    note,
                )
            )
    releases = Release.objects.filter(hard_stop__gt=now).order_by("hard_stop", "pk")
    for release in releases:
        checked += 1
        if release.hard_stop_wall is None:
            unrecorded += 1
            continue
        what = f"release {release.slug}, hard_stop"
        if not known(what, release.zone):
            continue
        new, note = tz.instant_for_wall(release.hard_stop_wall, release.zone, release.hard_stop)
        if new != release.hard_stop:
            moved.append(
                Moved(
                    what,
                    Release,
                    release.pk,
                    "hard_stop",
                    release.hard_stop_wall,
                    release.zone,
                    release.hard_stop,
                    new,
                    note,
                )
            )
    return moved, checked, unrecorded, unknown


def closing_moved(milestone: Milestone, now: dt.datetime) -> list[tuple[str, dt.datetime, dt.datetime, dt.date]]:
    """A date-only milestone's future stored closing instants that the running rules put
    elsewhere: (field, stored, recomputed, the day it ends). Leaves the row recomputed."""
    stored = {"closes_at": milestone.closes_at, "passes_at": milestone.passes_at}
    milestone.set_closing()
    days = {"closes_at": milestone.closing_day, "passes_at": milestone.ends_on}
    fields = ("closes_at", "passes_at") if milestone.ends_on else ("closes_at",)
    return [
        (field, stored[field], getattr(milestone, field), days[field])
        for field in fields
        if stored[field] > now and getattr(milestone, field) != stored[field]
    ]


@transaction.atomic
def apply_milestone(pk: int, now: dt.datetime) -> list[str]:
    """Recompute one milestone's future instants from its wall times, as the row stands
    now (locked), and save them through milestone_save. Returns the fields moved."""
    milestone = Milestone.objects.select_for_update().get(pk=pk)
    fields = []
    if not tz.is_known_zone(milestone.zone):  # changed since the scan: never read it as UTC
        return fields
    for field in ("at", "ends_at"):
        instant, wall = getattr(milestone, field), getattr(milestone, f"{field}_wall")
        if instant is None or instant <= now or wall is None:
            continue
        new, _ = tz.instant_for_wall(wall, milestone.zone, instant)
        if new != instant:
            setattr(milestone, field, new)
            fields.append(field)
    if fields:
        milestone_save(milestone=milestone, actor_label=ACTOR_LABEL)
    elif milestone.at is None:
        # Nothing a calendar shows changed (milestone_save would keep the row as it is):
        # only when the day ends, which the stored sort key must follow, and so must
        # the reminders due before it (milestone_changed: the ledger reschedules). No
        # notice: the day people were told ("end of Thursday 13 July") is unchanged.
        previous = copy.copy(milestone)
        moved = closing_moved(milestone, now)
        if moved:
            fields = [field for field, *_ in moved]
            for field, old, _, _ in moved:
                setattr(previous, field, old)
            milestone.save(update_fields=fields)
            audit_record(
                action="milestone.update",
                obj=milestone,
                actor_label=ACTOR_LABEL,
                before={field: old for field, old, _, _ in moved},
                after={field: new for field, _, new, _ in moved},
            )
            signals.milestone_changed.send(sender=Milestone, milestone=milestone, previous=previous)
    return fields


@transaction.atomic
def apply_grant(pk: int, now: dt.datetime) -> bool:
    decision = Decision.objects.select_for_update().get(pk=pk)
    if decision.granted_until is None or decision.granted_until <= now or decision.granted_wall is None:
        return False
    if not tz.is_known_zone(decision.granted_zone):
        return False
    new, _ = tz.instant_for_wall(decision.granted_wall, decision.granted_zone, decision.granted_until)
    if new == decision.granted_until:
        return False
    decision_grant_retime(decision=decision, granted_until=new, actor_label=ACTOR_LABEL)
    return True


@transaction.atomic
def apply_hard_stop(pk: int, now: dt.datetime) -> bool:
    """Move a release's explicit hard stop through release_save (its signal tells who the
    moved stop concerns), with an audit row."""
    release = Release.objects.select_for_update().get(pk=pk)
    if release.hard_stop is None or release.hard_stop <= now or release.hard_stop_wall is None:
        return False
    if not tz.is_known_zone(release.zone):
        return False
    new, _ = tz.instant_for_wall(release.hard_stop_wall, release.zone, release.hard_stop)
    if new == release.hard_stop:
        return False
    before = {"hard_stop": release.hard_stop}
    release.hard_stop = new
    release_save(release=release)
    audit_record(action="release.update", obj=release, actor_label=ACTOR_LABEL, before=before, after={"hard_stop": new})
    return True


class Command(BaseCommand):
    help = (
        "Report the future deadlines whose instant the running tzdata moved (the wall time and zone they were "
        "set in now mean another UTC instant); with --apply, save the new instants (wall times kept). "
        "Exit status: 0 nothing moved (or all saved), 1 moved and not saved, 2 some could not be saved."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--apply",
            action="store_true",
            help="Save the recomputed instants (audit log, feed SEQUENCE, reminders) instead of only reporting them.",
        )

    def handle(self, *args, apply: bool = False, verbosity: int = 1, **options):
        now = tz.utc_now()
        source = tz.zone_rules_source()
        moved, checked, unrecorded, unknown = find_moved(now)
        if unrecorded:
            self.stderr.write(
                f"{unrecorded} future instant(s) have no wall time recorded and were not checked "
                "(rows written around the services; saving them once through the admin records it)."
            )
        for line in unknown:
            self.stderr.write(line)
        unchecked = (
            f"{len(unknown)} future instant(s) not checked: their zone is unknown to {source} "
            "(fix the zone in the admin, or run with a tzdata that has it)"
        )
        if not moved:
            if verbosity >= 1:
                self.stdout.write(f"No future deadline moved: {checked} future instant(s) checked against {source}.")
            if unknown:
                raise CommandError(unchecked + ".", returncode=2)
            return
        for item in moved:
            self.stdout.write(item.describe())
        count = f"{len(moved)} future instant(s) moved under the zone rules of {source}"
        if not apply:
            raise CommandError(f"{count}; nothing was saved: run `manage.py tzdata_check --apply`.", returncode=1)
        failures: list[str] = []
        saved = 0
        done: set[tuple[type, int]] = set()
        for item in moved:
            key = (item.model, item.pk)
            if key in done:
                continue
            done.add(key)
            try:
                if item.model is Milestone:
                    saved += len(apply_milestone(item.pk, now))
                elif item.model is Decision:
                    saved += int(apply_grant(item.pk, now))
                else:
                    saved += int(apply_hard_stop(item.pk, now))
            except (ValidationFailed, ObjectDoesNotExist) as exc:
                message = exc.message if isinstance(exc, ValidationFailed) else "it was deleted meanwhile"
                failures.append(f"not saved: {item.what}: {message}")
        for failure in failures:
            self.stderr.write(failure)
        if failures:
            raise CommandError(
                f"{count}; {saved} saved, {len(failures)} could not be saved (named above).", returncode=2
            )
        self.stdout.write(f"{count}; {saved} saved (wall times kept).")
        if unknown:
            raise CommandError(unchecked + ".", returncode=2)
