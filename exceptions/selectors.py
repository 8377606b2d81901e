"""Reads that need the exception workflow: effective deadlines, the next deadlines, the
requests themselves and the milestone a request extends.

The rule of the product: a KEP's effective deadline for a milestone is the later of the
milestone's own deadline and the granted_until of its approved exception for that
milestone. A grant that a moved freeze overtook is *superseded* (the freeze applies, and
every face says so); a grant that runs past the release's hard stop (rc.0) after the
rc moved is flagged too. The rule is written once, in ``effective_deadline``; feeds,
reminders, notices, the API, pages, Slack and the admin all get deadlines from it
(``tests/exceptions/test_one_effective_deadline.py`` fails when a face computes one itself).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass, field

from django.core.exceptions import ObjectDoesNotExist
from django.db.models import Q, QuerySet

from exceptions.models import UNRECORDED_GRANT, ExceptionRequest
from releasecal import selectors as schedule
from releasecal import tz
from releasecal.errors import ValidationFailed
from releasecal.models import Enhancement, Milestone, Release, Tracking

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
    # The recorded grant (instant + zone) behind an exception-sourced deadline.
    granted: dt.datetime | None = None
    granted_zone: str = ""
    # The freeze moved to or past the grant: the freeze's own deadline applies.
    superseded: bool = False
    # The release's hard stop (rc.0) when the grant now runs past it.
    hard_stop: dt.datetime | None = None

    @property
    def is_extension(self) -> bool:
        """An approved exception that moves the deadline later than the milestone's own."""
        return self.source == "exception" and not self.superseded

    @property
    def warning(self) -> str:
        """What a release team must hear about this deadline ("" when nothing)."""
        milestone = self.milestone
        if self.superseded:
            return (
                f"The granted extension (until {tz.render_deadline(self.granted, self.granted_zone)}) is superseded by "
                f"the freeze: the {milestone.title} deadline ({tz.render_deadline(self.original, milestone.zone)}) "
                "is now later, so it applies."
            )
        if self.hard_stop is not None:
            return (
                f"The granted extension (until {tz.render_deadline(self.granted, self.granted_zone)}) runs past the "
                f"release's hard stop ({tz.render_deadline(self.hard_stop, milestone.release.zone)}, the rc.0 cut)."
            )
        return ""

    def display(self) -> str:
        if not self.is_extension and self.milestone.is_all_day:
            # "Monday 30 November 2026 (all day; ends 00:00 AoE Tuesday 1 December 2026 (...))"
            return f"{self.milestone.display()} (all day; ends {tz.render(self.instant, self.zone)})"
        if self.superseded:
            base = (
                self.milestone.display() if self.milestone.is_all_day else tz.render_deadline(self.instant, self.zone)
            )
            return f"{base} (the freeze; the granted extension is superseded by it)"
        shown = tz.render_deadline(self.instant, self.zone)
        if not self.grant_recorded:
            shown += " (extension granted, deadline not recorded)"
        return shown


def hard_stops(release_ids: Iterable[int]) -> dict[int, dt.datetime]:
    """Each release's hard stop (``releasecal.selectors.release_hard_stop``) in one query."""
    ids = set(release_ids)
    if not ids:
        return {}
    releases = Release.objects.filter(pk__in=ids).values_list("pk", "hard_stop")
    explicit = {pk: stop for pk, stop in releases if stop is not None}
    rcs = (
        Milestone.objects.filter(release__in=ids, kind__slug="rc", cancelled=False)
        .exclude(release__in=list(explicit))
        .select_related("release")
    )
    return _hard_stops(explicit, rcs)


