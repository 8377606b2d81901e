"""Writes to the schedule domain. Views, admin, commands and tasks call these."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from dataclasses import field as dataclass_field
from typing import Any

from django.db import transaction
from django.forms.models import model_to_dict

from releasecal import signals, tz
from releasecal.defaults import (
    DEFAULT_KINDS,
    DEFAULT_REQUEST_WINDOW_HOURS,
    GROUP_PERMISSIONS,
    LATER_GROUP_PERMISSIONS,
    REQUEST_WINDOW_HOURS,
)
from releasecal.errors import ValidationFailed
from releasecal.models import (
    AuditLog,
    Enhancement,
    EnhancementOwner,
    EnhancementPerson,
    Milestone,
    MilestoneKind,
    Release,
    Tracking,
)
from releasecal.selectors import release_hard_stop


def _json_safe(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return tz.isoformat_utc(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    return value


def audit_record(
    *,
    action: str,
    obj: Any,
    actor=None,
    actor_label: str = "",
    before: dict | None = None,
    after: dict | None = None,
    at: dt.datetime | None = None,
) -> AuditLog:
    if actor is not None and not getattr(actor, "is_authenticated", False):
        actor = None
    label = actor_label or (actor.get_username() if actor is not None else "system")
    return AuditLog.objects.create(
        at=at or tz.utc_now(),
        actor=actor,
        actor_label=label[:200],
        action=action,
        object_type=obj._meta.label_lower,
        object_id=str(obj.pk),
        object_label=str(obj)[:300],
        before=_json_safe(before) if before is not None else None,
        after=_json_safe(after) if after is not None else None,
    )


def wall_time_record(
    *,
    instant: dt.datetime | None,
    zone: str,
    old_instant: dt.datetime | None = None,
    old_zone: str = "",
    old_wall: dt.datetime | None = None,
) -> dt.datetime | None:
    """THE way a deadline's wall time is set (milestones' ``at``/``ends_at``, grants'
    ``granted_until``): the naive wall clock in ``zone`` kept beside the instant.

    A new instant records its wall clock under the running tzdata, which is the wall
    time the person entered (forms and the API parse wall times under the same rules).
    The stored wall time is kept, in the same zone, when the instant did not change (a
    title edited after a tzdata upgrade, before ``manage.py tzdata_check --apply``: the
    instant is stale, the wall time is right) or when the instant is what the stored
    wall time means under the running rules (the instant ``tzdata_check`` recomputed,
    even where the new rules put the wall time in a gap, or either occurrence of a wall
    time in a fold)."""
    if instant is None:
        return None
    same_zone = bool(old_zone) and tz.normalize_zone_name(old_zone) == tz.normalize_zone_name(zone)
    if old_wall is not None and same_zone and (instant == old_instant or instant in tz.wall_readings(old_wall, zone)):
        return old_wall
    return tz.wall_clock(instant, zone)


def milestone_walls_record(milestone: Milestone, old: Milestone | None = None) -> None:
    """Set ``at_wall`` and ``ends_at_wall`` through ``wall_time_record``."""
    for field in ("at", "ends_at"):
        setattr(
            milestone,
            f"{field}_wall",
            wall_time_record(
                instant=getattr(milestone, field),
                zone=milestone.zone,
                old_instant=getattr(old, field) if old is not None else None,
                old_zone=old.zone if old is not None else "",
                old_wall=getattr(old, f"{field}_wall") if old is not None else None,
            ),
        )


def milestone_snapshot(milestone: Milestone) -> dict[str, Any]:
    data = model_to_dict(milestone, fields=[f.removesuffix("_id") for f in Milestone.CALENDAR_FIELDS])
    return _json_safe(data)


def _check_milestone(milestone: Milestone) -> None:
    milestone.zone = tz.normalize_zone_name(milestone.zone)
    if (milestone.at is None) == (milestone.on_date is None):
        raise ValidationFailed("A milestone has either a time (instant) or a date, not both and not neither.")
    if milestone.at is not None:
        milestone.at = tz.check_plausible(milestone.at, field="at")
        if milestone.ends_on is not None:
            raise ValidationFailed("A timed milestone's window ends at a time (ends_at), not a date.")
    if milestone.ends_at is not None:
        milestone.ends_at = tz.check_plausible(milestone.ends_at, field="ends_at")
    for field in ("on_date", "ends_on"):
        if getattr(milestone, field) is not None:
            tz.check_plausible_date(getattr(milestone, field), field=field)
    if milestone.on_date is not None and milestone.ends_at is not None:
        raise ValidationFailed("A date-only milestone's window ends on a date (ends_on), not a time.")
    if milestone.ends_at is not None and milestone.ends_at <= milestone.at:
        raise ValidationFailed(
            "The window must end after it starts.", extra={"ends_at": tz.isoformat_utc(milestone.ends_at)}
        )
    if milestone.ends_on is not None and milestone.ends_on < milestone.on_date:
        raise ValidationFailed("The window must end on or after its first day.")


@transaction.atomic
def milestone_save(*, milestone: Milestone, actor=None, actor_label: str = "") -> Milestone:
    """Create or update a milestone: validate, bump ``sequence`` when anything a
    calendar shows changed, record the audit row, and tell who listens.

    Sends, inside the transaction (``releasecal/signals.py``): ``milestone_changed`` on
    a create or a change (the reminder ledger reschedules), then ``milestone_moved``
    when an existing milestone's deadline moved or it was cancelled or restored (the
    schedule notices). A receiver that fails rolls the save back."""
    _check_milestone(milestone)
    if milestone.pk is None:
        milestone_walls_record(milestone)
        milestone.save()
        audit_record(
            action="milestone.create",
            obj=milestone,
            actor=actor,
            actor_label=actor_label,
            after=milestone_snapshot(milestone),
        )
        signals.milestone_changed.send(sender=Milestone, milestone=milestone, previous=None)
        return milestone
    old = Milestone.objects.select_for_update().get(pk=milestone.pk)
    milestone_walls_record(milestone, old)
    before, after = milestone_snapshot(old), milestone_snapshot(milestone)
    if before == after:
        if (milestone.at_wall, milestone.ends_at_wall) != (old.at_wall, old.ends_at_wall):
            milestone.save(update_fields=["at_wall", "ends_at_wall"])
        return milestone
    milestone.sequence = old.sequence + 1
    milestone.save()
    action = "milestone.cancel" if milestone.cancelled and not old.cancelled else "milestone.update"
    audit_record(action=action, obj=milestone, actor=actor, actor_label=actor_label, before=before, after=after)
    signals.milestone_changed.send(sender=Milestone, milestone=milestone, previous=old)
    if old.deadline != milestone.deadline or old.cancelled != milestone.cancelled:
        signals.milestone_moved.send(sender=Milestone, milestone=milestone, previous=old)
    return milestone


@transaction.atomic
def release_save(*, release: Release) -> Release:
    """Save a release (the admin's form, the schedule importer).

    When the hard stop in force moved (the explicit one set, changed or cleared), sends
    ``release_hard_stop_moved`` inside the transaction (``releasecal/signals.py``: the
    schedule notices tell which grants it now cuts)."""
    stored = Release.objects.select_for_update().filter(pk=release.pk).first() if release.pk else None
    before = release_hard_stop(stored) if stored is not None else None
    release.hard_stop_wall = wall_time_record(
        instant=release.hard_stop,
        zone=release.zone,
        old_instant=stored.hard_stop if stored is not None else None,
        old_zone=stored.zone if stored is not None else "",
        old_wall=stored.hard_stop_wall if stored is not None else None,
    )
    release.save()
    if stored is not None and release_hard_stop(release) != before:
        signals.release_hard_stop_moved.send(sender=Release, release=release, previous=before)
    return release


def milestone_create(
    *,
    release: Release,
    kind: MilestoneKind,
    title: str,
    at: dt.datetime | None = None,
    on_date: dt.date | None = None,
    ends_at: dt.datetime | None = None,
    ends_on: dt.date | None = None,
    zone: str | None = None,
    description: str = "",
    link: str = "",
    kind_label: str = "",
    actor=None,
) -> Milestone:
    milestone = Milestone(
        release=release,
        kind=kind,
        kind_label=kind_label,
        title=title,
        at=tz.to_utc(at) if at else None,
        on_date=on_date,
        ends_at=tz.to_utc(ends_at) if ends_at else None,
        ends_on=ends_on,
        zone=zone or release.zone,
        description=description,
        link=link,
    )
    return milestone_save(milestone=milestone, actor=actor)


def milestone_cancel(*, milestone: Milestone, actor=None) -> Milestone:
    milestone.cancelled = True
    return milestone_save(milestone=milestone, actor=actor)


@transaction.atomic
def milestone_delete(*, milestone: Milestone, actor=None) -> None:
    """Really remove a milestone (superusers only, checked by the caller). Feeds lose it
    without a CANCELLED event, so ``milestone_cancel`` is the normal way; the audit row
    keeps what was there."""
    audit_record(action="milestone.delete", obj=milestone, actor=actor, before=milestone_snapshot(milestone))
    milestone.delete()


def milestone_kinds_ensure() -> dict[str, MilestoneKind]:
    """The default kinds (created by a migration); re-created if someone deleted one."""
    kinds = {}
    for slug, name, allows, is_freeze, ordering in DEFAULT_KINDS:
        kinds[slug], _ = MilestoneKind.objects.get_or_create(
            slug=slug,
            defaults={
                "name": name,
                "allows_exceptions": allows,
                "is_freeze": is_freeze,
                "ordering": ordering,
                "request_window_hours": REQUEST_WINDOW_HOURS.get(slug, DEFAULT_REQUEST_WINDOW_HOURS),
            },
        )
    return kinds


def groups_ensure() -> None:
    """The groups "Release Team" and "Enhancements" with their permissions (created by a
    migration; re-created here after a flush)."""
    from django.contrib.auth.models import Group, Permission

    for table in (GROUP_PERMISSIONS, LATER_GROUP_PERMISSIONS):
        for name, perms in table.items():
            group, _ = Group.objects.get_or_create(name=name)
            for app_label, codename in perms:
                group.permissions.add(Permission.objects.get(content_type__app_label=app_label, codename=codename))


@transaction.atomic
def enhancement_upsert(
    *,
    number: int,
    title: str,
    owning_sig: str,
    participating_sigs: list[str] | None = None,
    issue_url: str = "",
    owners: list[dict[str, str]] | None = None,
) -> Enhancement:
    if number < 1:
        raise ValidationFailed("A KEP number is a positive integer.", extra={"number": number})
    enhancement, _ = Enhancement.objects.update_or_create(
        number=number,
        defaults={
            "title": title,
            "owning_sig": owning_sig,
            "participating_sigs": sorted(set(participating_sigs or []) - {owning_sig}),
            "issue_url": issue_url or f"https://github.com/kubernetes/enhancements/issues/{number}",
        },
    )
    before = owners_snapshot(enhancement)
    for owner in owners or []:
        github = (owner.get("github") or "").strip().lstrip("@")
        if github:
            # One row per handle in any case; only what the caller gives is written (a
            # re-import naming the handle alone keeps the email and Slack id on file).
            given = {key: owner[key] for key in ("email", "slack_id") if key in owner}
            row = EnhancementOwner.objects.filter(enhancement=enhancement, github__iexact=github).first()
            if row is None:
                EnhancementOwner.objects.create(enhancement=enhancement, github=github, **given)
            elif any(getattr(row, key) != value for key, value in given.items()):
                EnhancementOwner.objects.filter(pk=row.pk).update(**given)
        else:
            EnhancementOwner.objects.create(
                enhancement=enhancement, email=owner.get("email", ""), slack_id=owner.get("slack_id", "")
            )
    enhancement_owners_changed(enhancement, before=before)
    return enhancement


@dataclass
class KepRecord:
    """What one kep.yaml says, read and checked (``releasecal.importers.keps``): handles
    without the @, SIGs as labels (``node``), releases as slugs (``1.34``)."""

    number: int
    title: str
    owning_sig: str
    participating_sigs: list[str] = dataclass_field(default_factory=list)
    kep_status: str = ""
    kep_stage: str = ""
    latest_milestone: str = ""
    stage_milestones: dict[str, str] = dataclass_field(default_factory=dict)
    kep_path: str = ""
    authors: list[str] = dataclass_field(default_factory=list)
    approvers: list[str] = dataclass_field(default_factory=list)
    reviewers: list[str] = dataclass_field(default_factory=list)
    prr_approvers: dict[str, str] = dataclass_field(default_factory=dict)  # stage -> handle

    def people(self) -> list[tuple[str, str, str, int]]:
        """(role, stage, handle, position) of everyone it names."""
        role = EnhancementPerson.Role
        lists = ((role.AUTHOR, self.authors), (role.APPROVER, self.approvers), (role.REVIEWER, self.reviewers))
        rows = [(name, "", handle, position) for name, handles in lists for position, handle in enumerate(handles)]
        rows += [(role.PRR_APPROVER, stage, handle, 0) for stage, handle in self.prr_approvers.items()]
        return rows


@dataclass
class KepRecordSaved:
    enhancement: Enhancement
    outcome: str  # "created", "updated" or "unchanged"
    changed: list[str] = dataclass_field(default_factory=list)  # what changed: field names, "owners", "people"
    notes: list[str] = dataclass_field(default_factory=list)


_KEP_FIELDS = (
    "title", "owning_sig", "participating_sigs", "kep_status", "kep_stage", "latest_milestone", "stage_milestones",
    "kep_path",
)  # fmt: skip


def enhancement_kep_record_save(*, record: KepRecord) -> KepRecordSaved:
    """One kep.yaml's record saved (``enhancement_kep_records_save``)."""
    return enhancement_kep_records_save(records=[record])[0]


@transaction.atomic
def enhancement_kep_records_save(*, records: list[KepRecord]) -> list[KepRecordSaved]:
    """Make each KEP say what its kep.yaml says, in one transaction; write nothing for a KEP
    that already does (a second import of the same tree reads three tables and changes
    no row, so no feed version moves).

    Authors become owners when no owner has their handle in any case; owners kep.yaml no
    longer names are kept (they may carry an email or Slack id given by hand). The people
    kep.yaml names are replaced whole. A different owning SIG is taken from kep.yaml and
    said in ``notes`` (a request keeps the SIG it names; ``exceptions`` shows both)."""
    numbers = [record.number for record in records]
    stored = {e.number: e for e in Enhancement.objects.select_for_update().filter(number__in=numbers)}
    owners: dict[int, set[str]] = {}
    for enhancement_id, github in (
        EnhancementOwner.objects.filter(enhancement__number__in=numbers)
        .exclude(github="")
        .values_list("enhancement_id", "github")
    ):
        owners.setdefault(enhancement_id, set()).add(github.lower())
    people: dict[int, list[EnhancementPerson]] = {}
    for person in EnhancementPerson.objects.filter(enhancement__number__in=numbers):
        people.setdefault(person.enhancement_id, []).append(person)
    results = []
    for record in records:
        saved = _kep_record_save(record, stored.get(record.number))
        enhancement = saved.enhancement
        known = owners.setdefault(enhancement.pk, set())
        missing = []
        for handle in record.authors:
            if handle.lower() not in known:
                missing.append(handle)
                known.add(handle.lower())
        if missing:
            before = owners_snapshot(enhancement)
            EnhancementOwner.objects.bulk_create(EnhancementOwner(enhancement=enhancement, github=h) for h in missing)
            enhancement_owners_changed(enhancement, before=before)
            saved.changed.append("owners")
        if _people_replace(enhancement, people.get(enhancement.pk, []), record.people()):
            saved.changed.append("people")
        if saved.outcome != "created" and saved.changed:
            saved.outcome = "updated"
        results.append(saved)
    return results


def _kep_record_save(record: KepRecord, enhancement: Enhancement | None) -> KepRecordSaved:
    values = {name: getattr(record, name) for name in _KEP_FIELDS}
    values["participating_sigs"] = sorted(set(record.participating_sigs) - {record.owning_sig})
    issue_url = f"https://github.com/kubernetes/enhancements/issues/{record.number}"
    if enhancement is None:
        enhancement = Enhancement.objects.create(number=record.number, issue_url=issue_url, **values)
        return KepRecordSaved(enhancement=enhancement, outcome="created")
    saved = KepRecordSaved(enhancement=enhancement, outcome="unchanged")
    if enhancement.owning_sig and enhancement.owning_sig != record.owning_sig:
        saved.notes.append(
            f"owning SIG {record.owning_sig} (kep.yaml) replaces {enhancement.owning_sig}; a request naming "
            f"{enhancement.owning_sig} keeps what it says, shown beside"
        )
    if not enhancement.issue_url:
        values["issue_url"] = issue_url
    saved.changed = [name for name, value in values.items() if getattr(enhancement, name) != value]
    if saved.changed:
        for name in saved.changed:
            setattr(enhancement, name, values[name])
        enhancement.save(update_fields=[*saved.changed, "updated_at"])
    return saved


def _people_replace(
    enhancement: Enhancement, stored: list[EnhancementPerson], wanted: list[tuple[str, str, str, int]]
) -> bool:
    """Make the people rows of ``enhancement`` (now ``stored``) exactly ``wanted``; True
    when a row changed."""
    existing = {(p.role, p.stage, p.github.lower()): p for p in stored}
    new, seen, changed = [], set(), False
    for role, stage, handle, position in wanted:
        key = (role, stage, handle.lower())
        if key in seen:
            continue
        seen.add(key)
        row = existing.pop(key, None)
        if row is None:
            new.append(
                EnhancementPerson(enhancement=enhancement, role=role, stage=stage, github=handle, position=position)
            )
        elif (row.github, row.position) != (handle, position):
            row.github, row.position = handle, position
            row.save(update_fields=["github", "position"])
            changed = True
    if existing:
        EnhancementPerson.objects.filter(pk__in=[p.pk for p in existing.values()]).delete()
        changed = True
    if new:
        EnhancementPerson.objects.bulk_create(new)
        changed = True
    return changed


def owners_snapshot(enhancement: Enhancement) -> list[tuple]:
    """What a KEP's owners are, as the reminder ledger reads them (to see a change)."""
    return list(enhancement.owners.order_by("pk").values_list("pk", "github", "email", "slack_id", "user_id"))


def enhancement_owners_changed(enhancement: Enhancement, *, before: list[tuple]) -> bool:
    """When the owners differ from ``before`` (an ``owners_snapshot``), send
    ``enhancement_owners_changed`` (``releasecal/signals.py``: the reminder ledger
    re-syncs what goes to them) in the caller's transaction; True when they differed."""
    if owners_snapshot(enhancement) == before:
        return False
    signals.enhancement_owners_changed.send(sender=Enhancement, enhancement=enhancement)
    return True


@transaction.atomic
def tracking_status_change(*, tracking: Tracking, status: str, actor=None, at: dt.datetime | None = None) -> Tracking:
    """Set a KEP's tracking status in its release (the release team's call: removed,
    deferred, tracked again), with an audit row, and send ``tracking_status_changed`` in
    the transaction. The same status again changes nothing and sends nothing."""
    if status not in Tracking.Status.values:
        raise ValidationFailed(f"Unknown tracking status {status!r}.", extra={"choices": Tracking.Status.values})
    tracking = Tracking.objects.select_for_update().select_related("release", "enhancement").get(pk=tracking.pk)
    previous = tracking.status
    if previous == status:
        return tracking
    tracking.status = status
    tracking.save(update_fields=["status", "updated_at"])
    change = audit_record(
        action="tracking.status",
        obj=tracking,
        actor=actor,
        before={"status": previous},
        after={"status": status},
        at=at,
    )
    signals.tracking_status_changed.send(sender=Tracking, tracking=tracking, previous=previous, change_id=change.pk)
    return tracking


def tracking_set(
    *, release: Release, enhancement: Enhancement, stage: str, status: str | None = None, pr_urls=None
) -> Tracking:
    if stage not in Tracking.Stage.values:
        raise ValidationFailed(f"Unknown stage {stage!r}.", extra={"choices": Tracking.Stage.values})
    defaults: dict[str, Any] = {"stage": stage}
    if status:
        defaults["status"] = status
    if pr_urls is not None:
        defaults["pr_urls"] = list(pr_urls)
    tracking = Tracking.objects.filter(release=release, enhancement=enhancement).first()
    if tracking is not None and all(getattr(tracking, name) == value for name, value in defaults.items()):
        return tracking  # nothing to write: a re-import moves no feed version
    tracking, _ = Tracking.objects.update_or_create(release=release, enhancement=enhancement, defaults=defaults)
    return tracking