def hard_stops_among(milestones: Iterable[Milestone]) -> dict[int, dt.datetime]:
    """``hard_stops`` of the releases of ``milestones``, read from them without a query:
    each comes with its release, and every rc milestone of those releases that is not
    cancelled is among them (a release's whole schedule, as ``deadlines_next`` reads it)."""
    milestones = list(milestones)
    explicit = {m.release_id: m.release.hard_stop for m in milestones if m.release.hard_stop is not None}
    rcs = [m for m in milestones if m.kind.slug == "rc" and not m.cancelled and m.release_id not in explicit]
    return _hard_stops(explicit, rcs)


def _hard_stops(explicit: dict[int, dt.datetime], rcs: Iterable[Milestone]) -> dict[int, dt.datetime]:
    """A release's hard stop: the one set by hand, else the start of its first rc."""
    stops: dict[int, dt.datetime] = {}
    for rc in sorted(rcs, key=lambda rc: (rc.release_id, rc.closes_at, rc.pk)):
        stops.setdefault(rc.release_id, rc.starts)
    stops.update(explicit)
    return stops


def _decision(request: ExceptionRequest | None):
    """The decision of an approved request, else None (a request read without one too)."""
    if request is None or request.state != ExceptionRequest.State.APPROVED:
        return None
    try:
        return request.decision
    except ObjectDoesNotExist:
        return None


def effective_deadline(
    *,
    milestone: Milestone,
    request: ExceptionRequest | None,
    own: dt.datetime | None = None,
    hard_stop: dt.datetime | None = None,
    keps: list[int] | None = None,
) -> Deadline:
    """THE effective deadline of a KEP for a milestone: the product's central rule, and
    the one place it is written. Every face (feeds, reminders, notices, Slack, pages,
    the API, the admin) gets the deadline that applies to a KEP from here, directly or
    through ``effective_deadlines``, ``request_deadlines`` and ``deadlines_next``.

    ``request`` is the KEP's request for ``milestone`` (None: it has none). Unless it is
    approved, the milestone's own deadline applies. Approved, the later of the two: the
    milestone's own deadline and the grant (``granted_until``); a grant the freeze
    reached or passed is *superseded* (the freeze applies, and ``warning`` says so). A
    grant past the release's ``hard_stop`` (rc.0) is flagged. An approval whose deadline
    was not recorded (exceptions.yaml) gives the milestone's own, marked
    ``grant_recorded=False``.

    ``own`` is the milestone's own deadline, ``milestone.deadline`` unless given (the
    deadline before an edit, to tell who an edit concerns). No query when ``request``
    comes with its decision."""
    own = milestone.deadline if own is None else own
    keps = list(keps or [])
    decision = _decision(request)
    if decision is None:
        return Deadline(
            milestone=milestone, instant=own, zone=milestone.zone, source="milestone", original=own, keps=keps
        )
    if decision.granted_until is None:
        return Deadline(
            milestone=milestone,
            instant=own,
            zone=milestone.zone,
            source="exception",
            original=own,
            exception_id=request.pk,
            keps=keps,
            grant_recorded=False,
        )
    granted, zone = decision.granted_until, decision.granted_zone or milestone.release.zone
    superseded = own >= granted
    return Deadline(
        milestone=milestone,
        instant=own if superseded else granted,
        zone=milestone.zone if superseded else zone,
        source="exception",
        original=own,
        exception_id=request.pk,
        keps=keps,
        granted=granted,
        granted_zone=zone,
        superseded=superseded,
        hard_stop=hard_stop if hard_stop is not None and not superseded and granted > hard_stop else None,
    )


def effective_deadlines(
    *,
    milestones: Iterable[Milestone],
    enhancements: Iterable[Enhancement],
    stops: dict[int, dt.datetime] | None = None,
) -> dict[tuple[int, int], Deadline]:
    """``effective_deadline`` of every (enhancement, milestone) pair, in one query (three
    when there are grants: the releases' hard stops, unless the caller gives ``stops``).
    Keys are ``(enhancement_id, milestone_id)``."""
    milestones = list(milestones)
    enhancements = list(enhancements)
    ids = [m.pk for m in milestones]
    granted = {}
    # A request naming two freezes (PRR + enhancements) grants its one completion date
    # for each of them.
    for req in ExceptionRequest.objects.filter(
        Q(milestone__in=ids) | Q(also_milestone__in=ids),
        state=ExceptionRequest.State.APPROVED,
        enhancement__in=[e.pk for e in enhancements],
    ).select_related("decision"):
        for milestone_id in (req.milestone_id, req.also_milestone_id):
            if milestone_id is not None:
                granted[(req.enhancement_id, milestone_id)] = req
    if stops is None:
        stops = hard_stops({m.release_id for m in milestones}) if granted else {}
    # Each milestone's own deadline once, not once per KEP (a SIG has hundreds).
    own = [(milestone, milestone.deadline) for milestone in milestones]
    result = {}
    for enhancement in enhancements:
        for milestone, deadline in own:
            result[(enhancement.pk, milestone.pk)] = effective_deadline(
                milestone=milestone,
                request=granted.get((enhancement.pk, milestone.pk)),
                own=deadline,
                hard_stop=stops.get(milestone.release_id),
                keps=[enhancement.number],
            )
    return result


def grant_conflicts(*, milestone: Milestone, previous: Milestone | None = None) -> list[Deadline]:
    """Approved grants this milestone now overrides: grants on it that its deadline
    reached or passed (superseded), and, for an rc milestone, grants of its release
    that run past the hard stop. Oldest request first.

    With ``previous`` (the row before an edit), only conflicts that this edit caused.
    The admin's schedule pages show them (``exceptions/admin.py``), the schedule
    notices tell them (``notices``)."""
    requests = (
        ExceptionRequest.objects.filter(state=ExceptionRequest.State.APPROVED, decision__granted_until__isnull=False)
        .select_related("decision", "enhancement", "milestone", "milestone__release", "milestone__kind")
        .order_by("pk")
    )
    if milestone.kind.slug == "rc":
        requests = requests.filter(release_id=milestone.release_id)
    else:
        requests = requests.filter(milestone=milestone)
    stops = hard_stops([milestone.release_id])
    found = []
    for request in requests:
        deadline = effective_deadline(
            milestone=request.milestone,
            request=request,
            hard_stop=stops.get(request.milestone.release_id),
            keps=[request.enhancement.number],
        )
        if not deadline.warning or (previous is not None and _held_before(deadline, request, previous)):
            continue
        found.append(deadline)
    return found


def hard_stop_conflicts(*, release: Release, previous: dt.datetime | None) -> list[Deadline]:
    """Approved grants of ``release`` that run past its hard stop as it now stands and
    did not run past ``previous`` (the hard stop before an edit; None: there was none).
    Oldest request first."""
    stop = hard_stops([release.pk]).get(release.pk)
    if stop is None:
        return []
    requests = (
        ExceptionRequest.objects.filter(
            release=release,
            state=ExceptionRequest.State.APPROVED,
            decision__granted_until__gt=stop,
        )
        .select_related("decision", "enhancement", "milestone", "milestone__release", "milestone__kind")
        .order_by("pk")
    )
    found = []
    for request in requests:
        deadline = effective_deadline(
            milestone=request.milestone, request=request, hard_stop=stop, keps=[request.enhancement.number]
        )
        if deadline.hard_stop is None:
            continue
        if previous is not None:
            before = effective_deadline(milestone=request.milestone, request=request, hard_stop=previous)
            if before.hard_stop is not None:
                continue  # it ran past the hard stop before the edit too
        found.append(deadline)
    return found


def _held_before(deadline: Deadline, request: ExceptionRequest, previous: Milestone) -> bool:
    """Did the conflict ``deadline`` hold already before the edit (``previous``: the
    edited milestone as it was)?"""
    if deadline.superseded:
        return (
            previous.pk == deadline.milestone.pk and effective_deadline(milestone=previous, request=request).superseded
        )
    before = deadline.milestone.release.hard_stop or (previous.starts if previous.kind.slug == "rc" else None)
    return effective_deadline(milestone=deadline.milestone, request=request, hard_stop=before).hard_stop is not None


def request_deadlines(requests: Iterable[ExceptionRequest]) -> dict[int, Deadline]:
    """``effective_deadline`` of each request's KEP for its milestone, keyed by request
    id: one query whatever the number of rows (the hard stops), when the requests come
    with their milestone, release, enhancement and decision loaded. A request that is
    not approved leaves its milestone's own deadline."""
    requests = list(requests)
    stops = hard_stops({r.release_id for r in requests if _decision(r) is not None})
    return {
        request.pk: effective_deadline(
            milestone=request.milestone,
            request=request,
            hard_stop=stops.get(request.release_id),
            keps=[request.enhancement.number],
        )
        for request in requests
    }


def kep_effective_deadline(*, enhancement: Enhancement, milestone: Milestone) -> Deadline:
    """``effective_deadline`` of one KEP for one milestone, read from the database."""
    return effective_deadlines(milestones=[milestone], enhancements=[enhancement])[(enhancement.pk, milestone.pk)]


def deadlines_next(
    *,
    releases: list[Release],
    enhancements: list[Enhancement] | None,
    now: dt.datetime,
    limit: int,
    out_of_milestone: list[Tracking] | None = None,
) -> list[Deadline]:
    """The upcoming deadlines, soonest first, with granted extensions applied.

    Without KEPs: the releases' own deadlines. With KEPs: each KEP's effective deadline
    per milestone; KEPs sharing one instant for a milestone share one row. A KEP out of
    a release's milestone (removed or deferred) has none of that release's deadlines:
    ``out_of_milestone`` when the caller has read them already
    (``schedule.tracking_out_of_milestone`` of these KEPs, for these releases or all).
    """
    # One query for every release's milestones (their order does not matter: the rows
    # are sorted below).
    milestones = list(schedule.milestone_list().filter(release__in=[r.pk for r in releases], cancelled=False))
    rows: dict[tuple[int, dt.datetime, int | None], Deadline] = {}
    if enhancements is None:
        for milestone in milestones:
            deadline = effective_deadline(milestone=milestone, request=None)
            rows[(milestone.pk, deadline.instant, None)] = deadline
    else:
        if out_of_milestone is None:
            out_of_milestone = schedule.tracking_out_of_milestone(enhancements=enhancements)
        out = {(t.enhancement_id, t.release_id) for t in out_of_milestone}
        # Every milestone of the releases is here, their rcs too: no query for the hard stops.
        effective = effective_deadlines(
            milestones=milestones, enhancements=enhancements, stops=hard_stops_among(milestones)
        )
        for (enhancement_id, _), deadline in sorted(effective.items(), key=lambda item: item[1].keps[0]):
            if (enhancement_id, deadline.milestone.release_id) in out:
                continue
            key = (deadline.milestone.pk, deadline.instant, deadline.exception_id)
            row = rows.get(key)
            if row is None:
                rows[key] = deadline
            else:
                row.keps.extend(deadline.keps)
    # Gone at the instant it closes, as milestone_list_next: a deadline at 12:00 is past at 12:00.
    upcoming = [row for row in rows.values() if row.instant > now]
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


def decision_text(values: dict | None, zone: str) -> str:
    """One line for a decision as ``DecisionCorrection`` keeps it: "approved, granted until
    <deadline>", "rejected", "none (pending again)"."""
    if values is None:
        return "none (the request is pending again)"
    if values["outcome"] != "approved":
        return values["outcome"]
    if not values.get("granted_until"):
        return f"approved, {UNRECORDED_GRANT}"
    granted = dt.datetime.fromisoformat(values["granted_until"].replace("Z", "+00:00"))
    return f"approved, granted until {tz.render_with_aoe(granted, values.get('granted_zone') or zone)}"
